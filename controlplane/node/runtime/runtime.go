package runtime

import (
	"context"
	"errors"
	"time"
)

// Labels set on every container so a restarted agent can find and re-adopt
// (or clean up) what it started. They use the keys the CRI kubelet sets.
const (
	LabelPodUID        = "io.kubernetes.pod.uid"
	LabelPodNamespace  = "io.kubernetes.pod.namespace"
	LabelPodName       = "io.kubernetes.pod.name"
	LabelContainerName = "io.kubernetes.container.name"
	// LabelAttempt counts the instances of one pod container (0 for the first).
	LabelAttempt = "glassplane.io/attempt"
	// LabelImage is the image reference the container was created from.
	LabelImage = "glassplane.io/image"
	// LabelStartedAt records when the container's process was started (RFC 3339).
	LabelStartedAt = "glassplane.io/started-at"
	// LabelManaged marks containers created by the Glassplane node agent.
	LabelManaged = "glassplane.io/managed"
)

// ErrNotFound is returned (wrapped) when a container, pod or image is unknown.
var ErrNotFound = errors.New("not found")

// Runtime is what the node agent needs from a container runtime. Every
// method is safe for concurrent use; methods taking a pod UID act on all of
// that pod's containers.
type Runtime interface {
	// Name is the runtime's short name: "containerd" or "simulated".
	Name() string
	// Version is the runtime version as kubelet reports it in
	// nodeInfo.containerRuntimeVersion, e.g. "containerd://1.6.20".
	Version(ctx context.Context) (string, error)

	// ImageStatus reports whether ref is present on the node, and if so its
	// details. A missing image is (Image{}, false, nil).
	ImageStatus(ctx context.Context, ref string) (Image, bool, error)
	// PullImage fetches ref from its registry and makes it ready to run.
	PullImage(ctx context.Context, ref string) (Image, error)
	// ListImages returns the images present on the node.
	ListImages(ctx context.Context) ([]Image, error)

	// StartPod prepares what the pod's containers share (its network
	// namespace and address) and returns the pod's IP, or "" when the pod
	// shares the node's network. It is idempotent: a prepared pod keeps
	// its address.
	StartPod(ctx context.Context, pod PodSpec) (string, error)
	// CreateContainer creates (but does not start) one container of pod and
	// returns its runtime ID.
	CreateContainer(ctx context.Context, pod PodSpec, c ContainerSpec) (string, error)
	// StartContainer starts a created container's process.
	StartContainer(ctx context.Context, id string) error
	// StopContainer stops one running container: SIGTERM, then up to grace
	// for it to exit, then SIGKILL. Stopping a stopped container is not an
	// error.
	StopContainer(ctx context.Context, id string, grace time.Duration) error
	// StopPod stops every running container of the pod: SIGTERM, then up to
	// grace for it to exit, then SIGKILL.
	StopPod(ctx context.Context, podUID string, grace time.Duration) error
	// RemoveContainer deletes a stopped container and its files.
	RemoveContainer(ctx context.Context, id string) error
	// RemovePod stops (without grace) and removes all of the pod's containers
	// and what StartPod prepared. Removing an unknown pod is not an error.
	RemovePod(ctx context.Context, podUID string) error

	// ListPods returns the UIDs of the pods that have anything on the node
	// (what StartPod prepared, or containers).
	ListPods(ctx context.Context) ([]string, error)
	// ListContainers returns every container this agent created, optionally
	// only those of one pod (podUID != "").
	ListContainers(ctx context.Context, podUID string) ([]ContainerStatus, error)
}

// Image describes an image present on the node.
type Image struct {
	// Ref is the normalized reference, e.g. "docker.io/library/nginx:latest".
	Ref string
	// ID is the reference by digest, e.g. "docker.io/library/nginx@sha256:...".
	ID string
	// Size is the image's size in bytes (its content as pulled).
	Size int64
}

// PodSpec is what the runtime needs to know about a pod.
type PodSpec struct {
	UID       string
	Namespace string
	Name      string
	// Hostname is the containers' hostname (the pod name unless set).
	Hostname string
	// HostDomain is <subdomain>.<namespace>.svc.<cluster domain> for a pod
	// with a subdomain: its /etc/hosts names it by that FQDN too.
	HostDomain string
	// HostNetwork makes the containers share the host's network namespace.
	HostNetwork bool
	// RestartPolicy is the pod's restartPolicy (Always, OnFailure, Never).
	RestartPolicy string
	// Ports are the pod's hostPorts.
	Ports []PortMapping
	// HostAliases are the pod's extra /etc/hosts entries.
	HostAliases []HostAlias
	// DNS, when set, is the pod's /etc/resolv.conf, written when the pod is
	// prepared; a pod prepared without it keeps the file it has, or gets
	// the host's.
	DNS *DNSConfig
}

// DNSConfig is a pod's resolver configuration, as the kubelet hands it to
// the runtime.
type DNSConfig struct {
	Nameservers []string
	Searches    []string
	Options     []string
}

// HostAlias is one /etc/hosts line a pod asks for: an IP and its names.
type HostAlias struct {
	IP        string
	Hostnames []string
}

// ContainerSpec is one container of a pod, already resolved from the pod
// spec (env as KEY=value, resources as numbers).
type ContainerSpec struct {
	Name  string
	Image string
	// Command replaces the image's entrypoint; Args replaces its cmd.
	Command    []string
	Args       []string
	Env        []string
	WorkingDir string
	// CPUMillis limits CPU time (1000 = one CPU); 0 means no limit.
	CPUMillis int64
	// CPURequestMillis sets the CPU shares; 0 leaves the default.
	CPURequestMillis int64
	// MemoryBytes limits memory; 0 means no limit.
	MemoryBytes int64
	// OOMScoreAdj is the container's processes' oom_score_adj (nil keeps
	// the runtime's).
	OOMScoreAdj *int
	// Attempt counts the instances of this container in the pod (0 first).
	Attempt int
	// Init marks an init container, which runs to completion before the
	// app containers start.
	Init bool
	// Mounts are bind mounts of host paths (the pod's volumes).
	Mounts []Mount
	// RunAsUser and RunAsGroup, when set, are the process's IDs.
	RunAsUser, RunAsGroup *int64
	// Sysctls are the pod's namespaced sysctls (dotted names), set in the
	// container's namespaces before it starts.
	Sysctls map[string]string
	// SupplementalGroups are more group IDs of the process (the pod's
	// fsGroup and supplementalGroups), added to those the image's
	// /etc/group gives its user unless StrictSupplementalGroups.
	SupplementalGroups []int64
	// StrictSupplementalGroups leaves out the image's /etc/group groups
	// (supplementalGroupsPolicy Strict): the process has its primary
	// group and SupplementalGroups only.
	StrictSupplementalGroups bool
	// ReadOnlyRootFS mounts the image's root filesystem read-only.
	ReadOnlyRootFS bool
	// NoNewPrivileges sets the process's no_new_privs: it cannot gain
	// privileges (setuid files run as the caller).
	NoNewPrivileges bool
	// AddCapabilities and DropCapabilities name Linux capabilities
	// without the CAP_ prefix, as Kubernetes does; "ALL" drops all.
	AddCapabilities, DropCapabilities []string
	// TerminationMessagePath is where in the container a file is mounted
	// for the container to leave a message in when it ends (the exited
	// status's Message); empty, none.
	TerminationMessagePath string
	// TerminationMessageFromLogs makes the end of the log the message of
	// a failed exit that left none (FallbackToLogsOnError).
	TerminationMessageFromLogs bool
}

// Mount binds a host path into a container.
type Mount struct {
	HostPath      string
	ContainerPath string
	ReadOnly      bool
	// NoExec mounts without exec, setuid or devices (an image volume).
	NoExec bool
}

// State is a container's lifecycle state.
type State string

// Container states.
const (
	StateCreated State = "created"
	StateRunning State = "running"
	StateExited  State = "exited"
	StateUnknown State = "unknown"
)

// Resources are what a container's cgroup allows it: its cpu limit and
// request in millicores and its memory limit in bytes; 0 is none.
type Resources struct {
	CPULimitMillis, CPURequestMillis, MemoryLimitBytes int64
}

// Resizer is a runtime that changes a running container's resources in
// place (a pod resize whose resize policy needs no restart).
type Resizer interface {
	UpdateContainerResources(ctx context.Context, id string, r Resources) error
}

// ContainerStatus is the runtime's view of one container.
type ContainerStatus struct {
	ID           string
	PodUID       string
	PodNamespace string
	PodName      string
	Name         string
	Attempt      int
	Image        string
	ImageID      string
	State        State
	CreatedAt    time.Time
	StartedAt    time.Time
	FinishedAt   time.Time
	ExitCode     int32
	// Reason explains an exit: "Completed" for 0, "Error" otherwise,
	// "OOMKilled" when the kernel killed it for memory.
	Reason string
	// Message is what an exited container wrote to its termination
	// message file (at most MaxTerminationMessage bytes).
	Message string
}

// MaxTerminationMessage is the most of a termination message that is
// read, as the kubelet's limit.
const MaxTerminationMessage = 4096
