package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// BenchmarkRBACAuthorization measures authenticated GETs and creates of
// ConfigMaps, 16 clients at a time, as a user allowed by a RoleBinding to
// "edit" (RBAC evaluated on every request) and as a system:masters user (the
// fast path), so that the cost of authorization is a number.
func BenchmarkRBACAuthorization(b *testing.B) {
	const gets, creates, workers = 4000, 1000, 16
	c := NewCluster(b, "--node-runtime", "none")
	ctx := context.Background()
	const ns = "bench-rbac"
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	if _, err := c.Client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "target"}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	if _, err := c.Client.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-edit"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "bench-user"}},
	}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", issueKubeconfig(b, c, "bench-user"))
	if err != nil {
		b.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 5000, 5000
	user, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := user.CoreV1().ConfigMaps(ns).Get(ctx, "target", metav1.GetOptions{})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("bench-user never got access: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	admin := c.Client
	// Warm both clients' connections and the server before measuring.
	for _, client := range []kubernetes.Interface{admin, user} {
		runConcurrently(b, 500, workers, func(int) error {
			_, err := client.CoreV1().ConfigMaps(ns).Get(ctx, "target", metav1.GetOptions{})
			return err
		})
	}

	b.ResetTimer()
	for _, who := range []struct {
		name   string
		client kubernetes.Interface
	}{{"masters", admin}, {"rbac", user}} {
		rps, p99 := runConcurrently(b, gets, workers, func(i int) error {
			_, err := who.client.CoreV1().ConfigMaps(ns).Get(ctx, "target", metav1.GetOptions{})
			return err
		})
		b.ReportMetric(rps, "get-"+who.name+"-req/s")
		b.ReportMetric(ms(p99), "get-"+who.name+"-p99-ms")
		rps, p99 = runConcurrently(b, creates, workers, func(i int) error {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%04d", who.name, i)}, Data: map[string]string{"k": "v"}}
			_, err := who.client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
			return err
		})
		b.ReportMetric(rps, "create-"+who.name+"-req/s")
		b.ReportMetric(ms(p99), "create-"+who.name+"-p99-ms")
	}
}

// runConcurrently calls do(0..n-1) from workers goroutines and returns the
// throughput and the p99 latency.
func runConcurrently(b *testing.B, n, workers int, do func(i int) error) (float64, time.Duration) {
	b.Helper()
	latencies := make([]time.Duration, n)
	next := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				t0 := time.Now()
				if err := do(i); err != nil {
					b.Error(err)
				}
				latencies[i] = time.Since(t0)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return float64(n) / time.Since(start).Seconds(), percentile(latencies, 99)
}
