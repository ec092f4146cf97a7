// Package node is Glassplane's node agent, its kubelet: an API client (never
// etcd) that registers its Node, renews its Lease in kube-node-lease with
// kubelet's own lease controller (k8s.io/component-helpers: every ten
// seconds with up to 4% jitter, from the copy it last wrote, without
// reading it), checks the node status every minute (with kubelet's 4%
// jitter, so nodes started together drift apart) and posts it when it
// changed or every five minutes (kubelet's nodeStatusReportFrequency),
// and at once after a pull that changed its image list (for the
// scheduler's ImageLocality; a pull that found the same image does not),
// watches only the pods bound to it, runs them through a runtime.Runtime
// (containerd or simulated) and reports back what happened the way kubelet
// does: pod status, container statuses and core/v1 Events (Pulling, Pulled,
// Created, Started, Killing, BackOff, Unhealthy, Failed).
//
// A pod worker per pod runs its init containers one at a time to
// completion (a failure follows the restartPolicy; sidecars, init
// containers with restartPolicy Always, only have to start and then keep
// running), then its app containers, restarting them with kubelet's
// CrashLoopBackOff. A new pod's first containers are created while the
// runtime attaches the pod to the network (its CNI ADD), and started once
// it is attached (unless an env var asks for the pod's IP). A container's
// environment ends with kubelet's service variables (serviceenv.go):
// <NAME>_SERVICE_HOST, <NAME>_SERVICE_PORT and the Docker link variables
// of the Services with a ClusterIP in the pod's namespace (when
// enableServiceLinks) and of the default namespace's kubernetes Service,
// read from a Service cache synced before any pod; the pod's own env
// overrides them and its $(VAR) sees them. Images
// follow imagePullPolicy (images under glassplane.local are node-only and
// never pulled). Each running container with probes gets a probe goroutine
// (prober.go): startup, then liveness and readiness, exec through the
// runtime and httpGet/tcpSocket/grpc (grpc.health.v1) from the node to
// the pod IP, with
// Kubernetes' defaults and thresholds; their results drive started, ready,
// ContainersReady and Ready, and a failed liveness or startup probe makes
// the worker kill the container (preStop hook, then SIGTERM, grace,
// SIGKILL) for its restartPolicy to decide. On a simulated node probes and
// hooks run no processes and pass. Graceful deletion runs every running
// container's preStop hook at once, within the grace period, then stops
// the app containers and after them the sidecars, the last declared
// first, as kubelet's termination ordering (terminationOrder), and ends
// with the agent deleting the pod object with grace 0. A worker syncs its
// pod in full when the pod changes, a probe result changes or an event wakes
// it, and every 10 seconds; between those, a tick every PodResyncInterval
// only lists the pod's containers and syncs when their states changed (a
// container that exited by itself), as the kubelet's PLEG relist does.
// When the runtime reports exits as they happen (containerd's task exit
// events; the simulated runtime's completions and stops), an exit wakes the
// pod's worker, like the kubelet's evented PLEG, and the worker of a settled
// pod (status posted, not being deleted, nothing waiting or backing off)
// sleeps until its next full resync; if the event stream fails, workers
// poll again until it is back.
//
// Each new pod sandbox gets the resolv.conf the kubelet forms (dns.go)
// from its dnsPolicy (ClusterFirst: Config.ClusterDNS, the cluster
// domain's search list before the host's, ndots:5; Default, and
// ClusterFirst on the host network: Config.ResolvConf; None: only
// dnsConfig), with dnsConfig merged in and the resolver's limits kept,
// recording kubelet's MissingClusterDNS and DNSConfigForming warnings.
//
// The Node's status carries capacity and allocatable (capacity minus
// SystemReserved), the pressure conditions from the host's readings
// (/proc/meminfo, statfs of the data directory, the kernel's task count
// against pid_max) with kubelet's thresholds and reasons, nodeInfo and the
// node's images. Its HTTPS server answers the API server's pods/log,
// pods/exec and pods/attach (websocket; attach streams the container's
// output from then on, as containers get no stdin or terminal) and
// pods/portforward (SPDY, dialled to the pod's
// localhost inside its network namespace), and /glassplane/proxy-rules:
// the rules of the node's service proxy (Config.Proxy, controlplane/proxy,
// which the agent runs once its Node is registered and stops with it),
// and /stats/summary (stats.go): the kubelet's Summary shape with each
// running container's CPU time and memory working set read from its cgroup
// and the node's from /proc, which the API server's metrics.k8s.io reads.
// A simulated node publishes its synthetic usage (Config.SimulatedUsage) on
// its Node for the API server instead.
// emptyDir volumes of medium Memory are tmpfs mounts. Image volumes are
// the image's files (pulled as its pullPolicy says), mounted read-only and
// noexec in the containers. configMap, secret,
// downwardAPI and projected volumes are laid out as the kubelet's
// AtomicWriter does (a ..data link to a timestamped payload, swapped in
// one step; atomicwriter.go) and brought up to date on each full sync
// (every 10 s), so a changed ConfigMap, Secret or pod label shows in the
// container's files. Ephemeral containers (pods/ephemeralcontainers,
// kubectl debug) are started once beside the app containers and reported
// in ephemeralContainerStatuses. A running container reports the
// resources its cgroup was given (status resources and
// allocatedResources), and a pod resize (pods/resize) is actuated as the
// kubelet does (resize.go): in place through the runtime (containerd
// updates the task's shares, CFS quota and memory limit), or by a restart
// where the container's resize policy says RestartContainer, and one
// asking more than the node's allocatable is left PodResizePending with
// reason Infeasible. A podCertificate projection gets a key the node
// generates, certified through a PodCertificateRequest once its signer
// issued it (the pod waits until then, and the node asks again after
// beginRefreshAt; podcertificate.go). Containers see their cgroups read-only at
// /sys/fs/cgroup, as CRI mounts them. A pod past its activeDeadlineSeconds is
// stopped and Failed with reason DeadlineExceeded, and one asking for a
// sysctl outside the kubelet's safe allowlist is Failed with reason
// SysctlForbidden (the allowed ones are set in its containers'
// namespaces). A pod's fsGroup is, as the kubelet's
// SetVolumeOwnership makes it (volume_ownership.go), the group of its
// emptyDir, configMap, secret, downwardAPI and projected volumes (group
// read bits on their files, setgid directories), and with its
// supplementalGroups one of its processes' groups. This room touches
// the API through its client and containers through its runtime, nothing
// else.
package node
