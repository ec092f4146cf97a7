package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
)

// deploymentYAML is a Deployment of replicas busybox pods with the given
// image tag and rolling update bounds.
func deploymentYAML(name, namespace, tag string, replicas, maxSurge, maxUnavailable int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  replicas: %[4]d
  strategy:
    type: RollingUpdate
    rollingUpdate: {maxSurge: %[5]d, maxUnavailable: %[6]d}
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      containers: [{name: main, image: "busybox:%[3]s", command: [sleep, "3600"]}]
`, name, namespace, tag, replicas, maxSurge, maxUnavailable)
}

// waitDeploymentAvailable waits until the deployment's status says every
// replica is updated and available for its current generation.
func waitDeploymentAvailable(t *testing.T, client kubernetes.Interface, namespace, name string, replicas int32) *appsv1.Deployment {
	t.Helper()
	var d *appsv1.Deployment
	Eventually(t, 2*time.Minute, "deployment "+name+" available", func() error {
		var err error
		d, err = client.AppsV1().Deployments(namespace).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s := d.Status
		if s.ObservedGeneration < d.Generation || s.Replicas != replicas || s.UpdatedReplicas != replicas || s.AvailableReplicas != replicas || s.ReadyReplicas != replicas {
			return fmt.Errorf("status %+v", s)
		}
		return nil
	})
	return d
}

func ownedPods(t *testing.T, client kubernetes.Interface, namespace, app string) []v1.Pod {
	t.Helper()
	pods, err := client.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	var out []v1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

func isReady(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// boundsWatcher samples a deployment's pods at every watch event and
// remembers the lowest available count and the highest total.
type boundsWatcher struct {
	mu           sync.Mutex // guards the fields below
	minAvailable int
	maxTotal     int
	events       int
}

func watchBounds(t *testing.T, ctx context.Context, client kubernetes.Interface, namespace, app string) *boundsWatcher {
	t.Helper()
	w := &boundsWatcher{minAvailable: 1 << 30}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "app=" + app }))
	inf := factory.Core().V1().Pods().Informer()
	sample := func(any) {
		total, available := 0, 0
		for _, obj := range inf.GetStore().List() {
			p := obj.(*v1.Pod)
			if p.DeletionTimestamp != nil || p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
				continue
			}
			total++
			if isReady(p) {
				available++
			}
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.events++
		w.minAvailable = min(w.minAvailable, available)
		w.maxTotal = max(w.maxTotal, total)
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: sample, UpdateFunc: func(_, o any) { sample(o) }, DeleteFunc: sample,
	}); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	w.mu.Lock()
	w.minAvailable, w.maxTotal, w.events = 1<<30, 0, 0
	w.mu.Unlock()
	return w
}

func (w *boundsWatcher) result() (minAvailable, maxTotal, events int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.minAvailable, w.maxTotal, w.events
}

func gone(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		return fmt.Errorf("still there")
	}
	return err
}

// TestControllers drives the controller manager through kubectl on a
// cluster of simulated nodes: a Deployment's rollout, rolling update,
// undo and scaling; each delete cascade; and namespace deletion.
func TestControllers(t *testing.T) {
	c := NewCluster(t, "--node-runtime", "none", "--simulated-nodes", "3")
	client := c.Client
	ctx := context.Background()

	t.Run("deployment runs 3 available replicas", func(t *testing.T) {
		c.MustKubectl(t, deploymentYAML("web", "default", "1.36", 3, 1, 1), "apply", "-f", "-")
		d := waitDeploymentAvailable(t, client, "default", "web", 3)
		pods := ownedPods(t, client, "default", "web")
		if len(pods) != 3 {
			t.Fatalf("%d pods, want 3", len(pods))
		}
		for _, p := range pods {
			ref := metav1.GetControllerOf(&p)
			if p.Status.Phase != v1.PodRunning || ref == nil || ref.Kind != "ReplicaSet" || !strings.HasPrefix(p.Name, ref.Name+"-") {
				t.Fatalf("pod %s: phase %s, controller %+v", p.Name, p.Status.Phase, ref)
			}
			if hash := p.Labels[appsv1.DefaultDeploymentUniqueLabelKey]; ref.Name != "web-"+hash {
				t.Fatalf("replica set %q is not named web-<pod-template-hash> (%q)", ref.Name, hash)
			}
		}
		if d.Annotations["deployment.kubernetes.io/revision"] != "1" {
			t.Fatalf("revision annotation %q, want 1", d.Annotations["deployment.kubernetes.io/revision"])
		}
		out := c.MustKubectl(t, "", "get", "events", "--field-selector", "involvedObject.kind=Deployment,involvedObject.name=web")
		if !strings.Contains(out, "ScalingReplicaSet") || !strings.Contains(out, "Scaled up replica set web-") {
			t.Fatalf("no ScalingReplicaSet event:\n%s", out)
		}
		out = c.MustKubectl(t, "", "get", "events", "--field-selector", "involvedObject.kind=ReplicaSet,reason=SuccessfulCreate")
		if !strings.Contains(out, "Created pod: web-") {
			t.Fatalf("no SuccessfulCreate event:\n%s", out)
		}
	})

	t.Run("rolling update keeps within maxSurge and maxUnavailable", func(t *testing.T) {
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		w := watchBounds(t, wctx, client, "default", "web")
		c.MustKubectl(t, "", "set", "image", "deployment/web", "main=busybox:1.37")
		c.MustKubectl(t, "", "rollout", "status", "deployment/web", "--timeout=2m")
		waitDeploymentAvailable(t, client, "default", "web", 3)
		minAvailable, maxTotal, events := w.result()
		if events == 0 || minAvailable < 3-1 || maxTotal > 3+1 {
			t.Fatalf("over %d watch events: min available %d (want ≥ 2), max total %d (want ≤ 4)", events, minAvailable, maxTotal)
		}
		for _, p := range ownedPods(t, client, "default", "web") {
			if img := p.Spec.Containers[0].Image; img != "busybox:1.37" {
				t.Fatalf("pod %s runs %s after the rollout", p.Name, img)
			}
		}
		out := c.MustKubectl(t, "", "rollout", "history", "deployment/web")
		if !strings.Contains(out, "1 ") || !strings.Contains(out, "2 ") {
			t.Fatalf("rollout history:\n%s", out)
		}
	})

	t.Run("rollout undo restores the previous template", func(t *testing.T) {
		c.MustKubectl(t, "", "rollout", "undo", "deployment/web")
		c.MustKubectl(t, "", "rollout", "status", "deployment/web", "--timeout=2m")
		d := waitDeploymentAvailable(t, client, "default", "web", 3)
		if img := d.Spec.Template.Spec.Containers[0].Image; img != "busybox:1.36" {
			t.Fatalf("template image %s after undo, want busybox:1.36", img)
		}
		if rev := d.Annotations["deployment.kubernetes.io/revision"]; rev != "3" {
			t.Fatalf("revision %q after undo, want 3", rev)
		}
		rss, err := client.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			t.Fatal(err)
		}
		if len(rss.Items) != 2 {
			t.Fatalf("%d replica sets after undo, want the 2 templates", len(rss.Items))
		}
	})

	t.Run("rollout restart, pause and resume", func(t *testing.T) {
		c.MustKubectl(t, "", "rollout", "restart", "deployment/web")
		c.MustKubectl(t, "", "rollout", "status", "deployment/web", "--timeout=2m")
		waitDeploymentAvailable(t, client, "default", "web", 3)
		c.MustKubectl(t, "", "rollout", "pause", "deployment/web")
		Eventually(t, time.Minute, "paused condition", func() error {
			d, err := client.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			for _, cond := range d.Status.Conditions {
				if cond.Type == appsv1.DeploymentProgressing && cond.Reason == "DeploymentPaused" {
					return nil
				}
			}
			return fmt.Errorf("conditions %+v", d.Status.Conditions)
		})
		c.MustKubectl(t, "", "set", "image", "deployment/web", "main=busybox:1.38")
		c.MustKubectl(t, "", "rollout", "resume", "deployment/web")
		c.MustKubectl(t, "", "rollout", "status", "deployment/web", "--timeout=2m")
		d := waitDeploymentAvailable(t, client, "default", "web", 3)
		if img := d.Spec.Template.Spec.Containers[0].Image; img != "busybox:1.38" {
			t.Fatalf("image %s", img)
		}
	})

	t.Run("scale 3 to 10 to 2", func(t *testing.T) {
		for _, n := range []int32{10, 2} {
			c.MustKubectl(t, "", "scale", "deployment/web", fmt.Sprintf("--replicas=%d", n))
			waitDeploymentAvailable(t, client, "default", "web", n)
			Eventually(t, time.Minute, fmt.Sprintf("%d pods", n), func() error {
				if got := len(ownedPods(t, client, "default", "web")); got != int(n) {
					return fmt.Errorf("%d pods", got)
				}
				return nil
			})
		}
	})

	t.Run("delete cascades", func(t *testing.T) {
		tests := []struct {
			cascade      string
			wantChildren bool
		}{
			{cascade: "background"},
			{cascade: "foreground"},
			{cascade: "orphan", wantChildren: true},
		}
		for _, tt := range tests {
			t.Run(tt.cascade, func(t *testing.T) {
				name := "cascade-" + tt.cascade
				c.MustKubectl(t, deploymentYAML(name, "default", "1.36", 2, 1, 0), "apply", "-f", "-")
				d := waitDeploymentAvailable(t, client, "default", name, 2)
				wctx, cancel := context.WithCancel(ctx)
				defer cancel()
				sawFinalizer := make(chan string, 8)
				factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace("default"))
				dinf := factory.Apps().V1().Deployments().Informer()
				dinf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(_, o any) {
					if dd := o.(*appsv1.Deployment); dd.UID == d.UID && dd.DeletionTimestamp != nil {
						for _, f := range dd.Finalizers {
							select {
							case sawFinalizer <- f:
							default:
							}
						}
					}
				}})
				factory.Start(wctx.Done())
				factory.WaitForCacheSync(wctx.Done())

				c.MustKubectl(t, "", "delete", "deployment", name, "--cascade="+tt.cascade, "--timeout=2m")
				Eventually(t, time.Minute, "deployment gone", func() error {
					_, err := client.AppsV1().Deployments("default").Get(ctx, name, metav1.GetOptions{})
					return gone(err)
				})
				if tt.cascade == "foreground" {
					// The owner waited for its dependents: they are gone
					// as soon as it is.
					rss, _ := client.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
					if len(rss.Items) != 0 {
						t.Fatalf("%d replica sets outlived a foreground delete", len(rss.Items))
					}
					select {
					case f := <-sawFinalizer:
						if f != metav1.FinalizerDeleteDependents {
							t.Fatalf("finalizer %q during the foreground delete", f)
						}
					case <-time.After(10 * time.Second):
						t.Fatal("never saw the deployment with the foregroundDeletion finalizer")
					}
				}
				if tt.wantChildren {
					rss, err := client.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
					if err != nil || len(rss.Items) != 1 || len(rss.Items[0].OwnerReferences) != 0 {
						t.Fatalf("orphaned replica sets: %v %+v", err, rss)
					}
					if got := len(ownedPods(t, client, "default", name)); got != 2 {
						t.Fatalf("%d pods after an orphan delete, want 2", got)
					}
					c.MustKubectl(t, "", "delete", "rs", rss.Items[0].Name)
				}
				Eventually(t, 2*time.Minute, "dependents gone", func() error {
					rss, err := client.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
					if err != nil {
						return err
					}
					pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
					if err != nil {
						return err
					}
					if len(rss.Items)+len(pods.Items) != 0 {
						return fmt.Errorf("%d replica sets, %d pods left", len(rss.Items), len(pods.Items))
					}
					return nil
				})
			})
		}
	})

	t.Run("namespace with objects is deleted completely", func(t *testing.T) {
		c.MustKubectl(t, "", "create", "namespace", "doomed")
		c.MustKubectl(t, deploymentYAML("app", "doomed", "1.36", 2, 1, 0), "apply", "-f", "-")
		c.MustKubectl(t, "", "-n", "doomed", "create", "configmap", "settings", "--from-literal=a=b")
		c.MustKubectl(t, "", "-n", "doomed", "create", "secret", "generic", "creds", "--from-literal=p=q")
		c.MustKubectl(t, "", "-n", "doomed", "create", "service", "clusterip", "app", "--tcp=80:80")
		waitDeploymentAvailable(t, client, "doomed", "app", 2)
		c.MustKubectl(t, "", "delete", "namespace", "doomed", "--timeout=2m")
		Eventually(t, 2*time.Minute, "namespace gone", func() error {
			_, err := client.CoreV1().Namespaces().Get(ctx, "doomed", metav1.GetOptions{})
			return gone(err)
		})
		for _, list := range []func() (int, error){
			func() (int, error) {
				l, err := client.CoreV1().Pods("doomed").List(ctx, metav1.ListOptions{})
				return len(l.Items), err
			},
			func() (int, error) {
				l, err := client.AppsV1().ReplicaSets("doomed").List(ctx, metav1.ListOptions{})
				return len(l.Items), err
			},
			func() (int, error) {
				l, err := client.CoreV1().ConfigMaps("doomed").List(ctx, metav1.ListOptions{})
				return len(l.Items), err
			},
		} {
			if n, err := list(); err != nil || n != 0 {
				t.Fatalf("%d objects left in the deleted namespace (%v)", n, err)
			}
		}
	})

	t.Run("service endpoints follow pod readiness", func(t *testing.T) {
		c.MustKubectl(t, deploymentYAML("backend", "default", "1.36", 2, 1, 0), "apply", "-f", "-")
		waitDeploymentAvailable(t, client, "default", "backend", 2)
		c.MustKubectl(t, "", "expose", "deployment", "backend", "--port=80", "--target-port=8080")
		pods := ownedPods(t, client, "default", "backend")
		endpointIPs := func() (ready, notReady []string, err error) {
			ep, err := client.CoreV1().Endpoints("default").Get(ctx, "backend", metav1.GetOptions{})
			if err != nil {
				return nil, nil, err
			}
			for _, s := range ep.Subsets {
				for _, p := range s.Ports {
					if p.Port != 8080 {
						return nil, nil, fmt.Errorf("port %d, want 8080", p.Port)
					}
				}
				for _, a := range s.Addresses {
					ready = append(ready, a.IP)
				}
				for _, a := range s.NotReadyAddresses {
					notReady = append(notReady, a.IP)
				}
			}
			return ready, notReady, nil
		}
		Eventually(t, time.Minute, "both pods ready in the endpoints", func() error {
			ready, notReady, err := endpointIPs()
			if err != nil || len(ready) != 2 || len(notReady) != 0 {
				return fmt.Errorf("ready %v, not ready %v, %v", ready, notReady, err)
			}
			return nil
		})
		setReady := func(status string) {
			patch := fmt.Sprintf(`{"status":{"conditions":[{"type":"Ready","status":%q}]}}`, status)
			c.MustKubectl(t, "", "patch", "pod", pods[0].Name, "--subresource=status", "--type=strategic", "-p", patch)
		}
		setReady("False")
		Eventually(t, time.Minute, "the not-ready pod under notReadyAddresses", func() error {
			ready, notReady, err := endpointIPs()
			if err != nil || len(ready) != 1 || len(notReady) != 1 || notReady[0] != pods[0].Status.PodIP {
				return fmt.Errorf("ready %v, not ready %v, %v", ready, notReady, err)
			}
			return nil
		})
		setReady("True")
		Eventually(t, time.Minute, "the pod back under addresses", func() error {
			ready, notReady, err := endpointIPs()
			if err != nil || len(ready) != 2 || len(notReady) != 0 {
				return fmt.Errorf("ready %v, not ready %v, %v", ready, notReady, err)
			}
			return nil
		})
		Eventually(t, time.Minute, "an EndpointSlice for the service", func() error {
			slices, err := client.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=backend"})
			if err != nil {
				return err
			}
			if len(slices.Items) != 1 || len(slices.Items[0].Endpoints) != 2 {
				return fmt.Errorf("slices %+v", slices.Items)
			}
			return nil
		})
		c.MustKubectl(t, "", "scale", "deployment/backend", "--replicas=0")
		Eventually(t, time.Minute, "no addresses once scaled to zero", func() error {
			ready, notReady, err := endpointIPs()
			if err != nil || len(ready)+len(notReady) != 0 {
				return fmt.Errorf("ready %v, not ready %v, %v", ready, notReady, err)
			}
			return nil
		})
	})
}

// TestNodeLifecycle registers a node whose agent never heartbeats: past
// the grace period it becomes Ready=Unknown with the unreachable taints,
// its pods are evicted when their tolerationSeconds run out, and the taints
// go when it reports Ready again.
func TestNodeLifecycle(t *testing.T) {
	c := NewCluster(t, "--node-runtime", "none", "--simulated-nodes", "1", "--node-monitor-grace-period", "20s")
	client := c.Client
	ctx := context.Background()
	c.MustKubectl(t, `apiVersion: v1
kind: Node
metadata: {name: ghost, labels: {kubernetes.io/hostname: ghost}}
spec:
  taints: [{key: example.com/ghost, effect: NoSchedule}]
`, "apply", "-f", "-")
	setReady := func() {
		now := time.Now().UTC().Format(time.RFC3339)
		patch := fmt.Sprintf(`{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","lastHeartbeatTime":%q,"lastTransitionTime":%q}]}}`, now, now)
		c.MustKubectl(t, "", "patch", "node", "ghost", "--subresource=status", "--type=strategic", "-p", patch)
	}
	setReady()
	podYAML := func(name, seconds string) string {
		toleration := ""
		if seconds != "" {
			toleration = ", tolerationSeconds: " + seconds
		}
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  nodeName: ghost
  tolerations: [{key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute%s}]
  containers: [{name: main, image: busybox}]
`, name, toleration)
	}
	c.MustKubectl(t, podYAML("short", "2"), "apply", "-f", "-")
	c.MustKubectl(t, podYAML("forever", ""), "apply", "-f", "-")

	Eventually(t, 2*time.Minute, "ghost unreachable", func() error {
		n, err := client.CoreV1().Nodes().Get(ctx, "ghost", metav1.GetOptions{})
		if err != nil {
			return err
		}
		ready := ""
		for _, cond := range n.Status.Conditions {
			if cond.Type == v1.NodeReady {
				ready = string(cond.Status) + " " + cond.Reason
			}
		}
		taints := map[string]bool{}
		for _, tn := range n.Spec.Taints {
			taints[tn.Key+":"+string(tn.Effect)] = true
		}
		if ready != "Unknown NodeStatusUnknown" || !taints["node.kubernetes.io/unreachable:NoExecute"] || !taints["node.kubernetes.io/unreachable:NoSchedule"] || !taints["example.com/ghost:NoSchedule"] {
			return fmt.Errorf("ready %q, taints %v", ready, taints)
		}
		return nil
	})
	Eventually(t, time.Minute, "the pod with tolerationSeconds 2 evicted", func() error {
		p, err := client.CoreV1().Pods("default").Get(ctx, "short", metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp == nil {
			return fmt.Errorf("pod %v, %v", p.DeletionTimestamp, err)
		}
		return nil
	})
	if p, err := client.CoreV1().Pods("default").Get(ctx, "forever", metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil {
		t.Fatalf("the pod tolerating for ever was evicted: %v", err)
	}
	out := c.MustKubectl(t, "", "get", "events", "--field-selector", "reason=TaintManagerEviction")
	if !strings.Contains(out, "Marking for deletion Pod default/short") {
		t.Fatalf("no TaintManagerEviction event:\n%s", out)
	}
	setReady()
	Eventually(t, time.Minute, "unreachable taints gone", func() error {
		n, err := client.CoreV1().Nodes().Get(ctx, "ghost", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, tn := range n.Spec.Taints {
			if tn.Key == v1.TaintNodeUnreachable {
				return fmt.Errorf("taints %v", n.Spec.Taints)
			}
		}
		return nil
	})
	n, err := client.CoreV1().Nodes().Get(ctx, "sim-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tn := range n.Spec.Taints {
		if tn.Key == v1.TaintNodeUnreachable || tn.Key == v1.TaintNodeNotReady {
			t.Fatalf("the heartbeating node sim-1 got taint %v", tn)
		}
	}
}
