package cache

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func node(name string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1.NodeStatus{Allocatable: v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("4"), v1.ResourcePods: resource.MustParse("110"),
	}}}
}

func pod(name, nodeName, cpu string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)},
		Spec: v1.PodSpec{NodeName: nodeName, Containers: []v1.Container{{Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)},
		}}}},
	}
}

func requestedCPU(t *testing.T, c *Cache, s *Snapshot, nodeName string) int64 {
	t.Helper()
	c.UpdateSnapshot(s)
	ni, err := s.Get(nodeName)
	if err != nil {
		t.Fatal(err)
	}
	return ni.Requested.MilliCPU
}

func TestAssumeConfirmForget(t *testing.T) {
	tests := []struct {
		name    string
		steps   func(t *testing.T, c *Cache)
		wantCPU map[string]int64
		assumed bool
	}{
		{
			name:    "assumed pod counts before its binding is seen",
			steps:   func(t *testing.T, c *Cache) { must(t, c.AssumePod(pod("p", "a", "1"))) },
			wantCPU: map[string]int64{"a": 1000, "b": 0},
			assumed: true,
		},
		{
			name: "observed binding confirms the assumed pod once",
			steps: func(t *testing.T, c *Cache) {
				must(t, c.AssumePod(pod("p", "a", "1")))
				must(t, c.AddPod(pod("p", "a", "1")))
			},
			wantCPU: map[string]int64{"a": 1000, "b": 0},
		},
		{
			name: "pod observed on another node moves",
			steps: func(t *testing.T, c *Cache) {
				must(t, c.AssumePod(pod("p", "a", "1")))
				must(t, c.AddPod(pod("p", "b", "1")))
			},
			wantCPU: map[string]int64{"a": 0, "b": 1000},
		},
		{
			name: "forgotten pod no longer counts",
			steps: func(t *testing.T, c *Cache) {
				must(t, c.AssumePod(pod("p", "a", "1")))
				must(t, c.ForgetPod(pod("p", "a", "1")))
			},
			wantCPU: map[string]int64{"a": 0, "b": 0},
		},
		{
			name: "removed pod no longer counts",
			steps: func(t *testing.T, c *Cache) {
				must(t, c.AddPod(pod("p", "a", "1")))
				must(t, c.AddPod(pod("q", "a", "500m")))
				must(t, c.RemovePod(pod("p", "a", "1")))
			},
			wantCPU: map[string]int64{"a": 500, "b": 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New()
			c.AddNode(node("a"))
			c.AddNode(node("b"))
			s := NewSnapshot()
			c.UpdateSnapshot(s)
			tt.steps(t, c)
			for n, want := range tt.wantCPU {
				if got := requestedCPU(t, c, s, n); got != want {
					t.Errorf("node %s requested %dm, want %dm", n, got, want)
				}
			}
			if got := c.IsAssumedPod(pod("p", "a", "1")); got != tt.assumed {
				t.Errorf("IsAssumedPod = %v, want %v", got, tt.assumed)
			}
		})
	}
}

func TestSnapshotFollowsNodes(t *testing.T) {
	c := New()
	s := NewSnapshot()
	must(t, c.AddPod(pod("early", "late-node", "1")))
	c.AddNode(node("b"))
	c.AddNode(node("a"))
	c.UpdateSnapshot(s)
	if got := names(s); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("snapshot nodes %v, want [a b] (a node known only from its pods is left out)", got)
	}
	before, _ := s.Get("a")
	c.AddNode(node("late-node"))
	c.RemoveNode(node("b"))
	c.UpdateSnapshot(s)
	if got := names(s); len(got) != 2 || got[0] != "a" || got[1] != "late-node" {
		t.Fatalf("snapshot nodes %v, want [a late-node]", got)
	}
	if after, _ := s.Get("a"); after != before {
		t.Error("unchanged node was copied again")
	}
	if ni, _ := s.Get("late-node"); len(ni.Pods) != 1 || ni.Requested.MilliCPU != 1000 {
		t.Errorf("late node has %d pods and %dm, want the early pod", len(ni.Pods), ni.Requested.MilliCPU)
	}
	if c.NodeCount() != 2 {
		t.Errorf("NodeCount = %d, want 2", c.NodeCount())
	}
	// A changed node is replaced in place in the list.
	must(t, c.AssumePod(pod("p", "a", "2")))
	c.UpdateSnapshot(s)
	if got := names(s); len(got) != 2 || got[0] != "a" || s.List()[0].Requested.MilliCPU != 2000 {
		t.Errorf("after assuming onto a: nodes %v, a requests %dm", got, s.List()[0].Requested.MilliCPU)
	}
}

func names(s *Snapshot) []string {
	var out []string
	for _, ni := range s.List() {
		out = append(out, ni.Node().Name)
	}
	return out
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestSnapshotsMatchAFreshOne drives a cache through random node and pod
// changes and, now and then, brings two long-lived snapshots up to date
// (each at its own pace): each must then hold exactly what a snapshot
// built from nothing holds, in the same order, with the same requests. It
// fails if UpdateSnapshot misses a changed, added or removed node.
func TestSnapshotsMatchAFreshOne(t *testing.T) {
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 7))
		c := New()
		slow, fast := NewSnapshot(), NewSnapshot()
		bound := map[string]*v1.Pod{}
		for step := range 400 {
			nodeName := fmt.Sprintf("n%d", rng.IntN(8))
			switch op := rng.IntN(10); {
			case op < 2:
				// Nodes come and change with random images, some of
				// them with two names, some names on two images.
				n := node(nodeName)
				for range rng.IntN(3) {
					img := v1.ContainerImage{Names: []string{fmt.Sprintf("img-%d", rng.IntN(4))}, SizeBytes: int64(rng.IntN(3)) << 20}
					if rng.IntN(2) == 0 {
						img.Names = append(img.Names, fmt.Sprintf("img-%d", rng.IntN(4)))
					}
					n.Status.Images = append(n.Status.Images, img)
				}
				c.AddNode(n)
			case op < 3:
				c.RemoveNode(node(nodeName))
			case op < 6:
				p := pod(fmt.Sprintf("p%d-%d", seed, step), nodeName, fmt.Sprintf("%dm", 1+rng.IntN(900)))
				if rng.IntN(2) == 0 {
					must(t, c.AssumePod(p))
				} else {
					must(t, c.AddPod(p))
				}
				bound[p.Name] = p
			default:
				for name, p := range bound {
					if rng.IntN(2) == 0 {
						must(t, c.RemovePod(p))
					} else if c.IsAssumedPod(p) {
						must(t, c.ForgetPod(p))
					} else {
						continue
					}
					delete(bound, name)
					break
				}
			}
			if rng.IntN(3) == 0 {
				c.UpdateSnapshot(fast)
				checkSnapshot(t, c, fast, seed, step)
			}
			if rng.IntN(20) == 0 {
				c.UpdateSnapshot(slow)
				checkSnapshot(t, c, slow, seed, step)
			}
		}
	}
}

func checkSnapshot(t *testing.T, c *Cache, s *Snapshot, seed uint64, step int) {
	t.Helper()
	fresh := NewSnapshot()
	c.UpdateSnapshot(fresh)
	got, want := s.List(), fresh.List()
	if len(got) != len(want) || len(s.nodeInfoMap) != len(want) || c.NodeCount() != len(want) {
		t.Fatalf("seed %d step %d: snapshot has %d nodes (%d in its map), a fresh one %d, NodeCount %d", seed, step, len(got), len(s.nodeInfoMap), len(want), c.NodeCount())
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Node().Name != w.Node().Name || g.Requested.MilliCPU != w.Requested.MilliCPU || len(g.Pods) != len(w.Pods) || g.Generation != w.Generation {
			t.Fatalf("seed %d step %d: node %d is %s (%dm, %d pods, generation %d), a fresh snapshot's %s (%dm, %d pods, generation %d)", seed, step, i,
				g.Node().Name, g.Requested.MilliCPU, len(g.Pods), g.Generation, w.Node().Name, w.Requested.MilliCPU, len(w.Pods), w.Generation)
		}
		if ni, err := s.Get(w.Node().Name); err != nil || ni != g {
			t.Fatalf("seed %d step %d: the snapshot's map and list disagree on %s", seed, step, w.Node().Name)
		}
	}
	// Each image name is counted on the nodes that list it now.
	holders := map[string]int{}
	for _, ni := range want {
		names := map[string]bool{}
		for _, img := range ni.Node().Status.Images {
			for _, name := range img.Names {
				names[name] = true
			}
		}
		for name := range names {
			holders[name]++
		}
	}
	if !maps.Equal(s.imageNodes, holders) {
		t.Fatalf("seed %d step %d: image counts %v, the nodes hold %v", seed, step, s.imageNodes, holders)
	}
	for name, n := range holders {
		if got := s.NodesWithImage(name); got != n {
			t.Fatalf("seed %d step %d: NodesWithImage(%s) = %d, want %d", seed, step, name, got, n)
		}
	}
}
