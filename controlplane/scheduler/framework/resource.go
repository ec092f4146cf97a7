package framework

import (
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Default requests that scoring assumes for a container that names none, so
// that best-effort pods still spread out. They match kube-scheduler's.
const (
	DefaultMilliCPURequest int64 = 100               // 0.1 core
	DefaultMemoryRequest   int64 = 200 * 1024 * 1024 // 200 MiB
)

// Resource is an amount of compute resources: the requests of a pod, the
// sum requested on a node, or a node's allocatable.
type Resource struct {
	MilliCPU         int64
	Memory           int64
	EphemeralStorage int64
	// AllowedPodNumber is only meaningful for allocatable: the node's "pods".
	AllowedPodNumber int
	// ScalarResources holds extended resources (example.com/gpu), hugepages
	// and other prefixed resources, in their integer unit.
	ScalarResources map[v1.ResourceName]int64
}

// NewResource converts a ResourceList into a Resource.
func NewResource(rl v1.ResourceList) *Resource {
	r := &Resource{}
	r.Add(rl)
	return r
}

// Add adds every quantity of rl to r.
func (r *Resource) Add(rl v1.ResourceList) {
	for name, q := range rl {
		switch name {
		case v1.ResourceCPU:
			r.MilliCPU += q.MilliValue()
		case v1.ResourceMemory:
			r.Memory += q.Value()
		case v1.ResourceEphemeralStorage:
			r.EphemeralStorage += q.Value()
		case v1.ResourcePods:
			r.AllowedPodNumber += int(q.Value())
		default:
			if IsScalarResourceName(name) {
				r.AddScalar(name, q.Value())
			}
		}
	}
}

// AddScalar adds quantity to the scalar resource name.
func (r *Resource) AddScalar(name v1.ResourceName, quantity int64) {
	if r.ScalarResources == nil {
		r.ScalarResources = map[v1.ResourceName]int64{}
	}
	r.ScalarResources[name] += quantity
}

// addResource adds another Resource (without AllowedPodNumber) to r.
func (r *Resource) addResource(o *Resource, sign int64) {
	r.MilliCPU += sign * o.MilliCPU
	r.Memory += sign * o.Memory
	r.EphemeralStorage += sign * o.EphemeralStorage
	for name, q := range o.ScalarResources {
		r.AddScalar(name, sign*q)
	}
}

// setMax raises each of r's amounts to o's where o's is larger.
func (r *Resource) setMax(o *Resource) {
	r.MilliCPU = max(r.MilliCPU, o.MilliCPU)
	r.Memory = max(r.Memory, o.Memory)
	r.EphemeralStorage = max(r.EphemeralStorage, o.EphemeralStorage)
	for name, q := range o.ScalarResources {
		if q > r.ScalarResources[name] {
			r.AddScalar(name, q-r.ScalarResources[name])
		}
	}
}

// Clone returns a deep copy of r.
func (r *Resource) Clone() *Resource {
	c := *r
	if r.ScalarResources != nil {
		c.ScalarResources = make(map[v1.ResourceName]int64, len(r.ScalarResources))
		for k, v := range r.ScalarResources {
			c.ScalarResources[k] = v
		}
	}
	return &c
}

// IsScalarResourceName reports whether name is accounted as a scalar
// resource: an extended or prefixed native resource (it has a "/"),
// hugepages-* or attachable-volumes-*.
func IsScalarResourceName(name v1.ResourceName) bool {
	s := string(name)
	if strings.HasPrefix(s, v1.ResourceRequestsHugePagesPrefix) || strings.HasPrefix(s, "requests.") {
		return false
	}
	return strings.Contains(s, "/") ||
		strings.HasPrefix(s, v1.ResourceHugePagesPrefix) ||
		strings.HasPrefix(s, v1.ResourceAttachableVolumesPrefix)
}

// PodRequests returns the resources the pod asks for, computed as Kubernetes
// does: the sum of the app containers, raised to the largest init container
// where that is bigger (restartable "sidecar" init containers count towards
// both), plus the pod overhead. Pod-level requests, when set, replace the
// container-derived value of the resources they name.
//
// With nonZero, a container that names no cpu or memory request counts as
// DefaultMilliCPURequest and DefaultMemoryRequest; scoring uses that.
func PodRequests(pod *v1.Pod, nonZero bool) *Resource {
	containerRequests := func(c *v1.Container) *Resource {
		r := NewResource(c.Resources.Requests)
		if nonZero {
			if _, ok := c.Resources.Requests[v1.ResourceCPU]; !ok {
				r.MilliCPU = DefaultMilliCPURequest
			}
			if _, ok := c.Resources.Requests[v1.ResourceMemory]; !ok {
				r.Memory = DefaultMemoryRequest
			}
		}
		return r
	}

	reqs := &Resource{}
	for i := range pod.Spec.Containers {
		reqs.addResource(containerRequests(&pod.Spec.Containers[i]), 1)
	}

	restartable := &Resource{}
	initMax := &Resource{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cr := containerRequests(c)
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			// A sidecar keeps running next to the app containers and next to
			// every init container that starts after it.
			reqs.addResource(cr, 1)
			restartable.addResource(cr, 1)
			cr = restartable.Clone()
		} else {
			cr.addResource(restartable, 1)
		}
		initMax.setMax(cr)
	}
	reqs.setMax(initMax)

	if pod.Spec.Resources != nil {
		podLevel := NewResource(pod.Spec.Resources.Requests)
		if _, ok := pod.Spec.Resources.Requests[v1.ResourceCPU]; ok {
			reqs.MilliCPU = podLevel.MilliCPU
		}
		if _, ok := pod.Spec.Resources.Requests[v1.ResourceMemory]; ok {
			reqs.Memory = podLevel.Memory
		}
	}

	if pod.Spec.Overhead != nil {
		reqs.Add(pod.Spec.Overhead)
	}
	return reqs
}
