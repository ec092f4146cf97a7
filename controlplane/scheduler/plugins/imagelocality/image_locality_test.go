package imagelocality

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
)

func TestImageLocalityScore(t *testing.T) {
	const mib = 1024 * 1024
	withImages := func(name string, imgs ...v1.ContainerImage) *v1.Node {
		return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1.NodeStatus{Images: imgs}}
	}
	nodes := []*v1.Node{
		withImages("a", v1.ContainerImage{Names: []string{"docker.io/library/big:latest", "big"}, SizeBytes: 500 * mib}),
		withImages("b", v1.ContainerImage{Names: []string{"big:latest"}, SizeBytes: 500 * mib}, v1.ContainerImage{Names: []string{"small:1"}, SizeBytes: 10 * mib}),
		withImages("c"),
		withImages("d"),
	}
	tests := []struct {
		name   string
		images []string
		want   map[string]int64
	}{
		// big is on 2 of 4 nodes: 500 MiB * 0.5 = 250 MiB → 100*(250-23)/(1000-23) = 23.
		{"image spread over half the nodes", []string{"big"}, map[string]int64{"a": 23, "b": 23, "c": 0, "d": 0}},
		// small images stay under the 23 MiB threshold.
		{"small image scores nothing", []string{"small:1"}, map[string]int64{"a": 0, "b": 0, "c": 0, "d": 0}},
	}
	list := framework.NewNodeInfoList(nodes, nil)
	pl := NewWithLister(list)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &v1.Pod{}
			for _, img := range tt.images {
				p.Spec.Containers = append(p.Spec.Containers, v1.Container{Image: img})
			}
			state := framework.NewCycleState()
			pl.PreScore(context.Background(), state, p, list)
			for _, ni := range list {
				got, st := pl.Score(context.Background(), state, p, ni)
				if !st.IsSuccess() || got != tt.want[ni.Node().Name] {
					t.Errorf("node %s: %d (%v), want %d", ni.Node().Name, got, st.Message(), tt.want[ni.Node().Name])
				}
			}
		})
	}
}

func TestNormalizedImageName(t *testing.T) {
	for in, want := range map[string]string{"nginx": "nginx:latest", "nginx:1.25": "nginx:1.25", "localhost:5000/x": "localhost:5000/x:latest", "x@sha256:ab": "x@sha256:ab"} {
		if got := NormalizedImageName(in); got != want {
			t.Errorf("%s → %s, want %s", in, got, want)
		}
	}
}
