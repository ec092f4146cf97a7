package demo

import (
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

var (
	podsResource        = corev1.SchemeGroupVersion.WithResource("pods")
	nodesResource       = corev1.SchemeGroupVersion.WithResource("nodes")
	servicesResource    = corev1.SchemeGroupVersion.WithResource("services")
	eventsResource      = corev1.SchemeGroupVersion.WithResource("events")
	leasesResource      = coordinationv1.SchemeGroupVersion.WithResource("leases")
	replicaSetsResource = appsv1.SchemeGroupVersion.WithResource("replicasets")
	deploymentsResource = appsv1.SchemeGroupVersion.WithResource("deployments")
	classesResource     = schedulingv1.SchemeGroupVersion.WithResource("priorityclasses")
	bindingsResource    = rbacv1.SchemeGroupVersion.WithResource("rolebindings")
)

// simNode is the fake cluster's one node with an agent.
const simNode = "sim-1"

// fakeCluster is a fake API (apiLikeClient) that plays, at once and in
// the small, what the demos wait for: the scheduler (CPU, taints, node
// selectors, preferred node affinity, preemption), the node agents (a pod
// runs, or crash-loops when its command exits 1; a node of a demo has no
// agent), the deployment controller (a ReplicaSet and the pods, rolled
// out; deleted with the Deployment), the EndpointSlice controller (a
// Service's running pods, listed), the node lifecycle controller (a
// demo node whose Lease is not renewed goes Unknown, is tainted and its
// pods evicted and replaced) and RBAC for DemoUser (through actAs).
type fakeCluster struct {
	*fake.Clientset
	tracker clienttesting.ObjectTracker
}

func newFakeCluster() *fakeCluster {
	ready := []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	c := &fakeCluster{Clientset: apiLikeClient(&corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: simNode, Labels: map[string]string{corev1.LabelHostname: simNode}},
		Status:     corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}, Conditions: ready},
	})}
	c.tracker = c.Tracker()
	c.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		c.schedule(a.(clienttesting.CreateAction).GetObject().(*corev1.Pod))
		return false, nil, nil
	})
	c.PrependReactor("create", "deployments", func(a clienttesting.Action) (bool, runtime.Object, error) {
		c.rollOut(a.GetNamespace(), a.(clienttesting.CreateAction).GetObject().(*appsv1.Deployment))
		return false, nil, nil
	})
	c.PrependReactor("delete", "deployments", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if obj, err := c.tracker.Get(deploymentsResource, a.GetNamespace(), a.(clienttesting.DeleteAction).GetName()); err == nil {
			for _, p := range c.pods(func(p *corev1.Pod) bool { return p.Labels["app"] == obj.(*appsv1.Deployment).Name }) {
				_ = c.tracker.Delete(podsResource, p.Namespace, p.Name)
			}
		}
		return false, nil, nil
	})
	c.PrependReactor("create", "services", func(a clienttesting.Action) (bool, runtime.Object, error) {
		a.(clienttesting.CreateAction).GetObject().(*corev1.Service).Spec.ClusterIP = "10.96.0.20"
		return false, nil, nil
	})
	c.PrependReactor("list", "endpointslices", func(a clienttesting.Action) (bool, runtime.Object, error) {
		return true, c.endpointSlices(a.GetNamespace()), nil
	})
	c.PrependReactor("get", "nodes", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if n := c.silenced(a.(clienttesting.GetAction).GetName()); n != nil {
			return true, n, nil
		}
		return false, nil, nil
	})
	c.playStatefulSets()
	c.playCronJobs()
	c.playAutoscaling()
	return c
}

// actAs is the client of user, whom RBAC lets create pods in a namespace
// once a RoleBinding there names them.
func (c *fakeCluster) actAs(user string) (kubernetes.Interface, error) {
	as := fake.NewClientset()
	as.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		p := a.(clienttesting.CreateAction).GetObject().(*corev1.Pod)
		bindings, err := c.tracker.List(bindingsResource, rbacv1.SchemeGroupVersion.WithKind("RoleBinding"), a.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		allowed := slices.ContainsFunc(bindings.(*rbacv1.RoleBindingList).Items, func(rb rbacv1.RoleBinding) bool {
			return slices.ContainsFunc(rb.Subjects, func(s rbacv1.Subject) bool { return s.Kind == rbacv1.UserKind && s.Name == user })
		})
		if !allowed {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "",
				fmt.Errorf("User %q cannot create resource \"pods\" in API group \"\" in the namespace %q", user, a.GetNamespace()))
		}
		p.UID = uuid.NewUUID()
		c.schedule(p)
		return true, p, c.tracker.Create(podsResource, p, a.GetNamespace())
	})
	return as, nil
}

// endpointSlices plays the EndpointSlice controller: one slice per
// Service in ns with a selector, listing the running pods it selects
// (ready unless being deleted).
func (c *fakeCluster) endpointSlices(ns string) *discoveryv1.EndpointSliceList {
	out := &discoveryv1.EndpointSliceList{}
	list, err := c.tracker.List(servicesResource, corev1.SchemeGroupVersion.WithKind("Service"), ns)
	if err != nil {
		return out
	}
	for _, svc := range list.(*corev1.ServiceList).Items {
		if len(svc.Spec.Selector) == 0 {
			continue
		}
		sl := discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: svc.Name + "-abcde", Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: svc.Name}},
			AddressType: discoveryv1.AddressTypeIPv4,
		}
		for _, p := range c.pods(func(p *corev1.Pod) bool {
			return p.Namespace == ns && p.Status.Phase == corev1.PodRunning && labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(p.Labels))
		}) {
			ready := p.DeletionTimestamp == nil
			sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{
				Addresses: []string{p.Status.PodIP}, NodeName: ptr.To(p.Spec.NodeName),
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready), Serving: ptr.To(ready), Terminating: ptr.To(!ready)},
				TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: p.Name, UID: p.UID},
			})
		}
		out.Items = append(out.Items, sl)
	}
	return out
}

// pods lists the pods that match.
func (c *fakeCluster) pods(match func(*corev1.Pod) bool) []*corev1.Pod {
	list, err := c.tracker.List(podsResource, corev1.SchemeGroupVersion.WithKind("Pod"), metav1.NamespaceAll)
	if err != nil {
		return nil
	}
	var out []*corev1.Pod
	for i := range list.(*corev1.PodList).Items {
		if p := &list.(*corev1.PodList).Items[i]; match(p) {
			out = append(out, p)
		}
	}
	return out
}

func (c *fakeCluster) nodes() []corev1.Node {
	list, err := c.tracker.List(nodesResource, corev1.SchemeGroupVersion.WithKind("Node"), "")
	if err != nil {
		return nil
	}
	return list.(*corev1.NodeList).Items
}

func (c *fakeCluster) event(p *corev1.Pod, reason, message string) {
	_ = c.tracker.Create(eventsResource, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: p.Name + "." + string(uuid.NewUUID()), Namespace: p.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name},
		Reason:         reason, Message: message,
	}, p.Namespace)
}

// schedule places p, about to be created, and runs it; it preempts pods
// of lower priority when p has a PriorityClass and fits nowhere.
func (c *fakeCluster) schedule(p *corev1.Pod) {
	if p.UID == "" {
		p.UID = uuid.NewUUID()
	}
	if obj, err := c.tracker.Get(classesResource, "", p.Spec.PriorityClassName); err == nil {
		p.Spec.Priority = ptr.To(obj.(*schedulingv1.PriorityClass).Value)
	}
	nodes := c.nodes()
	slices.SortFunc(nodes, func(a, b corev1.Node) int { return preferred(p, b.Name) - preferred(p, a.Name) })
	for _, n := range nodes {
		if !fits(p, &n) {
			continue
		}
		free := n.Status.Allocatable.Cpu().DeepCopy()
		others := c.pods(func(o *corev1.Pod) bool { return o.Spec.NodeName == n.Name && o.DeletionTimestamp == nil })
		for _, o := range others {
			free.Sub(podCPURequest(o))
		}
		if need := podCPURequest(p); need.Cmp(free) > 0 {
			if p.Spec.Priority == nil {
				continue
			}
			for _, o := range others {
				if ptr.Deref(o.Spec.Priority, 0) < *p.Spec.Priority {
					c.event(o, "Preempted", fmt.Sprintf("Preempted by pod %s on node %s", p.UID, n.Name))
					_ = c.tracker.Delete(podsResource, o.Namespace, o.Name)
				}
			}
			p.Status.NominatedNodeName = n.Name
		}
		p.Spec.NodeName = n.Name
		if n.Labels[demoLabel] == "" {
			run(p)
		}
		return
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: fmt.Sprintf("0/%d nodes are available: %d Insufficient cpu, or untolerated taint.", len(nodes), len(nodes))}}
	p.Status.Phase = corev1.PodPending
}

// preferred is the weight of p's preferred node affinity for node.
func preferred(p *corev1.Pod, node string) int {
	if p.Spec.Affinity == nil || p.Spec.Affinity.NodeAffinity == nil {
		return 0
	}
	w := 0
	for _, t := range p.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
		for _, e := range t.Preference.MatchExpressions {
			if e.Key == corev1.LabelHostname && slices.Contains(e.Values, node) {
				w += int(t.Weight)
			}
		}
	}
	return w
}

// fits says whether n is Ready, is the node p selects and has no taint p
// does not tolerate.
func fits(p *corev1.Pod, n *corev1.Node) bool {
	if !slices.ContainsFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool {
		return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
	}) {
		return false
	}
	if host, ok := p.Spec.NodeSelector[corev1.LabelHostname]; ok && host != n.Name {
		return false
	}
	for _, taint := range n.Spec.Taints {
		if !slices.ContainsFunc(p.Spec.Tolerations, func(t corev1.Toleration) bool {
			return t.Key == taint.Key && (t.Operator == corev1.TolerationOpExists || t.Value == taint.Value) && (t.Effect == "" || t.Effect == taint.Effect)
		}) {
			return false
		}
	}
	return true
}

// run is a node agent starting p: it runs, or crash-loops when its
// command exits 1.
func run(p *corev1.Pod) {
	p.Status.Phase, p.Status.PodIP = corev1.PodRunning, "10.0.0.7"
	c := p.Spec.Containers[0]
	if !slices.Contains(c.Command, "echo starting; exit 1") {
		return
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name: c.Name, RestartCount: 1,
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}},
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
			Message: fmt.Sprintf("back-off 10s restarting failed container=%s pod=%s_%s(%s)", c.Name, p.Name, p.Namespace, p.UID)}},
	}}
}

// rollOut plays the deployment controller for d, about to be created:
// one ReplicaSet, its pods scheduled, and d rolled out.
func (c *fakeCluster) rollOut(ns string, d *appsv1.Deployment) {
	n := ptr.Deref(d.Spec.Replicas, 1)
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n}
	labels := d.Spec.Template.Labels
	_ = c.tracker.Create(replicaSetsResource, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: d.Name + "-6d8f9c7b5", Namespace: ns, Labels: labels},
		Spec:       appsv1.ReplicaSetSpec{Replicas: ptr.To(n)},
		Status:     appsv1.ReplicaSetStatus{Replicas: n, ReadyReplicas: n},
	}, ns)
	for i := range n {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-6d8f9c7b5-%d", d.Name, i), Namespace: ns, Labels: labels}, Spec: *d.Spec.Template.Spec.DeepCopy()}
		c.schedule(p)
		_ = c.tracker.Create(podsResource, p, ns)
	}
}

// silenced is the node lifecycle controller's view of the demo node name
// whose Lease has not been renewed for more than a heartbeat: Ready
// Unknown, tainted unreachable, its pods evicted and replaced on other
// nodes. It is nil for any other node, and once it is done.
func (c *fakeCluster) silenced(name string) *corev1.Node {
	obj, err := c.tracker.Get(nodesResource, "", name)
	if err != nil {
		return nil
	}
	n := obj.(*corev1.Node)
	lease, err := c.tracker.Get(leasesResource, leaseNamespace, name)
	if n.Labels[demoLabel] == "" || err != nil || time.Since(lease.(*coordinationv1.Lease).Spec.RenewTime.Time) < heartbeatEvery+time.Second ||
		slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeUnreachable }) {
		return nil
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown", Message: "Kubelet stopped posting node status."}}
	n.Spec.Taints = append(n.Spec.Taints,
		corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule},
		corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute})
	if err := c.tracker.Update(nodesResource, n, ""); err != nil {
		return nil
	}
	for _, p := range c.pods(func(p *corev1.Pod) bool { return p.Spec.NodeName == name }) {
		p.DeletionTimestamp = ptr.To(metav1.Now())
		if err := c.tracker.Update(podsResource, p, p.Namespace); err != nil {
			continue
		}
		c.event(p, "TaintManagerEviction", "Marking for deletion Pod "+p.Namespace+"/"+p.Name)
		r := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name + "-r", Namespace: p.Namespace, Labels: p.Labels}, Spec: *p.Spec.DeepCopy()}
		r.Spec.NodeName = ""
		c.schedule(r)
		_ = c.tracker.Create(podsResource, r, r.Namespace)
	}
	return n
}
