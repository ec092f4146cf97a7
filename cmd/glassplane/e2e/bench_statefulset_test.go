package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// BenchmarkStatefulSet20 runs a StatefulSet of 20 replicas on three
// simulated nodes and reports the time until all are Ready, with
// OrderedReady (each pod created once the one before it is Ready) and
// Parallel pod management.
func BenchmarkStatefulSet20(b *testing.B) {
	const replicas = 20
	c := NewCluster(b, "--node-runtime", "none", "--simulated-nodes", "3", "--web-listen", "")
	ctx := context.Background()
	for _, policy := range []appsv1.PodManagementPolicyType{appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement} {
		b.Run(string(policy), func(b *testing.B) {
			for i := range b.N {
				name := fmt.Sprintf("bench-%s-%d", map[appsv1.PodManagementPolicyType]string{appsv1.OrderedReadyPodManagement: "ordered", appsv1.ParallelPodManagement: "parallel"}[policy], i)
				start := time.Now()
				if _, err := c.Client.AppsV1().StatefulSets("default").Create(ctx, benchStatefulSet(name, replicas, policy), metav1.CreateOptions{}); err != nil {
					b.Fatal(err)
				}
				deadline := time.Now().Add(5 * time.Minute)
				for {
					s, err := c.Client.AppsV1().StatefulSets("default").Get(ctx, name, metav1.GetOptions{})
					if err != nil {
						b.Fatal(err)
					}
					if s.Status.ReadyReplicas == replicas {
						break
					}
					if time.Now().After(deadline) {
						b.Fatalf("%d of %d ready after 5 minutes", s.Status.ReadyReplicas, replicas)
					}
					time.Sleep(50 * time.Millisecond)
				}
				b.ReportMetric(time.Since(start).Seconds(), "ready-s")
				b.StopTimer()
				if err := c.Client.AppsV1().StatefulSets("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

func benchStatefulSet(name string, replicas int32, policy appsv1.PodManagementPolicyType) *appsv1.StatefulSet {
	labels := map[string]string{"app": name}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            &replicas,
			ServiceName:         name,
			PodManagementPolicy: policy,
			Selector:            &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36", Command: []string{"sleep", "3600"}}}},
			},
		},
	}
}

// BenchmarkStatefulSet5Containerd runs a StatefulSet of 5 on the containerd
// node, each pod with a claim from the default StorageClass (the built-in
// local-path provisioner, WaitForFirstConsumer), OrderedReady, and reports
// the time until all are Ready.
func BenchmarkStatefulSet5Containerd(b *testing.B) {
	requireTool(b, "containerd", "the containerd StatefulSet benchmark")
	const replicas = 5
	c := NewCluster(b, "--node-runtime", "containerd", "--web-listen", "")
	ctx := context.Background()
	for i := range b.N {
		name := fmt.Sprintf("bench-claims-%d", i)
		set := benchStatefulSet(name, replicas, appsv1.OrderedReadyPodManagement)
		pod := &set.Spec.Template.Spec
		pod.TerminationGracePeriodSeconds = ptr.To(int64(1))
		pod.Containers[0].Image = "glassplane.local/hello:latest"
		pod.Containers[0].Command = []string{"sh", "-c", "echo $HOSTNAME > /data/who; exec sleep 3600"}
		pod.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		set.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
			ObjectMeta: metav1.ObjectMeta{Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("16Mi")}},
			},
		}}
		start := time.Now()
		if _, err := c.Client.AppsV1().StatefulSets("default").Create(ctx, set, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Minute)
		for {
			s, err := c.Client.AppsV1().StatefulSets("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				b.Fatal(err)
			}
			if s.Status.ReadyReplicas == replicas {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("%d of %d ready after 5 minutes", s.Status.ReadyReplicas, replicas)
			}
			time.Sleep(50 * time.Millisecond)
		}
		b.ReportMetric(time.Since(start).Seconds(), "ready-s")
		b.StopTimer()
		if err := c.Client.AppsV1().StatefulSets("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			b.Fatal(err)
		}
		// The containers must be gone before the cluster stops: a running
		// task keeps its state directory busy.
		deadline = time.Now().Add(3 * time.Minute)
		for {
			pods, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
			if err == nil && len(pods.Items) == 0 {
				break
			}
			if time.Now().After(deadline) {
				b.Fatal("the StatefulSet's pods were not deleted within 3 minutes")
			}
			time.Sleep(200 * time.Millisecond)
		}
		b.StartTimer()
	}
}
