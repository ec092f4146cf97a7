package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/glassplane/glassplane/controlplane/usage"
)

// BenchmarkHPAReaction measures the horizontal pod autoscaler's reaction
// time on simulated nodes: from the moment a pod's synthetic CPU usage
// jumps (its usage annotation) to the moment the HPA has written the
// Deployment's new scale, and the same for the drop back to idle (with a
// scale-down window of 0 s). kube-controller-manager's 15 s sync period
// bounds both; the figures are what a classroom waits.
func BenchmarkHPAReaction(b *testing.B) {
	c := NewCluster(b, "--node-runtime", "none", "--simulated-nodes", "2")
	ctx := context.Background()
	ns := "default"
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "glassplane.local/hello:latest",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}},
			},
		},
	}
	if _, err := c.Client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To(int32(1)), MaxReplicas: 4,
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To(int32(0))}},
		},
	}
	if _, err := c.Client.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, hpa, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	setUsage := func(cpu string) error {
		pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return err
		}
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{usage.AnnotationSimulatedUsage: "cpu=" + cpu}}})
		for _, p := range pods.Items {
			if _, err := c.Client.CoreV1().Pods(ns).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				return err
			}
		}
		return nil
	}
	waitScale := func(ok func(int32) bool, timeout time.Duration) error {
		deadline := time.Now().Add(timeout)
		for time.Now().Before(deadline) {
			d, err := c.Client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
			if err == nil && ok(*d.Spec.Replicas) {
				return nil
			}
			time.Sleep(100 * time.Millisecond)
		}
		return fmt.Errorf("the scale did not change within %s", timeout)
	}
	// The pods must have been ready for a metrics window before the HPA
	// counts them (upstream's CPU initialization rule).
	if err := waitAvailable(ctx, c, "web", 1, 2*time.Minute); err != nil {
		b.Fatal(err)
	}
	time.Sleep(20 * time.Second)
	var up, down time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if err := setUsage("400m"); err != nil {
			b.Fatal(err)
		}
		if err := waitScale(func(n int32) bool { return n > 1 }, 2*time.Minute); err != nil {
			b.Fatal(err)
		}
		up += time.Since(start)
		// New pods start idle; the annotated one keeps the average near
		// the target until every pod goes idle.
		if err := waitAvailable(ctx, c, "web", 4, 2*time.Minute); err != nil {
			b.Fatal(err)
		}
		start = time.Now()
		if err := setUsage("1m"); err != nil {
			b.Fatal(err)
		}
		if err := waitScale(func(n int32) bool { return n == 1 }, 2*time.Minute); err != nil {
			b.Fatal(err)
		}
		down += time.Since(start)
		time.Sleep(20 * time.Second)
	}
	b.ReportMetric(up.Seconds()/float64(b.N), "scale-up-s")
	b.ReportMetric(down.Seconds()/float64(b.N), "scale-down-s")
}
