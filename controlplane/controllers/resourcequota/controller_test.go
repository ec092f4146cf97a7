package resourcequota

import (
	"context"
	"io"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
)

func TestSyncComputesUsedByScope(t *testing.T) {
	q := resource.MustParse
	pod := func(name string, cpu string, phase corev1.PodPhase, deadline *int64) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
			Spec: corev1.PodSpec{ActiveDeadlineSeconds: deadline, Containers: []corev1.Container{{Name: "c",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q(cpu)}}}}},
			Status: corev1.PodStatus{Phase: phase},
		}
	}
	deadline := int64(60)
	objects := []runtime.Object{
		&corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "all", Namespace: "ns"}, Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			"pods": q("10"), "requests.cpu": q("4"), "services.nodeports": q("5"), "count/pods": q("10"),
		}}},
		&corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "terminating", Namespace: "ns"}, Spec: corev1.ResourceQuotaSpec{
			Hard: corev1.ResourceList{"pods": q("10")}, Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating},
		}},
		pod("running", "500m", corev1.PodRunning, nil),
		pod("job", "250m", corev1.PodRunning, &deadline),
		pod("done", "1", corev1.PodSucceeded, nil),
		pod("elsewhere", "1", corev1.PodRunning, nil),
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "np", Namespace: "ns"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort,
			Ports: []corev1.ServicePort{{Port: 80}, {Port: 443}}}},
	}
	objects[5].(*corev1.Pod).Namespace = "other"
	client := fake.NewClientset(objects...)
	f := informers.NewSharedInformerFactory(client, 0)
	scheme := runtime.NewScheme()
	metav1.AddMetaToScheme(scheme)
	c, err := New(slog.New(slog.NewTextHandler(io.Discard, nil)), client, metadatafake.NewSimpleMetadataClient(scheme),
		func(gr schema.GroupResource) (schema.GroupVersionResource, error) { return gr.WithVersion("v1"), nil },
		f.Core().V1().ResourceQuotas(), f.Core().V1().Pods(), f.Core().V1().Services(), f.Core().V1().PersistentVolumeClaims(), 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())

	tests := []struct {
		quota string
		want  corev1.ResourceList
	}{
		// the succeeded pod counts as an object, not its cpu or as a pod
		{"all", corev1.ResourceList{"pods": q("2"), "requests.cpu": q("750m"), "services.nodeports": q("2"), "count/pods": q("3")}},
		{"terminating", corev1.ResourceList{"pods": q("1")}},
	}
	for _, tc := range tests {
		t.Run(tc.quota, func(t *testing.T) {
			if err := c.sync(ctx, "ns/"+tc.quota); err != nil {
				t.Fatal(err)
			}
			got, err := client.CoreV1().ResourceQuotas("ns").Get(ctx, tc.quota, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Status.Used) != len(tc.want) {
				t.Fatalf("used = %v, want %v", got.Status.Used, tc.want)
			}
			for name, want := range tc.want {
				if have := got.Status.Used[name]; have.Cmp(want) != 0 {
					t.Errorf("used[%s] = %s, want %s", name, have.String(), want.String())
				}
			}
			if len(got.Status.Hard) != len(got.Spec.Hard) {
				t.Errorf("status.hard = %v, want spec.hard %v", got.Status.Hard, got.Spec.Hard)
			}
		})
	}
}
