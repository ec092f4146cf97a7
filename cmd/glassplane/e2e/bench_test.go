package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// apiSetups are the clusters the API benchmarks run on: the whole cluster
// with 20 simulated nodes, and the API server and etcd alone.
var apiSetups = []struct {
	name string
	args []string
}{
	{"simulated-nodes=20", []string{"--node-runtime", "none", "--simulated-nodes", "20"}},
	{"api-only", []string{"--node-runtime", "none", "--scheduler=false"}},
}

// BenchmarkCreatePods creates 2,000 pods through client-go with 16
// concurrent clients and measures create throughput, create latency and
// watch delivery latency (create returned → the ADDED event seen by a
// client-go watcher). It runs twice: on the whole cluster with 20
// simulated nodes, where each pod is also scheduled, bound, started and
// reported on (about nine API writes per pod, all on the same two cores);
// and on the API server and etcd alone (no scheduler, no nodes), the set-up
// of kube-apiserver's figure it is compared with.
func BenchmarkCreatePods(b *testing.B) {
	for _, tc := range apiSetups {
		b.Run(tc.name, func(b *testing.B) {
			c := NewCluster(b, tc.args...)
			r := createAndWatch(b, c, "bench", 2000, 16)
			b.ReportMetric(r.podsPerSecond, "pods/s")
			b.ReportMetric(ms(percentile(r.create, 50)), "create-p50-ms")
			b.ReportMetric(ms(percentile(r.create, 99)), "create-p99-ms")
			b.ReportMetric(ms(percentile(r.delivery, 50)), "watch-p50-ms")
			b.ReportMetric(ms(percentile(r.delivery, 99)), "watch-p99-ms")
		})
	}
}

// BenchmarkWatchLatency measures watch delivery (create returned → ADDED
// seen by a client-go watcher) with one creating client and with ten, the
// two loads kube-apiserver's figures are given for, on the whole cluster
// with 20 simulated nodes and on the API server and etcd alone (see
// BenchmarkCreatePods).
func BenchmarkWatchLatency(b *testing.B) {
	for _, setup := range apiSetups {
		b.Run(setup.name, func(b *testing.B) {
			c := NewCluster(b, setup.args...)
			for _, tc := range []struct {
				name           string
				total, workers int
			}{{"clients=1", 300, 1}, {"clients=10", 1000, 10}} {
				b.Run(tc.name, func(b *testing.B) {
					r := createAndWatch(b, c, "watch-"+strings.TrimPrefix(tc.name, "clients="), tc.total, tc.workers)
					b.ReportMetric(r.podsPerSecond, "pods/s")
					b.ReportMetric(ms(percentile(r.delivery, 50)), "watch-p50-ms")
					b.ReportMetric(ms(percentile(r.delivery, 99)), "watch-p99-ms")
				})
			}
		})
	}
}

// createResult is what createAndWatch measured.
type createResult struct {
	podsPerSecond float64
	// create holds each create's latency; delivery, each pod's time from
	// its create returning to its ADDED event.
	create, delivery []time.Duration
}

// createAndWatch creates total pods in a new namespace ns with workers
// concurrent client-go clients (no client-side rate limit), while one
// client-go watcher records when each ADDED event arrives.
func createAndWatch(b *testing.B, c *Cluster, ns string, total, workers int) createResult {
	b.Helper()
	ctx := context.Background()
	cfg := rest.CopyConfig(c.Config)
	cfg.QPS = -1
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}

	w, err := c.Client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	var mu sync.Mutex // guards returned and seen
	returned := map[string]time.Time{}
	seen := map[string]time.Time{}
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		for ev := range w.ResultChan() {
			if ev.Type != watch.Added {
				continue
			}
			pod := ev.Object.(*corev1.Pod)
			mu.Lock()
			seen[pod.Name] = time.Now()
			n := len(seen)
			mu.Unlock()
			if n == total {
				return
			}
		}
	}()

	latencies := make([]time.Duration, total)
	next := make(chan int)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				pod := benchPod(fmt.Sprintf("p-%04d", i))
				t0 := time.Now()
				if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
					b.Error(err)
					continue
				}
				done := time.Now()
				latencies[i] = done.Sub(t0)
				mu.Lock()
				returned[pod.Name] = done
				mu.Unlock()
			}
		}()
	}
	for i := range total {
		next <- i
	}
	close(next)
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	select {
	case <-watchDone:
	case <-time.After(time.Minute):
		b.Fatalf("the watcher saw %d of %d pods", len(seen), total)
	}

	r := createResult{podsPerSecond: float64(total) / elapsed.Seconds(), create: latencies}
	mu.Lock()
	for name, t := range returned {
		if s, ok := seen[name]; ok {
			d := s.Sub(t)
			if d < 0 { // the event can beat the create response
				d = 0
			}
			r.delivery = append(r.delivery, d)
		}
	}
	mu.Unlock()
	return r
}

// BenchmarkContainerdPodStartup creates 20 pods with the demo image at once
// on a containerd node and measures create → Running per pod, from a
// Ready node (as BenchmarkNodePodStartup: a pod created while the node
// is still registering waits for cluster start-up, not pod start-up).
func BenchmarkContainerdPodStartup(b *testing.B) {
	requireTool(b, "containerd", "the containerd benchmark")
	const total = 20
	c := NewCluster(b, "--node-runtime", "containerd")
	waitContainerdNodeReady(b, c)
	ctx := context.Background()
	ns := "default"
	created := map[string]time.Time{}
	running := map[string]time.Time{}
	w, err := c.Client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: "bench=startup"})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	var mu sync.Mutex // guards created and running
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok || pod.Status.Phase != corev1.PodRunning {
				continue
			}
			mu.Lock()
			if _, ok := running[pod.Name]; !ok {
				running[pod.Name] = time.Now()
			}
			n := len(running)
			mu.Unlock()
			if n == total {
				return
			}
		}
	}()
	b.ResetTimer()
	var wg sync.WaitGroup
	for i := range total {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pod := benchPod(fmt.Sprintf("start-%02d", i))
			pod.Labels = map[string]string{"bench": "startup"}
			t0 := time.Now()
			if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				b.Error(err)
				return
			}
			mu.Lock()
			created[pod.Name] = t0
			mu.Unlock()
		}()
	}
	wg.Wait()
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		b.Fatalf("%d of %d pods reached Running", len(running), total)
	}
	b.StopTimer()
	var startup []time.Duration
	mu.Lock()
	for name, t0 := range created {
		startup = append(startup, running[name].Sub(t0))
	}
	mu.Unlock()
	b.ReportMetric(ms(percentile(startup, 50)), "running-p50-ms")
	b.ReportMetric(ms(percentile(startup, 99)), "running-p99-ms")

	// Stop the containers before the cluster stops, so its data dir can go.
	if err := c.Client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "bench=startup"}); err != nil {
		b.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		left, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "bench=startup"})
		if err == nil && len(left.Items) == 0 {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	b.Fatal("the benchmark's pods were not deleted within 3 minutes")
}

// BenchmarkIdleMemory measures the resident memory of an idle `glassplane
// up` with one containerd node (and, separately, its managed containerd).
func BenchmarkIdleMemory(b *testing.B) {
	requireTool(b, "containerd", "the idle memory benchmark")
	c := NewCluster(b, "--node-runtime", "containerd")
	time.Sleep(15 * time.Second) // let start-up garbage be collected
	b.ReportMetric(float64(rssKiB(b, c.cmd.Process.Pid))/1024, "glassplane-MiB")
	if pids := childPIDs(c.cmd.Process.Pid); len(pids) > 0 {
		var kib int64
		for _, pid := range pids {
			kib += rssKiB(b, pid)
		}
		b.ReportMetric(float64(kib)/1024, "containerd-MiB")
	}
}

func benchPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:  "c",
			Image: "glassplane.local/hello:latest",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: mustQuantity("10m"), corev1.ResourceMemory: mustQuantity("16Mi"),
			}},
		}}},
	}
}

func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	if i > 0 {
		i--
	}
	return s[i]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func rssKiB(b *testing.B, pid int) int64 {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatalf("no VmRSS for pid %d", pid)
	return 0
}

// childPIDs lists the processes whose parent is pid.
func childPIDs(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", n))
		if err != nil {
			continue
		}
		// The fields after the command name, which is in parentheses: state, ppid, ...
		_, rest, ok := strings.Cut(string(stat), ") ")
		if !ok {
			continue
		}
		if f := strings.Fields(rest); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, n)
		}
	}
	return out
}
