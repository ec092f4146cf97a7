package scheduler

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/glassplane/glassplane/controlplane/scheduler/explain"
	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
)

// BenchmarkScheduleCycles runs the scheduling cycle alone (snapshot, filter,
// score, assume, and encoding the decision record as the binding goroutine
// does, then releasing the cycle's scores; no API, no binding) for 5,000 small pods on 1,000 nodes, plain and
// with a required pod anti-affinity on every pod, and reports pods per
// second (the scheduler's own ceiling, apart from the API server) and the
// mean size of a pod's compressed decision record.
func BenchmarkScheduleCycles(b *testing.B) {
	const nodes, pods = 1000, 5000
	for _, anti := range []bool{false, true} {
		name := "plain"
		if anti {
			name = "anti-affinity"
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				s, err := New(Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, fake.NewClientset())
				if err != nil {
					b.Fatal(err)
				}
				for i := range nodes {
					n := testNode(fmt.Sprintf("node-%04d", i), "4")
					n.Labels = map[string]string{v1.LabelHostname: n.Name}
					s.cache.AddNode(n)
				}
				prof := s.profiles[DefaultSchedulerName]
				recordBytes := 0
				start := time.Now()
				for i := range pods {
					p := testPod(fmt.Sprintf("p-%05d", i), "10m")
					p.UID = types.UID(p.Name)
					p.Labels = map[string]string{"group": fmt.Sprintf("g%d", i/5)}
					p.Spec.Containers[0].Resources.Requests[v1.ResourceMemory] = resource.MustParse("16Mi")
					if anti {
						p.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
							TopologyKey: v1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: p.Labels},
						}}}}
					}
					s.cache.UpdateSnapshot(s.snapshot)
					d := explain.Decision{}
					state := framework.NewCycleState()
					host, err := s.schedulePod(context.Background(), prof.fwk, state, p, &d)
					if err != nil {
						b.Fatal(err)
					}
					p.Spec.NodeName = host
					if err := s.cache.AssumePod(p); err != nil {
						b.Fatal(err)
					}
					d.Node = host
					rec, err := explain.EncodeHistory(explain.History{Pod: "default/" + p.Name, UID: string(p.UID), Attempts: []explain.Decision{d}})
					if err != nil {
						b.Fatal(err)
					}
					recordBytes += len(rec)
					state.ReleaseScores()
				}
				b.ReportMetric(float64(pods)/time.Since(start).Seconds(), "pods/s")
				b.ReportMetric(float64(recordBytes)/float64(pods)/1024, "record-KiB")
			}
		})
	}
}
