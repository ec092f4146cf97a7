// Package runtime is the node agent's view of a container runtime: the small
// Runtime interface the agent drives (images, pod sandboxes, containers) and
// its implementations. Containerd runs real containers through a containerd
// daemon (the host's or a ManagedContainerd child process), one network
// namespace per pod (made and pinned under /var/run/netns in-process, as
// `ip netns add` would; PreparePod makes it apart from the network attach so
// that containers can be created meanwhile) attached to the pod network by
// CNI (bridge with host-local addresses, plus portmap only for pods with
// hostPorts) with the kubelet's /etc/hosts (localhost, the pod's address
// under its hostname, its hostAliases) and the pod's resolv.conf (the
// agent's DNSConfig, written as containerd's CRI writes it; the host's
// for a pod without one) in the pod's directory, bind-mounted into each of
// its containers, each process with the groups the image's /etc/group
// gives its user and the pod's supplemental groups (as containerd's CRI
// merges them), and a termination message file per
// container (mounted at its terminationMessagePath, read into the exited
// status's Message, or the end of the log for a failed container marked
// to fall back to it), pulls images through containerd's resolver
// (loopback and configured insecure registries over plain HTTP), runs exec for
// kubectl exec, exec probes and hooks, reports container exits from
// containerd's event stream (WatchExits), dials a pod's localhost inside its
// network namespace for port forwarding, mounts tmpfs for memory-backed
// emptyDirs and read-only view snapshots of images for image volumes
// (ImageMounter; unmounted and released with the pod); the pod network masquerades the pod
// CIDR with one iptables rule, and the node forgets its neighbor entry of
// each new pod's address (an earlier pod's MAC would keep the pod
// unreachable from the node for seconds). Simulated keeps the same states in
// memory for nodes that run no containers (init containers complete, app
// containers of restartPolicy Always pods run until stopped) and reports
// their exits as they happen (WatchExits), as containerd does. This room may
// touch containerd, runc, network namespaces, the pod CIDR's iptables rule,
// the node's neighbor entries of pod addresses, tmpfs mounts and files
// under the node's data directory; it knows nothing of the Kubernetes API.
package runtime
