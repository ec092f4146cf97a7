package node

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Pressure thresholds: kubelet's default hard eviction thresholds
// (memory.available<100Mi, nodefs.available<10%, nodefs.inodesFree<5%),
// and fewer than 10% of the PIDs left.
const (
	memoryAvailableThreshold = 100 << 20
	diskAvailablePercent     = 10
	inodesFreePercent        = 5
	pidAvailablePercent      = 10
	// maxNodeImages is how many images the status lists, biggest first,
	// as kubelet's nodeStatusMaxImages.
	maxNodeImages = 50
)

// allocatable is capacity minus what is reserved, never below zero.
func allocatable(capacity, reserved corev1.ResourceList) corev1.ResourceList {
	out := capacity.DeepCopy()
	for name, r := range reserved {
		q, ok := out[name]
		if !ok {
			continue
		}
		q.Sub(r)
		if q.Sign() < 0 {
			q = *resource.NewQuantity(0, q.Format)
		}
		out[name] = q
	}
	return out
}

// ParseResourceList parses "cpu=100m,memory=256Mi" (kubelet's
// --system-reserved form).
func ParseResourceList(s string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		name, value, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("failed to parse %q: want name=quantity", kv)
		}
		switch corev1.ResourceName(name) {
		case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, corev1.ResourcePods:
		default:
			return nil, fmt.Errorf("failed to parse %q: unknown resource %q (cpu, memory, ephemeral-storage, pods)", kv, name)
		}
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return nil, fmt.Errorf("failed to parse quantity of %q: %w", name, err)
		}
		if q.Sign() < 0 {
			return nil, fmt.Errorf("failed to parse %q: negative quantity", kv)
		}
		out[corev1.ResourceName(name)] = q
	}
	return out, nil
}

// nodePressure says which resources run short on the node.
type nodePressure struct {
	memory, disk, pid bool
}

// nodeReadings are the host's free resources, -1 where unknown.
type nodeReadings struct {
	memAvailable             int64
	diskAvailable, diskTotal int64
	inodesFree, inodesTotal  int64
	pidsInUse, pidsMax       int64
}

// pressure applies the thresholds to readings.
func (r nodeReadings) pressure() nodePressure {
	return nodePressure{
		memory: r.memAvailable >= 0 && r.memAvailable < memoryAvailableThreshold,
		disk: r.diskTotal > 0 && r.diskAvailable*100 < r.diskTotal*diskAvailablePercent ||
			r.inodesTotal > 0 && r.inodesFree*100 < r.inodesTotal*inodesFreePercent,
		pid: r.pidsMax > 0 && r.pidsInUse >= 0 && (r.pidsMax-r.pidsInUse)*100 < r.pidsMax*pidAvailablePercent,
	}
}

// readPressure reads the host: MemAvailable from /proc/meminfo, statfs of
// the data directory, the kernel's task count (/proc/loadavg) against
// pid_max and threads-max. Unreadable values count as no pressure.
func readPressure(dataDir string, log *slog.Logger) nodePressure {
	r := nodeReadings{memAvailable: -1, pidsInUse: -1}
	if v, err := meminfo("MemAvailable:"); err == nil {
		r.memAvailable = v
	} else {
		log.Debug("failed to read available memory", "err", err)
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dataDir, &fs); err == nil {
		r.diskAvailable, r.diskTotal = int64(fs.Bavail)*fs.Bsize, int64(fs.Blocks)*fs.Bsize
		r.inodesFree, r.inodesTotal = int64(fs.Ffree), int64(fs.Files)
	} else {
		log.Debug("failed to measure data directory", "dir", dataDir, "err", err)
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		// "0.00 0.01 0.05 1/123 4567": the fourth field is running/total tasks.
		if f := strings.Fields(string(b)); len(f) >= 4 {
			if _, total, ok := strings.Cut(f[3], "/"); ok {
				r.pidsInUse, _ = strconv.ParseInt(total, 10, 64)
			}
		}
	}
	for _, path := range []string{"/proc/sys/kernel/pid_max", "/proc/sys/kernel/threads-max"} {
		if b, err := os.ReadFile(path); err == nil {
			if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && (r.pidsMax == 0 || n < r.pidsMax) {
				r.pidsMax = n
			}
		}
	}
	return r.pressure()
}

// pressureCondition is one pressure condition with kubelet's reason and
// message.
func pressureCondition(t corev1.NodeConditionType, under bool) (corev1.NodeConditionType, corev1.ConditionStatus, string, string) {
	texts := map[corev1.NodeConditionType][2][2]string{
		corev1.NodeMemoryPressure: {
			{"KubeletHasSufficientMemory", "kubelet has sufficient memory available"},
			{"KubeletHasInsufficientMemory", "kubelet has insufficient memory available"},
		},
		corev1.NodeDiskPressure: {
			{"KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
			{"KubeletHasDiskPressure", "kubelet has disk pressure"},
		},
		corev1.NodePIDPressure: {
			{"KubeletHasSufficientPID", "kubelet has sufficient PID available"},
			{"KubeletHasInsufficientPID", "kubelet has insufficient PID available"},
		},
	}[t]
	if under {
		return t, corev1.ConditionTrue, texts[1][0], texts[1][1]
	}
	return t, corev1.ConditionFalse, texts[0][0], texts[0][1]
}

// conditionEvents are the events kubelet records when a pressure
// condition changes, by condition and new status.
var conditionEvents = map[corev1.NodeConditionType]map[corev1.ConditionStatus]string{
	corev1.NodeMemoryPressure: {corev1.ConditionTrue: "NodeHasInsufficientMemory", corev1.ConditionFalse: "NodeHasSufficientMemory"},
	corev1.NodeDiskPressure:   {corev1.ConditionTrue: "NodeHasDiskPressure", corev1.ConditionFalse: "NodeHasNoDiskPressure"},
	corev1.NodePIDPressure:    {corev1.ConditionTrue: "NodeHasInsufficientPID", corev1.ConditionFalse: "NodeHasSufficientPID"},
}

// recordConditionChanges records kubelet's node events for pressure
// conditions whose status changed.
func (a *Agent) recordConditionChanges(old, cur []corev1.NodeCondition) {
	ref := &corev1.ObjectReference{Kind: "Node", Name: a.cfg.NodeName, UID: types.UID(a.cfg.NodeName)}
	for _, c := range cur {
		reasons, ok := conditionEvents[c.Type]
		if !ok {
			continue
		}
		for _, o := range old {
			if o.Type == c.Type && o.Status != c.Status {
				reason := reasons[c.Status]
				a.recorder.Eventf(ref, corev1.EventTypeNormal, reason, "Node %s status is now: %s", a.cfg.NodeName, reason)
			}
		}
	}
}

// nodeImages lists the node's images as kubelet reports them: names by
// digest and by tag, sizes, biggest first, at most maxNodeImages.
func (a *Agent) nodeImages(ctx context.Context) ([]corev1.ContainerImage, error) {
	imgs, err := a.cfg.Runtime.ListImages(ctx)
	if err != nil {
		return nil, fmt.Errorf("failed to list images: %w", err)
	}
	byID := map[string]*corev1.ContainerImage{}
	var order []string
	for _, img := range imgs {
		key := img.ID
		if key == "" {
			key = img.Ref
		}
		ci := byID[key]
		if ci == nil {
			ci = &corev1.ContainerImage{SizeBytes: img.Size}
			if img.ID != "" {
				ci.Names = append(ci.Names, img.ID)
			}
			byID[key] = ci
			order = append(order, key)
		}
		ci.Names = append(ci.Names, img.Ref)
	}
	out := make([]corev1.ContainerImage, 0, len(order))
	for _, k := range order {
		out = append(out, *byID[k])
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].SizeBytes != out[j].SizeBytes {
			return out[i].SizeBytes > out[j].SizeBytes
		}
		return out[i].Names[0] < out[j].Names[0]
	})
	if len(out) > maxNodeImages {
		out = out[:maxNodeImages]
	}
	return out, nil
}

// meminfo reads one field of /proc/meminfo in bytes.
func meminfo(field string) (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, fmt.Errorf("failed to open %q: %w", "/proc/meminfo", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == field {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("failed to parse %s %q: %w", field, fields[1], err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("failed to find %s in %q", field, "/proc/meminfo")
}

// isExtendedResourceName is Kubernetes' IsExtendedResourceName: a
// qualified name with a domain outside kubernetes.io (and not a quota's
// requests. prefix), such as example.com/gpu.
func isExtendedResourceName(name corev1.ResourceName) bool {
	n := string(name)
	if !strings.Contains(n, "/") || strings.Contains(n, "kubernetes.io/") || strings.HasPrefix(n, corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+n)) == 0
}
