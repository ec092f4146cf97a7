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
	// Names as kubelet reports them: fully qualified tags and digests.
	big := func(size int64) v1.ContainerImage {
		return v1.ContainerImage{Names: []string{"registry.example/big:1", "registry.example/big@sha256:0b1e", "big:latest"}, SizeBytes: size * mib}
	}
	huge := v1.ContainerImage{Names: []string{"registry.example/huge:2"}, SizeBytes: 3000 * mib}
	small := v1.ContainerImage{Names: []string{"registry.example/small:1"}, SizeBytes: 10 * mib}
	untagged := v1.ContainerImage{Names: []string{"plain"}, SizeBytes: 500 * mib}
	nodes := []*v1.Node{
		withImages("a", big(500), huge),
		withImages("b", big(500), small, untagged),
		withImages("c", huge),
		withImages("d"),
	}
	tests := []struct {
		name           string
		initContainers []string
		containers     []string
		want           map[string]int64
	}{
		// big is on 2 of 4 nodes: 500 MiB * 0.5 = 250 MiB → 100*(250-23)/(1000-23) = 23.
		{"image spread over half the nodes", nil, []string{"registry.example/big:1"}, map[string]int64{"a": 23, "b": 23}},
		// One image known by several names counts once per node.
		{"any of the node's names matches", nil, []string{"registry.example/big@sha256:0b1e"}, map[string]int64{"a": 23, "b": 23}},
		// "big" is "big:latest", which a and b report.
		{"a name without a tag means latest", nil, []string{"big"}, map[string]int64{"a": 23, "b": 23}},
		// Node names are not normalized: "plain" on b is not "plain:latest".
		{"an untagged name on the node does not match", nil, []string{"plain"}, map[string]int64{}},
		// Images smaller than 23 MiB score nothing.
		{"small image scores nothing", nil, []string{"registry.example/small:1"}, map[string]int64{}},
		// huge: 3000 MiB * 0.5 = 1500 MiB, above 1000 MiB for one container → 100.
		{"capped at 1000 MiB per container", nil, []string{"registry.example/huge:2"}, map[string]int64{"a": 100, "c": 100}},
		// Two containers: the range is [23, 2000] MiB. a: 1500 + 250 = 1750 → 100*(1750-23)/(2000-23) = 87;
		// b: 250 → 11; c: 1500 → 74.
		{"several containers add up", nil, []string{"registry.example/huge:2", "registry.example/big:1"}, map[string]int64{"a": 87, "b": 11, "c": 74}},
		// Init containers count as kube-scheduler counts them (image and container).
		{"init containers count", []string{"registry.example/big:1"}, []string{"registry.example/huge:2"}, map[string]int64{"a": 87, "b": 11, "c": 74}},
		{"no image anywhere", nil, []string{"registry.example/absent:1"}, map[string]int64{}},
	}
	list := framework.NewNodeInfoList(nodes, nil)
	pl := NewWithLister(list)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &v1.Pod{}
			for _, img := range tt.initContainers {
				p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Image: img})
			}
			for _, img := range tt.containers {
				p.Spec.Containers = append(p.Spec.Containers, v1.Container{Image: img})
			}
			state := framework.NewCycleState()
			if st := pl.PreScore(context.Background(), state, p, list); !st.IsSuccess() {
				t.Fatal(st.Message())
			}
			for _, ni := range list {
				got, st := pl.Score(context.Background(), state, p, ni)
				if !st.IsSuccess() || got != tt.want[ni.Node().Name] {
					t.Errorf("node %s: %d (%v), want %d", ni.Node().Name, got, st.Message(), tt.want[ni.Node().Name])
				}
			}
		})
	}
}

// TestImageLocalityWithoutPreScore: Score without its cycle state is an
// error status, not a panic.
func TestImageLocalityWithoutPreScore(t *testing.T) {
	pl := NewWithLister(framework.NewNodeInfoList(nil, nil))
	ni := framework.NewNodeInfoList([]*v1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}}, nil)[0]
	if _, st := pl.Score(context.Background(), framework.NewCycleState(), &v1.Pod{}, ni); st.IsSuccess() {
		t.Error("Score without PreScore succeeded")
	}
}

func TestNormalizedImageName(t *testing.T) {
	for in, want := range map[string]string{"nginx": "nginx:latest", "nginx:1.25": "nginx:1.25", "localhost:5000/x": "localhost:5000/x:latest", "x@sha256:ab": "x@sha256:ab"} {
		if got := NormalizedImageName(in); got != want {
			t.Errorf("%s → %s, want %s", in, got, want)
		}
	}
}
