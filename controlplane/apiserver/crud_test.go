package apiserver_test

import (
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/controlplane/storage"
)

func TestPodCreateGetListUpdateDelete(t *testing.T) {
	ctx := ctxT(t)
	ns := shared.namespace(t)
	pods := shared.client.CoreV1().Pods(ns)

	created, err := pods.Create(ctx, testPod("web"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.UID == "" || created.CreationTimestamp.IsZero() || created.ResourceVersion == "" {
		t.Fatalf("create did not set uid, creationTimestamp and resourceVersion: %+v", created.ObjectMeta)
	}
	if created.Status.Phase != corev1.PodPending {
		t.Errorf("phase = %q, want Pending", created.Status.Phase)
	}

	kv, err := shared.store.Get(ctx, storage.Key("pods", ns, "web"))
	if err != nil {
		t.Fatalf("etcd key: %v", err)
	}
	stored := string(kv.Value)
	if !strings.Contains(stored, `"apiVersion":"v1"`) || !strings.Contains(stored, `"kind":"Pod"`) || strings.Contains(stored, "resourceVersion") {
		t.Errorf("stored value should carry apiVersion and kind and no resourceVersion: %s", stored)
	}

	_, err = pods.Create(ctx, testPod("web"), metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) || err.Error() != `pods "web" already exists` {
		t.Errorf("second create: %v", err)
	}

	got, err := pods.Get(ctx, "web", metav1.GetOptions{})
	if err != nil || got.UID != created.UID {
		t.Fatalf("get: %v %v", got, err)
	}
	list, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.ResourceVersion == "" {
		t.Fatalf("list: %+v %v", list, err)
	}

	got.Labels["tier"] = "front"
	got.Status.Phase = corev1.PodRunning
	updated, err := pods.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if updated.Labels["tier"] != "front" || updated.ResourceVersion == got.ResourceVersion {
		t.Errorf("update not applied: %+v", updated.ObjectMeta)
	}
	if updated.Status.Phase != corev1.PodPending {
		t.Errorf("update of the main resource changed status to %q", updated.Status.Phase)
	}
	if updated.UID != created.UID || !updated.CreationTimestamp.Equal(&created.CreationTimestamp) {
		t.Errorf("update changed uid or creationTimestamp")
	}

	if err := pods.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	_, err = pods.Get(ctx, "web", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) || err.Error() != `pods "web" not found` {
		t.Errorf("get after delete: %v", err)
	}
	if _, err := shared.store.Get(ctx, storage.Key("pods", ns, "web")); err != storage.ErrNotFound {
		t.Errorf("etcd key still there: %v", err)
	}
}

func TestStaleUpdateConflicts(t *testing.T) {
	ctx := ctxT(t)
	ns := shared.namespace(t)
	pods := shared.client.CoreV1().Pods(ns)
	p, err := pods.Create(ctx, testPod("mypod"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fresh := p.DeepCopy()
	fresh.Labels["a"] = "1"
	if _, err := pods.Update(ctx, fresh, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	p.Labels["a"] = "2"
	_, err = pods.Update(ctx, p, metav1.UpdateOptions{})
	want := `Operation cannot be fulfilled on pods "mypod": the object has been modified; please apply your changes to the latest version and try again`
	if !apierrors.IsConflict(err) || err.Error() != want {
		t.Fatalf("stale update: %v, want %q", err, want)
	}

	// Without a resourceVersion the update is unconditional, as
	// kube-apiserver's pod strategy allows: it lands on the newest object,
	// on the main resource and on status.
	p.ResourceVersion = ""
	got, err := pods.Update(ctx, p, metav1.UpdateOptions{})
	if err != nil || got.Labels["a"] != "2" || got.ResourceVersion == fresh.ResourceVersion {
		t.Fatalf("update without a resourceVersion: %v (labels %v)", err, got.GetLabels())
	}
	got.ResourceVersion = ""
	got.Status.Message = "unconditional"
	got, err = pods.UpdateStatus(ctx, got, metav1.UpdateOptions{})
	if err != nil || got.Status.Message != "unconditional" {
		t.Fatalf("status update without a resourceVersion: %v", err)
	}
}

func TestInvalidObjectIsRefusedAndNotStored(t *testing.T) {
	ctx := ctxT(t)
	ns := shared.namespace(t)
	tests := []struct {
		name string
		pod  *corev1.Pod
	}{
		{"uppercase name", testPod("Bad_Name")},
		{"no containers", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "empty"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := shared.client.CoreV1().Pods(ns).Create(ctx, tc.pod, metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) {
				t.Fatalf("create: %v, want 422 Invalid", err)
			}
			if _, err := shared.store.Get(ctx, storage.Key("pods", ns, tc.pod.Name)); err != storage.ErrNotFound {
				t.Errorf("refused object is in etcd: %v", err)
			}
		})
	}
}

func TestCreateInMissingNamespaceIsRefused(t *testing.T) {
	_, err := shared.client.CoreV1().Pods("does-not-exist").Create(ctxT(t), testPod("p"), metav1.CreateOptions{})
	if !apierrors.IsNotFound(err) || err.Error() != `namespaces "does-not-exist" not found` {
		t.Fatalf("create: %v", err)
	}
}

func TestGenerateNameAndDryRun(t *testing.T) {
	ctx := ctxT(t)
	ns := shared.namespace(t)
	pod := testPod("")
	pod.GenerateName = "gen-"
	got, err := shared.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil || !strings.HasPrefix(got.Name, "gen-") || len(got.Name) != len("gen-")+5 {
		t.Fatalf("dry run create: %v %v", got.Name, err)
	}
	list, _ := shared.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if len(list.Items) != 0 {
		t.Errorf("dry run stored %d pods", len(list.Items))
	}
	got, err = shared.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil || !strings.HasPrefix(got.Name, "gen-") {
		t.Fatalf("create: %v %v", got, err)
	}
}

// TestReviewsRefuseTables: a review asked for as a Table gets 406, as
// kube-apiserver answers for a backend that does not implement metadata.
func TestReviewsRefuseTables(t *testing.T) {
	body := `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"nonResourceAttributes":{"path":"/","verb":"get"}}}`
	req, err := http.NewRequest(http.MethodPost, shared.url+"/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := shared.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotAcceptable {
		t.Errorf("a review as a Table: %d, want 406", resp.StatusCode)
	}
}
