package scheduler

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/glassplane/glassplane/controlplane/scheduler/plugins/imagelocality"
)

// TestImageLocalityPrefersTheNodeWithTheImage: of two equal nodes, the one
// whose status.images holds the pod's 800 MiB image wins, and the decision
// shows ImageLocality's part.
func TestImageLocalityPrefersTheNodeWithTheImage(t *testing.T) {
	with, without := testNode("node-with", "4"), testNode("node-without", "4")
	with.Status.Images = []v1.ContainerImage{{Names: []string{"registry.example/app:1", "registry.example/app@sha256:aa"}, SizeBytes: 800 << 20}}
	pod := testPod("mypod", "100m")
	pod.Spec.Containers[0].Image = "registry.example/app:1"
	client, recorded := newFakeClient(t, with, without, pod)
	s := startScheduler(t, client)

	eventually(t, "a binding", func() bool { return len(recorded.get()) == 1 })
	if got := recorded.get()[0].Target.Name; got != "node-with" {
		t.Fatalf("bound to %s, want node-with, which holds the image", got)
	}
	ds := s.Decisions("default", "mypod")
	if len(ds) != 1 || len(ds[0].Scores) != 2 {
		t.Fatalf("decisions %+v", ds)
	}
	for _, ns := range ds[0].Scores {
		for _, p := range ns.Plugins {
			if p.Plugin != imagelocality.Name {
				continue
			}
			// 800 MiB on 1 of 2 nodes: 400 MiB → 100*(400-23)/(1000-23) = 38.
			want := int64(0)
			if ns.Node == "node-with" {
				want = 38
			}
			if p.Raw != want || p.Weighted != want {
				t.Errorf("%s on %s = %+v, want %d", imagelocality.Name, ns.Node, p, want)
			}
		}
	}
}
