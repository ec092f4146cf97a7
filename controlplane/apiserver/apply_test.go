package apiserver_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appsv1apply "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1apply "k8s.io/client-go/applyconfigurations/core/v1"
	metav1apply "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// applyDeployment is an apply configuration of a Deployment named name.
func applyDeployment(name string, replicas int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %s
spec:
  replicas: %d
  selector:
    matchLabels: {app: %s}
  template:
    metadata:
      labels: {app: %s}
    spec:
      containers:
      - name: web
        image: nginx
`, name, replicas, name, name)
}

// applyPatch sends a server-side apply of body to path with query.
func applyPatch(t *testing.T, path, query, body string) (*http.Response, string) {
	t.Helper()
	if query != "" {
		path += "?" + query
	}
	return shared.do(t, http.MethodPatch, path, "application/apply-patch+yaml", strings.NewReader(body))
}

// managers lists an object's managedFields as "manager/operation/subresource".
func managers(entries []metav1.ManagedFieldsEntry) []string {
	var out []string
	for _, e := range entries {
		out = append(out, fmt.Sprintf("%s/%s/%s", e.Manager, e.Operation, e.Subresource))
	}
	return out
}

// owns tells whether the entry of manager (and subresource) owns the field
// path given in FieldsV1 form, such as `"f:spec":{"f:replicas"`.
func owns(entries []metav1.ManagedFieldsEntry, manager, subresource, fields string) bool {
	for _, e := range entries {
		if e.Manager == manager && e.Subresource == subresource && e.FieldsV1 != nil {
			return strings.Contains(string(e.FieldsV1.Raw), fields)
		}
	}
	return false
}

func TestApplyCreatesThenUpdates(t *testing.T) {
	ns := shared.namespace(t)
	path := "/apis/apps/v1/namespaces/" + ns + "/deployments/web"
	resp, body := applyPatch(t, path, "fieldManager=alice", applyDeployment("web", 2))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("apply of a missing object: %d %s, want 201", resp.StatusCode, body)
	}
	d, err := shared.client.AppsV1().Deployments(ns).Get(ctxT(t), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := managers(d.ManagedFields); len(got) != 1 || got[0] != "alice/Apply/" {
		t.Fatalf("managedFields after apply-create: %v, want [alice/Apply/]", got)
	}
	if d.ManagedFields[0].Time == nil || d.ManagedFields[0].APIVersion != "apps/v1" || d.ManagedFields[0].FieldsType != "FieldsV1" {
		t.Errorf("managedFields entry: %+v, want a time, apps/v1 and FieldsV1", d.ManagedFields[0])
	}
	if !owns(d.ManagedFields, "alice", "", `"f:replicas"`) {
		t.Errorf("alice does not own spec.replicas: %s", d.ManagedFields[0].FieldsV1.Raw)
	}
	if d.UID == "" || d.Generation != 1 || *d.Spec.Replicas != 2 {
		t.Errorf("created object: uid %q generation %d replicas %d", d.UID, d.Generation, *d.Spec.Replicas)
	}

	resp, body = applyPatch(t, path, "fieldManager=alice", applyDeployment("web", 4))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("apply of an existing object: %d %s, want 200", resp.StatusCode, body)
	}
	var applied appsv1.Deployment
	if err := json.Unmarshal([]byte(body), &applied); err != nil {
		t.Fatal(err)
	}
	if *applied.Spec.Replicas != 4 || applied.Generation != 2 || applied.UID != d.UID {
		t.Errorf("after the second apply: replicas %d generation %d uid %q", *applied.Spec.Replicas, applied.Generation, applied.UID)
	}

	// A field left out of the next apply is removed: alice owned it alone.
	without := strings.Replace(applyDeployment("web", 4), "  replicas: 4\n", "", 1)
	if resp, body := applyPatch(t, path, "fieldManager=alice", without); resp.StatusCode != http.StatusOK {
		t.Fatalf("apply without replicas: %d %s", resp.StatusCode, body)
	}
	d, err = shared.client.AppsV1().Deployments(ns).Get(ctxT(t), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if owns(d.ManagedFields, "alice", "", `"f:replicas"`) {
		t.Errorf("alice still owns spec.replicas after leaving it out: %s", d.ManagedFields[0].FieldsV1.Raw)
	}
}

func TestApplyConflictAndForce(t *testing.T) {
	ns := shared.namespace(t)
	path := "/apis/apps/v1/namespaces/" + ns + "/deployments/web"
	resp, body := shared.do(t, http.MethodPost, "/apis/apps/v1/namespaces/"+ns+"/deployments?fieldManager=kubectl-client-side-apply", "application/yaml", strings.NewReader(applyDeployment("web", 3)))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	before, err := shared.client.AppsV1().Deployments(ns).Get(ctxT(t), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := managers(before.ManagedFields); len(got) != 1 || got[0] != "kubectl-client-side-apply/Update/" {
		t.Fatalf("managedFields after create: %v", got)
	}

	resp, body = applyPatch(t, path, "fieldManager=alice", applyDeployment("web", 5))
	if resp.StatusCode != http.StatusConflict {
		t.Fatalf("conflicting apply: %d %s, want 409", resp.StatusCode, body)
	}
	var status metav1.Status
	if err := json.Unmarshal([]byte(body), &status); err != nil {
		t.Fatal(err)
	}
	want := `Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using apps/v1: .spec.replicas`
	if status.Message != want || status.Reason != metav1.StatusReasonConflict {
		t.Errorf("conflict: %q (%s), want %q (Conflict)", status.Message, status.Reason, want)
	}
	if status.Details == nil || len(status.Details.Causes) != 1 || status.Details.Causes[0].Field != ".spec.replicas" || status.Details.Causes[0].Type != metav1.CauseTypeFieldManagerConflict {
		t.Errorf("conflict causes: %+v", status.Details)
	}
	after, err := shared.client.AppsV1().Deployments(ns).Get(ctxT(t), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != before.ResourceVersion {
		t.Errorf("a refused apply was stored: resourceVersion %s → %s", before.ResourceVersion, after.ResourceVersion)
	}

	resp, body = applyPatch(t, path, "fieldManager=alice&force=true", applyDeployment("web", 5))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("forced apply: %d %s", resp.StatusCode, body)
	}
	forced, err := shared.client.AppsV1().Deployments(ns).Get(ctxT(t), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *forced.Spec.Replicas != 5 {
		t.Errorf("forced apply: replicas %d, want 5", *forced.Spec.Replicas)
	}
	if !owns(forced.ManagedFields, "alice", "", `"f:replicas"`) || owns(forced.ManagedFields, "kubectl-client-side-apply", "", `"f:replicas"`) {
		t.Errorf("after force alice should own spec.replicas alone: %v", forced.ManagedFields)
	}
}

func TestApplyRefusesBadRequests(t *testing.T) {
	ns := shared.namespace(t)
	path := "/apis/apps/v1/namespaces/" + ns + "/deployments/web"
	for _, tc := range []struct {
		name, query, body string
		code              int
		message           string
	}{
		{"no fieldManager", "", applyDeployment("web", 1), http.StatusUnprocessableEntity,
			`PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch`},
		{"not YAML", "fieldManager=alice", "apiVersion: apps/v1\nkind: [Deployment\n", http.StatusBadRequest, "error encoding patch: "},
		{"wrong version", "fieldManager=alice", strings.Replace(applyDeployment("web", 1), "apps/v1", "apps/v1beta1", 1), http.StatusBadRequest,
			"invalid object type: apps/v1beta1, Kind=Deployment"},
		{"unknown field", "fieldManager=alice", applyDeployment("web", 1) + "  paused2: true\n", http.StatusBadRequest, ".spec.paused2: field not declared in schema"},
		{"managedFields set", "fieldManager=alice", strings.Replace(applyDeployment("web", 1), "  name: web\n", "  name: web\n  managedFields: [{manager: x}]\n", 1), http.StatusBadRequest,
			"metadata.managedFields must be nil"},
		{"other name", "fieldManager=alice", applyDeployment("other", 1), http.StatusBadRequest,
			"the name of the object (other) does not match the name on the URL (web)"},
		{"duplicate field, strict", "fieldManager=alice&fieldValidation=Strict", applyDeployment("web", 1) + "  replicas: 2\n", http.StatusBadRequest,
			"error strict decoding patch: error converting YAML to JSON: yaml: unmarshal errors:\n  line 16: key \"replicas\" already set in map"},
		{"invalid object", "fieldManager=alice", applyDeployment("web", -1), http.StatusUnprocessableEntity, "spec.replicas: Invalid value: -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := applyPatch(t, path, tc.query, tc.body)
			var status metav1.Status
			if err := json.Unmarshal([]byte(body), &status); err != nil {
				t.Fatalf("%d %s: %v", resp.StatusCode, body, err)
			}
			if resp.StatusCode != tc.code || !strings.Contains(status.Message, tc.message) {
				t.Errorf("%d %s, want %d with %q", resp.StatusCode, body, tc.code, tc.message)
			}
			if _, err := shared.client.AppsV1().Deployments(ns).Get(ctxT(t), "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("a refused apply stored the object: %v", err)
			}
		})
	}
	resp, body := shared.do(t, http.MethodPatch, path+"?fieldManager=alice&force=true", "application/merge-patch+json", strings.NewReader(`{}`))
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, "force: Forbidden: may not be specified for non-apply patch") {
		t.Errorf("force on a merge patch: %d %s", resp.StatusCode, body)
	}
}

func TestApplyDryRunStoresNothing(t *testing.T) {
	ns := shared.namespace(t)
	path := "/apis/apps/v1/namespaces/" + ns + "/deployments/web"
	resp, body := applyPatch(t, path, "fieldManager=alice&dryRun=All", applyDeployment("web", 2))
	if resp.StatusCode != http.StatusCreated || !strings.Contains(body, `"manager":"alice"`) {
		t.Fatalf("dry-run apply: %d %s", resp.StatusCode, body)
	}
	if _, err := shared.client.AppsV1().Deployments(ns).Get(ctxT(t), "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a dry-run apply stored the object: %v", err)
	}
	if resp, body := applyPatch(t, path, "fieldManager=alice", applyDeployment("web", 2)); resp.StatusCode != http.StatusCreated {
		t.Fatalf("apply: %d %s", resp.StatusCode, body)
	}
	before, _ := shared.client.AppsV1().Deployments(ns).Get(ctxT(t), "web", metav1.GetOptions{})
	if resp, body := applyPatch(t, path, "fieldManager=bob&dryRun=All&force=true", applyDeployment("web", 7)); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"replicas":7`) {
		t.Fatalf("dry-run apply of a change: %d %s", resp.StatusCode, body)
	}
	after, _ := shared.client.AppsV1().Deployments(ns).Get(ctxT(t), "web", metav1.GetOptions{})
	if after.ResourceVersion != before.ResourceVersion || *after.Spec.Replicas != 2 {
		t.Errorf("a dry-run apply changed the object: rv %s → %s, replicas %d", before.ResourceVersion, after.ResourceVersion, *after.Spec.Replicas)
	}
}

func TestManagedFieldsOnEveryWrite(t *testing.T) {
	ns := shared.namespace(t)
	cfg := rest.CopyConfig(shared.config)
	cfg.UserAgent = "my-tool/1.2 (linux/amd64)"
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx := ctxT(t)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
			},
		},
	}
	created, err := client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := managers(created.ManagedFields); len(got) != 1 || got[0] != "my-tool/Update/" {
		t.Fatalf("create without fieldManager: %v, want the User-Agent's prefix my-tool", got)
	}
	if !owns(created.ManagedFields, "my-tool", "", `"f:progressDeadlineSeconds"`) {
		t.Errorf("the creator does not own the defaulted fields, as in kube-apiserver: %s", created.ManagedFields[0].FieldsV1.Raw)
	}

	created.Labels = map[string]string{"tier": "front"}
	updated, err := client.AppsV1().Deployments(ns).Update(ctx, created, metav1.UpdateOptions{FieldManager: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	if !owns(updated.ManagedFields, "bob", "", `"f:tier"`) {
		t.Errorf("update: %v, want bob owning metadata.labels.tier", updated.ManagedFields)
	}

	patched, err := client.AppsV1().Deployments(ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"paused":true}}`), metav1.PatchOptions{FieldManager: "carol"})
	if err != nil {
		t.Fatal(err)
	}
	if !owns(patched.ManagedFields, "carol", "", `"f:paused"`) {
		t.Errorf("merge patch: %v, want carol owning spec.paused", patched.ManagedFields)
	}
	patched, err = client.AppsV1().Deployments(ns).Patch(ctx, "web", types.StrategicMergePatchType, []byte(`{"metadata":{"annotations":{"a":"b"}}}`), metav1.PatchOptions{FieldManager: "dave"})
	if err != nil {
		t.Fatal(err)
	}
	if !owns(patched.ManagedFields, "dave", "", `"f:a"`) {
		t.Errorf("strategic merge patch: %v, want dave owning the annotation", patched.ManagedFields)
	}

	patched.Status.ObservedGeneration = patched.Generation
	status, err := client.AppsV1().Deployments(ns).UpdateStatus(ctx, patched, metav1.UpdateOptions{FieldManager: "controller"})
	if err != nil {
		t.Fatal(err)
	}
	if !owns(status.ManagedFields, "controller", "status", `"f:observedGeneration"`) {
		t.Errorf("status update: %v, want controller (subresource status) owning status.observedGeneration", managers(status.ManagedFields))
	}

	scale, err := client.AppsV1().Deployments(ns).GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = 3
	if _, err := client.AppsV1().Deployments(ns).UpdateScale(ctx, "web", scale, metav1.UpdateOptions{FieldManager: "scaler"}); err != nil {
		t.Fatal(err)
	}
	scaled, err := client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *scaled.Spec.Replicas != 3 || !owns(scaled.ManagedFields, "scaler", "scale", `"f:replicas"`) {
		t.Errorf("scale update: replicas %d, managers %v, want scaler (subresource scale) owning spec.replicas", *scaled.Spec.Replicas, managers(scaled.ManagedFields))
	}
	if owns(scaled.ManagedFields, "my-tool", "", `"f:replicas"`) {
		t.Errorf("the creator still owns spec.replicas after the scale")
	}
}

func TestClientGoTypedApply(t *testing.T) {
	ns := shared.namespace(t)
	ctx := ctxT(t)
	cfg := appsv1apply.Deployment("web", ns).WithSpec(appsv1apply.DeploymentSpec().
		WithReplicas(2).
		WithSelector(metav1apply.LabelSelector().WithMatchLabels(map[string]string{"app": "web"})).
		WithTemplate(corev1apply.PodTemplateSpec().
			WithLabels(map[string]string{"app": "web"}).
			WithSpec(corev1apply.PodSpec().WithContainers(corev1apply.Container().WithName("web").WithImage("nginx")))))
	d, err := shared.client.AppsV1().Deployments(ns).Apply(ctx, cfg, metav1.ApplyOptions{FieldManager: "typed"})
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 2 || !owns(d.ManagedFields, "typed", "", `"f:replicas"`) {
		t.Fatalf("typed apply: replicas %d, %v", *d.Spec.Replicas, managers(d.ManagedFields))
	}
	extracted, err := appsv1apply.ExtractDeployment(d, "typed")
	if err != nil {
		t.Fatal(err)
	}
	extracted.Spec.WithReplicas(3)
	d, err = shared.client.AppsV1().Deployments(ns).Apply(ctx, extracted, metav1.ApplyOptions{FieldManager: "typed"})
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 3 {
		t.Errorf("apply of the extracted configuration: replicas %d, want 3", *d.Spec.Replicas)
	}
	status := appsv1apply.Deployment("web", ns).WithStatus(appsv1apply.DeploymentStatus().WithObservedGeneration(d.Generation))
	d, err = shared.client.AppsV1().Deployments(ns).ApplyStatus(ctx, status, metav1.ApplyOptions{FieldManager: "status-writer", Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if d.Status.ObservedGeneration != d.Generation || !owns(d.ManagedFields, "status-writer", "status", `"f:observedGeneration"`) {
		t.Errorf("status apply: observedGeneration %d, %v", d.Status.ObservedGeneration, managers(d.ManagedFields))
	}
	if *d.Spec.Replicas != 3 {
		t.Errorf("a status apply changed the spec: replicas %d", *d.Spec.Replicas)
	}
}

// TestSentManagedFields checks what kube-apiserver does with managedFields
// a client sends: ones that do not decode (an unknown operation) are
// ignored for the stored object's, and a list of one empty entry strips
// them all, as the server-side apply documentation says.
func TestSentManagedFields(t *testing.T) {
	ns := shared.namespace(t)
	ctx := ctxT(t)
	cms := shared.client.CoreV1().ConfigMaps(ns)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "x", Operation: "Bogus"}}}, Data: map[string]string{"a": "1"}}
	created, err := cms.Create(ctx, cm, metav1.CreateOptions{FieldManager: "creator"})
	if err != nil {
		t.Fatal(err)
	}
	if got := managers(created.ManagedFields); len(got) != 1 || got[0] != "creator/Update/" {
		t.Fatalf("create with undecodable managedFields: %v, want [creator/Update/]", got)
	}
	created.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "x", Operation: "Bogus"}}
	created.Data["b"] = "2"
	updated, err := cms.Update(ctx, created, metav1.UpdateOptions{FieldManager: "editor"})
	if err != nil {
		t.Fatal(err)
	}
	if got := managers(updated.ManagedFields); len(got) != 2 || !owns(updated.ManagedFields, "creator", "", `"f:a"`) || !owns(updated.ManagedFields, "editor", "", `"f:b"`) {
		t.Errorf("update with undecodable managedFields: %v, want the stored ones kept and editor's added", got)
	}
	updated.ManagedFields = []metav1.ManagedFieldsEntry{{}} // an empty list is omitted from client-go's JSON
	updated.Data["c"] = "3"
	reset, err := cms.Update(ctx, updated, metav1.UpdateOptions{FieldManager: "resetter"})
	if err != nil {
		t.Fatal(err)
	}
	if len(reset.ManagedFields) != 0 {
		t.Errorf("update with managedFields [{}]: %v, want none", managers(reset.ManagedFields))
	}
}
