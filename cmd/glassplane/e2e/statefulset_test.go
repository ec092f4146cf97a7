package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	toolscache "k8s.io/client-go/tools/cache"
)

// statefulSetYAML is a StatefulSet of busybox pods pinned to the simulated
// nodes, behind the headless Service nginx.
func statefulSetYAML(name string, replicas int, strategy, image string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: nginx}
spec:
  clusterIP: None
  selector: {app: %[1]s}
  ports: [{port: 80}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: %[1]s}
spec:
  serviceName: nginx
  replicas: %[2]d
  selector: {matchLabels: {app: %[1]s}}
  updateStrategy: %[3]s
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      nodeSelector: {node.glassplane.io/runtime: simulated}
      containers: [{name: main, image: %[4]s, command: [sleep, "3600"]}]
`, name, replicas, strategy, image)
}

// statefulSetOnly is the StatefulSet document of statefulSetYAML.
func statefulSetOnly(yaml string) string {
	_, set, _ := strings.Cut(yaml, "---\n")
	return set
}

// TestStatefulSet drives the StatefulSet controller with kubectl on the
// shared cluster's simulated nodes: ordered creation, stable identities,
// scale through the scale subresource, ordered scale down, a rolling update
// held by a partition, rollout history and undo, OnDelete, and the 422 for
// a selector that does not match the template.
func TestStatefulSet(t *testing.T) {
	requireTool(t, "kubectl", "the StatefulSet test drives kubectl")
	c := SharedCluster(t)
	ctx := context.Background()
	ns := "sts-e2e"
	c.MustKubectl(t, "", "create", "namespace", ns)
	t.Cleanup(func() { c.Kubectl(t, "", "delete", "namespace", ns, "--wait=false") })
	kubectl := func(t *testing.T, stdin string, args ...string) string {
		t.Helper()
		return c.MustKubectl(t, stdin, append([]string{"-n", ns}, args...)...)
	}

	// Record the order in which the set's pods are created and deleted.
	var mu sync.Mutex
	var created, deleted []string
	factory := informers.NewSharedInformerFactoryWithOptions(c.Client, 0, informers.WithNamespace(ns))
	_, err := factory.Core().V1().Pods().Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			mu.Lock()
			defer mu.Unlock()
			created = append(created, obj.(*v1.Pod).Name)
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			mu.Lock()
			defer mu.Unlock()
			deleted = append(deleted, obj.(*v1.Pod).Name)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	factory.WaitForCacheSync(stop)

	rolling := "{type: RollingUpdate, rollingUpdate: {partition: 0}}"
	kubectl(t, statefulSetYAML("web", 2, rolling, "busybox:1.36"), "apply", "-f", "-")
	kubectl(t, "", "rollout", "status", "statefulset/web", "--timeout=2m")

	t.Run("web-0 is ready before web-1 is created", func(t *testing.T) {
		web0, err := c.Client.CoreV1().Pods(ns).Get(ctx, "web-0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		web1, err := c.Client.CoreV1().Pods(ns).Get(ctx, "web-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var readyAt metav1.Time
		for _, cond := range web0.Status.Conditions {
			if cond.Type == v1.PodReady && cond.Status == v1.ConditionTrue {
				readyAt = cond.LastTransitionTime
			}
		}
		if readyAt.IsZero() || web1.CreationTimestamp.Before(&readyAt) {
			t.Errorf("web-1 created at %v, web-0 ready at %v", web1.CreationTimestamp, readyAt)
		}
		mu.Lock()
		order := slices.Clone(created)
		mu.Unlock()
		if !slices.Equal(order, []string{"web-0", "web-1"}) {
			t.Errorf("pods created in order %v, want [web-0 web-1]", order)
		}
	})

	t.Run("stable names, hostnames and labels", func(t *testing.T) {
		for i, name := range []string{"web-0", "web-1"} {
			p, err := c.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if p.Spec.Hostname != name || p.Spec.Subdomain != "nginx" {
				t.Errorf("%s: hostname %q subdomain %q", name, p.Spec.Hostname, p.Spec.Subdomain)
			}
			if p.Labels[appsv1.StatefulSetPodNameLabel] != name || p.Labels[appsv1.PodIndexLabel] != fmt.Sprint(i) ||
				!strings.HasPrefix(p.Labels[appsv1.StatefulSetRevisionLabel], "web-") {
				t.Errorf("%s: labels %v", name, p.Labels)
			}
		}
		out := kubectl(t, "", "get", "statefulset", "web")
		if !strings.Contains(out, "2/2") {
			t.Errorf("kubectl get statefulset:\n%s", out)
		}
		events := kubectl(t, "", "get", "events", "--field-selector", "involvedObject.kind=StatefulSet,involvedObject.name=web")
		if !strings.Contains(events, "create Pod web-0 in StatefulSet web successful") {
			t.Errorf("events:\n%s", events)
		}
	})

	t.Run("scale up through the scale subresource", func(t *testing.T) {
		kubectl(t, "", "scale", "statefulset/web", "--replicas=3")
		kubectl(t, "", "rollout", "status", "statefulset/web", "--timeout=2m")
		scale, err := c.Client.AppsV1().StatefulSets(ns).GetScale(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if scale.Spec.Replicas != 3 || scale.Status.Replicas != 3 || scale.Status.Selector != "app=web" {
			t.Errorf("scale = %+v", scale)
		}
	})

	t.Run("rolling update held by a partition, history and undo", func(t *testing.T) {
		before, err := c.Client.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		oldRev := before.Status.CurrentRevision
		kubectl(t, `{"spec":{"updateStrategy":{"rollingUpdate":{"partition":2}},"template":{"spec":{"containers":[{"name":"main","image":"busybox:1.37"}]}}}}`,
			"patch", "statefulset/web", "--type=strategic", "--patch-file=/dev/stdin")
		Eventually(t, 2*time.Minute, "web-2 at the new revision and ready", func() error {
			s, err := c.Client.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if s.Status.UpdatedReplicas != 1 || s.Status.ReadyReplicas != 3 || s.Status.UpdateRevision == oldRev {
				return fmt.Errorf("status %+v", s.Status)
			}
			return nil
		})
		for name, image := range map[string]string{"web-0": "busybox:1.36", "web-1": "busybox:1.36", "web-2": "busybox:1.37"} {
			p, err := c.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Spec.Containers[0].Image; got != image {
				t.Errorf("%s runs %s, want %s", name, got, image)
			}
		}
		s, _ := c.Client.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
		if s.Status.CurrentRevision != oldRev {
			t.Errorf("current revision %s, want %s while the partition holds", s.Status.CurrentRevision, oldRev)
		}
		history := kubectl(t, "", "rollout", "history", "statefulset/web")
		if !strings.Contains(history, "1 ") || !strings.Contains(history, "2 ") {
			t.Errorf("rollout history:\n%s", history)
		}
		if out := kubectl(t, "", "rollout", "history", "statefulset/web", "--revision=2"); !strings.Contains(out, "busybox:1.37") {
			t.Errorf("rollout history --revision=2:\n%s", out)
		}
		kubectl(t, "", "rollout", "undo", "statefulset/web")
		Eventually(t, 2*time.Minute, "web-2 back on busybox:1.36", func() error {
			p, err := c.Client.CoreV1().Pods(ns).Get(ctx, "web-2", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if p.Spec.Containers[0].Image != "busybox:1.36" || p.Labels[appsv1.StatefulSetRevisionLabel] != oldRev {
				return fmt.Errorf("web-2 runs %s at %s", p.Spec.Containers[0].Image, p.Labels[appsv1.StatefulSetRevisionLabel])
			}
			return nil
		})
		rev, err := c.Client.AppsV1().ControllerRevisions(ns).Get(ctx, oldRev, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if rev.Revision != 3 {
			t.Errorf("rolled-back revision %s is number %d, want 3", oldRev, rev.Revision)
		}
	})

	t.Run("scale down removes the highest ordinal first", func(t *testing.T) {
		mu.Lock()
		deleted = nil
		mu.Unlock()
		kubectl(t, "", "scale", "statefulset/web", "--replicas=1")
		Eventually(t, 2*time.Minute, "only web-0 left", func() error {
			pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
			if err != nil {
				return err
			}
			if len(pods.Items) != 1 || pods.Items[0].Name != "web-0" {
				return fmt.Errorf("%d pods", len(pods.Items))
			}
			return nil
		})
		mu.Lock()
		order := slices.Clone(deleted)
		mu.Unlock()
		if !slices.Equal(order, []string{"web-2", "web-1"}) {
			t.Errorf("pods deleted in order %v, want [web-2 web-1]", order)
		}
	})

	t.Run("OnDelete replaces a pod only once it is deleted", func(t *testing.T) {
		kubectl(t, statefulSetOnly(statefulSetYAML("ondel", 1, "{type: OnDelete}", "busybox:1.36")), "apply", "-f", "-")
		Eventually(t, 2*time.Minute, "ondel-0 ready", func() error {
			s, err := c.Client.AppsV1().StatefulSets(ns).Get(ctx, "ondel", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if s.Status.ReadyReplicas != 1 {
				return fmt.Errorf("status %+v", s.Status)
			}
			return nil
		})
		kubectl(t, `{"spec":{"template":{"spec":{"containers":[{"name":"main","image":"busybox:1.37"}]}}}}`,
			"patch", "statefulset/ondel", "--type=strategic", "--patch-file=/dev/stdin")
		Eventually(t, time.Minute, "the update revision observed", func() error {
			s, err := c.Client.AppsV1().StatefulSets(ns).Get(ctx, "ondel", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if s.Status.ObservedGeneration != s.Generation || s.Status.UpdateRevision == s.Status.CurrentRevision {
				return fmt.Errorf("status %+v", s.Status)
			}
			return nil
		})
		p, err := c.Client.CoreV1().Pods(ns).Get(ctx, "ondel-0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.Containers[0].Image != "busybox:1.36" || p.DeletionTimestamp != nil {
			t.Fatalf("OnDelete touched ondel-0: %s, deleting %v", p.Spec.Containers[0].Image, p.DeletionTimestamp)
		}
		// Not --wait: the controller makes ondel-0 again within
		// milliseconds on a simulated node, and kubectl's wait can list the
		// new pod of the same name and wait for it to go; what follows waits
		// for the new pod itself.
		kubectl(t, "", "delete", "pod", "ondel-0", "--wait=false")
		Eventually(t, 2*time.Minute, "ondel-0 made again on busybox:1.37", func() error {
			p, err := c.Client.CoreV1().Pods(ns).Get(ctx, "ondel-0", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if p.Spec.Containers[0].Image != "busybox:1.37" {
				return fmt.Errorf("runs %s", p.Spec.Containers[0].Image)
			}
			return nil
		})
	})

	t.Run("claims of volumeClaimTemplates are made before their pods, bound, and go with the set", func(t *testing.T) {
		kubectl(t, `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 2
  selector: {matchLabels: {app: db}}
  persistentVolumeClaimRetentionPolicy: {whenDeleted: Delete, whenScaled: Retain}
  template:
    metadata: {labels: {app: db}}
    spec:
      nodeSelector: {node.glassplane.io/runtime: simulated}
      containers: [{name: main, image: busybox:1.36, command: [sleep, "3600"], volumeMounts: [{name: data, mountPath: /data}]}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 16Mi}}
`, "apply", "-f", "-")
		Eventually(t, 2*time.Minute, "db ready with two bound claims", func() error {
			s, err := c.Client.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if s.Status.ReadyReplicas != 2 {
				return fmt.Errorf("%d ready", s.Status.ReadyReplicas)
			}
			for _, name := range []string{"data-db-0", "data-db-1"} {
				pvc, err := c.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				if pvc.Status.Phase != v1.ClaimBound {
					return fmt.Errorf("%s is %s", name, pvc.Status.Phase)
				}
			}
			return nil
		})
		for i, name := range []string{"db-0", "db-1"} {
			p, err := c.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			claim := fmt.Sprintf("data-db-%d", i)
			if len(p.Spec.Volumes) == 0 || p.Spec.Volumes[0].PersistentVolumeClaim == nil || p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != claim {
				t.Errorf("%s volumes %+v, want claim %s", name, p.Spec.Volumes, claim)
			}
			pvc, err := c.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if ref := metav1.GetControllerOf(pvc); ref == nil || ref.Kind != "StatefulSet" || ref.Name != "db" {
				t.Errorf("%s controller %v, want StatefulSet db (whenDeleted: Delete)", claim, ref)
			}
			if !pvc.CreationTimestamp.Before(&p.CreationTimestamp) && !pvc.CreationTimestamp.Equal(&p.CreationTimestamp) {
				t.Errorf("%s created at %v after its pod at %v", claim, pvc.CreationTimestamp, p.CreationTimestamp)
			}
		}
		events := kubectl(t, "", "get", "events", "--field-selector", "involvedObject.kind=StatefulSet,involvedObject.name=db")
		if !strings.Contains(events, "create Claim data-db-0 Pod db-0 in StatefulSet db success") {
			t.Errorf("events:\n%s", events)
		}
		kubectl(t, "", "delete", "statefulset", "db")
		Eventually(t, 2*time.Minute, "the claims deleted with the set", func() error {
			pvcs, err := c.Client.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=db"})
			if err != nil {
				return err
			}
			if len(pvcs.Items) != 0 {
				return fmt.Errorf("%d claims left", len(pvcs.Items))
			}
			return nil
		})
	})

	t.Run("a selector that does not match the template is refused with 422", func(t *testing.T) {
		bad := strings.Replace(statefulSetOnly(statefulSetYAML("bad", 1, rolling, "busybox:1.36")), "metadata: {labels: {app: bad}}", "metadata: {labels: {app: other}}", 1)
		out, err := c.Kubectl(t, bad, "-n", ns, "create", "-f", "-")
		if err == nil {
			t.Fatalf("kubectl create succeeded:\n%s", out)
		}
		for _, want := range []string{`The StatefulSet "bad" is invalid: spec.template.metadata.labels: Invalid value: `, "`selector` does not match template `labels`"} {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl said:\n%s\nwant %s", out, want)
			}
		}
		if _, err := c.Client.AppsV1().StatefulSets(ns).Get(ctx, "bad", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("bad StatefulSet stored: %v", err)
		}
	})
}

// TestDemoStatefulSet plays the stateful-set demo on the shared cluster:
// the pods come up in order with their hostnames, web-1 comes back under
// its name, and the demo's namespace is gone afterwards.
func TestDemoStatefulSet(t *testing.T) {
	c := SharedCluster(t)
	out, err := playDemo(t, c, "stateful-set")
	if err != nil {
		t.Fatalf("glassplane demo run stateful-set: %v\n%s", err, out)
	}
	for _, want := range []string{"created in order: web-0 (hostname web-0.web), web-1 (hostname web-1.web), web-2 (hostname web-2.web)",
		"pod/web-1 made again: hostname web-1, pod-index 1", "statefulset.apps/web deleted"} {
		if !strings.Contains(out, want) {
			t.Errorf("the demo said:\n%s\nwant %q", out, want)
		}
	}
}
