package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkAdmissionWebhookLatency measures what a no-op validating webhook
// (the test's HTTPS server on loopback, allowing everything) adds to pod
// creates: 1000 creates from 8 clients without it, then 1000 with it, and
// the p50/p99 of each. The pods name a scheduler nobody runs, so only the
// API server works.
func BenchmarkAdmissionWebhookLatency(b *testing.B) {
	const n, workers = 1000, 8
	c := NewCluster(b, "--node-runtime", "none")
	wh := startWebhookServer(b)
	ctx := context.Background()
	const ns = "bench-webhook"
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{SchedulerName: "bench-nobody",
				Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
		}
	}
	create := func(prefix string) func(i int) error {
		return func(i int) error {
			_, err := c.Client.CoreV1().Pods(ns).Create(ctx, pod(fmt.Sprintf("%s-%d", prefix, i)), metav1.CreateOptions{})
			return err
		}
	}
	// Warm the client's connections and the server.
	runConcurrently(b, 100, workers, create("warm"))

	measure := func(prefix string) (p50, p99 time.Duration) {
		latencies := make([]time.Duration, n)
		do := create(prefix)
		runConcurrently(b, n, workers, func(i int) error {
			t0 := time.Now()
			err := do(i)
			latencies[i] = time.Since(t0)
			return err
		})
		return percentile(latencies, 50), percentile(latencies, 99)
	}
	b.ResetTimer()
	base50, base99 := measure("plain")

	none := admissionregistrationv1.SideEffectClassNone
	url := wh.URL + "/allow"
	if _, err := c.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-noop"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         "noop.glassplane.test",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: wh.CAPEM},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
			}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; ; i++ {
		if err := create("probe")(i); err != nil {
			b.Fatal(err)
		}
		if _, ok := wh.reviewOf(fmt.Sprintf("probe-%d", i)); ok {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("the webhook was never called")
		}
		time.Sleep(100 * time.Millisecond)
	}
	hook50, hook99 := measure("hooked")
	b.StopTimer()
	if _, ok := wh.reviewOf(fmt.Sprintf("hooked-%d", n-1)); !ok {
		b.Fatal("the webhook missed the measured creates")
	}
	b.ReportMetric(ms(base50), "create-p50-ms")
	b.ReportMetric(ms(base99), "create-p99-ms")
	b.ReportMetric(ms(hook50), "create-webhook-p50-ms")
	b.ReportMetric(ms(hook99), "create-webhook-p99-ms")
	b.ReportMetric(ms(hook50-base50), "webhook-added-p50-ms")
	b.ReportMetric(ms(hook99-base99), "webhook-added-p99-ms")
}
