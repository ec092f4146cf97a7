package ecosystem

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// webAppCRD is the operator's API: a WebApp asks for spec.replicas copies of
// spec.image and reports status.readyReplicas and a Ready condition.
const webAppCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: webapps.example.glassplane.io
spec:
  group: example.glassplane.io
  scope: Namespaced
  names: {plural: webapps, singular: webapp, kind: WebApp, listKind: WebAppList}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [image]
            properties:
              replicas: {type: integer, minimum: 0, default: 1}
              image: {type: string}
          status:
            type: object
            properties:
              readyReplicas: {type: integer}
              conditions:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [type]
                items:
                  type: object
                  required: [type, status]
                  properties:
                    type: {type: string}
                    status: {type: string}
                    reason: {type: string}
                    message: {type: string}
                    lastTransitionTime: {type: string, format: date-time}
                    observedGeneration: {type: integer}
`

var webAppGVK = schema.GroupVersionKind{Group: "example.glassplane.io", Version: "v1", Kind: "WebApp"}

func init() {
	// The managers log warnings and errors (a failed reconcile) to the
	// test's output.
	ctrl.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
}

// webAppReconciler makes each WebApp's Deployment (same name, owned by the
// WebApp) match its spec, and writes the Deployment's ready replicas back
// into the WebApp's status.
type webAppReconciler struct {
	client.Client
}

func newWebApp() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(webAppGVK)
	return u
}

func (r *webAppReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	app := newWebApp()
	if err := r.Get(ctx, req.NamespacedName, app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	replicas, _, _ := unstructured.NestedInt64(app.Object, "spec", "replicas")
	image, _, _ := unstructured.NestedString(app.Object, "spec", "image")

	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: req.Name, Namespace: req.Namespace}}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, dep, func() error {
		labels := map[string]string{"app.kubernetes.io/name": req.Name}
		dep.Spec.Replicas = ptr.To(int32(replicas))
		dep.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
		dep.Spec.Template.Labels = labels
		if len(dep.Spec.Template.Spec.Containers) != 1 {
			dep.Spec.Template.Spec.Containers = []corev1.Container{{Name: "web"}}
		}
		dep.Spec.Template.Spec.Containers[0].Image = image
		return controllerutil.SetControllerReference(app, dep, r.Scheme())
	}); err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to apply Deployment %s: %w", req, err)
	}

	ready := metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "Scaling",
		Message: fmt.Sprintf("%d of %d replicas ready", dep.Status.ReadyReplicas, replicas), ObservedGeneration: app.GetGeneration()}
	if int64(dep.Status.ReadyReplicas) == replicas && dep.Status.ObservedGeneration == dep.Generation {
		ready.Status, ready.Reason = metav1.ConditionTrue, "AllReplicasReady"
	}
	var conds []metav1.Condition
	if raw, ok, _ := unstructured.NestedSlice(app.Object, "status", "conditions"); ok {
		if err := fromUnstructured(raw, &conds); err != nil {
			return ctrl.Result{}, err
		}
	}
	meta.SetStatusCondition(&conds, ready)
	rawConds, err := toUnstructured(conds)
	if err != nil {
		return ctrl.Result{}, err
	}
	status := map[string]any{"readyReplicas": int64(dep.Status.ReadyReplicas), "conditions": rawConds}
	if err := unstructured.SetNestedMap(app.Object, status, "status"); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.Status().Update(ctx, app); err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to write the status of WebApp %s: %w", req, err)
	}
	return ctrl.Result{}, nil
}

// fromUnstructured and toUnstructured round-trip through JSON, which is all
// the conditions list needs.
func fromUnstructured(in any, out any) error {
	b, err := yaml.Marshal(in)
	if err != nil {
		return err
	}
	return yaml.Unmarshal(b, out)
}

func toUnstructured(in any) ([]any, error) {
	var out []any
	return out, fromUnstructured(in, &out)
}

// startManager runs a controller-runtime manager with leader election on the
// Lease leaseNS/leaseName until ctx ends; the returned channel closes when
// it has become the leader, errc carries Start's result.
func startManager(t *testing.T, ctx context.Context, name, leaseNS, leaseName string) (elected <-chan struct{}, errc <-chan error) {
	t.Helper()
	mgr, err := ctrl.NewManager(cluster.Config, ctrl.Options{
		Scheme:                        scheme.Scheme,
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		LeaderElection:                true,
		LeaderElectionNamespace:       leaseNS,
		LeaderElectionID:              leaseName,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 ptr.To(15 * time.Second),
		RenewDeadline:                 ptr.To(10 * time.Second),
		RetryPeriod:                   ptr.To(time.Second),
	})
	if err != nil {
		t.Fatalf("failed to create manager %s: %v", name, err)
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named(name).For(newWebApp()).Owns(&appsv1.Deployment{}).
		Complete(&webAppReconciler{Client: mgr.GetClient()}); err != nil {
		t.Fatalf("failed to build controller %s: %v", name, err)
	}
	ch := make(chan error, 1)
	go func() { ch <- mgr.Start(ctx) }()
	return mgr.Elected(), ch
}

// TestControllerRuntimeOperator runs a WebApp operator built on
// controller-runtime: two managers contend for one Lease, the leader
// reconciles WebApps into owned Deployments and writes their status, and
// the Lease moves to the other when the leader stops.
func TestControllerRuntimeOperator(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const ns = "operator"
	applyCRD(t, ctx, webAppCRD)
	if _, err := cluster.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("failed to create namespace %s: %v", ns, err)
	}

	ctxA, stopA := context.WithCancel(ctx)
	defer stopA()
	electedA, doneA := startManager(t, ctxA, "webapp-a", ns, "webapp-operator")
	select {
	case <-electedA:
	case err := <-doneA:
		t.Fatalf("manager a stopped before it was elected: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("manager a was not elected within a minute")
	}
	hostname, _ := os.Hostname()
	holderA := leaseHolder(t, ctx, ns, "webapp-operator")
	if !strings.HasPrefix(holderA, hostname+"_") {
		t.Fatalf("Lease %s/webapp-operator is held by %q, want controller-runtime's %q_<uuid>", ns, holderA, hostname)
	}
	ctxB, stopB := context.WithCancel(ctx)
	defer stopB()
	electedB, doneB := startManager(t, ctxB, "webapp-b", ns, "webapp-operator")

	apps := cluster.Dynamic.Resource(webAppGVK.GroupVersion().WithResource("webapps")).Namespace(ns)
	app := newWebApp()
	app.SetName("shop")
	app.Object["spec"] = map[string]any{"replicas": int64(2), "image": "registry.example/shop:1"}
	app, err := apps.Create(ctx, app, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("failed to create WebApp %s/shop: %v", ns, err)
	}

	deployments := cluster.Client.AppsV1().Deployments(ns)
	var depUID types.UID
	eventually(t, time.Minute, "the operator creates Deployment shop owned by WebApp shop", func() error {
		dep, err := deployments.Get(ctx, "shop", metav1.GetOptions{})
		if err != nil {
			return err
		}
		depUID = dep.UID
		owner := metav1.GetControllerOf(dep)
		if owner == nil || owner.Kind != "WebApp" || owner.APIVersion != "example.glassplane.io/v1" || owner.UID != app.GetUID() || !ptr.Deref(owner.BlockOwnerDeletion, false) {
			return fmt.Errorf("controller reference is %+v, want WebApp shop uid %s blocking owner deletion", owner, app.GetUID())
		}
		if got := ptr.Deref(dep.Spec.Replicas, 0); got != 2 {
			return fmt.Errorf("replicas = %d, want 2", got)
		}
		return nil
	})
	waitWebAppReady(t, ctx, ns, "shop", 2, depUID)

	select {
	case <-electedB:
		t.Fatal("manager b was elected while manager a held the Lease")
	default:
	}
	if _, err := apps.Patch(ctx, "shop", types.MergePatchType, []byte(`{"spec":{"replicas":3}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("failed to scale WebApp %s/shop: %v", ns, err)
	}
	eventually(t, time.Minute, "scaling WebApp shop to 3 scales its Deployment", func() error {
		dep, err := deployments.Get(ctx, "shop", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got := ptr.Deref(dep.Spec.Replicas, 0); got != 3 {
			return fmt.Errorf("replicas = %d, want 3", got)
		}
		return nil
	})
	waitWebAppReady(t, ctx, ns, "shop", 3, depUID)

	// The leader steps down (it releases the Lease on cancel): the other
	// manager takes the Lease over and goes on reconciling.
	stopA()
	if err := <-doneA; err != nil {
		t.Fatalf("manager a: %v", err)
	}
	select {
	case <-electedB:
	case err := <-doneB:
		t.Fatalf("manager b stopped before it was elected: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("manager b was not elected within a minute of manager a stepping down")
	}
	if holderB := leaseHolder(t, ctx, ns, "webapp-operator"); holderB == holderA || !strings.HasPrefix(holderB, hostname+"_") {
		t.Fatalf("after the hand-over the Lease is held by %q, want manager b (not a's %q)", holderB, holderA)
	}
	if _, err := apps.Patch(ctx, "shop", types.MergePatchType, []byte(`{"spec":{"replicas":1}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("failed to scale WebApp %s/shop: %v", ns, err)
	}
	waitWebAppReady(t, ctx, ns, "shop", 1, depUID)

	if err := apps.Delete(ctx, "shop", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("failed to delete WebApp %s/shop: %v", ns, err)
	}
	eventually(t, time.Minute, "deleting WebApp shop garbage-collects Deployment shop", func() error {
		_, err := deployments.Get(ctx, "shop", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("Deployment %s/shop still there (err %v)", ns, err)
	})
	stopB()
	if err := <-doneB; err != nil {
		t.Fatalf("manager b: %v", err)
	}
}

// waitWebAppReady waits for the operator to report want ready replicas and
// a true Ready condition in the WebApp's status, and checks that the
// WebApp's Deployment is still the one of uid depUID: nothing may delete a
// dependent whose owner exists.
func waitWebAppReady(t *testing.T, ctx context.Context, ns, name string, want int64, depUID types.UID) {
	t.Helper()
	apps := cluster.Dynamic.Resource(webAppGVK.GroupVersion().WithResource("webapps")).Namespace(ns)
	eventually(t, 2*time.Minute, fmt.Sprintf("WebApp %s reports %d ready replicas", name, want), func() error {
		dep, err := cluster.Client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil && dep.UID != depUID {
			t.Fatalf("Deployment %s was deleted and recreated (uid %s, now %s) while its owner WebApp exists", name, depUID, dep.UID)
		}
		app, err := apps.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		got, _, _ := unstructured.NestedInt64(app.Object, "status", "readyReplicas")
		raw, _, _ := unstructured.NestedSlice(app.Object, "status", "conditions")
		var conds []metav1.Condition
		if err := fromUnstructured(raw, &conds); err != nil {
			return err
		}
		if got != want || !meta.IsStatusConditionTrue(conds, "Ready") {
			return fmt.Errorf("status is %v", app.Object["status"])
		}
		return nil
	})
}

// leaseHolder returns the holder of the Lease ns/name, which must exist.
func leaseHolder(t *testing.T, ctx context.Context, ns, name string) string {
	t.Helper()
	lease, err := cluster.Client.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("failed to get the leader election Lease %s/%s: %v", ns, name, err)
	}
	if lease.Spec.RenewTime == nil || ptr.Deref(lease.Spec.LeaseDurationSeconds, 0) != 15 {
		t.Fatalf("Lease %s/%s spec is %+v, want a renew time and the manager's 15 s duration", ns, name, lease.Spec)
	}
	return ptr.Deref(lease.Spec.HolderIdentity, "")
}

// applyCRD server-side applies a CustomResourceDefinition and waits until
// it is Established.
func applyCRD(t *testing.T, ctx context.Context, manifest string) {
	t.Helper()
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &crd.Object); err != nil {
		t.Fatalf("bad CRD manifest: %v", err)
	}
	crds := cluster.Dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	applied, err := crds.Apply(ctx, crd.GetName(), crd, metav1.ApplyOptions{FieldManager: "ecosystem-test"})
	if err != nil {
		t.Fatalf("failed to apply CRD %s: %v", crd.GetName(), err)
	}
	eventually(t, 30*time.Second, "CRD "+crd.GetName()+" is Established", func() error {
		got, err := crds.Get(ctx, crd.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conds {
			if c, ok := c.(map[string]any); ok && c["type"] == "Established" && c["status"] == "True" {
				return nil
			}
		}
		// The resourceVersion tells whether anything wrote the CRD after
		// the apply.
		status, _, _ := unstructured.NestedMap(got.Object, "status")
		return fmt.Errorf("resourceVersion %s (applied as %s), status %v", got.GetResourceVersion(), applied.GetResourceVersion(), status)
	})
}
