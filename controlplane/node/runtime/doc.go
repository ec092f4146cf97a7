// Package runtime is the node agent's view of a container runtime: the small
// Runtime interface the agent drives (images, pod sandboxes, containers) and
// its implementations. Containerd runs real containers through a containerd
// daemon (the host's or a ManagedContainerd child process), one network
// namespace per pod; Simulated keeps the same states in memory for nodes that
// run no containers (a command ending in "exit N" makes its container exit
// with N). This room may touch containerd, runc, network namespaces
// and files under the node's data directory; it knows nothing of the
// Kubernetes API.
package runtime
