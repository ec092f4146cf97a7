package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/containerd/api/services/tasks/v1"
	tasktypes "github.com/containerd/containerd/api/types/task"
	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/core/remotes/docker"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/errdefs"
	"github.com/containerd/errdefs/pkg/errgrpc"
	"github.com/containerd/log"
	"github.com/distribution/reference"
	"github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"
)

// Defaults for ContainerdConfig.
const (
	DefaultContainerdNamespace   = "glassplane"
	DefaultContainerdSnapshotter = "overlayfs"
	DefaultPullTimeout           = 5 * time.Minute
	// LabelImageID records the image's reference by digest on a container.
	LabelImageID = "glassplane.io/image-id"
	// LabelMessageFromLogs marks a container whose failure is explained by
	// the end of its log when it left no termination message
	// (terminationMessagePolicy: FallbackToLogsOnError).
	LabelMessageFromLogs = "glassplane.io/message-from-logs"
	// The end of the log such a message holds, as the kubelet's.
	messageLogLines, messageLogBytes = 80, 2048
	// cpuPeriod is the CFS period used for CPU limits, as kubelet uses.
	cpuPeriod = 100000
	// killWait bounds how long a SIGKILLed task may take to be reaped.
	killWait = 10 * time.Second
)

// quietLogger is containerd's client logger at warning level.
var quietLogger = func() *log.Entry {
	l := logrus.New()
	l.SetLevel(logrus.WarnLevel)
	return logrus.NewEntry(l)
}()

// ContainerdConfig says which containerd to use and where container files go.
type ContainerdConfig struct {
	// Address is containerd's grpc socket.
	Address string
	// Namespace isolates Glassplane's containers and images
	// (DefaultContainerdNamespace when empty).
	Namespace string
	// StateDir holds the node's per-pod files: container logs (CRI format)
	// in <StateDir>/<pod uid>/<container>/<attempt>.log and
	// the tasks' IO FIFOs in <StateDir>/.fifo. Required.
	StateDir string
	// Snapshotter unpacks images (DefaultContainerdSnapshotter when empty).
	Snapshotter string
	// PullTimeout bounds one image pull (DefaultPullTimeout when zero).
	PullTimeout time.Duration
	// InsecureRegistries are registries (host or host:port) reached over
	// plain HTTP, like Docker's insecure-registries; loopback registries
	// always are (containerd's resolver default), others use HTTPS.
	InsecureRegistries []string
	// Network gives each pod its own address on the node's pod network.
	// Without one, every pod shares the host's network.
	Network *Network
}

// Containerd is a Runtime backed by a containerd daemon: one containerd
// container and task per pod container, one network namespace per pod.
type Containerd struct {
	cfg    ContainerdConfig
	client *client.Client

	mu    sync.Mutex // guards files
	files map[string]io.Closer
}

var _ Runtime = (*Containerd)(nil)

// NewContainerd connects to containerd at cfg.Address and checks that it answers.
func NewContainerd(ctx context.Context, cfg ContainerdConfig) (*Containerd, error) {
	if cfg.Address == "" {
		return nil, errors.New("failed to connect to containerd: no address")
	}
	if cfg.StateDir == "" {
		return nil, errors.New("failed to connect to containerd: no state directory")
	}
	if cfg.Namespace == "" {
		cfg.Namespace = DefaultContainerdNamespace
	}
	if cfg.Snapshotter == "" {
		cfg.Snapshotter = DefaultContainerdSnapshotter
	}
	if cfg.PullTimeout <= 0 {
		cfg.PullTimeout = DefaultPullTimeout
	}
	c, err := client.New(cfg.Address, client.WithDefaultNamespace(cfg.Namespace))
	if err != nil {
		return nil, fmt.Errorf("failed to connect to containerd %q: %w", cfg.Address, err)
	}
	vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := c.Version(vctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("failed to reach containerd %q: %w", cfg.Address, err)
	}
	return &Containerd{cfg: cfg, client: c, files: map[string]io.Closer{}}, nil
}

// Close closes the connection to containerd; containers keep running.
func (c *Containerd) Close() error {
	c.mu.Lock()
	for id, f := range c.files {
		if f != nil {
			f.Close()
		}
		delete(c.files, id)
	}
	c.mu.Unlock()
	return c.client.Close()
}

// Client returns the underlying containerd client.
func (c *Containerd) Client() *client.Client { return c.client }

// Name implements Runtime.
func (c *Containerd) Name() string { return "containerd" }

// Version implements Runtime: "containerd://1.6.20" (distribution suffixes
// such as Debian's "~ds1" are dropped).
func (c *Containerd) Version(ctx context.Context) (string, error) {
	v, err := c.client.Version(ctx)
	if err != nil {
		return "", fmt.Errorf("failed to get containerd version: %w", err)
	}
	ver := strings.TrimPrefix(v.Version, "v")
	if i := strings.IndexAny(ver, "~+"); i >= 0 {
		ver = ver[:i]
	}
	return "containerd://" + ver, nil
}

// ImageStatus implements Runtime. A present image that is not unpacked yet
// is unpacked.
func (c *Containerd) ImageStatus(ctx context.Context, ref string) (Image, bool, error) {
	norm, err := NormalizeImageRef(ref)
	if err != nil {
		return Image{}, false, err
	}
	img, err := c.client.GetImage(ctx, norm)
	if errdefs.IsNotFound(err) {
		return Image{}, false, nil
	}
	if err != nil {
		return Image{}, false, fmt.Errorf("failed to get image %q: %w", norm, err)
	}
	if err := c.unpack(ctx, img); err != nil {
		return Image{}, false, err
	}
	return c.describe(ctx, img)
}

// PullImage implements Runtime: containerd fetches the image from its
// registry and unpacks it.
func (c *Containerd) PullImage(ctx context.Context, ref string) (Image, error) {
	norm, err := NormalizeImageRef(ref)
	if err != nil {
		return Image{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.PullTimeout)
	defer cancel()
	// The resolver logs each failed fetch at info level; the error returned
	// here says it all, so only its warnings get through.
	ctx = log.WithLogger(ctx, quietLogger)
	opts := []client.RemoteOpt{client.WithPullUnpack, client.WithPullSnapshotter(c.cfg.Snapshotter)}
	if len(c.cfg.InsecureRegistries) > 0 {
		opts = append(opts, client.WithResolver(docker.NewResolver(docker.ResolverOptions{
			Hosts: docker.ConfigureDefaultRegistries(docker.WithPlainHTTP(plainHTTPMatcher(c.cfg.InsecureRegistries))),
		})))
	}
	img, err := c.client.Pull(ctx, norm, opts...)
	if err != nil {
		return Image{}, fmt.Errorf("failed to pull and unpack image %q: %w", norm, err)
	}
	out, _, err := c.describe(ctx, img)
	return out, err
}

// ListImages implements Runtime: the images in the node's namespace.
func (c *Containerd) ListImages(ctx context.Context) ([]Image, error) {
	imgs, err := c.client.ListImages(ctx)
	if err != nil {
		return nil, fmt.Errorf("failed to list images: %w", err)
	}
	out := make([]Image, 0, len(imgs))
	for _, img := range imgs {
		d, _, err := c.describe(ctx, img)
		if errdefs.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// plainHTTPMatcher matches loopback hosts and the given registries.
func plainHTTPMatcher(registries []string) func(string) (bool, error) {
	return func(host string) (bool, error) {
		for _, r := range registries {
			if host == r {
				return true, nil
			}
		}
		return docker.MatchLocalhost(host)
	}
}

func (c *Containerd) unpack(ctx context.Context, img client.Image) error {
	ok, err := img.IsUnpacked(ctx, c.cfg.Snapshotter)
	if err != nil {
		return fmt.Errorf("failed to check image %q: %w", img.Name(), err)
	}
	if ok {
		return nil
	}
	if err := img.Unpack(ctx, c.cfg.Snapshotter); err != nil {
		return fmt.Errorf("failed to unpack image %q: %w", img.Name(), err)
	}
	return nil
}

func (c *Containerd) describe(ctx context.Context, img client.Image) (Image, bool, error) {
	size, err := img.Size(ctx)
	if err != nil {
		return Image{}, false, fmt.Errorf("failed to get size of image %q: %w", img.Name(), err)
	}
	return Image{Ref: img.Name(), ID: imageDigestRef(img), Size: size}, true, nil
}

// imageDigestRef names an image by repository and manifest digest, the
// form kubelet shows as a container's imageID.
func imageDigestRef(img client.Image) string {
	named, err := reference.ParseNormalizedNamed(img.Name())
	if err != nil {
		return img.Target().Digest.String()
	}
	return named.Name() + "@" + img.Target().Digest.String()
}

// StartPod implements Runtime: it creates the pod's directory under
// StateDir (which marks the pod as present on this node) and, unless the
// pod is on the host network (or the node has no pod network), its own
// network namespace with loopback up, attached to the pod network.
func (c *Containerd) StartPod(ctx context.Context, pod PodSpec) (string, error) {
	if err := c.PreparePod(ctx, pod); err != nil {
		return "", err
	}
	if c.hostNetwork(pod) {
		return "", nil
	}
	ip, err := c.cfg.Network.Setup(ctx, pod, NetnsPath(pod.UID))
	if err != nil {
		return "", err
	}
	if err := writeHosts(filepath.Join(c.cfg.StateDir, pod.UID), pod, []string{ip}); err != nil {
		return "", err
	}
	return ip, nil
}

// PreparePod does what StartPod does short of attaching the pod to the
// network (the CNI ADD): it creates the pod's directory and its network
// namespace, all its containers need to be created. The agent creates a
// pod's first containers while StartPod attaches it, and starts them once
// StartPod returned.
func (c *Containerd) PreparePod(_ context.Context, pod PodSpec) error {
	dir := filepath.Join(c.cfg.StateDir, pod.UID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("failed to create pod directory %q: %w", dir, err)
	}
	if err := writeResolvConf(dir, pod); err != nil {
		return err
	}
	if c.hostNetwork(pod) {
		return nil
	}
	if err := writeHosts(dir, pod, nil); err != nil {
		return err
	}
	return ensureNetns(pod.UID)
}

// hostNetwork says whether the pod's containers use the host's network.
func (c *Containerd) hostNetwork(pod PodSpec) bool {
	return pod.HostNetwork || c.cfg.Network == nil
}

// Network is the node's pod network, nil when pods share the host's.
func (c *Containerd) Network() *Network { return c.cfg.Network }

// ListPods implements Runtime: pods with a directory under StateDir or
// with containers.
func (c *Containerd) ListPods(ctx context.Context) ([]string, error) {
	seen := map[string]bool{}
	entries, err := os.ReadDir(c.cfg.StateDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("failed to read state directory %q: %w", c.cfg.StateDir, err)
	}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			seen[e.Name()] = true
		}
	}
	ctrs, err := c.ListContainers(ctx, "")
	if err != nil {
		return nil, err
	}
	for _, ctr := range ctrs {
		seen[ctr.PodUID] = true
	}
	out := make([]string, 0, len(seen))
	for uid := range seen {
		out = append(out, uid)
	}
	sort.Strings(out)
	return out, nil
}

// CreateContainer implements Runtime: it creates the containerd container
// and its task (not started), with stdout and stderr going to separate
// files under the pod's log directory.
func (c *Containerd) CreateContainer(ctx context.Context, pod PodSpec, spec ContainerSpec) (_ string, retErr error) {
	norm, err := NormalizeImageRef(spec.Image)
	if err != nil {
		return "", err
	}
	img, err := c.client.GetImage(ctx, norm)
	if err != nil {
		return "", fmt.Errorf("failed to get image %q: %w", norm, err)
	}
	if err := c.unpack(ctx, img); err != nil {
		return "", err
	}
	imgSpec, err := img.Spec(ctx)
	if err != nil {
		return "", fmt.Errorf("failed to read config of image %q: %w", norm, err)
	}
	args := ProcessArgs(imgSpec.Config.Entrypoint, imgSpec.Config.Cmd, spec.Command, spec.Args)
	if len(args) == 0 {
		return "", fmt.Errorf("failed to create container %q: no command specified", spec.Name)
	}
	id, err := newContainerID()
	if err != nil {
		return "", err
	}
	hostname := pod.Hostname
	if hostname == "" {
		hostname = pod.Name
	}
	opts := []oci.SpecOpts{
		oci.WithImageConfig(img),
		oci.WithProcessArgs(args...),
		oci.WithHostname(hostname),
		oci.WithEnv([]string{"HOSTNAME=" + hostname}),
	}
	if len(spec.Env) > 0 {
		opts = append(opts, oci.WithEnv(spec.Env))
	}
	if spec.WorkingDir != "" {
		opts = append(opts, oci.WithProcessCwd(spec.WorkingDir))
	}
	if spec.CPUMillis > 0 {
		opts = append(opts, oci.WithCPUCFS(cpuQuota(spec.CPUMillis), cpuPeriod))
	}
	opts = append(opts, oci.WithCPUShares(cpuShares(spec.CPURequestMillis)))
	if spec.MemoryBytes > 0 {
		opts = append(opts, oci.WithMemoryLimit(uint64(spec.MemoryBytes)))
	}
	opts = append(opts, securityOpts(spec)...)
	opts = append(opts, cgroupFSOpts()...)
	if spec.OOMScoreAdj != nil {
		adj := *spec.OOMScoreAdj
		opts = append(opts, func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
			if s.Process == nil {
				s.Process = &specs.Process{}
			}
			s.Process.OOMScoreAdj = &adj
			return nil
		})
	}
	if len(spec.Mounts) > 0 {
		mounts := make([]specs.Mount, 0, len(spec.Mounts))
		for _, m := range spec.Mounts {
			mode := "rw"
			if m.ReadOnly {
				mode = "ro"
			}
			options := []string{"rbind", "rprivate", mode}
			if m.NoExec {
				options = append(options, "noexec", "nosuid", "nodev")
			}
			mounts = append(mounts, specs.Mount{Destination: m.ContainerPath, Type: "bind", Source: m.HostPath, Options: options})
		}
		opts = append(opts, oci.WithMounts(mounts))
	}
	if spec.TerminationMessagePath != "" {
		// A file of the container's own for its termination message,
		// writable by any user (the kubelet makes it so too).
		msg := c.terminationMessagePath(pod.UID, spec.Name, spec.Attempt)
		if err := os.MkdirAll(filepath.Dir(msg), 0o755); err != nil {
			return "", fmt.Errorf("failed to create the container's directory: %w", err)
		}
		if err := os.WriteFile(msg, nil, 0o666); err != nil {
			return "", fmt.Errorf("failed to create the termination message file: %w", err)
		}
		if err := os.Chmod(msg, 0o666); err != nil {
			return "", fmt.Errorf("failed to create the termination message file: %w", err)
		}
		opts = append(opts, oci.WithMounts([]specs.Mount{{Destination: spec.TerminationMessagePath, Type: "bind", Source: msg, Options: []string{"rbind", "rprivate", "rw"}}}))
	}
	// The pod's resolv.conf, by its dnsPolicy (the host's without one).
	resolv, err := withResolvConf(filepath.Join(c.cfg.StateDir, pod.UID), spec)
	if err != nil {
		return "", err
	}
	opts = append(opts, resolv...)
	if c.hostNetwork(pod) {
		opts = append(opts, oci.WithHostNamespace(specs.NetworkNamespace), oci.WithHostHostsFile)
	} else {
		opts = append(opts, oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: NetnsPath(pod.UID)}))
		// The kubelet's /etc/hosts, unless the container mounts a file of
		// its own there (a volume, or its termination message file).
		ownHosts := path.Clean("/"+spec.TerminationMessagePath) == "/etc/hosts" ||
			slices.ContainsFunc(spec.Mounts, func(m Mount) bool { return path.Clean(m.ContainerPath) == "/etc/hosts" })
		if !ownHosts {
			opts = append(opts, oci.WithMounts([]specs.Mount{{Destination: "/etc/hosts", Type: "bind",
				Source: filepath.Join(c.cfg.StateDir, pod.UID, etcHostsFile), Options: []string{"rbind", "rprivate", "rw"}}}))
		}
	}
	labels := map[string]string{
		LabelManaged:       "true",
		LabelPodUID:        pod.UID,
		LabelPodNamespace:  pod.Namespace,
		LabelPodName:       pod.Name,
		LabelContainerName: spec.Name,
		LabelAttempt:       strconv.Itoa(spec.Attempt),
		LabelImage:         spec.Image,
		LabelImageID:       imageDigestRef(img),
	}
	if spec.TerminationMessageFromLogs {
		labels[LabelMessageFromLogs] = "true"
	}
	ctr, err := c.client.NewContainer(ctx, id,
		client.WithImage(img),
		client.WithSnapshotter(c.cfg.Snapshotter),
		client.WithNewSnapshot(id, img),
		client.WithNewSpec(opts...),
		client.WithContainerLabels(labels),
	)
	if err != nil {
		return "", fmt.Errorf("failed to create container %q: %w", spec.Name, err)
	}
	defer func() {
		if retErr != nil {
			if err := ctr.Delete(context.WithoutCancel(ctx), client.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
				retErr = errors.Join(retErr, fmt.Errorf("failed to delete container %q: %w", id, err))
			}
		}
	}()
	logFile, err := c.openLog(pod.UID, spec.Name, spec.Attempt)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	c.files[id] = logFile
	c.mu.Unlock()
	defer func() {
		if retErr != nil {
			c.closeFiles(id)
		}
	}()
	creator := cio.NewCreator(cio.WithStreams(nil, logFile.stream(logStreamStdout), logFile.stream(logStreamStderr)), cio.WithFIFODir(c.fifoDir()))
	task, err := ctr.NewTask(ctx, creator)
	if err != nil {
		return "", fmt.Errorf("failed to create task for container %q: %w", spec.Name, err)
	}
	logFile.setIO(task.IO())
	return id, nil
}

// securityOpts applies the container's securityContext after
// oci.WithImageConfig, which sets the image's user with the groups the
// image's /etc/group lists for it. The process's additional groups are
// then those of its user in /etc/group (unless StrictSupplementalGroups)
// and SupplementalGroups, as containerd's CRI merges them; the pod's
// sysctls are set in the container's namespaces.
func securityOpts(spec ContainerSpec) []oci.SpecOpts {
	var opts []oci.SpecOpts
	if spec.RunAsUser != nil || spec.RunAsGroup != nil {
		uid, gid := uint32(0), uint32(0)
		if spec.RunAsUser != nil {
			uid = uint32(*spec.RunAsUser)
			gid = uid
		}
		if spec.RunAsGroup != nil {
			gid = uint32(*spec.RunAsGroup)
		}
		// WithUIDGID drops the image user's groups; the new user's are
		// looked up again.
		opts = append(opts, oci.WithUIDGID(uid, gid))
		if !spec.StrictSupplementalGroups {
			opts = append(opts, oci.WithAdditionalGIDs(strconv.FormatUint(uint64(uid), 10)))
		}
	}
	if spec.StrictSupplementalGroups {
		opts = append(opts, withPrimaryGroupOnly)
	}
	if len(spec.Sysctls) > 0 {
		opts = append(opts, withSysctls(spec.Sysctls))
	}
	if len(spec.SupplementalGroups) > 0 {
		opts = append(opts, withSupplementalGroups(spec.SupplementalGroups))
	}
	if spec.ReadOnlyRootFS {
		opts = append(opts, oci.WithRootFSReadonly())
	}
	if spec.NoNewPrivileges {
		opts = append(opts, oci.WithNoNewPrivileges)
	}
	capNames := func(in []string) (names []string, all bool) {
		for _, c := range in {
			if strings.EqualFold(c, "ALL") {
				all = true
			}
			names = append(names, "CAP_"+strings.ToUpper(strings.TrimPrefix(c, "CAP_")))
		}
		return names, all
	}
	if drop, all := capNames(spec.DropCapabilities); all {
		opts = append(opts, oci.WithCapabilities([]string{}))
	} else if len(drop) > 0 {
		opts = append(opts, oci.WithDroppedCapabilities(drop))
	}
	if add, _ := capNames(spec.AddCapabilities); len(add) > 0 {
		opts = append(opts, oci.WithAddedCapabilities(add))
	}
	return opts
}

// withPrimaryGroupOnly drops the additional groups the image's
// /etc/group gave the process: it keeps its primary group alone.
func withPrimaryGroupOnly(_ context.Context, _ oci.Client, _ *containers.Container, s *specs.Spec) error {
	if s.Process == nil {
		s.Process = &specs.Process{}
	}
	s.Process.User.AdditionalGids = []uint32{s.Process.User.GID}
	return nil
}

// withSysctls sets the container's sysctls, which runc writes in its
// namespaces before the process starts, as containerd's CRI does.
func withSysctls(sysctls map[string]string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Linux == nil {
			s.Linux = &specs.Linux{}
		}
		if s.Linux.Sysctl == nil {
			s.Linux.Sysctl = map[string]string{}
		}
		maps.Copy(s.Linux.Sysctl, sysctls)
		return nil
	}
}

// withSupplementalGroups adds groups to the process's additional groups,
// each once.
func withSupplementalGroups(groups []int64) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *specs.Spec) error {
		if s.Process == nil {
			s.Process = &specs.Process{}
		}
		for _, g := range groups {
			if !slices.Contains(s.Process.User.AdditionalGids, uint32(g)) {
				s.Process.User.AdditionalGids = append(s.Process.User.AdditionalGids, uint32(g))
			}
		}
		return nil
	}
}

// PodDir is the pod's directory on the node (logs, volumes).
func (c *Containerd) PodDir(podUID string) string { return filepath.Join(c.cfg.StateDir, podUID) }

// LogPath returns the file that holds a pod container instance's output.
func (c *Containerd) LogPath(podUID, container string, attempt int) string {
	return filepath.Join(c.cfg.StateDir, podUID, container, strconv.Itoa(attempt)+".log")
}

// terminationMessagePath is the host file mounted at a container's
// terminationMessagePath.
func (c *Containerd) terminationMessagePath(podUID, container string, attempt int) string {
	return filepath.Join(c.cfg.StateDir, podUID, container, strconv.Itoa(attempt)+".termination-log")
}

// logTail is the end of a container's log: its last messageLogLines
// lines, at most messageLogBytes of them.
func (c *Containerd) logTail(ctx context.Context, st ContainerStatus) string {
	var b bytes.Buffer
	if err := ReadContainerLog(ctx, c.LogPath(st.PodUID, st.Name, st.Attempt), LogOptions{TailLines: messageLogLines}, &b, nil); err != nil {
		return ""
	}
	out := b.Bytes()
	return string(out[max(0, len(out)-messageLogBytes):])
}

// readTerminationMessage reads at most MaxTerminationMessage bytes of a
// container's termination message; a container without one has none.
func readTerminationMessage(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, MaxTerminationMessage))
	return string(b)
}

func (c *Containerd) fifoDir() string { return filepath.Join(c.cfg.StateDir, ".fifo") }

func (c *Containerd) openLog(podUID, container string, attempt int) (*criLogFile, error) {
	path := c.LogPath(podUID, container, attempt)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("failed to create log directory %q: %w", filepath.Dir(path), err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return nil, fmt.Errorf("failed to open log %q: %w", path, err)
	}
	return &criLogFile{f: f}, nil
}

// logDrainWait bounds how long the first status of an exited container
// waits for its output to be copied to its log: the copy ends as soon as
// the container's pipes close, which on a loaded node can take longer than
// a second, and a pod reported done before its log is complete shows
// clients an empty or cut log.
const logDrainWait = 5 * time.Second

// drainLog finishes the log of an exited container this Containerd copies
// the output of (criLogFile.drain).
func (c *Containerd) drainLog(id string) {
	c.mu.Lock()
	f, _ := c.files[id].(*criLogFile)
	c.mu.Unlock()
	if f != nil {
		f.drain(logDrainWait)
	}
}

func (c *Containerd) closeFiles(id string) {
	c.mu.Lock()
	f := c.files[id]
	delete(c.files, id)
	c.mu.Unlock()
	if f != nil {
		f.Close()
	}
}

// reattachLogs copies a running task's output to its log files again
// when this Containerd did not create it (the agent restarted), so the
// container never blocks on a full pipe. A failure only costs log lines.
func (c *Containerd) reattachLogs(ctx context.Context, ctr client.Container, st ContainerStatus) {
	c.mu.Lock()
	if _, ok := c.files[st.ID]; ok {
		c.mu.Unlock()
		return
	}
	c.files[st.ID] = nil
	c.mu.Unlock()
	logFile, err := c.openLog(st.PodUID, st.Name, st.Attempt)
	if err != nil {
		return
	}
	if _, err := ctr.Task(ctx, cio.NewAttach(cio.WithStreams(nil, logFile.stream(logStreamStdout), logFile.stream(logStreamStderr)))); err != nil {
		logFile.Close()
		return
	}
	c.mu.Lock()
	c.files[st.ID] = logFile
	c.mu.Unlock()
}

// StartContainer implements Runtime.
func (c *Containerd) StartContainer(ctx context.Context, id string) error {
	ctr, err := c.client.LoadContainer(ctx, id)
	if err != nil {
		return fmt.Errorf("failed to load container %q: %w", id, err)
	}
	task, err := ctr.Task(ctx, nil)
	if err != nil {
		return fmt.Errorf("failed to load task of container %q: %w", id, err)
	}
	if err := task.Start(ctx); err != nil {
		return fmt.Errorf("failed to start container %q: %w", id, err)
	}
	if _, err := ctr.SetLabels(ctx, map[string]string{LabelStartedAt: time.Now().UTC().Format(time.RFC3339Nano)}); err != nil {
		return fmt.Errorf("failed to label container %q: %w", id, err)
	}
	return nil
}

// StopContainer implements Runtime.
// UpdateContainerResources implements Resizer: the running task's cgroup
// gets r's cpu shares, quota and memory limit (none lifts a limit), as the
// kubelet's UpdateContainerResources through CRI.
func (c *Containerd) UpdateContainerResources(ctx context.Context, id string, r Resources) error {
	ctr, err := c.client.LoadContainer(ctx, id)
	if errdefs.IsNotFound(err) {
		return fmt.Errorf("failed to update container %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("failed to load container %q: %w", id, err)
	}
	task, err := ctr.Task(ctx, nil)
	if err != nil {
		return fmt.Errorf("failed to find the task of container %q: %w", id, err)
	}
	shares, period := cpuShares(r.CPURequestMillis), uint64(cpuPeriod)
	quota, memory := int64(-1), int64(-1)
	if r.CPULimitMillis > 0 {
		quota = cpuQuota(r.CPULimitMillis)
	}
	if r.MemoryLimitBytes > 0 {
		memory = r.MemoryLimitBytes
	}
	res := &specs.LinuxResources{
		CPU:    &specs.LinuxCPU{Shares: &shares, Quota: &quota, Period: &period},
		Memory: &specs.LinuxMemory{Limit: &memory},
	}
	if err := task.Update(ctx, client.WithResources(res)); err != nil {
		return fmt.Errorf("failed to update the resources of container %q: %w", id, err)
	}
	return nil
}

// cgroupFSOpts give a container its cgroups read-only at /sys/fs/cgroup,
// as containerd's CRI does for the kubelet: on a cgroup v1 host runc binds
// the container's own directory of each controller there (cpu/cpu.shares
// is the container's), and on a cgroup v2 host the container gets a cgroup
// namespace of its own so that /sys/fs/cgroup is its cgroup.
func cgroupFSOpts() []oci.SpecOpts {
	opts := []oci.SpecOpts{oci.WithMounts([]specs.Mount{{
		Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup",
		Options: []string{"nosuid", "noexec", "nodev", "relatime", "ro"},
	}})}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		opts = append(opts, oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.CgroupNamespace}))
	}
	return opts
}

// cpuShares is the kubelet's MilliCPUToShares: a container's cpu request
// as cgroup cpu shares (2 without one, at most 262144).
func cpuShares(milli int64) uint64 {
	return uint64(min(max(milli*1024/1000, 2), 262144))
}

// cpuQuota is the kubelet's MilliCPUToQuota: a cpu limit as the CFS quota
// of cpuPeriod, at least 1000 (the kernel's least).
func cpuQuota(milli int64) int64 {
	return max(milli*cpuPeriod/1000, 1000)
}

func (c *Containerd) StopContainer(ctx context.Context, id string, grace time.Duration) error {
	ctr, err := c.client.LoadContainer(ctx, id)
	if errdefs.IsNotFound(err) {
		return fmt.Errorf("failed to stop container %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("failed to load container %q: %w", id, err)
	}
	return stopTask(ctx, ctr, grace)
}

// StopPod implements Runtime: every running task of the pod gets SIGTERM,
// then SIGKILL if it has not exited after grace. Tasks are stopped in
// parallel, as kubelet does.
func (c *Containerd) StopPod(ctx context.Context, podUID string, grace time.Duration) error {
	ctrs, err := c.podContainers(ctx, podUID)
	if err != nil {
		return err
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, ctr := range ctrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := stopTask(ctx, ctr, grace); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// stopTask sends SIGTERM, waits up to grace, then SIGKILLs every process
// of the container and waits for the task to be reaped.
func stopTask(ctx context.Context, ctr client.Container, grace time.Duration) error {
	task, err := ctr.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("failed to load task of container %q: %w", ctr.ID(), err)
	}
	st, err := task.Status(ctx)
	if err != nil {
		return fmt.Errorf("failed to get status of container %q: %w", ctr.ID(), err)
	}
	if st.Status == client.Stopped {
		return nil
	}
	exitCh, err := task.Wait(ctx)
	if err != nil {
		return fmt.Errorf("failed to wait for container %q: %w", ctr.ID(), err)
	}
	if grace > 0 {
		if err := task.Kill(ctx, syscall.SIGTERM); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("failed to send SIGTERM to container %q: %w", ctr.ID(), err)
		}
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-exitCh:
			return nil
		case <-t.C:
		case <-ctx.Done():
			return fmt.Errorf("failed to stop container %q: %w", ctr.ID(), ctx.Err())
		}
	}
	if err := task.Kill(ctx, syscall.SIGKILL, client.WithKillAll); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("failed to send SIGKILL to container %q: %w", ctr.ID(), err)
	}
	t := time.NewTimer(killWait)
	defer t.Stop()
	select {
	case <-exitCh:
		return nil
	case <-t.C:
		return fmt.Errorf("failed to stop container %q: still running %s after SIGKILL", ctr.ID(), killWait)
	case <-ctx.Done():
		return fmt.Errorf("failed to stop container %q: %w", ctr.ID(), ctx.Err())
	}
}

// RemoveContainer implements Runtime: it kills what still runs, deletes the
// task, the container and its snapshot. Log files stay until RemovePod.
func (c *Containerd) RemoveContainer(ctx context.Context, id string) error {
	defer c.closeFiles(id)
	ctr, err := c.client.LoadContainer(ctx, id)
	if errdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("failed to load container %q: %w", id, err)
	}
	return removeContainer(ctx, ctr)
}

func removeContainer(ctx context.Context, ctr client.Container) error {
	if err := stopTask(ctx, ctr, 0); err != nil {
		return err
	}
	task, err := ctr.Task(ctx, nil)
	switch {
	case errdefs.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("failed to load task of container %q: %w", ctr.ID(), err)
	default:
		if _, err := task.Delete(ctx, client.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("failed to delete task of container %q: %w", ctr.ID(), err)
		}
	}
	if err := ctr.Delete(ctx, client.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("failed to delete container %q: %w", ctr.ID(), err)
	}
	return nil
}

// RemovePod implements Runtime: it removes the pod's containers, its
// network (address, veth, hostPorts), its network namespace, its log
// directory and its image volumes.
func (c *Containerd) RemovePod(ctx context.Context, podUID string) error {
	ctrs, err := c.podContainers(ctx, podUID)
	if err != nil {
		return err
	}
	var errs []error
	for _, ctr := range ctrs {
		if err := removeContainer(ctx, ctr); err != nil {
			errs = append(errs, err)
		}
		c.closeFiles(ctr.ID())
	}
	if c.cfg.Network != nil {
		if err := c.cfg.Network.Teardown(ctx, podUID, NetnsPath(podUID)); err != nil {
			errs = append(errs, err)
		}
	}
	if err := removeNetns(podUID); err != nil {
		errs = append(errs, err)
	}
	dir := filepath.Join(c.cfg.StateDir, podUID)
	if err := unmountUnder(dir); err != nil {
		errs = append(errs, err)
	} else if err := c.releaseImageVolumes(ctx, podUID); err != nil {
		errs = append(errs, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		errs = append(errs, fmt.Errorf("failed to remove pod directory %q: %w", dir, err))
	}
	return errors.Join(errs...)
}

func (c *Containerd) podContainers(ctx context.Context, podUID string) ([]client.Container, error) {
	filter := fmt.Sprintf("labels.%q==true", LabelManaged)
	if podUID != "" {
		filter += fmt.Sprintf(",labels.%q==%s", LabelPodUID, podUID)
	}
	ctrs, err := c.client.Containers(ctx, filter)
	if err != nil {
		return nil, fmt.Errorf("failed to list containers of pod %q: %w", podUID, err)
	}
	return ctrs, nil
}

// ListContainers implements Runtime.
func (c *Containerd) ListContainers(ctx context.Context, podUID string) ([]ContainerStatus, error) {
	ctrs, err := c.podContainers(ctx, podUID)
	if err != nil {
		return nil, err
	}
	out := make([]ContainerStatus, 0, len(ctrs))
	for _, ctr := range ctrs {
		// The list already carries each container's record.
		info, err := ctr.Info(ctx, client.WithoutRefreshedMetadata)
		if errdefs.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("failed to get container %q: %w", ctr.ID(), err)
		}
		st, err := c.containerStatus(ctx, ctr, info)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out, nil
}

// containerStatus reads one container's state; a running container whose
// output nobody reads (this agent restarted) gets its logs reattached.
func (c *Containerd) containerStatus(ctx context.Context, ctr client.Container, info containers.Container) (ContainerStatus, error) {
	l := info.Labels
	attempt, _ := strconv.Atoi(l[LabelAttempt])
	st := ContainerStatus{
		ID:           info.ID,
		PodUID:       l[LabelPodUID],
		PodNamespace: l[LabelPodNamespace],
		PodName:      l[LabelPodName],
		Name:         l[LabelContainerName],
		Attempt:      attempt,
		Image:        l[LabelImage],
		ImageID:      l[LabelImageID],
		State:        StateCreated,
		CreatedAt:    info.CreatedAt,
	}
	if s := l[LabelStartedAt]; s != "" {
		st.StartedAt, _ = time.Parse(time.RFC3339Nano, s)
	}
	// One task lookup: each is a call to the container's shim, and every
	// pod worker lists its containers each PodResyncInterval.
	resp, err := c.client.TaskService().Get(ctx, &tasks.GetRequest{ContainerID: ctr.ID()})
	if err = errgrpc.ToNative(err); errdefs.IsNotFound(err) {
		if !st.StartedAt.IsZero() {
			st.State = StateUnknown
		}
		return st, nil
	}
	if err != nil {
		return ContainerStatus{}, fmt.Errorf("failed to get status of container %q: %w", ctr.ID(), err)
	}
	switch p := resp.GetProcess(); p.GetStatus() {
	case tasktypes.Status_CREATED:
		st.State = StateCreated
	case tasktypes.Status_RUNNING, tasktypes.Status_PAUSED, tasktypes.Status_PAUSING:
		st.State = StateRunning
		c.reattachLogs(ctx, ctr, st)
	case tasktypes.Status_STOPPED:
		st.State = StateExited
		st.ExitCode = int32(p.GetExitStatus())
		if p.GetExitedAt() != nil {
			st.FinishedAt = p.GetExitedAt().AsTime()
		}
		c.drainLog(ctr.ID())
		st.Message = readTerminationMessage(c.terminationMessagePath(st.PodUID, st.Name, st.Attempt))
		if st.Message == "" && st.ExitCode != 0 && l[LabelMessageFromLogs] == "true" {
			st.Message = c.logTail(ctx, st)
		}
		st.Reason = "Error"
		if p.GetExitStatus() == 0 {
			st.Reason = "Completed"
		} else if c.oomKilled(ctx, ctr, l) {
			st.Reason = "OOMKilled"
		}
	default:
		st.State = StateUnknown
	}
	return st, nil
}

// LabelExitReason caches why a container exited ("OOMKilled" or "Error"),
// read once from its memory cgroup while the stopped task still holds it.
const LabelExitReason = "glassplane.io/exit-reason"

// oomKilled reports whether the kernel's OOM killer killed a process of
// the stopped container, from its memory cgroup's oom_kill counter
// (cgroup v1 memory.oom_control or v2 memory.events).
func (c *Containerd) oomKilled(ctx context.Context, ctr client.Container, labels map[string]string) bool {
	if r := labels[LabelExitReason]; r != "" {
		return r == "OOMKilled"
	}
	spec, err := ctr.Spec(ctx)
	if err != nil || spec.Linux == nil || spec.Linux.CgroupsPath == "" {
		return false
	}
	reason := "Error"
	for _, f := range []string{
		filepath.Join("/sys/fs/cgroup/memory", spec.Linux.CgroupsPath, "memory.oom_control"),
		filepath.Join("/sys/fs/cgroup", spec.Linux.CgroupsPath, "memory.events"),
	} {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if n, ok := strings.CutPrefix(line, "oom_kill "); ok && strings.TrimSpace(n) != "0" {
				reason = "OOMKilled"
			}
		}
	}
	_, _ = ctr.SetLabels(ctx, map[string]string{LabelExitReason: reason})
	return reason == "OOMKilled"
}

// ImportImage imports an OCI or Docker image archive, unpacks the images
// in it and returns their names.
func (c *Containerd) ImportImage(ctx context.Context, r io.Reader) ([]string, error) {
	imgs, err := c.client.Import(ctx, r)
	if err != nil {
		return nil, fmt.Errorf("failed to import image archive: %w", err)
	}
	names := make([]string, 0, len(imgs))
	for _, i := range imgs {
		img := client.NewImage(c.client, i)
		if err := c.unpack(ctx, img); err != nil {
			return nil, err
		}
		names = append(names, i.Name)
	}
	return names, nil
}

// ImportImage connects to containerd at address and imports an OCI or
// Docker image archive into DefaultContainerdNamespace, for
// `glassplane image import`. It returns the imported names.
func ImportImage(ctx context.Context, address string, r io.Reader) ([]string, error) {
	cl, err := client.New(address, client.WithDefaultNamespace(DefaultContainerdNamespace))
	if err != nil {
		return nil, fmt.Errorf("failed to connect to containerd %q: %w", address, err)
	}
	defer cl.Close()
	c := &Containerd{cfg: ContainerdConfig{Snapshotter: DefaultContainerdSnapshotter}, client: cl}
	return c.ImportImage(ctx, r)
}

// ProcessArgs combines an image's entrypoint and cmd with a container's
// command and args the way Kubernetes does: command replaces the
// entrypoint (and drops cmd), args replaces cmd.
func ProcessArgs(entrypoint, cmd, command, args []string) []string {
	switch {
	case len(command) > 0:
		return append(append([]string{}, command...), args...)
	case len(args) > 0:
		return append(append([]string{}, entrypoint...), args...)
	default:
		return append(append([]string{}, entrypoint...), cmd...)
	}
}
