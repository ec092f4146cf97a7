package e2e

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// BenchmarkNodePodStartup measures create → Running on a containerd node
// with the local demo image and CNI pod networking: 30 pods one at a time,
// then 30 at once. The Kubernetes SLO is p99 ≤ 5 s. For the burst it also
// reports where the CPU time went (the machine's, glassplane's, the CNI
// plugins', and the rest: containerd, its shims, runc, the containers, the
// kernel).
func BenchmarkNodePodStartup(b *testing.B) {
	requireTool(b, "containerd", "the containerd benchmark")
	const total = 30
	c := NewCluster(b, "--node-runtime", "containerd")
	ctx := context.Background()
	// The API answers before the node has registered; a pod created then
	// waits for the node and the scheduler's retry, which is cluster
	// start-up, not pod start-up.
	waitContainerdNodeReady(b, c)
	// Containers outlive the cluster by design: remove them before it stops
	// (with a grace period, so a pod object is gone only once its
	// containers are).
	b.Cleanup(func() {
		_ = c.Client.CoreV1().Pods("default").DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: new(int64(1))}, metav1.ListOptions{LabelSelector: "bench"})
		deadline := time.Now().Add(2 * time.Minute)
		for time.Now().Before(deadline) {
			list, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "bench"})
			if err == nil && len(list.Items) == 0 {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
	newPod := func(name, batch string) *corev1.Pod {
		p := onContainerdNode(name, corev1.RestartPolicyAlways, corev1.Container{Name: "web", Image: demoImage})
		p.Labels = map[string]string{"bench": batch}
		return p
	}
	// watchRunning records when each pod of the batch is first seen Running.
	watchRunning := func(batch string) (watch.Interface, map[string]time.Time, *sync.Mutex, chan struct{}) {
		w, err := c.Client.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{LabelSelector: "bench=" + batch})
		if err != nil {
			b.Fatal(err)
		}
		running := map[string]time.Time{}
		var mu sync.Mutex
		done := make(chan struct{})
		go func() {
			defer close(done)
			for ev := range w.ResultChan() {
				pod, ok := ev.Object.(*corev1.Pod)
				if !ok || pod.Status.Phase != corev1.PodRunning {
					continue
				}
				mu.Lock()
				if _, seen := running[pod.Name]; !seen {
					running[pod.Name] = time.Now()
				}
				n := len(running)
				mu.Unlock()
				if n == total {
					return
				}
			}
		}()
		return w, running, &mu, done
	}
	report := func(prefix string, created, running map[string]time.Time) {
		var startup []time.Duration
		for name, t0 := range created {
			startup = append(startup, running[name].Sub(t0))
		}
		b.ReportMetric(ms(percentile(startup, 50)), prefix+"-p50-ms")
		b.ReportMetric(ms(percentile(startup, 99)), prefix+"-p99-ms")
	}

	b.ResetTimer()
	w, running, mu, done := watchRunning("serial")
	created := map[string]time.Time{}
	for i := range total {
		name := fmt.Sprintf("serial-%02d", i)
		t0 := time.Now()
		if _, err := c.Client.CoreV1().Pods("default").Create(ctx, newPod(name, "serial"), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		created[name] = t0
		deadline := time.Now().Add(time.Minute)
		for {
			mu.Lock()
			_, ok := running[name]
			mu.Unlock()
			if ok {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("pod %s not Running within a minute", name)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	<-done
	w.Stop()
	mu.Lock()
	report("serial-running", created, running)
	mu.Unlock()

	w, running, mu, done = watchRunning("burst")
	// Where the burst's CPU goes: the machine's busy time, glassplane's
	// own, that of the CNI plugins it runs (its exited children), and the
	// benchmark client's; the rest is containerd, its shims, runc, the
	// containers' own start, the kernel's work for them, and anything else
	// the machine ran meanwhile.
	pid := c.cmd.Process.Pid
	machine0, gp0, cni0, client0 := machineCPU(b), processCPU(b, pid), childrenCPU(b, pid), processCPU(b, os.Getpid())
	created = map[string]time.Time{}
	var cmu sync.Mutex // guards created
	var wg sync.WaitGroup
	for i := range total {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("burst-%02d", i)
			t0 := time.Now()
			if _, err := c.Client.CoreV1().Pods("default").Create(ctx, newPod(name, "burst"), metav1.CreateOptions{}); err != nil {
				b.Error(err)
				return
			}
			cmu.Lock()
			created[name] = t0
			cmu.Unlock()
		}()
	}
	wg.Wait()
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		b.Fatalf("%d of %d pods reached Running", len(running), total)
	}
	machine, gp, cni, client := machineCPU(b)-machine0, processCPU(b, pid)-gp0, childrenCPU(b, pid)-cni0, processCPU(b, os.Getpid())-client0
	w.Stop()
	b.StopTimer()
	b.ReportMetric(machine.Seconds(), "burst-machine-cpu-s")
	b.ReportMetric(gp.Seconds(), "burst-glassplane-cpu-s")
	b.ReportMetric(cni.Seconds(), "burst-cni-cpu-s")
	b.ReportMetric((machine - gp - cni - client).Seconds(), "burst-runtime-cpu-s")
	b.Logf("30 pods at once: %.1f CPU-seconds on the machine: glassplane %.1f, CNI plugins %.1f, this benchmark's client %.1f, the rest (containerd, shims, runc, the containers, the kernel) %.1f",
		machine.Seconds(), gp.Seconds(), cni.Seconds(), client.Seconds(), (machine - gp - cni - client).Seconds())
	mu.Lock()
	report("burst-running", created, running)
	mu.Unlock()
}

// waitContainerdNodeReady waits until the cluster's containerd node is
// registered and Ready.
func waitContainerdNodeReady(b *testing.B, c *Cluster) {
	b.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		nodes, err := c.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: "node.glassplane.io/runtime=containerd"})
		if err == nil {
			for _, n := range nodes.Items {
				for _, cond := range n.Status.Conditions {
					if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
						return
					}
				}
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("no Ready containerd node within 3 minutes (last error: %v)", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
