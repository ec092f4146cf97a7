package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	toolscache "k8s.io/client-go/tools/cache"
)

// TestPodDisruptionBudgets drives PodDisruptionBudgets with kubectl on three
// simulated nodes: the disruption controller computes a budget's status,
// the eviction subresource honours it (429 when it would be violated), and
// `kubectl drain` waits on the budget until the Deployment has a spare
// ready replica, never taking the ready replicas below minAvailable.
func TestPodDisruptionBudgets(t *testing.T) {
	requireTool(t, "kubectl", "the disruption budget test drives kubectl")
	c := NewCluster(t, "--node-runtime", "none", "--simulated-nodes", "3", "--web-listen", "")
	ctx := context.Background()
	Eventually(t, time.Minute, "three nodes", func() error {
		nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(nodes.Items) != 3 {
			return fmt.Errorf("%d nodes", len(nodes.Items))
		}
		return nil
	})

	c.MustKubectl(t, "", "create", "deployment", "web", "--image=busybox:1.36", "--replicas=3")
	readyWeb := func() ([]v1.Pod, error) {
		pods, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return nil, err
		}
		var ready []v1.Pod
		for _, p := range pods.Items {
			if healthy(&p) {
				ready = append(ready, p)
			}
		}
		return ready, nil
	}
	Eventually(t, time.Minute, "three ready replicas", func() error {
		ready, err := readyWeb()
		if err == nil && len(ready) != 3 {
			err = fmt.Errorf("%d ready", len(ready))
		}
		return err
	})

	t.Run("invalid budgets are refused with field paths", func(t *testing.T) {
		out, err := c.Kubectl(t, `apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: both}
spec:
  minAvailable: 1
  maxUnavailable: 1
  selector: {matchLabels: {app: web}}
`, "apply", "-f", "-")
		if err == nil || !strings.Contains(out, "minAvailable and maxUnavailable cannot be both set") {
			t.Fatalf("err %v, output:\n%s", err, out)
		}
		out, err = c.Kubectl(t, "", "create", "pdb", "big", "--selector=app=web", "--max-unavailable=120%")
		if err == nil || !strings.Contains(out, "spec.maxUnavailable") {
			t.Fatalf("err %v, output:\n%s", err, out)
		}
	})

	// All three replicas are needed: nothing may be evicted.
	c.MustKubectl(t, "", "create", "pdb", "web", "--selector=app=web", "--min-available=3")
	budget := func() (*policyv1.PodDisruptionBudget, error) {
		return c.Client.PolicyV1().PodDisruptionBudgets("default").Get(ctx, "web", metav1.GetOptions{})
	}
	Eventually(t, time.Minute, "the budget's status", func() error {
		pdb, err := budget()
		if err != nil {
			return err
		}
		if s := pdb.Status; s.ObservedGeneration != pdb.Generation || s.ExpectedPods != 3 || s.CurrentHealthy != 3 || s.DesiredHealthy != 3 || s.DisruptionsAllowed != 0 {
			return fmt.Errorf("status %+v at generation %d", s, pdb.Generation)
		}
		return nil
	})
	out := c.MustKubectl(t, "", "get", "pdb", "web")
	if rows := lines(out, "web"); !strings.Contains(out, "MIN AVAILABLE") || !strings.Contains(out, "ALLOWED DISRUPTIONS") ||
		len(rows) != 1 || !strings.HasPrefix(strings.Join(strings.Fields(rows[0]), " "), "web 3 N/A 0 ") {
		t.Fatalf("kubectl get pdb:\n%s", out)
	}

	ready, err := readyWeb()
	if err != nil {
		t.Fatal(err)
	}
	victim := ready[0]
	err = c.Client.PolicyV1().Evictions("default").Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: victim.Name, Namespace: "default"}})
	if !apierrors.IsTooManyRequests(err) || !strings.Contains(err.Error(), "Cannot evict pod as it would violate the pod's disruption budget.") {
		t.Fatalf("eviction against a budget allowing none: %v", err)
	}
	if p, err := c.Client.CoreV1().Pods("default").Get(ctx, victim.Name, metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil {
		t.Fatalf("the refused eviction touched the pod: %v", err)
	}

	// From here on the ready replicas must never drop below three.
	var mu sync.Mutex
	state := map[string]bool{}
	lowest, armed := 3, false // measured once the informer has listed them all
	factory := informers.NewSharedInformerFactoryWithOptions(c.Client, 0, informers.WithNamespace("default"),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "app=web" }))
	track := func(obj any) {
		p, ok := obj.(*v1.Pod)
		if !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		state[p.Name] = healthy(p)
		n := 0
		for _, ok := range state {
			if ok {
				n++
			}
		}
		if armed {
			lowest = min(lowest, n)
		}
	}
	informer := factory.Core().V1().Pods().Informer()
	reg, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    track,
		UpdateFunc: func(_, obj any) { track(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if p, ok := obj.(*v1.Pod); ok {
				mu.Lock()
				delete(state, p.Name)
				mu.Unlock()
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	// The handler, not only the store, must have seen the listed pods.
	toolscache.WaitForCacheSync(stop, reg.HasSynced)
	mu.Lock()
	armed = true
	mu.Unlock()

	node := victim.Spec.NodeName
	out, err = c.Kubectl(t, "", "drain", node, "--ignore-daemonsets", "--timeout=8s")
	if err == nil || !strings.Contains(out, "Cannot evict pod as it would violate the pod's disruption budget.") {
		t.Fatalf("drain against a budget allowing none: err %v, output:\n%s", err, out)
	}
	if p, err := c.Client.CoreV1().Pods("default").Get(ctx, victim.Name, metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil {
		t.Fatalf("the blocked drain removed %s: %v", victim.Name, err)
	}

	// A fourth replica (on another node: this one is cordoned) makes one
	// disruption allowed, and the drain goes through.
	c.MustKubectl(t, "", "scale", "deployment", "web", "--replicas=4")
	out = c.MustKubectl(t, "", "drain", node, "--ignore-daemonsets", "--timeout=90s")
	if !strings.Contains(out, "evicted") || !strings.Contains(out, "drained") {
		t.Fatalf("kubectl drain:\n%s", out)
	}
	Eventually(t, time.Minute, "no web pod left on "+node, func() error {
		pods, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web", FieldSelector: "spec.nodeName=" + node})
		if err == nil && len(pods.Items) > 0 {
			err = fmt.Errorf("%d pods", len(pods.Items))
		}
		return err
	})
	Eventually(t, time.Minute, "four ready replicas elsewhere", func() error {
		ready, err := readyWeb()
		if err == nil && len(ready) != 4 {
			err = fmt.Errorf("%d ready", len(ready))
		}
		for _, p := range ready {
			if p.Spec.NodeName == node {
				return fmt.Errorf("%s is on the drained node", p.Name)
			}
		}
		return err
	})
	mu.Lock()
	defer mu.Unlock()
	if lowest < 3 {
		t.Errorf("the ready replicas dropped to %d during the drain; the budget asks for 3", lowest)
	}
	events, err := c.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + victim.Name})
	if err != nil {
		t.Fatal(err)
	}
	var killing bool
	for _, e := range events.Items {
		killing = killing || e.Reason == "Killing"
	}
	if !killing {
		t.Errorf("the evicted pod %s has no Killing event from its node", victim.Name)
	}
}

// healthy is how the disruption controller counts a pod: Ready and not
// being deleted.
func healthy(p *v1.Pod) bool {
	if p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}
