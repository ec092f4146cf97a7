package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// BenchmarkDeployment1000 runs a Deployment of 1,000 replicas on 100
// simulated nodes and reports the time until all are available, the time
// of a rolling update of all of them, and the glassplane process's RSS
// (the controller manager runs in it) at that size.
func BenchmarkDeployment1000(b *testing.B) {
	const replicas = 1000
	c := NewCluster(b, "--node-runtime", "none", "--simulated-nodes", "100")
	ctx := context.Background()
	client := c.Client
	b.ResetTimer()
	for i := range b.N {
		name := fmt.Sprintf("bench-%d", i)
		start := time.Now()
		if _, err := client.AppsV1().Deployments("default").Create(ctx, benchDeployment(name, replicas), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		if err := waitAvailable(ctx, c, name, replicas, 10*time.Minute); err != nil {
			b.Fatal(err)
		}
		available := time.Since(start)

		start = time.Now()
		d, err := client.AppsV1().Deployments("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			b.Fatal(err)
		}
		d.Spec.Template.Spec.Containers[0].Image = "busybox:1.37"
		if _, err := client.AppsV1().Deployments("default").Update(ctx, d, metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
		if err := waitAvailable(ctx, c, name, replicas, 10*time.Minute); err != nil {
			b.Fatal(err)
		}
		rolled := time.Since(start)

		b.ReportMetric(available.Seconds(), "available-s")
		b.ReportMetric(rolled.Seconds(), "rollingupdate-s")
		b.ReportMetric(float64(rssKiB(b, c.cmd.Process.Pid))/1024, "glassplane-MiB")
		b.StopTimer()
		if err := client.AppsV1().Deployments("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// benchDeployment is a Deployment of replicas busybox pods that rolls 25%
// at a time.
func benchDeployment(name string, replicas int32) *appsv1.Deployment {
	quarter := intstr.FromString("25%")
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: appsv1.DeploymentStrategy{
				Type:          appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &quarter, MaxUnavailable: &quarter},
			},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36", Command: []string{"sleep", "3600"}}}},
			},
		},
	}
}

// waitAvailable polls until the deployment's current generation has every
// replica updated and available.
func waitAvailable(ctx context.Context, c *Cluster, name string, replicas int32, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last appsv1.DeploymentStatus
	for time.Now().Before(deadline) {
		d, err := c.Client.AppsV1().Deployments("default").Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			last = d.Status
			s := d.Status
			if s.ObservedGeneration >= d.Generation && s.Replicas == replicas && s.UpdatedReplicas == replicas && s.AvailableReplicas == replicas {
				return nil
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("deployment %s not available within %s: %+v", name, timeout, last)
}
