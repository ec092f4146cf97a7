package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1apply "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1apply "k8s.io/client-go/applyconfigurations/core/v1"
	metav1apply "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"
)

// ssaDeployment is a Deployment manifest named web with replicas.
func ssaDeployment(replicas int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: %d
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx
`, replicas)
}

// TestServerSideApplyKubectl drives server-side apply with the real
// kubectl: apply prints serverside-applied, --show-managed-fields shows the
// managers, a second manager conflicts with kube-apiserver's message until
// --force-conflicts takes the field, and --dry-run=server stores nothing.
func TestServerSideApplyKubectl(t *testing.T) {
	c := SharedCluster(t)
	ns := "ssa-kubectl"
	c.MustKubectl(t, "", "create", "namespace", ns)
	t.Cleanup(func() { c.Kubectl(t, "", "delete", "namespace", ns, "--wait=false") })

	out := c.MustKubectl(t, ssaDeployment(2), "apply", "--server-side", "-n", ns, "-f", "-")
	if !strings.Contains(out, "deployment.apps/web serverside-applied") {
		t.Fatalf("kubectl apply --server-side: %q, want deployment.apps/web serverside-applied", out)
	}
	out = c.MustKubectl(t, "", "get", "deployment", "web", "-n", ns, "-o", "yaml", "--show-managed-fields")
	for _, want := range []string{"managedFields:", "manager: kubectl\n", "operation: Apply", "fieldsType: FieldsV1", "f:replicas: {}"} {
		if !strings.Contains(out, want) {
			t.Errorf("get -o yaml --show-managed-fields lacks %q:\n%s", want, out)
		}
	}
	if out := c.MustKubectl(t, "", "get", "deployment", "web", "-n", ns, "-o", "yaml"); strings.Contains(out, "managedFields") {
		t.Errorf("get -o yaml without --show-managed-fields shows them:\n%s", out)
	}

	out, err := c.Kubectl(t, ssaDeployment(5), "apply", "--server-side", "--field-manager=rollout-tool", "-n", ns, "-f", "-")
	// A manager that applied is named without the version kube-apiserver
	// adds for one that updated ("conflict with \"kubectl-create\" using apps/v1").
	want := `Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas`
	if err == nil || !strings.Contains(out, want) {
		t.Fatalf("conflicting apply: %v %q, want an error with %q", err, out, want)
	}
	if got := c.MustKubectl(t, "", "get", "deployment", "web", "-n", ns, "-o", "jsonpath={.spec.replicas}"); got != "2" {
		t.Errorf("replicas after the refused apply: %s, want 2", got)
	}

	out = c.MustKubectl(t, ssaDeployment(7), "apply", "--server-side", "--field-manager=rollout-tool", "--dry-run=server", "--force-conflicts", "-n", ns, "-f", "-")
	if !strings.Contains(out, "serverside-applied (server dry run)") {
		t.Errorf("dry-run apply: %q", out)
	}
	if got := c.MustKubectl(t, "", "get", "deployment", "web", "-n", ns, "-o", "jsonpath={.spec.replicas}"); got != "2" {
		t.Errorf("replicas after a server dry run: %s, want 2", got)
	}

	c.MustKubectl(t, ssaDeployment(5), "apply", "--server-side", "--field-manager=rollout-tool", "--force-conflicts", "-n", ns, "-f", "-")
	if got := c.MustKubectl(t, "", "get", "deployment", "web", "-n", ns, "-o", "jsonpath={.spec.replicas}"); got != "5" {
		t.Errorf("replicas after --force-conflicts: %s, want 5", got)
	}
	d, err := c.Client.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owner := map[string]bool{}
	for _, e := range d.ManagedFields {
		if e.Subresource == "" && e.FieldsV1 != nil && strings.Contains(string(e.FieldsV1.Raw), `"f:replicas"`) {
			owner[e.Manager] = true
		}
	}
	if !owner["rollout-tool"] || owner["kubectl"] {
		t.Errorf("spec.replicas owned by %v after --force-conflicts, want rollout-tool alone", owner)
	}
	// The dashboard's object page shows who owns which field.
	resp, err := http.Get(c.WebURL + "/objects/deployments/" + ns + "/web")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`data-testid="field-owners"`, `data-manager="rollout-tool"`, `data-operation="Apply"`, `<code data-testid="owned-field">.spec.replicas</code>`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the object page (%d) lacks %s", resp.StatusCode, want)
		}
	}
	// The deployment controller writes the status: its entry names the
	// subresource.
	Eventually(t, 30*time.Second, "the controller's status entry", func() error {
		d, err := c.Client.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, e := range d.ManagedFields {
			if e.Subresource == "status" && e.Operation == metav1.ManagedFieldsOperationUpdate {
				return nil
			}
		}
		return fmt.Errorf("no status entry in %v", d.ManagedFields)
	})
}

// TestServerSideApplyClientGo applies typed apply configurations through
// client-go, as controllers written on it do.
func TestServerSideApplyClientGo(t *testing.T) {
	c := SharedCluster(t)
	ctx := context.Background()
	ns := "ssa-client-go"
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	d, err := c.Client.AppsV1().Deployments(ns).Apply(ctx, deploymentApply(ns, 3), metav1.ApplyOptions{FieldManager: "my-operator"})
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 3 || len(d.ManagedFields) != 1 || d.ManagedFields[0].Manager != "my-operator" || d.ManagedFields[0].Operation != metav1.ManagedFieldsOperationApply {
		t.Fatalf("typed apply: replicas %d, managedFields %+v", *d.Spec.Replicas, d.ManagedFields)
	}
	cm, err := c.Client.CoreV1().ConfigMaps(ns).Apply(ctx, corev1apply.ConfigMap("settings", ns).WithData(map[string]string{"a": "1"}), metav1.ApplyOptions{FieldManager: "my-operator"})
	if err != nil {
		t.Fatal(err)
	}
	cm, err = c.Client.CoreV1().ConfigMaps(ns).Apply(ctx, corev1apply.ConfigMap("settings", ns).WithData(map[string]string{"b": "2"}), metav1.ApplyOptions{FieldManager: "my-operator"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cm.Data["a"]; ok || cm.Data["b"] != "2" {
		t.Errorf("a key left out of the second apply should be gone: %v", cm.Data)
	}
}

func deploymentApply(ns string, replicas int32) *appsv1apply.DeploymentApplyConfiguration {
	return appsv1apply.Deployment("web", ns).WithSpec(appsv1apply.DeploymentSpec().
		WithReplicas(replicas).
		WithSelector(metav1apply.LabelSelector().WithMatchLabels(map[string]string{"app": "web"})).
		WithTemplate(corev1apply.PodTemplateSpec().
			WithLabels(map[string]string{"app": "web"}).
			WithSpec(corev1apply.PodSpec().WithContainers(corev1apply.Container().WithName("web").WithImage("nginx")))))
}

// BenchmarkServerSideApply measures server-side apply throughput (applies
// of a Deployment of no replicas through client-go, each changing an
// annotation) next to
// the throughput of plain updates of the same Deployment, one client, on
// the API server and etcd alone. Both write managedFields; the cost the
// field manager adds to an update alone is BenchmarkFieldManagerUpdate in
// controlplane/apiserver.
func BenchmarkServerSideApply(b *testing.B) {
	c := NewCluster(b, "--node-runtime", "none", "--scheduler=false")
	ctx := context.Background()
	const n = 500
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	deployments := c.Client.AppsV1().Deployments("bench")
	b.ResetTimer()
	start := time.Now()
	for i := range n {
		cfg := deploymentApply("bench", 0).WithAnnotations(map[string]string{"rev": fmt.Sprint(i)})
		if _, err := deployments.Apply(ctx, cfg, metav1.ApplyOptions{FieldManager: "bench"}); err != nil {
			b.Fatal(err)
		}
	}
	applies := float64(n) / time.Since(start).Seconds()

	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "updated"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](0),
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
		},
	}}
	d, err := deployments.Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	start = time.Now()
	for i := range n {
		for {
			d.Annotations = map[string]string{"rev": fmt.Sprint(i)}
			next, err := deployments.Update(ctx, d, metav1.UpdateOptions{})
			if apierrors.IsConflict(err) {
				// The deployment controller wrote the status in between.
				if d, err = deployments.Get(ctx, d.Name, metav1.GetOptions{}); err != nil {
					b.Fatal(err)
				}
				continue
			}
			if err != nil {
				b.Fatal(err)
			}
			d = next
			break
		}
	}
	updates := float64(n) / time.Since(start).Seconds()
	b.StopTimer()
	b.ReportMetric(applies, "applies/s")
	b.ReportMetric(updates, "updates/s")
}
