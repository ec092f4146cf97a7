package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/glassplane/glassplane/api/v1alpha1"
)

// benchEnvInt reads an integer override of a benchmark size.
func benchEnvInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkSchedulerThroughput schedules pods (default 5,000) onto nodes
// (default 1,000) through the real API and reports pods bound per second and
// the p50/p99 time from create to bound, for plain pods and for pods with a
// required anti-affinity. It runs on two kinds of node:
//   - simulated-nodes: `glassplane up --simulated-nodes`, node agents that
//     also run each bound pod (events, status writes) and renew a Lease
//     every 10 s each, all on the same two cores as the API server and the
//     scheduler;
//   - node-objects: Node objects with a Ready status and no agent behind
//     them, the "fake nodes" of kube-scheduler's figure it is compared with
//     (the node lifecycle controller is given an hour's grace so it does
//     not taint them).
//
// Node objects go first: the simulated-nodes cluster's teardown (some
// 2.5 GiB of agents, informers and etcd pages handed back) keeps the
// kernel busy for a while after it, and that is not the scheduler's time.
//
// It also reports the glassplane process's CPU time per pod and its
// resident memory when the last pod is bound, how many decision records
// were written by then (they are written behind the bindings) and how long
// the rest took.
//
// Sizes: GLASSPLANE_BENCH_NODES, GLASSPLANE_BENCH_PODS.
func BenchmarkSchedulerThroughput(b *testing.B) {
	nodes := benchEnvInt("GLASSPLANE_BENCH_NODES", 1000)
	pods := benchEnvInt("GLASSPLANE_BENCH_PODS", 5000)
	for _, kind := range []string{"node-objects", "simulated-nodes"} {
		b.Run(kind, func(b *testing.B) {
			started := time.Now()
			var c *Cluster
			if kind == "simulated-nodes" {
				c = NewCluster(b, "--node-runtime", "none", "--simulated-nodes", strconv.Itoa(nodes), "--web-listen", "")
			} else {
				c = NewCluster(b, "--node-runtime", "none", "--web-listen", "", "--node-monitor-grace-period", "1h")
				createNodeObjects(b, c, nodes)
			}
			waitForNodes(b, c, nodes)
			b.Logf("%d nodes registered %v after start", nodes, time.Since(started).Round(time.Second))
			for _, antiAffinity := range []bool{false, true} {
				name := "plain"
				if antiAffinity {
					name = "anti-affinity"
				}
				b.Run(name, func(b *testing.B) {
					runSchedulerBench(b, c, name, pods, antiAffinity)
				})
			}
		})
	}
}

// waitForNodes waits until the API lists n nodes.
func waitForNodes(b *testing.B, c *Cluster, n int) {
	b.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Minute)
	for {
		list, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err == nil && len(list.Items) == n {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d nodes registered", len(list.Items), n)
		}
		time.Sleep(time.Second)
	}
}

// createNodeObjects creates n Nodes (fake-0000 …) with a simulated node's
// capacity and a Ready condition, and no agent behind them.
func createNodeObjects(b *testing.B, c *Cluster, n int) {
	b.Helper()
	ctx := context.Background()
	capacity := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"),
		corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				name := fmt.Sprintf("fake-%04d", i)
				node, err := c.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
					Name: name, Labels: map[string]string{corev1.LabelHostname: name, corev1.LabelOSStable: "linux"},
				}}, metav1.CreateOptions{})
				if err != nil {
					b.Error(err)
					continue
				}
				now := metav1.Now()
				node.Status = corev1.NodeStatus{
					Capacity: capacity, Allocatable: capacity,
					Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}},
				}
				if _, err := c.Client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
					b.Error(err)
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

func runSchedulerBench(b *testing.B, c *Cluster, ns string, total int, antiAffinity bool) {
	ctx := context.Background()
	client := protobufClient(b, c)
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	w, err := client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	var mu sync.Mutex // guards created and bound
	created := map[string]time.Time{}
	bound := map[string]time.Time{}
	allBound := make(chan struct{})
	go func() {
		for ev := range w.ResultChan() {
			if ev.Type != watch.Modified && ev.Type != watch.Added {
				continue
			}
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok || pod.Spec.NodeName == "" {
				continue
			}
			mu.Lock()
			if _, seen := bound[pod.Name]; !seen {
				bound[pod.Name] = time.Now()
				if len(bound) == total {
					close(allBound)
				}
			}
			mu.Unlock()
		}
	}()

	// Decision records, counted as they are written.
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		b.Fatal(err)
	}
	rw, err := dyn.Resource(v1alpha1.SchemeGroupVersion.WithResource("schedulingdecisions")).Namespace(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer rw.Stop()
	var records atomic.Int64
	allRecorded := make(chan struct{})
	go func() {
		for ev := range rw.ResultChan() {
			if ev.Type == watch.Added && records.Add(1) == int64(total) {
				close(allRecorded)
			}
		}
	}()

	next := make(chan int)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	cpu0 := processCPU(b, c.cmd.Process.Pid)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				pod := schedBenchPod(i, antiAffinity)
				mu.Lock()
				created[pod.Name] = time.Now()
				mu.Unlock()
				if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
					b.Error(err)
				}
			}
		}()
	}
	for i := range total {
		next <- i
	}
	close(next)
	wg.Wait()
	select {
	case <-allBound:
	case <-time.After(15 * time.Minute):
		mu.Lock()
		n := len(bound)
		mu.Unlock()
		b.Fatalf("%d of %d pods bound after 15 minutes", n, total)
	}
	elapsed := time.Since(start)
	cpu := processCPU(b, c.cmd.Process.Pid) - cpu0
	rss := processRSS(b, c.cmd.Process.Pid)
	b.StopTimer()

	mu.Lock()
	var latencies []time.Duration
	for name, t0 := range created {
		latencies = append(latencies, bound[name].Sub(t0))
	}
	mu.Unlock()
	b.ReportMetric(float64(total)/elapsed.Seconds(), "pods/s")
	b.ReportMetric(ms(percentile(latencies, 50)), "bound-p50-ms")
	b.ReportMetric(ms(percentile(latencies, 99)), "bound-p99-ms")
	// The control plane's CPU time per pod (API server, etcd, scheduler and
	// the rest, from create to bound): the throughput's cost, steadier
	// from run to run than the throughput itself.
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(total), "server-cpu-ms/pod")
	b.ReportMetric(rss, "server-rss-MB")
	// Decision records are written behind the bindings, off the
	// scheduling loop: how many were written by the last bind, and how
	// long the rest took.
	recorded := records.Load()
	lastBind := time.Now()
	select {
	case <-allRecorded:
	case <-time.After(10 * time.Minute):
		b.Fatalf("%d of %d decision records written 10 minutes after the last bind", records.Load(), total)
	}
	rest := time.Since(lastBind)
	b.ReportMetric(float64(recorded), "records-at-last-bind")
	b.ReportMetric(rest.Seconds(), "records-rest-s")
	b.Logf("%s: %d pods bound in %v; %d decision records written by then, the rest %v later", ns, total, elapsed.Round(time.Millisecond), recorded, rest.Round(100*time.Millisecond))
}

// protobufClient is a client of c speaking Kubernetes' protobuf, as
// kube-scheduler's scheduler_perf clients and the control plane's own
// components do: the benchmark's client shares the two cores, and JSON
// would cost it several times the CPU.
func protobufClient(b *testing.B, c *Cluster) kubernetes.Interface {
	b.Helper()
	cfg := rest.CopyConfig(c.Config)
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return client
}

// schedBenchPod is pod i of a scheduler benchmark: 10m cpu and 16Mi, and
// with antiAffinity a required anti-affinity to the other pods of its group
// of five on the same host.
func schedBenchPod(i int, antiAffinity bool) *corev1.Pod {
	group := map[string]string{"group": fmt.Sprintf("g%d", i/5)}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%05d", i), Labels: group},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi"),
			}},
		}}},
	}
	if antiAffinity {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: group},
			}},
		}}
	}
	return p
}
