// Package framework is the scheduler's plugin framework: the extension-point
// interfaces a plugin implements (QueueSort, PreFilter, Filter, PreScore,
// Score), the Status a plugin answers with, the per-cycle CycleState, the
// NodeInfo view of a node and the pods on it, the Registry of plugin
// factories, and the Framework that runs a Profile's plugins on a bounded
// parallel pool and explains every result.
//
// It mirrors the shape of kube-scheduler's framework so the default profile can
// grow plugin by plugin. It touches no API server and no cache: callers hand it
// NodeInfos (from the scheduler's snapshot) and read back statuses and scores.
// The scores are the explain package's types (PluginScore, NodeScore), so a
// cycle's scores go into its explanation without a copy.
package framework
