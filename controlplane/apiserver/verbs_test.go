package apiserver_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/glassplane/glassplane/controlplane/storage"
)

func TestListSelectors(t *testing.T) {
	ctx := ctxT(t)
	ns := shared.namespace(t)
	pods := shared.client.CoreV1().Pods(ns)
	for _, name := range []string{"a", "b", "c"} {
		p := testPod(name)
		if name != "c" {
			p.Labels["group"] = "ab"
		}
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, labels, fields string
		want                 []string
	}{
		{"label equality", "group=ab", "", []string{"a", "b"}},
		{"label not in", "group!=ab", "", []string{"c"}},
		{"metadata.name", "", "metadata.name=b", []string{"b"}},
		{"status.phase", "", "status.phase=Pending", []string{"a", "b", "c"}},
		{"spec.nodeName empty", "", "spec.nodeName=", []string{"a", "b", "c"}},
		{"both", "group=ab", "metadata.name!=a", []string{"b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: tc.labels, FieldSelector: tc.fields})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range list.Items {
				got = append(got, p.Name)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	_, err := pods.List(ctx, metav1.ListOptions{FieldSelector: "spec.foo=x"})
	if !apierrors.IsBadRequest(err) || err.Error() != "field label not supported: spec.foo" {
		t.Errorf("unsupported field: %v", err)
	}
	_, err = shared.client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Pod,involvedObject.name=a,involvedObject.namespace=" + ns + ",involvedObject.uid=x"})
	if err != nil {
		t.Errorf("kubectl describe's event selector: %v", err)
	}
}

func TestListPaginationWithContinue(t *testing.T) {
	ctx := ctxT(t)
	ns := shared.namespace(t)
	cms := shared.client.CoreV1().ConfigMaps(ns)
	for _, name := range []string{"c1", "c2", "c3", "c4", "c5"} {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	opts := metav1.ListOptions{Limit: 2}
	pages := 0
	var firstRV string
	for {
		list, err := cms.List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if firstRV == "" {
			firstRV = list.ResourceVersion
		} else if list.ResourceVersion != firstRV {
			t.Errorf("page resourceVersion %s, want %s", list.ResourceVersion, firstRV)
		}
		for _, cm := range list.Items {
			names = append(names, cm.Name)
		}
		if list.Continue == "" {
			break
		}
		if pages == 1 {
			if list.RemainingItemCount == nil || *list.RemainingItemCount != 3 {
				t.Errorf("remainingItemCount %v, want 3", list.RemainingItemCount)
			}
			if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c6"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		opts.Continue = list.Continue
	}
	if strings.Join(names, ",") != "c1,c2,c3,c4,c5" || pages != 3 {
		t.Errorf("pages %d, names %v: want a consistent snapshot c1..c5 in 3 pages", pages, names)
	}
	_, err := cms.List(ctx, metav1.ListOptions{Limit: 2, Continue: "bm90LWEtdG9rZW4"})
	if !apierrors.IsBadRequest(err) {
		t.Errorf("bad continue token: %v", err)
	}
}

func TestPatchTypes(t *testing.T) {
	ctx := ctxT(t)
	ns := shared.namespace(t)
	pods := shared.client.CoreV1().Pods(ns)
	p := testPod("patched")
	p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "side", Image: "busybox"})
	if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		pt    types.PatchType
		patch string
		check func(*corev1.Pod) bool
	}{
		{"merge", types.MergePatchType, `{"metadata":{"labels":{"m":"1"}}}`, func(p *corev1.Pod) bool { return p.Labels["m"] == "1" && p.Labels["app"] == "patched" }},
		{"strategic merges containers by name", types.StrategicMergePatchType, `{"spec":{"containers":[{"name":"side","image":"busybox:1.36"}]}}`, func(p *corev1.Pod) bool {
			return len(p.Spec.Containers) == 2 && p.Spec.Containers[1].Image == "busybox:1.36"
		}},
		{"json", types.JSONPatchType, `[{"op":"add","path":"/metadata/annotations","value":{"j":"1"}}]`, func(p *corev1.Pod) bool { return p.Annotations["j"] == "1" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := pods.Patch(ctx, "patched", tc.pt, []byte(tc.patch), metav1.PatchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(got) {
				t.Errorf("patch not applied: %+v", got)
			}
		})
	}
	errs := []struct {
		name  string
		pt    types.PatchType
		patch string
		code  int32
	}{
		{"apply without fieldManager", types.ApplyYAMLPatchType, `{"metadata":{"labels":{"x":"y"}}}`, http.StatusUnprocessableEntity},
		{"unknown patch type", types.PatchType("application/foo-patch+json"), `{}`, http.StatusUnsupportedMediaType},
		{"malformed merge", types.MergePatchType, `{"metadata":`, http.StatusBadRequest},
		{"json patch test fails", types.JSONPatchType, `[{"op":"test","path":"/metadata/name","value":"other"}]`, http.StatusUnprocessableEntity},
		{"json patch not a list", types.JSONPatchType, `{"op":"add"}`, http.StatusBadRequest},
		{"wrong type", types.MergePatchType, `{"spec":{"containers":"x"}}`, http.StatusBadRequest},
		{"unknown field", types.MergePatchType, `{"spec":{"foo":1}}`, http.StatusBadRequest},
		{"stale resourceVersion", types.MergePatchType, `{"metadata":{"resourceVersion":"1","labels":{"s":"1"}}}`, http.StatusConflict},
		{"invalid result", types.MergePatchType, `{"metadata":{"labels":{"bad key!":"x"}}}`, http.StatusUnprocessableEntity},
	}
	for _, tc := range errs {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pods.Patch(ctx, "patched", tc.pt, []byte(tc.patch), metav1.PatchOptions{FieldValidation: "Strict"})
			var status apierrors.APIStatus
			if !asStatus(err, &status) || status.Status().Code != tc.code {
				t.Fatalf("patch: %v, want code %d", err, tc.code)
			}
		})
	}
	_, err := pods.Patch(ctx, "missing", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("patch of a missing pod: %v", err)
	}
}

func asStatus(err error, out *apierrors.APIStatus) bool {
	s, ok := err.(apierrors.APIStatus)
	if ok {
		*out = s
	}
	return ok
}

func TestStrictFieldValidation(t *testing.T) {
	ns := shared.namespace(t)
	body := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"strict"},"spec":{"foo":1,"containers":[{"name":"c","image":"busybox"}]}}`
	resp, out := shared.do(t, http.MethodPost, "/api/v1/namespaces/"+ns+"/pods?fieldValidation=Strict", "application/json", strings.NewReader(body))
	want := `Pod in version \"v1\" cannot be handled as a Pod: strict decoding error: unknown field \"spec.foo\"`
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(out, want) {
		t.Errorf("strict: %s %s", resp.Status, out)
	}
	resp, _ = shared.do(t, http.MethodPost, "/api/v1/namespaces/"+ns+"/pods?fieldValidation=Warn", "application/json", strings.NewReader(body))
	if resp.StatusCode != http.StatusCreated || !strings.Contains(resp.Header.Get("Warning"), `unknown field \"spec.foo\"`) {
		t.Errorf("warn: %s %q", resp.Status, resp.Header.Get("Warning"))
	}
	resp, out = shared.do(t, http.MethodPost, "/api/v1/namespaces/"+ns+"/pods", "application/json", strings.NewReader(`{"apiVersion":"apps/v1","kind":"Pod"}`))
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(out, `no kind \"Pod\" is registered for version \"apps/v1\"`) {
		t.Errorf("wrong apiVersion: %s %s", resp.Status, out)
	}
	resp, out = shared.do(t, http.MethodPost, "/api/v1/namespaces/other/pods", "application/json", strings.NewReader(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"`+ns+`"}}`))
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(out, "the namespace of the provided object does not match the namespace sent on the request") {
		t.Errorf("namespace mismatch: %s %s", resp.Status, out)
	}
	resp, out = shared.do(t, http.MethodPost, "/api/v1/namespaces/"+ns+"/pods", "text/plain", strings.NewReader(`x`))
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain body: %s %s", resp.Status, out)
	}
	resp, out = shared.do(t, http.MethodPost, "/api/v1/namespaces/"+ns+"/pods", "application/json", strings.NewReader(`{not json`))
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("malformed body: %s %s", resp.Status, out)
	}
}

func TestRequestBodyOver3MiBIsRefused(t *testing.T) {
	ns := shared.namespace(t)
	big := bytes.Repeat([]byte("a"), 4<<20)
	body := append([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"x":"`), big...)
	body = append(body, `"}}`...)
	resp, out := shared.do(t, http.MethodPost, "/api/v1/namespaces/"+ns+"/configmaps", "application/json", bytes.NewReader(body))
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(out, "Request entity too large: limit is 3145728") {
		t.Errorf("4 MiB body: %s %s", resp.Status, out)
	}
	if _, err := shared.store.Get(ctxT(t), storage.Key("configmaps", ns, "big")); err != storage.ErrNotFound {
		t.Errorf("refused object stored: %v", err)
	}
}

func TestGracefulPodDelete(t *testing.T) {
	ctx := ctxT(t)
	ns := shared.namespace(t)
	pods := shared.client.CoreV1().Pods(ns)
	p := testPod("bound")
	p.Spec.NodeName = "node-1"
	p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
	if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "bound", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := pods.Get(ctx, "bound", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("bound pod gone at once: %v", err)
	}
	if got.DeletionTimestamp == nil || got.DeletionGracePeriodSeconds == nil || *got.DeletionGracePeriodSeconds != 30 {
		t.Fatalf("deletion not marked: %+v", got.ObjectMeta)
	}
	if err := pods.Delete(ctx, "bound", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "bound", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("pod after grace 0 delete: %v", err)
	}

	if _, err := pods.Create(ctx, testPod("unbound"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "unbound", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "unbound", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("unbound pod should go at once: %v", err)
	}
}

func TestFinalizersAndPreconditions(t *testing.T) {
	ctx := ctxT(t)
	ns := shared.namespace(t)
	cms := shared.client.CoreV1().ConfigMaps(ns)
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = cms.Delete(ctx, "held", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(types.UID("wrong"))}})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "Precondition failed: UID in precondition: wrong") {
		t.Fatalf("uid precondition: %v", err)
	}
	if err := cms.Delete(ctx, "held", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cm.UID}}); err != nil {
		t.Fatal(err)
	}
	got, err := cms.Get(ctx, "held", metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp == nil {
		t.Fatalf("object with finalizer: %v %+v", err, got)
	}
	got.Finalizers = nil
	if _, err := cms.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, "held", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("object after its last finalizer went: %v", err)
	}
}

func TestDeleteCollectionWithSelector(t *testing.T) {
	ctx := ctxT(t)
	ns := shared.namespace(t)
	cms := shared.client.CoreV1().ConfigMaps(ns)
	for _, name := range []string{"x1", "x2", "keep"} {
		labels := map[string]string{"del": "yes"}
		if name == "keep" {
			labels = nil
		}
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := cms.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "del=yes"}); err != nil {
		t.Fatal(err)
	}
	list, _ := cms.List(ctx, metav1.ListOptions{})
	if len(list.Items) != 1 || list.Items[0].Name != "keep" {
		t.Errorf("left %v", list.Items)
	}
}

func TestPodBinding(t *testing.T) {
	ctx := ctxT(t)
	ns := shared.namespace(t)
	pods := shared.client.CoreV1().Pods(ns)
	if _, err := pods.Create(ctx, testPod("mypod"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: "mypod", Annotations: map[string]string{"scheduler.glassplane.io/score": "100"}},
		Target:     corev1.ObjectReference{Kind: "Node", Name: "node-1"},
	}
	if err := pods.Bind(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatalf("bind: %v", err)
	}
	got, err := pods.Get(ctx, "mypod", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scheduled := false
	for _, c := range got.Status.Conditions {
		scheduled = scheduled || (c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue)
	}
	if got.Spec.NodeName != "node-1" || got.Annotations["scheduler.glassplane.io/score"] != "100" || !scheduled {
		t.Errorf("binding not applied: node %q annotations %v conditions %v", got.Spec.NodeName, got.Annotations, got.Status.Conditions)
	}
	b.Target.Name = "node-2"
	err = pods.Bind(ctx, b, metav1.CreateOptions{})
	want := `Operation cannot be fulfilled on pods/binding "mypod": pod mypod is already assigned to node "node-1"`
	if !apierrors.IsConflict(err) || err.Error() != want {
		t.Errorf("second bind: %v, want %q", err, want)
	}
}

func TestStatusSubresourceSeparatesSpecAndStatus(t *testing.T) {
	ctx := ctxT(t)
	ns := shared.namespace(t)
	pods := shared.client.CoreV1().Pods(ns)
	p, err := pods.Create(ctx, testPod("st"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status.Phase = corev1.PodRunning
	p.Spec.ActiveDeadlineSeconds = ptr.To[int64](5)
	got, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != corev1.PodRunning || got.Spec.ActiveDeadlineSeconds != nil {
		t.Errorf("status update: phase %q, activeDeadlineSeconds %v", got.Status.Phase, got.Spec.ActiveDeadlineSeconds)
	}
}

func TestDeploymentGenerationAndScale(t *testing.T) {
	ctx := ctxT(t)
	ns := shared.namespace(t)
	deps := shared.client.AppsV1().Deployments(ns)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
			},
		},
	}
	d, err := deps.Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Generation != 1 {
		t.Errorf("generation on create %d, want 1", d.Generation)
	}
	d.Labels = map[string]string{"x": "y"}
	d, err = deps.Update(ctx, d, metav1.UpdateOptions{})
	if err != nil || d.Generation != 1 {
		t.Fatalf("metadata-only update: generation %d, %v", d.Generation, err)
	}
	scale, err := deps.GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil || scale.Spec.Replicas != 1 || scale.Status.Selector != "app=web" {
		t.Fatalf("get scale: %+v %v", scale, err)
	}
	scale.Spec.Replicas = 3
	if _, err := deps.UpdateScale(ctx, "web", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, _ := deps.Get(ctx, "web", metav1.GetOptions{})
	if *got.Spec.Replicas != 3 || got.Generation != 2 {
		t.Errorf("after scale: replicas %d generation %d", *got.Spec.Replicas, got.Generation)
	}
	_, err = deps.UpdateScale(ctx, "web", &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: autoscalingv1.ScaleSpec{Replicas: -1}}, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("negative scale: %v", err)
	}
	if _, err := deps.Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":2}}`), metav1.PatchOptions{}, "scale"); err != nil {
		t.Errorf("patch scale: %v", err)
	}
}
