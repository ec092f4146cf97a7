// Package usage holds what node agents, the API server and the
// HorizontalPodAutoscaler controller share about resource usage: the
// summary a node agent serves at /stats/summary (the kubelet's Summary API
// types), the synthetic usage simulated nodes report (annotations), and the
// CPU rate between two cumulative samples, computed as metrics-server
// computes it. It touches no storage and no API: pure functions and types.
package usage
