package node

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"log/slog"
	"maps"
	"net"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/component-helpers/apimachinery/lease"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/glassplane/glassplane/controlplane/localpath"
	"github.com/glassplane/glassplane/controlplane/usage"
)

// Simulated node capacity defaults (what a KWOK node typically advertises).
var simulatedCapacity = corev1.ResourceList{
	corev1.ResourceCPU:              resource.MustParse("4"),
	corev1.ResourceMemory:           resource.MustParse("16Gi"),
	corev1.ResourcePods:             resource.MustParse("110"),
	corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
}

// registerWithRetry registers the node, retrying with backoff until the
// API server accepts it or ctx ends.
func (a *Agent) registerWithRetry(ctx context.Context) (*corev1.Node, error) {
	delay := registerRetryInitialBackoff
	for {
		node, err := a.registerNode(ctx)
		if err == nil {
			return node, nil
		}
		a.log.Warn("failed to register node, retrying", "err", err, "retryIn", delay)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("failed to register node %q: %w", a.cfg.NodeName, ctx.Err())
		case <-t.C:
		}
		delay = min(delay*2, registerRetryMaxBackoff)
	}
}

// registerNode creates the Node (or takes over an existing one, updating
// its labels) and posts a fresh status.
func (a *Agent) registerNode(ctx context.Context) (*corev1.Node, error) {
	want, err := a.desiredNode(ctx)
	if err != nil {
		return nil, err
	}
	node, err := a.client.CoreV1().Nodes().Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := a.client.CoreV1().Nodes().Get(ctx, a.cfg.NodeName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur = cur.DeepCopy()
			if cur.Labels == nil {
				cur.Labels = map[string]string{}
			}
			maps.Copy(cur.Labels, want.Labels)
			if cur.Annotations == nil {
				cur.Annotations = map[string]string{}
			}
			maps.Copy(cur.Annotations, want.Annotations)
			if cur.Spec.PodCIDR == "" && want.Spec.PodCIDR != "" {
				cur.Spec.PodCIDR = want.Spec.PodCIDR
				cur.Spec.PodCIDRs = want.Spec.PodCIDRs
			}
			node, err = a.client.CoreV1().Nodes().Update(ctx, cur, metav1.UpdateOptions{})
			return err
		})
	}
	if err != nil {
		return nil, fmt.Errorf("failed to register node %q: %w", a.cfg.NodeName, err)
	}
	if err := a.updateNodeStatus(ctx); err != nil {
		return nil, err
	}
	return node, nil
}

// desiredNode is the Node as kubelet would register it.
func (a *Agent) desiredNode(ctx context.Context) (*corev1.Node, error) {
	status, err := a.nodeStatus(ctx, nil)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{
		corev1.LabelHostname:      a.cfg.NodeName,
		corev1.LabelOSStable:      goruntime.GOOS,
		corev1.LabelArchStable:    goruntime.GOARCH,
		"beta.kubernetes.io/os":   goruntime.GOOS,
		"beta.kubernetes.io/arch": goruntime.GOARCH,
		LabelRuntime:              a.cfg.Runtime.Name(),
	}
	maps.Copy(labels, a.cfg.Labels)
	annotations := map[string]string{
		"volumes.kubernetes.io/controller-managed-attach-detach": "true",
	}
	switch {
	case a.cfg.PodNetworkProblem != "":
		annotations[AnnotationPodNetwork] = "host: " + a.cfg.PodNetworkProblem
	case a.cfg.PodCIDR != "":
		annotations[AnnotationPodNetwork] = "cni"
	}
	if a.cfg.Simulated {
		annotations[usage.AnnotationSimulatedUsage] = cmp.Or(a.cfg.SimulatedUsage, usage.DefaultSimulatedUsage)
	} else {
		annotations[localpath.AnnotationDir] = localpath.VolumesDir(a.cfg.DataDir)
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        a.cfg.NodeName,
			Labels:      labels,
			Annotations: annotations,
		},
		Status: *status,
	}
	if a.cfg.PodCIDR != "" {
		node.Spec.PodCIDR = a.cfg.PodCIDR
		node.Spec.PodCIDRs = []string{a.cfg.PodCIDR}
	}
	return node, nil
}

// nodeStatus computes the node's status; conditions keep their transition
// times from old.
func (a *Agent) nodeStatus(ctx context.Context, old *corev1.NodeStatus) (*corev1.NodeStatus, error) {
	version, err := a.cfg.Runtime.Version(ctx)
	if err != nil {
		return nil, fmt.Errorf("failed to get runtime version: %w", err)
	}
	capacity := a.capacity()
	// Extended resources someone else put in the node's capacity (a
	// device plugin's, an operator's patch) stay, and count in
	// allocatable, as the kubelet keeps them.
	if old != nil {
		for name, q := range old.Capacity {
			if _, ours := capacity[name]; !ours && isExtendedResourceName(name) {
				capacity[name] = q
			}
		}
	}
	images, err := a.nodeImages(ctx)
	if err != nil {
		return nil, err
	}
	now := metav1.Now()
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		c := corev1.NodeCondition{Type: t, Status: s, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}
		if old != nil {
			for _, o := range old.Conditions {
				if o.Type == t && o.Status == s {
					c.LastTransitionTime = o.LastTransitionTime
				}
			}
		}
		return c
	}
	var pressure nodePressure
	if !a.cfg.Simulated {
		pressure = readPressure(a.cfg.DataDir, a.log)
	}
	conditions := []corev1.NodeCondition{
		cond(pressureCondition(corev1.NodeMemoryPressure, pressure.memory)),
		cond(pressureCondition(corev1.NodeDiskPressure, pressure.disk)),
		cond(pressureCondition(corev1.NodePIDPressure, pressure.pid)),
		cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"),
	}
	if old != nil {
		a.recordConditionChanges(old.Conditions, conditions)
	}
	hostname := a.cfg.NodeName
	info := a.systemInfo()
	info.ContainerRuntimeVersion = version
	info.KubeletVersion = a.cfg.KubeletVersion
	return &corev1.NodeStatus{
		Capacity:    capacity,
		Allocatable: allocatable(capacity, a.cfg.SystemReserved),
		Conditions:  conditions,
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: a.nodeIP},
			{Type: corev1.NodeHostName, Address: hostname},
		},
		NodeInfo:        info,
		Images:          images,
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: a.serverPort}},
	}, nil
}

// updateNodeStatus posts the node's current status when it changed, or
// when NodeStatusReportInterval passed since it was last posted, as
// kubelet does: the Lease is the heartbeat, and a thousand nodes posting an
// unchanged status every minute would cost the API server a write each.
func (a *Agent) updateNodeStatus(ctx context.Context) error {
	posted := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := a.client.CoreV1().Nodes().Get(ctx, a.cfg.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		status, err := a.nodeStatus(ctx, &cur.Status)
		if err != nil {
			return err
		}
		if !a.lastReport.IsZero() && time.Since(a.lastReport) < a.cfg.NodeStatusReportInterval && sameNodeStatus(status, &cur.Status) {
			return nil
		}
		cur = cur.DeepCopy()
		cur.Status = *status
		_, err = a.client.CoreV1().Nodes().UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		posted = err == nil
		return err
	})
	if err != nil {
		return fmt.Errorf("failed to update status of node %q: %w", a.cfg.NodeName, err)
	}
	if posted {
		a.lastReport = time.Now()
	}
	return nil
}

// sameNodeStatus reports whether two node statuses differ only in their
// conditions' heartbeat times.
func sameNodeStatus(a, b *corev1.NodeStatus) bool {
	strip := func(s *corev1.NodeStatus) *corev1.NodeStatus {
		s = s.DeepCopy()
		for i := range s.Conditions {
			s.Conditions[i].LastHeartbeatTime = metav1.Time{}
		}
		return s
	}
	return equality.Semantic.DeepEqual(strip(a), strip(b))
}

// nodeStatusLoop updates the node status every NodeStatusInterval, with
// up to 4% jitter as kubelet's syncNodeStatus loop has, and when kicked; a
// node deleted from the API is registered again.
func (a *Agent) nodeStatusLoop(ctx context.Context) {
	t := time.NewTimer(wait.Jitter(a.cfg.NodeStatusInterval, nodeStatusJitter))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-a.statusKick:
			t.Stop()
		}
		t.Reset(wait.Jitter(a.cfg.NodeStatusInterval, nodeStatusJitter))
		err := a.updateNodeStatus(ctx)
		if apierrors.IsNotFound(err) {
			_, err = a.registerNode(ctx)
		}
		if err != nil && ctx.Err() == nil {
			a.log.Warn("failed to post node status", "err", err)
		}
	}
}

// nodeStatusJitter is kubelet's jitter factor for its node status loop.
const nodeStatusJitter = 0.04

// leaseLoop keeps the node's Lease in kube-node-lease with kubelet's own
// lease controller (k8s.io/component-helpers): it creates the Lease, owned
// by the Node, and renews it every LeaseRenewInterval with up to 4% jitter,
// from the copy it last wrote rather than reading it first (only this node
// writes its Lease), and reads and creates it again when that fails. The
// jitter matters here: simulated nodes started together would otherwise
// renew in the same instant every interval, a hundred writes at once.
func (a *Agent) leaseLoop(ctx context.Context, node *corev1.Node) {
	ctl := lease.NewController(clock.RealClock{}, a.client, a.cfg.NodeName,
		int32(a.cfg.LeaseDuration/time.Second), nil, a.cfg.LeaseRenewInterval,
		a.cfg.NodeName, LeaseNamespace, nodeOwner(node))
	logger := logr.FromSlogHandler(stoppedQuiet{ctx, a.log.Handler()})
	ctl.Run(klog.NewContext(ctx, logger))
}

// stoppedQuiet logs through h, at debug level once ctx has ended: the lease
// controller reports a renewal that the agent's stop cut short as a failed
// update, an error, as the agent's own loops do not.
type stoppedQuiet struct {
	ctx context.Context
	h   slog.Handler
}

func (q stoppedQuiet) level(l slog.Level) slog.Level {
	if q.ctx.Err() != nil {
		return slog.LevelDebug
	}
	return l
}

func (q stoppedQuiet) Enabled(ctx context.Context, l slog.Level) bool {
	return q.h.Enabled(ctx, q.level(l))
}

func (q stoppedQuiet) Handle(ctx context.Context, r slog.Record) error {
	// logr hands errors on without asking Enabled.
	r.Level = q.level(r.Level)
	if !q.h.Enabled(ctx, r.Level) {
		return nil
	}
	return q.h.Handle(ctx, r)
}

func (q stoppedQuiet) WithAttrs(attrs []slog.Attr) slog.Handler {
	return stoppedQuiet{q.ctx, q.h.WithAttrs(attrs)}
}

func (q stoppedQuiet) WithGroup(name string) slog.Handler {
	return stoppedQuiet{q.ctx, q.h.WithGroup(name)}
}

// nodeOwner makes the Node the owner of its Lease, as kubelet's
// setNodeOwnerFunc does, so that deleting the Node deletes the Lease.
func nodeOwner(node *corev1.Node) lease.ProcessLeaseFunc {
	return func(l *coordinationv1.Lease) error {
		if len(l.OwnerReferences) == 0 && node != nil && node.UID != "" {
			l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}
		}
		return nil
	}
}

// capacity is the node's resources: simulated defaults or the host's,
// with Config.Capacity on top.
// allocatable is what the Node reports as allocatable: capacity less
// what is reserved.
func (a *Agent) allocatable() corev1.ResourceList {
	return allocatable(a.capacity(), a.cfg.SystemReserved)
}

func (a *Agent) capacity() corev1.ResourceList {
	var c corev1.ResourceList
	if a.cfg.Simulated {
		c = simulatedCapacity.DeepCopy()
	} else {
		c = corev1.ResourceList{
			corev1.ResourceCPU:  *resource.NewQuantity(int64(goruntime.NumCPU()), resource.DecimalSI),
			corev1.ResourcePods: resource.MustParse("110"),
		}
		if mem, err := meminfo("MemTotal:"); err == nil {
			c[corev1.ResourceMemory] = *resource.NewQuantity(mem, resource.BinarySI)
		} else {
			a.log.Debug("failed to read memory size", "err", err)
		}
		var fs syscall.Statfs_t
		if err := syscall.Statfs(a.cfg.DataDir, &fs); err == nil {
			c[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(int64(fs.Blocks)*fs.Bsize, resource.BinarySI)
		} else {
			a.log.Debug("failed to measure data directory", "dir", a.cfg.DataDir, "err", err)
		}
	}
	maps.Copy(c, a.cfg.Capacity)
	return c
}

// systemInfo describes the host as kubelet does in nodeInfo.
func (a *Agent) systemInfo() corev1.NodeSystemInfo {
	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	info := corev1.NodeSystemInfo{
		MachineID:       read("/etc/machine-id"),
		SystemUUID:      read("/sys/class/dmi/id/product_uuid"),
		BootID:          read("/proc/sys/kernel/random/boot_id"),
		KernelVersion:   read("/proc/sys/kernel/osrelease"),
		OSImage:         osImage(),
		OperatingSystem: goruntime.GOOS,
		Architecture:    goruntime.GOARCH,
	}
	if a.cfg.Simulated {
		h := fnv.New64a()
		h.Write([]byte(a.cfg.NodeName))
		id := fmt.Sprintf("%016x%016x", h.Sum64(), h.Sum64()^0x5bd1e995)
		info.MachineID, info.SystemUUID = id, id
		info.OSImage = "Glassplane simulated node"
	}
	return info
}

// osImage is PRETTY_NAME from /etc/os-release.
func osImage() string {
	b, err := os.ReadFile("/etc/os-release")
	if err != nil {
		return goruntime.GOOS
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return goruntime.GOOS
}

// hostIPv4 is the first IPv4 address of an up, non-loopback interface, or
// 127.0.0.1 when there is none.
func hostIPv4() string {
	ifaces, err := net.Interfaces()
	if err != nil {
		return "127.0.0.1"
	}
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, addr := range addrs {
			if ipn, ok := addr.(*net.IPNet); ok && ipn.IP.To4() != nil {
				return ipn.IP.String()
			}
		}
	}
	return "127.0.0.1"
}

// podIPAllocator hands out made-up pod IPs for a simulated node from a /24
// derived from the node name (10.244.N.0/24); no traffic ever goes there.
type podIPAllocator struct {
	prefix string

	mu    sync.Mutex // guards next and byUID
	next  int
	byUID map[string]string
}

func newPodIPAllocator(nodeName string) *podIPAllocator {
	h := fnv.New32a()
	h.Write([]byte(nodeName))
	return &podIPAllocator{prefix: fmt.Sprintf("10.244.%d.", h.Sum32()%250+1), next: 2, byUID: map[string]string{}}
}

// get returns the pod's IP, allocating one on first use.
func (p *podIPAllocator) get(uid string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ip, ok := p.byUID[uid]; ok {
		return ip
	}
	ip := p.prefix + strconv.Itoa(p.next)
	p.next++
	if p.next > 254 {
		p.next = 2
	}
	p.byUID[uid] = ip
	return ip
}

// release forgets the pod's IP.
func (p *podIPAllocator) release(uid string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.byUID, uid)
}
