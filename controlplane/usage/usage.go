package usage

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// AnnotationSimulatedUsage is the usage each container of a pod on a
// simulated node reports, "cpu=250m,memory=64Mi". On a pod it sets that
// pod's containers' usage; on a simulated Node (set by its agent from
// --simulated-usage) it is the usage of containers whose pod has none.
const AnnotationSimulatedUsage = "metrics.glassplane.io/simulated-usage"

// DefaultSimulatedUsage is what a simulated node's containers use when
// neither the pod nor the node says otherwise.
const DefaultSimulatedUsage = "cpu=5m,memory=8Mi"

// Usage is a container's (or a node's) CPU and memory at one moment.
type Usage struct {
	// CPU is the rate of use in cores (as a quantity: 250m).
	CPU resource.Quantity
	// Memory is the working set in bytes.
	Memory resource.Quantity
}

// ParseSimulated reads "cpu=250m,memory=64Mi" (either may be left out,
// reading as zero).
func ParseSimulated(s string) (Usage, error) {
	var u Usage
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		name, value, ok := strings.Cut(kv, "=")
		if !ok {
			return Usage{}, fmt.Errorf("failed to parse %q: want name=quantity", kv)
		}
		q, err := resource.ParseQuantity(strings.TrimSpace(value))
		if err != nil {
			return Usage{}, fmt.Errorf("failed to parse the quantity of %q: %w", name, err)
		}
		if q.Sign() < 0 {
			return Usage{}, fmt.Errorf("failed to parse %q: negative quantity", kv)
		}
		switch corev1.ResourceName(strings.TrimSpace(name)) {
		case corev1.ResourceCPU:
			u.CPU = q
		case corev1.ResourceMemory:
			u.Memory = q
		default:
			return Usage{}, fmt.Errorf("failed to parse %q: unknown resource %q (cpu, memory)", kv, name)
		}
	}
	return u, nil
}

// Sample is one cumulative reading of a container's or a node's CPU.
type Sample struct {
	Time time.Time
	// CPUNanoSeconds is the CPU time used since the container started.
	CPUNanoSeconds uint64
}

// CPURate is the CPU used per second between two samples of the same
// container, in cores, and the window it covers, as metrics-server
// computes it; ok is false when the samples do not make a rate (the same
// or reversed times, or a counter that went back, as after a restart).
func CPURate(prev, cur Sample) (cores resource.Quantity, window time.Duration, ok bool) {
	window = cur.Time.Sub(prev.Time)
	if window <= 0 || cur.CPUNanoSeconds < prev.CPUNanoSeconds {
		return resource.Quantity{}, 0, false
	}
	nanoCores := float64(cur.CPUNanoSeconds-prev.CPUNanoSeconds) / window.Seconds()
	return *resource.NewScaledQuantity(int64(nanoCores), resource.Nano), window, true
}
