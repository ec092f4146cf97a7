// Package plugins assembles the in-tree scheduler plugins into a registry.
// Each plugin lives in its own package below this one (queuesort,
// nodeunschedulable, nodename, tainttoleration, nodeaffinity, nodeports,
// noderesources) and depends only on the framework; this package only names
// them.
package plugins
