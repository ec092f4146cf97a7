package node

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/glassplane/glassplane/controlplane/node/runtime"
)

func TestParseResourceListAndAllocatable(t *testing.T) {
	reserved, err := ParseResourceList("cpu=100m, memory=256Mi")
	if err != nil {
		t.Fatal(err)
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("2"),
		corev1.ResourceMemory: resource.MustParse("1Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	got := allocatable(capacity, reserved)
	want := map[corev1.ResourceName]string{corev1.ResourceCPU: "1900m", corev1.ResourceMemory: "768Mi", corev1.ResourcePods: "110"}
	for name, w := range want {
		q := got[name]
		if q.Cmp(resource.MustParse(w)) != 0 {
			t.Errorf("allocatable %s = %s, want %s", name, q.String(), w)
		}
	}
	if c := capacity[corev1.ResourceCPU]; c.String() != "2" {
		t.Errorf("allocatable changed the capacity: %s", c.String())
	}
	over := allocatable(capacity, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")})
	if q := over[corev1.ResourceCPU]; q.Sign() != 0 {
		t.Errorf("over-reserved cpu = %s, want 0", q.String())
	}
	for _, bad := range []string{"cpu", "gpu=1", "memory=lots", "cpu=-1"} {
		if _, err := ParseResourceList(bad); err == nil {
			t.Errorf("ParseResourceList(%q) accepted", bad)
		}
	}
}

func TestNodePressure(t *testing.T) {
	fine := nodeReadings{memAvailable: 4 << 30, diskAvailable: 50, diskTotal: 100, inodesFree: 50, inodesTotal: 100, pidsInUse: 500, pidsMax: 32768}
	tests := []struct {
		name   string
		mutate func(*nodeReadings)
		want   nodePressure
	}{
		{"healthy", func(*nodeReadings) {}, nodePressure{}},
		{"low memory", func(r *nodeReadings) { r.memAvailable = 50 << 20 }, nodePressure{memory: true}},
		{"unknown memory", func(r *nodeReadings) { r.memAvailable = -1 }, nodePressure{}},
		{"full disk", func(r *nodeReadings) { r.diskAvailable = 9 }, nodePressure{disk: true}},
		{"no inodes", func(r *nodeReadings) { r.inodesFree = 4 }, nodePressure{disk: true}},
		{"pids nearly gone", func(r *nodeReadings) { r.pidsInUse = 30000 }, nodePressure{pid: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := fine
			tc.mutate(&r)
			if got := r.pressure(); got != tc.want {
				t.Errorf("pressure = %+v, want %+v", got, tc.want)
			}
		})
	}
	_, st, reason, msg := pressureCondition(corev1.NodeMemoryPressure, true)
	if st != corev1.ConditionTrue || reason != "KubeletHasInsufficientMemory" || msg != "kubelet has insufficient memory available" {
		t.Errorf("memory pressure condition = %s %s %q", st, reason, msg)
	}
	_, st, reason, _ = pressureCondition(corev1.NodeDiskPressure, false)
	if st != corev1.ConditionFalse || reason != "KubeletHasNoDiskPressure" {
		t.Errorf("no disk pressure condition = %s %s", st, reason)
	}
}

type imageList struct {
	*runtime.Simulated
	images []runtime.Image
}

func (l imageList) ListImages(context.Context) ([]runtime.Image, error) { return l.images, nil }

func TestNodeImages(t *testing.T) {
	a := &Agent{cfg: Config{Runtime: imageList{images: []runtime.Image{
		{Ref: "docker.io/library/busybox:1", ID: "docker.io/library/busybox@sha256:aa", Size: 10},
		{Ref: "docker.io/library/nginx:1.27", ID: "docker.io/library/nginx@sha256:bb", Size: 500},
		{Ref: "docker.io/library/busybox:latest", ID: "docker.io/library/busybox@sha256:aa", Size: 10},
	}}}}
	got, err := a.nodeImages(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].SizeBytes != 500 || got[1].SizeBytes != 10 {
		t.Fatalf("images = %+v, want nginx then busybox", got)
	}
	want := []string{"docker.io/library/busybox@sha256:aa", "docker.io/library/busybox:1", "docker.io/library/busybox:latest"}
	if len(got[1].Names) != 3 || got[1].Names[0] != want[0] || got[1].Names[1] != want[1] || got[1].Names[2] != want[2] {
		t.Errorf("busybox names = %v, want %v", got[1].Names, want)
	}
}

func TestMemoryVolumeSize(t *testing.T) {
	limit := resource.MustParse("64Mi")
	withLimits := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("100Mi")}}},
		{Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("28Mi")}}},
	}}}
	unlimited := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{}, withLimits.Spec.Containers[0]}}}
	tests := []struct {
		name string
		pod  *corev1.Pod
		e    corev1.EmptyDirVolumeSource
		want int64
	}{
		{"sizeLimit", withLimits, corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &limit}, 64 << 20},
		{"pod memory limit", withLimits, corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}, 128 << 20},
		{"kernel default", unlimited, corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}, 0},
	}
	for _, tc := range tests {
		if got := memoryVolumeSize(tc.pod, &tc.e); got != tc.want {
			t.Errorf("%s: size %d, want %d", tc.name, got, tc.want)
		}
	}
}
