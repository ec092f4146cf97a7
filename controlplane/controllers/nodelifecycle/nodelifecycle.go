package nodelifecycle

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coordinationinformers "k8s.io/client-go/informers/coordination/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	coordinationlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
)

const (
	// DefaultGracePeriod is Kubernetes' --node-monitor-grace-period.
	DefaultGracePeriod = 40 * time.Second
	// DefaultMonitorPeriod is how often node health and evictions are
	// checked (Kubernetes' --node-monitor-period is 5s).
	DefaultMonitorPeriod = 2 * time.Second
	// leaseNamespace holds the node Leases.
	leaseNamespace = "kube-node-lease"
)

// The taints this controller keeps.
var (
	unreachableNoExecute = v1.Taint{Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoExecute}
	notReadyNoExecute    = v1.Taint{Key: v1.TaintNodeNotReady, Effect: v1.TaintEffectNoExecute}
	unreachableNoSched   = v1.Taint{Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoSchedule}
	notReadyNoSched      = v1.Taint{Key: v1.TaintNodeNotReady, Effect: v1.TaintEffectNoSchedule}
	unschedulableTaint   = v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}
	managedTaints        = []v1.Taint{unreachableNoExecute, notReadyNoExecute, unreachableNoSched, notReadyNoSched, unschedulableTaint}
)

// Config tunes the controller.
type Config struct {
	// GracePeriod is how long a node may go unheard before it is
	// unreachable (DefaultGracePeriod when zero).
	GracePeriod time.Duration
	// MonitorPeriod is how often nodes are checked (DefaultMonitorPeriod
	// when zero).
	MonitorPeriod time.Duration
}

// health is what the controller last heard from one node.
type health struct {
	probe          time.Time
	leaseRenew     time.Time
	readyHeartbeat time.Time
}

// Controller is the node lifecycle controller.
type Controller struct {
	cfg         Config
	log         *slog.Logger
	client      kubernetes.Interface
	recorder    record.EventRecorder
	nodeLister  corelisters.NodeLister
	leaseLister coordinationlisters.LeaseLister
	podLister   corelisters.PodLister
	podIndexer  toolscache.Indexer
	synced      []toolscache.InformerSynced

	mu sync.Mutex // guards healths
	// healths is the last heartbeat seen per node, in local time.
	healths map[string]*health
}

const nodeNameIndex = "spec.nodeName"

// New builds the controller on the given informers. Nothing runs until Run.
func New(cfg Config, log *slog.Logger, client kubernetes.Interface, recorder record.EventRecorder, nodeInformer coreinformers.NodeInformer, leaseInformer coordinationinformers.LeaseInformer, podInformer coreinformers.PodInformer) (*Controller, error) {
	if cfg.GracePeriod <= 0 {
		cfg.GracePeriod = DefaultGracePeriod
	}
	if cfg.MonitorPeriod <= 0 {
		cfg.MonitorPeriod = DefaultMonitorPeriod
	}
	if err := podInformer.Informer().AddIndexers(toolscache.Indexers{nodeNameIndex: func(obj any) ([]string, error) {
		pod, ok := obj.(*v1.Pod)
		if !ok || pod.Spec.NodeName == "" {
			return nil, nil
		}
		return []string{pod.Spec.NodeName}, nil
	}}); err != nil {
		return nil, fmt.Errorf("failed to index pods by node: %w", err)
	}
	return &Controller{
		cfg:         cfg,
		log:         log.With("controller", "nodelifecycle"),
		client:      client,
		recorder:    recorder,
		nodeLister:  nodeInformer.Lister(),
		leaseLister: leaseInformer.Lister(),
		podLister:   podInformer.Lister(),
		podIndexer:  podInformer.Informer().GetIndexer(),
		synced:      []toolscache.InformerSynced{nodeInformer.Informer().HasSynced, leaseInformer.Informer().HasSynced, podInformer.Informer().HasSynced},
		healths:     map[string]*health{},
	}, nil
}

// Run waits for the caches, then checks every node each MonitorPeriod
// until ctx ends.
func (c *Controller) Run(ctx context.Context, _ int) error {
	if !toolscache.WaitForNamedCacheSync("node lifecycle", ctx.Done(), c.synced...) {
		return nil
	}
	c.log.Info("controller started", "gracePeriod", c.cfg.GracePeriod)
	ticker := time.NewTicker(c.cfg.MonitorPeriod)
	defer ticker.Stop()
	for {
		c.monitor(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// monitor runs one pass over the nodes.
func (c *Controller) monitor(ctx context.Context) {
	nodes, err := c.nodeLister.List(labels.Everything())
	if err != nil {
		return
	}
	now := time.Now()
	c.mu.Lock()
	for name := range c.healths {
		if _, err := c.nodeLister.Get(name); apierrors.IsNotFound(err) {
			delete(c.healths, name)
		}
	}
	c.mu.Unlock()
	for _, cached := range nodes {
		node := cached.DeepCopy()
		if err := c.checkHealth(ctx, node, now); err != nil {
			c.log.Info("failed to update node health", "node", node.Name, "err", err)
			continue
		}
		if err := c.syncTaints(ctx, node, now); err != nil {
			c.log.Info("failed to update node taints", "node", node.Name, "err", err)
			continue
		}
		c.evictPods(ctx, node, now)
	}
}

func readyCondition(node *v1.Node) *v1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == v1.NodeReady {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}

// checkHealth notes new heartbeats and, past the grace period, sets the
// node's conditions to Unknown and its pods not ready.
func (c *Controller) checkHealth(ctx context.Context, node *v1.Node, now time.Time) error {
	var renew, heartbeat time.Time
	if lease, err := c.leaseLister.Leases(leaseNamespace).Get(node.Name); err == nil && lease.Spec.RenewTime != nil {
		renew = lease.Spec.RenewTime.Time
	}
	ready := readyCondition(node)
	if ready != nil {
		heartbeat = ready.LastHeartbeatTime.Time
	}
	c.mu.Lock()
	h, ok := c.healths[node.Name]
	if !ok {
		h = &health{probe: now, leaseRenew: renew, readyHeartbeat: heartbeat}
		c.healths[node.Name] = h
	}
	if !renew.Equal(h.leaseRenew) || !heartbeat.Equal(h.readyHeartbeat) {
		h.probe, h.leaseRenew, h.readyHeartbeat = now, renew, heartbeat
	}
	silent := now.Sub(h.probe) > c.cfg.GracePeriod
	c.mu.Unlock()
	if !silent || (ready != nil && ready.Status == v1.ConditionUnknown) {
		return nil
	}

	c.log.Info("node stopped posting status", "node", node.Name, "gracePeriod", c.cfg.GracePeriod)
	transition := metav1.NewTime(now)
	for _, t := range []v1.NodeConditionType{v1.NodeReady, v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure} {
		found := false
		for i := range node.Status.Conditions {
			cond := &node.Status.Conditions[i]
			if cond.Type != t {
				continue
			}
			found = true
			if cond.Status != v1.ConditionUnknown {
				cond.Status, cond.Reason, cond.Message = v1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status."
				cond.LastTransitionTime = transition
			}
		}
		if !found {
			node.Status.Conditions = append(node.Status.Conditions, v1.NodeCondition{
				Type: t, Status: v1.ConditionUnknown, Reason: "NodeStatusNeverUpdated", Message: "Kubelet never posted node status.",
				LastHeartbeatTime: node.CreationTimestamp, LastTransitionTime: transition,
			})
		}
	}
	updated, err := c.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("failed to update status of node %q: %w", node.Name, err)
	}
	*node = *updated
	c.recorder.Eventf(&v1.ObjectReference{Kind: "Node", Name: node.Name, UID: node.UID}, v1.EventTypeNormal, "NodeNotReady", "Node %s status is now: NodeNotReady", node.Name)
	c.markPodsNotReady(ctx, node)
	return nil
}

// markPodsNotReady sets Ready=False on the node's pods, as Kubernetes'
// MarkPodsNotReady does.
func (c *Controller) markPodsNotReady(ctx context.Context, node *v1.Node) {
	objs, err := c.podIndexer.ByIndex(nodeNameIndex, node.Name)
	if err != nil {
		return
	}
	for _, obj := range objs {
		pod := obj.(*v1.Pod).DeepCopy()
		changed := false
		for i := range pod.Status.Conditions {
			cond := &pod.Status.Conditions[i]
			if cond.Type == v1.PodReady && cond.Status == v1.ConditionTrue {
				cond.Status = v1.ConditionFalse
				cond.LastTransitionTime = metav1.Now()
				changed = true
			}
		}
		if !changed {
			continue
		}
		if _, err := c.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			c.log.Debug("failed to mark pod not ready", "pod", pod.Namespace+"/"+pod.Name, "err", err)
			continue
		}
		c.recorder.Event(pod, v1.EventTypeWarning, "NodeNotReady", "Node is not ready")
	}
}

// wantedTaints returns the managed taints the node should carry.
func wantedTaints(node *v1.Node) []v1.Taint {
	var want []v1.Taint
	if ready := readyCondition(node); ready != nil {
		switch ready.Status {
		case v1.ConditionFalse:
			want = append(want, notReadyNoExecute, notReadyNoSched)
		case v1.ConditionUnknown:
			want = append(want, unreachableNoExecute, unreachableNoSched)
		}
	}
	if node.Spec.Unschedulable {
		want = append(want, unschedulableTaint)
	}
	return want
}

func sameTaint(a, b v1.Taint) bool { return a.Key == b.Key && a.Effect == b.Effect }

func isManaged(t v1.Taint) bool {
	for _, m := range managedTaints {
		if sameTaint(t, m) {
			return true
		}
	}
	return false
}

// syncTaints adds and removes the managed taints.
func (c *Controller) syncTaints(ctx context.Context, node *v1.Node, now time.Time) error {
	want := wantedTaints(node)
	var taints []v1.Taint
	changed := false
	for _, t := range node.Spec.Taints {
		keep := !isManaged(t)
		for _, w := range want {
			if sameTaint(t, w) {
				keep = true
			}
		}
		if keep {
			taints = append(taints, t)
		} else {
			changed = true
		}
	}
	for _, w := range want {
		present := false
		for _, t := range taints {
			if sameTaint(t, w) {
				present = true
			}
		}
		if !present {
			if w.Effect == v1.TaintEffectNoExecute {
				added := metav1.NewTime(now)
				w.TimeAdded = &added
			}
			taints = append(taints, w)
			changed = true
		}
	}
	if !changed {
		return nil
	}
	node.Spec.Taints = taints
	updated, err := c.client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("failed to update taints of node %q: %w", node.Name, err)
	}
	*node = *updated
	c.log.Info("node taints updated", "node", node.Name, "taints", len(taints))
	return nil
}

// evictPods deletes the node's pods whose tolerations of its NoExecute
// taints have run out.
func (c *Controller) evictPods(ctx context.Context, node *v1.Node, now time.Time) {
	var noExecute []v1.Taint
	for _, t := range node.Spec.Taints {
		if t.Effect == v1.TaintEffectNoExecute {
			noExecute = append(noExecute, t)
		}
	}
	if len(noExecute) == 0 {
		return
	}
	objs, err := c.podIndexer.ByIndex(nodeNameIndex, node.Name)
	if err != nil {
		return
	}
	for _, obj := range objs {
		pod := obj.(*v1.Pod)
		if pod.DeletionTimestamp != nil {
			continue
		}
		deadline, ok := evictionTime(pod, noExecute)
		if !ok || now.Before(deadline) {
			continue
		}
		c.recorder.Eventf(pod, v1.EventTypeNormal, "TaintManagerEviction", "Marking for deletion Pod %s", pod.Namespace+"/"+pod.Name)
		uid := pod.UID
		err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			c.log.Info("failed to evict pod", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		}
	}
}

// evictionTime returns when pod must leave a node with taints: at once for
// an untolerated taint, else when the shortest tolerationSeconds since the
// taint was added runs out; ok is false when it may stay for ever.
func evictionTime(pod *v1.Pod, taints []v1.Taint) (time.Time, bool) {
	var deadline time.Time
	bounded := false
	for i := range taints {
		taint := &taints[i]
		added := time.Time{}
		if taint.TimeAdded != nil {
			added = taint.TimeAdded.Time
		}
		tolerated := false
		for j := range pod.Spec.Tolerations {
			tol := &pod.Spec.Tolerations[j]
			if !tol.ToleratesTaint(klog.Background(), taint, false) {
				continue
			}
			tolerated = true
			if tol.TolerationSeconds == nil {
				continue
			}
			d := added.Add(time.Duration(max(*tol.TolerationSeconds, 0)) * time.Second)
			if !bounded || d.Before(deadline) {
				deadline, bounded = d, true
			}
		}
		if !tolerated {
			return time.Time{}, true
		}
	}
	return deadline, bounded
}
