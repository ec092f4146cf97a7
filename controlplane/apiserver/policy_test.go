package apiserver_test

import (
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// quotaWithStatus creates a quota and sets its status as the resourcequota
// controller does (status.hard = spec.hard, used as given).
func quotaWithStatus(t *testing.T, env *testEnv, ns string, hard, used corev1.ResourceList) *corev1.ResourceQuota {
	t.Helper()
	q, err := env.client.CoreV1().ResourceQuotas(ns).Create(ctxT(t), &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "compute-resources"}, Spec: corev1.ResourceQuotaSpec{Hard: hard},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: used}
	q, err = env.client.CoreV1().ResourceQuotas(ns).UpdateStatus(ctxT(t), q, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func podRequesting(name, cpu string) *corev1.Pod {
	p := testPod(name)
	p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	return p
}

func TestResourceQuotaAdmission(t *testing.T) {
	env := shared
	ns := env.namespace(t)
	hard := corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("3"), corev1.ResourcePods: resource.MustParse("10")}
	quotaWithStatus(t, env, ns, hard, corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("0"), corev1.ResourcePods: resource.MustParse("0")})

	for _, name := range []string{"a", "b", "c"} {
		if _, err := env.client.CoreV1().Pods(ns).Create(ctxT(t), podRequesting(name, "1"), metav1.CreateOptions{}); err != nil {
			t.Fatalf("pod %s within the quota: %v", name, err)
		}
	}
	q, err := env.client.CoreV1().ResourceQuotas(ns).Get(ctxT(t), "compute-resources", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := q.Status.Used[corev1.ResourceRequestsCPU]; got.Cmp(resource.MustParse("3")) != 0 {
		t.Errorf("used requests.cpu = %s after three pods of 1, want 3", got.String())
	}

	_, err = env.client.CoreV1().Pods(ns).Create(ctxT(t), podRequesting("d", "1"), metav1.CreateOptions{})
	want := `pods "d" is forbidden: exceeded quota: compute-resources, requested: requests.cpu=1, used: requests.cpu=3, limited: requests.cpu=3`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("pod over the quota: got %v, want 403 %q", err, want)
	}
	if _, err := env.client.CoreV1().Pods(ns).Get(ctxT(t), "d", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused pod was stored: %v", err)
	}

	_, err = env.client.CoreV1().Pods(ns).Create(ctxT(t), testPod("norequests"), metav1.CreateOptions{})
	want = `pods "norequests" is forbidden: failed quota: compute-resources: must specify requests.cpu for: ` + testPod("x").Spec.Containers[0].Name
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("pod without requests: got %v, want 403 %q", err, want)
	}
}

// TestResourceQuotaConcurrentCreates: pods created at once never pass the
// quota together, since status.used is written with a compare-and-swap.
func TestResourceQuotaConcurrentCreates(t *testing.T) {
	env := shared
	ns := env.namespace(t)
	quotaWithStatus(t, env, ns, corev1.ResourceList{corev1.ResourcePods: resource.MustParse("5")}, corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")})
	var wg sync.WaitGroup
	var mu sync.Mutex
	created := 0
	for i := range 12 {
		wg.Go(func() {
			_, err := env.client.CoreV1().Pods(ns).Create(ctxT(t), testPod("p"+string(rune('a'+i))), metav1.CreateOptions{})
			if err == nil {
				mu.Lock()
				created++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if created != 5 {
		t.Errorf("%d pods were created under a quota of 5 pods", created)
	}
}

func TestLimitRangeAdmission(t *testing.T) {
	env := shared
	ns := env.namespace(t)
	_, err := env.client.CoreV1().LimitRanges(ns).Create(ctxT(t), &corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Name: "limits"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type:           corev1.LimitTypeContainer,
			Min:            corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
			DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")},
			Default:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
		}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod, err := env.client.CoreV1().Pods(ns).Create(ctxT(t), testPod("defaulted"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res := pod.Spec.Containers[0].Resources
	if got := res.Requests[corev1.ResourceCPU]; got.String() != "200m" {
		t.Errorf("defaulted request = %s, want 200m", got.String())
	}
	if got := res.Limits[corev1.ResourceCPU]; got.String() != "500m" {
		t.Errorf("defaulted limit = %s, want 500m", got.String())
	}
	if a := pod.Annotations["kubernetes.io/limit-ranger"]; !strings.HasPrefix(a, "LimitRanger plugin set: cpu request for container ") {
		t.Errorf("annotation = %q", a)
	}
	_, err = env.client.CoreV1().Pods(ns).Create(ctxT(t), podRequesting("small", "50m"), metav1.CreateOptions{})
	want := `pods "small" is forbidden: minimum cpu usage per Container is 100m, but request is 50m`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("pod under the minimum: got %v, want %q", err, want)
	}
}

func TestPolicyKindsRefuseBadInput(t *testing.T) {
	env := shared
	ns := env.namespace(t)
	_, err := env.client.CoreV1().ResourceQuotas(ns).Create(ctxT(t), &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "neg"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-1")}},
	}, metav1.CreateOptions{})
	want := `ResourceQuota "neg" is invalid: spec.hard[cpu]: Invalid value: "-1": must be greater than or equal to 0`
	if !apierrors.IsInvalid(err) || err.Error() != want {
		t.Errorf("negative quota: got %v, want %q", err, want)
	}
	_, err = env.client.CoreV1().LimitRanges(ns).Create(ctxT(t), &corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Name: "minmax"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type: corev1.LimitTypePod,
			Min:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			Max:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
		}}},
	}, metav1.CreateOptions{})
	want = `LimitRange "minmax" is invalid: spec.limits[0].min[cpu]: Invalid value: "2": min value 2 is greater than max value 1`
	if !apierrors.IsInvalid(err) || err.Error() != want {
		t.Errorf("min > max: got %v, want %q", err, want)
	}
	_, err = env.client.NetworkingV1().Ingresses(ns).Create(ctxT(t), &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "empty"}}, metav1.CreateOptions{})
	want = `Ingress.networking.k8s.io "empty" is invalid: spec: Invalid value: null: either ` + "`defaultBackend` or `rules`" + ` must be specified`
	if !apierrors.IsInvalid(err) || err.Error() != want {
		t.Errorf("empty ingress: got %v, want %q", err, want)
	}
	for _, name := range []string{"neg", "minmax"} {
		if _, err := env.client.CoreV1().ResourceQuotas(ns).Get(ctxT(t), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s was stored: %v", name, err)
		}
	}
}

func TestDefaultIngressClass(t *testing.T) {
	env := shared
	ns := env.namespace(t)
	_, err := env.client.NetworkingV1().IngressClasses().Create(ctxT(t), &networkingv1.IngressClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default-" + ns, Annotations: map[string]string{networkingv1.AnnotationIsDefaultIngressClass: "true"}},
		Spec:       networkingv1.IngressClassSpec{Controller: "example.com/ingress"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.client.NetworkingV1().IngressClasses().Delete(ctxT(t), "default-"+ns, metav1.DeleteOptions{})
	})
	prefix := networkingv1.PathTypePrefix
	ing, err := env.client.NetworkingV1().Ingresses(ns).Create(ctxT(t), &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "example.com", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
			Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &prefix, Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}},
		}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ing.Spec.IngressClassName == nil || *ing.Spec.IngressClassName != "default-"+ns {
		t.Errorf("ingressClassName = %v, want the default class", ing.Spec.IngressClassName)
	}
}

// TestEventsV1IsCoreEvents: an events.k8s.io/v1 Event is the same stored
// object as the core/v1 Event, each seen in its own shape.
func TestEventsV1IsCoreEvents(t *testing.T) {
	env := shared
	ns := env.namespace(t)
	now := metav1.NowMicro()
	_, err := env.client.EventsV1().Events(ns).Create(ctxT(t), &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "hello"}, EventTime: now, ReportingController: "example.com/tester", ReportingInstance: "tester-1",
		Action: "Testing", Reason: "Tested", Note: "a note", Type: corev1.EventTypeNormal,
		Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "somepod"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	core, err := env.client.CoreV1().Events(ns).Get(ctxT(t), "hello", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if core.Message != "a note" || core.InvolvedObject.Name != "somepod" || core.ReportingController != "example.com/tester" || core.Action != "Testing" {
		t.Errorf("core view = %+v", core)
	}
	core.Message = "changed through core"
	if _, err := env.client.CoreV1().Events(ns).Update(ctxT(t), core, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	list, err := env.client.EventsV1().Events(ns).List(ctxT(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Note != "changed through core" || list.Items[0].Regarding.Name != "somepod" {
		t.Errorf("events/v1 list = %+v", list.Items)
	}
	_, err = env.client.EventsV1().Events(ns).Create(ctxT(t), &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Type: corev1.EventTypeNormal}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "eventTime: Required value") {
		t.Errorf("events/v1 without eventTime: %v", err)
	}
}
