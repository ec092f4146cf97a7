package ecosystem

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// gadgetShopChart is a chart with a CRD in crds/ and, in templates/, a
// ConfigMap, a Deployment, a Service and a Gadget (the CRD's kind).
var gadgetShopChart = map[string]string{
	"Chart.yaml": `apiVersion: v2
name: gadget-shop
description: A chart with a CRD, written by Glassplane's ecosystem test.
version: 0.1.0
appVersion: "1.0"
`,
	"values.yaml": `replicas: 1
greeting: hello
gadgetSize: 3
`,
	"crds/gadgets.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.charts.example.glassplane.io
spec:
  group: charts.example.glassplane.io
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget, listKind: GadgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size]
            properties:
              size: {type: integer, minimum: 1, maximum: 10}
`,
	"templates/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
data:
  greeting: {{ .Values.greeting | quote }}
`,
	"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: {app.kubernetes.io/instance: {{ .Release.Name }}}
  template:
    metadata:
      labels: {app.kubernetes.io/instance: {{ .Release.Name }}}
    spec:
      containers:
      - name: shop
        image: registry.example/shop:1
        envFrom:
        - configMapRef: {name: {{ .Release.Name }}-config}
`,
	"templates/service.yaml": `apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}
spec:
  selector: {app.kubernetes.io/instance: {{ .Release.Name }}}
  ports:
  - port: 80
    targetPort: 8080
`,
	"templates/gadget.yaml": `apiVersion: charts.example.glassplane.io/v1
kind: Gadget
metadata:
  name: {{ .Release.Name }}
spec:
  size: {{ .Values.gadgetSize }}
`,
}

var gadgets = schema.GroupVersionResource{Group: "charts.example.glassplane.io", Version: "v1", Resource: "gadgets"}

// helmCLI runs the helm binary against the shared cluster with its own
// config, cache and data directories.
type helmCLI struct {
	bin string
	env []string
}

// buildHelm builds the helm CLI from this module's helm.sh/helm/v4 (the
// version go.mod names).
func buildHelm(t *testing.T) *helmCLI {
	t.Helper()
	dir := t.TempDir()
	start := time.Now()
	if err := goBuild(".", filepath.Join(dir, "helm"), "helm.sh/helm/v4/cmd/helm"); err != nil {
		t.Fatal(err)
	}
	t.Logf("built helm in %s", time.Since(start).Round(time.Second))
	return &helmCLI{bin: filepath.Join(dir, "helm"), env: append(os.Environ(),
		"KUBECONFIG="+cluster.Kubeconfig,
		"HELM_CONFIG_HOME="+filepath.Join(dir, "config"),
		"HELM_CACHE_HOME="+filepath.Join(dir, "cache"),
		"HELM_DATA_HOME="+filepath.Join(dir, "data"),
	)}
}

// run runs helm with args and returns its combined output.
func (h *helmCLI) run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.bin, args...)
	cmd.Env = h.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// must runs helm and fails the test when it exits non-zero.
func (h *helmCLI) must(t *testing.T, args ...string) string {
	t.Helper()
	out, err := h.run(t, args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// TestHelmChartWithCRD installs, upgrades and uninstalls a chart carrying a
// CRD with the helm CLI, and installs one whose custom resource the CRD's
// schema refuses.
func TestHelmChartWithCRD(t *testing.T) {
	t.Parallel()
	helm := buildHelm(t)
	t.Log(helm.must(t, "version"))
	chart := t.TempDir()
	for name, content := range gadgetShopChart {
		path := filepath.Join(chart, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	const ns = "charts"

	t.Run("install", func(t *testing.T) {
		out := helm.must(t, "install", "shop", chart, "-n", ns, "--create-namespace", "--wait", "--timeout", "3m")
		for _, want := range []string{"STATUS: deployed", "REVISION: 1"} {
			if !strings.Contains(out, want) {
				t.Fatalf("helm install printed no %q:\n%s", want, out)
			}
		}
		dep, err := cluster.Client.AppsV1().Deployments(ns).Get(ctx, "shop", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := ptr.Deref(dep.Spec.Replicas, 0); got != 1 {
			t.Fatalf("Deployment shop has %d replicas, want 1", got)
		}
		// Helm v4 installs with server-side apply: its field manager owns
		// the fields as an Apply.
		if !appliedBy(dep.ManagedFields, "helm") {
			t.Fatalf("Deployment shop's managedFields have no Apply by helm: %+v", dep.ManagedFields)
		}
		if dep.Annotations["meta.helm.sh/release-name"] != "shop" {
			t.Fatalf("Deployment shop's annotations are %v, want Helm's release-name", dep.Annotations)
		}
		assertGreeting(t, ctx, ns, "hello")
		if _, err := cluster.Client.CoreV1().Services(ns).Get(ctx, "shop", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		assertGadgetSize(t, ctx, ns, "shop", 3)
	})

	t.Run("upgrade", func(t *testing.T) {
		out := helm.must(t, "upgrade", "shop", chart, "-n", ns, "--set", "greeting=bonjour,replicas=2,gadgetSize=5", "--wait", "--timeout", "3m")
		if !strings.Contains(out, "REVISION: 2") {
			t.Fatalf("helm upgrade printed no revision 2:\n%s", out)
		}
		assertGreeting(t, ctx, ns, "bonjour")
		dep, err := cluster.Client.AppsV1().Deployments(ns).Get(ctx, "shop", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := ptr.Deref(dep.Spec.Replicas, 0); got != 2 || dep.Status.ReadyReplicas != 2 {
			t.Fatalf("Deployment shop has %d replicas, %d ready; want 2 and 2 (helm waited)", got, dep.Status.ReadyReplicas)
		}
		// The upgrade follows the release's apply method: server-side apply.
		for _, f := range dep.ManagedFields {
			if f.Manager == "helm" && f.Operation != metav1.ManagedFieldsOperationApply {
				t.Fatalf("helm upgrade wrote Deployment shop by %s, want only server-side apply: %+v", f.Operation, dep.ManagedFields)
			}
		}
		assertGadgetSize(t, ctx, ns, "shop", 5)

		var list []struct{ Name, Revision, Status, Chart string }
		if err := json.Unmarshal([]byte(helm.must(t, "list", "-n", ns, "-o", "json")), &list); err != nil {
			t.Fatal(err)
		}
		if len(list) != 1 || list[0].Name != "shop" || list[0].Revision != "2" || list[0].Status != "deployed" || list[0].Chart != "gadget-shop-0.1.0" {
			t.Fatalf("helm list = %+v, want shop at revision 2, deployed, gadget-shop-0.1.0", list)
		}
		var status struct {
			Version int
			Info    struct{ Status string }
		}
		if err := json.Unmarshal([]byte(helm.must(t, "status", "shop", "-n", ns, "-o", "json")), &status); err != nil {
			t.Fatal(err)
		}
		if status.Version != 2 || status.Info.Status != "deployed" {
			t.Fatalf("helm status = %+v, want version 2 deployed", status)
		}
	})

	t.Run("uninstall", func(t *testing.T) {
		out := helm.must(t, "uninstall", "shop", "-n", ns, "--wait", "--timeout", "3m")
		if !strings.Contains(out, `release "shop" uninstalled`) {
			t.Fatalf("helm uninstall printed:\n%s", out)
		}
		assertReleaseGone(t, ctx, ns, "shop")
		// Helm leaves the CRDs of crds/ in place on uninstall, as it
		// documents, so other releases' objects of the kind survive.
		if _, err := cluster.Dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}).
			Get(ctx, "gadgets.charts.example.glassplane.io", metav1.GetOptions{}); err != nil {
			t.Fatalf("the chart's CRD is gone after helm uninstall: %v", err)
		}
	})

	t.Run("custom resource refused by the CRD schema", func(t *testing.T) {
		out, err := helm.run(t, "install", "bad", chart, "-n", ns, "--set", "gadgetSize=50", "--rollback-on-failure", "--timeout", "2m")
		if err == nil {
			t.Fatalf("helm install of a Gadget of size 50 (maximum 10) succeeded:\n%s", out)
		}
		want := `Gadget.charts.example.glassplane.io "bad" is invalid: spec.size: Invalid value: 50: spec.size in body should be less than or equal to 10`
		if !strings.Contains(out, want) {
			t.Fatalf("helm install printed\n%s\nwant it to carry the API's 422:\n%s", out, want)
		}
		assertReleaseGone(t, ctx, ns, "bad")
	})
}

// appliedBy reports whether manager owns fields through server-side apply.
func appliedBy(fields []metav1.ManagedFieldsEntry, manager string) bool {
	for _, f := range fields {
		if f.Manager == manager && f.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return false
}

func assertGreeting(t *testing.T, ctx context.Context, ns, want string) {
	t.Helper()
	cm, err := cluster.Client.CoreV1().ConfigMaps(ns).Get(ctx, "shop-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["greeting"] != want {
		t.Fatalf("ConfigMap shop-config has greeting %q, want %q", cm.Data["greeting"], want)
	}
}

func assertGadgetSize(t *testing.T, ctx context.Context, ns, name string, want int64) {
	t.Helper()
	g, err := cluster.Dynamic.Resource(gadgets).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ := unstructured.NestedInt64(g.Object, "spec", "size"); got != want {
		t.Fatalf("Gadget %s has size %d, want %d", name, got, want)
	}
}

// assertReleaseGone waits until release's objects and Helm's release
// Secrets are gone from ns.
func assertReleaseGone(t *testing.T, ctx context.Context, ns, release string) {
	t.Helper()
	core := cluster.Client.CoreV1()
	gets := map[string]func() error{
		"ConfigMap " + release + "-config": func() error {
			_, err := core.ConfigMaps(ns).Get(ctx, release+"-config", metav1.GetOptions{})
			return err
		},
		"Deployment " + release: func() error {
			_, err := cluster.Client.AppsV1().Deployments(ns).Get(ctx, release, metav1.GetOptions{})
			return err
		},
		"Service " + release: func() error {
			_, err := core.Services(ns).Get(ctx, release, metav1.GetOptions{})
			return err
		},
		"Gadget " + release: func() error {
			_, err := cluster.Dynamic.Resource(gadgets).Namespace(ns).Get(ctx, release, metav1.GetOptions{})
			return err
		},
	}
	eventually(t, time.Minute, "release "+release+"'s objects are gone", func() error {
		for what, get := range gets {
			if err := get(); !apierrors.IsNotFound(err) {
				return fmt.Errorf("%s is still there (err %v)", what, err)
			}
		}
		secrets, err := core.Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=" + release})
		if err != nil {
			return err
		}
		if len(secrets.Items) != 0 {
			return fmt.Errorf("Helm's release Secret %s is still there", secrets.Items[0].Name)
		}
		return nil
	})
}
