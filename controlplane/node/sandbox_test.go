package node

import (
	"context"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/glassplane/glassplane/controlplane/node/runtime"
)

// preparingRuntime is a simulated runtime that prepares pods apart from
// attaching them: StartPod blocks until attach is closed, and it records
// whether a container was created, or started, before then.
type preparingRuntime struct {
	*runtime.Simulated
	attach              chan struct{}
	attached            atomic.Bool
	prepared            atomic.Int64
	createdBeforeAttach atomic.Bool
	startedBeforeAttach atomic.Bool
}

func (p *preparingRuntime) PreparePod(context.Context, runtime.PodSpec) error {
	p.prepared.Add(1)
	return nil
}

func (p *preparingRuntime) StartPod(ctx context.Context, pod runtime.PodSpec) (string, error) {
	select {
	case <-p.attach:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	p.attached.Store(true)
	if _, err := p.Simulated.StartPod(ctx, pod); err != nil {
		return "", err
	}
	return "10.88.0.7", nil
}

func (p *preparingRuntime) CreateContainer(ctx context.Context, pod runtime.PodSpec, c runtime.ContainerSpec) (string, error) {
	if !p.attached.Load() {
		p.createdBeforeAttach.Store(true)
	}
	return p.Simulated.CreateContainer(ctx, pod, c)
}

func (p *preparingRuntime) StartContainer(ctx context.Context, id string) error {
	if !p.attached.Load() {
		p.startedBeforeAttach.Store(true)
	}
	return p.Simulated.StartContainer(ctx, id)
}

// A new pod's containers are created while the runtime attaches the pod to
// the network, and started only once it is attached; a pod whose
// environment asks for its IP is attached first.
func TestContainersAreCreatedWhileThePodIsAttached(t *testing.T) {
	tests := []struct {
		name        string
		env         []corev1.EnvVar
		wantOverlap bool
	}{
		{name: "overlapped", wantOverlap: true},
		{name: "pod IP in env", env: []corev1.EnvVar{{Name: "MY_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := &preparingRuntime{Simulated: simRuntime(), attach: make(chan struct{})}
			h := startAgent(t, rt, func(c *Config) { c.Simulated = false })
			pod := newPod("attached", corev1.RestartPolicyAlways, "nginx")
			pod.Spec.Containers[0].Env = tt.env
			h.createPod(t, pod)
			if tt.wantOverlap {
				eventually(t, "the container created before the pod is attached", func() (bool, string) {
					return rt.createdBeforeAttach.Load(), "not created"
				})
			}
			close(rt.attach)
			eventually(t, "pod Running with its IP", func() (bool, string) {
				pod := h.getPod(t, "attached")
				return pod.Status.Phase == corev1.PodRunning && pod.Status.PodIP == "10.88.0.7", string(pod.Status.Phase) + " " + pod.Status.PodIP
			})
			if rt.startedBeforeAttach.Load() {
				t.Error("a container started before its pod was attached to the network")
			}
			if tt.wantOverlap != rt.createdBeforeAttach.Load() {
				t.Errorf("container created before the pod was attached = %v, want %v", rt.createdBeforeAttach.Load(), tt.wantOverlap)
			}
			if rt.prepared.Load() == 0 && tt.wantOverlap {
				t.Error("PreparePod was not called")
			}
		})
	}
}
