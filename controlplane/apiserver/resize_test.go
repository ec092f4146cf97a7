package apiserver_test

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestPodResize: pods/resize changes only the containers' cpu and memory
// (and resize policies) as upstream's podResizeStrategy: the generation
// grows, anything else in the body is dropped, and Kubernetes' 422s refuse
// removing a request, a QoS class change, another resource and a container
// added; a refused resize stores nothing. GET and PUT serve the pod too.
func TestPodResize(t *testing.T) {
	env := newEnv(t)
	ctx := ctxT(t)
	ns := env.namespace(t)
	pods := env.client.CoreV1().Pods(ns)
	pod := testPod("web")
	pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")},
	}
	created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Generation != 1 || created.Status.QOSClass != corev1.PodQOSBurstable {
		t.Fatalf("created pod: generation %d, qos %s", created.Generation, created.Status.QOSClass)
	}
	resize := func(patch string) (*corev1.Pod, error) {
		return pods.Patch(ctx, "web", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "resize")
	}
	got, err := resize(`{"metadata":{"labels":{"app":"other"}},"spec":{"containers":[{"name":"c","image":"nginx","resources":{"requests":{"cpu":"150m"},"limits":{"cpu":"300m"}}}]}}`)
	if err != nil {
		t.Fatal(err)
	}
	c := got.Spec.Containers[0]
	if c.Resources.Requests.Cpu().MilliValue() != 150 || c.Resources.Limits.Cpu().MilliValue() != 300 || c.Resources.Requests.Memory().Value() != 64<<20 {
		t.Errorf("resized resources %v", c.Resources)
	}
	if got.Generation != 2 || c.Image != "busybox" || got.Labels["app"] != "web" {
		t.Errorf("after the resize: generation %d, image %q, label %q; want 2, the image and label kept", got.Generation, c.Image, got.Labels["app"])
	}
	for _, tc := range []struct{ name, patch, want string }{
		{"request removed", `{"spec":{"containers":[{"name":"c","resources":{"requests":{"memory":null}}}]}}`, "spec.containers[0].resources.requests: Forbidden: resource requests cannot be removed"},
		{"qos changed", `{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"300m","memory":"64Mi"},"limits":{"cpu":"300m","memory":"64Mi"}}}]}}`, "Pod QOS Class may not change as a result of resizing"},
		{"another resource", `{"spec":{"containers":[{"name":"c","resources":{"requests":{"ephemeral-storage":"1Gi"}}}]}}`, "spec: Forbidden: only cpu and memory resources are mutable"},
		{"container added", `{"spec":{"containers":[{"name":"c"},{"name":"d","image":"busybox"}]}}`, "spec.containers: Forbidden: containers may not be added or removed on resize"},
	} {
		_, err := resize(tc.patch)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want 422 %q", tc.name, err, tc.want)
		}
	}
	stored, err := pods.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if stored.Generation != 2 || len(stored.Spec.Containers) != 1 || stored.Spec.Containers[0].Resources.Requests.Cpu().MilliValue() != 150 {
		t.Errorf("a refused resize changed the pod: generation %d, %v", stored.Generation, stored.Spec.Containers)
	}

	// GET and PUT of the subresource.
	raw, err := env.client.CoreV1().RESTClient().Get().Namespace(ns).Resource("pods").Name("web").SubResource("resize").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var viaGet corev1.Pod
	if err := json.Unmarshal(raw, &viaGet); err != nil || viaGet.Name != "web" || viaGet.Generation != 2 {
		t.Fatalf("GET pods/web/resize: %v %s", err, raw)
	}
	stored.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("128Mi")
	put, err := pods.UpdateResize(ctx, "web", stored, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if put.Generation != 3 || put.Spec.Containers[0].Resources.Requests.Memory().Value() != 128<<20 {
		t.Errorf("PUT pods/web/resize: generation %d, resources %v", put.Generation, put.Spec.Containers[0].Resources)
	}
}
