package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// issue26Controllers are the controllers issue 26 added to the controller
// manager, by their --controllers names.
var issue26Controllers = []string{
	"statefulset-controller", "cronjob-controller", "replicationcontroller-controller",
	"persistentvolume-binder-controller", "persistentvolumeclaim-protection-controller",
	"persistentvolume-protection-controller", "resourcequota-controller",
	"horizontal-pod-autoscaler-controller",
}

// BenchmarkNewControllersMemory reports the resident memory the workload
// controllers of issue 26 add to `glassplane up` (100 simulated nodes), at
// idle and with a Deployment of 1,000 pods: the same start with
// --controllers=*,-<each of them> against one with every controller.
func BenchmarkNewControllersMemory(b *testing.B) {
	without := "*,-" + strings.Join(issue26Controllers, ",-")
	for range b.N {
		all := controllerMemory(b, "*")
		less := controllerMemory(b, without)
		b.ReportMetric(all.idleRSS, "idle-MiB")
		b.ReportMetric(all.idleRSS-less.idleRSS, "idle-added-MiB")
		b.ReportMetric(all.podsRSS, "1000pods-MiB")
		b.ReportMetric(all.podsRSS-less.podsRSS, "1000pods-added-MiB")
		b.ReportMetric(all.idleHeap, "idle-heap-MiB")
		b.ReportMetric(all.idleHeap-less.idleHeap, "idle-added-heap-MiB")
		b.ReportMetric(all.podsHeap, "1000pods-heap-MiB")
		b.ReportMetric(all.podsHeap-less.podsHeap, "1000pods-added-heap-MiB")
	}
}

// memory is a process's resident memory and its Go heap in use just after
// a collection, in MiB. The RSS moves with when the Go runtime last gave
// memory back (by several MiB either way); the heap after a GC is the
// steady figure.
type memory struct{ idleRSS, podsRSS, idleHeap, podsHeap float64 }

// controllerMemory starts glassplane with --controllers=list and returns
// its memory once idle and once a Deployment of 1,000 pods is available.
func controllerMemory(b *testing.B, list string) (m memory) {
	b.Helper()
	c, err := StartCluster(b.TempDir(), "--node-runtime", "none", "--simulated-nodes", "100", "--controllers", list)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Stop()
	time.Sleep(20 * time.Second) // let start-up garbage be collected
	m.idleHeap = heapInUseMiB(b, c)
	m.idleRSS = float64(rssKiB(b, c.cmd.Process.Pid)) / 1024
	ctx := context.Background()
	if _, err := c.Client.AppsV1().Deployments("default").Create(ctx, benchDeployment("mem", 1000), metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	if err := waitAvailable(ctx, c, "mem", 1000, 10*time.Minute); err != nil {
		b.Fatal(err)
	}
	time.Sleep(10 * time.Second)
	m.podsHeap = heapInUseMiB(b, c)
	m.podsRSS = float64(rssKiB(b, c.cmd.Process.Pid)) / 1024
	return m
}

// heapInUseMiB is the cluster process's Go heap in use right after a
// collection: its API server's /debug/pprof/heap?gc=1 (as the admin,
// system:masters), whose text form ends with the runtime's MemStats.
func heapInUseMiB(b *testing.B, c *Cluster) float64 {
	b.Helper()
	out, err := c.Client.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/heap").Param("gc", "1").Param("debug", "1").DoRaw(context.Background())
	if err != nil {
		b.Fatalf("GET /debug/pprof/heap: %v", err)
	}
	for line := range strings.Lines(string(out)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "# HeapInuse = "); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				b.Fatalf("HeapInuse %q: %v", v, err)
			}
			return float64(n) / (1 << 20)
		}
	}
	b.Fatalf("the heap profile has no HeapInuse line:\n%.2000s", out)
	return 0
}
