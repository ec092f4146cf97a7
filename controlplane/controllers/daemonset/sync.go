package daemonset

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/glassplane/glassplane/controlplane/controllers/internal/controllerutil"
)

// sync makes one DaemonSet run one up-to-date pod on each node that
// should run it, and reports its status.
func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := toolscache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.dsLister.DaemonSets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		c.expectations.Delete(key)
		return nil
	}
	if err != nil {
		return err
	}
	ds := cached.DeepCopy()
	selector, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil || selector.Empty() {
		c.log.Info("daemon set has an invalid selector", "daemonset", key, "err", err)
		return nil
	}
	nodes, err := c.nodeLister.List(labels.Everything())
	if err != nil {
		return err
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	podsByNode, pods, err := c.daemonPods(ctx, ds, selector)
	if err != nil {
		return err
	}
	if ds.DeletionTimestamp != nil {
		return c.updateStatus(ctx, ds, nodes, podsByNode, "")
	}
	cur, old, err := c.constructHistory(ctx, ds)
	if err != nil {
		return err
	}
	hash := cur.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]

	var syncErr error
	if c.expectations.Satisfied(key) {
		syncErr = c.manage(ctx, key, ds, nodes, podsByNode, hash)
		if syncErr == nil && c.expectations.Satisfied(key) && ds.Spec.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType {
			syncErr = c.rollingUpdate(ctx, key, ds, nodes, podsByNode, hash)
		}
		if syncErr == nil {
			syncErr = c.cleanupHistory(ctx, ds, old, pods)
		}
	}
	if err := c.updateStatus(ctx, ds, nodes, podsByNode, hash); err != nil {
		return errors.Join(syncErr, err)
	}
	return syncErr
}

// daemonPods claims the DaemonSet's pods and groups them by the node they
// are for; pods for no node are left out.
func (c *Controller) daemonPods(ctx context.Context, ds *appsv1.DaemonSet, selector labels.Selector) (map[string][]*v1.Pod, []*v1.Pod, error) {
	all, err := c.podLister.Pods(ds.Namespace).List(labels.Everything())
	if err != nil {
		return nil, nil, err
	}
	claimer := &controllerutil.Claimer{
		Controller: ds, ControllerKind: controllerKind, Selector: selector,
		Patch: func(ctx context.Context, ns, name string, pt types.PatchType, data []byte) error {
			_, err := c.client.CoreV1().Pods(ns).Patch(ctx, name, pt, data, metav1.PatchOptions{})
			return err
		},
	}
	pods, err := controllerutil.ClaimAll(ctx, claimer, all)
	if err != nil {
		return nil, nil, err
	}
	byNode := map[string][]*v1.Pod{}
	for _, p := range pods {
		if n := targetNodeName(p); n != "" {
			byNode[n] = append(byNode[n], p)
		}
	}
	for _, list := range byNode {
		sort.SliceStable(list, func(i, j int) bool { return olderPod(list[i], list[j]) })
	}
	return byNode, pods, nil
}

// olderPod orders pods not being deleted first, then running ones, then
// the oldest.
func olderPod(a, b *v1.Pod) bool {
	if (a.DeletionTimestamp == nil) != (b.DeletionTimestamp == nil) {
		return a.DeletionTimestamp == nil
	}
	if (a.Status.Phase == v1.PodRunning) != (b.Status.Phase == v1.PodRunning) {
		return a.Status.Phase == v1.PodRunning
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// manage creates a pod on each node that should run one and has none,
// and deletes pods from nodes that should not run them, finished pods,
// and all but the oldest pod where a node has several; pods for nodes
// that no longer exist go too.
func (c *Controller) manage(ctx context.Context, key string, ds *appsv1.DaemonSet, nodes []*v1.Node, podsByNode map[string][]*v1.Pod, hash string) error {
	var create []string
	var remove []*v1.Pod
	known := map[string]bool{}
	for _, node := range nodes {
		known[node.Name] = true
		shouldRun, shouldContinue := nodeShouldRunDaemonPod(ctx, node, ds)
		pods := podsByNode[node.Name]
		switch {
		case shouldRun && len(pods) == 0:
			create = append(create, node.Name)
		case shouldContinue:
			var running []*v1.Pod
			for _, p := range pods {
				switch {
				case p.DeletionTimestamp != nil:
				case p.Status.Phase == v1.PodFailed || p.Status.Phase == v1.PodSucceeded:
					remove = append(remove, p)
				default:
					running = append(running, p)
				}
			}
			remove = append(remove, duplicates(running, hash, allowsSurge(ds))...)
		default:
			for _, p := range pods {
				if p.DeletionTimestamp == nil {
					remove = append(remove, p)
				}
			}
		}
	}
	for node, pods := range podsByNode {
		if known[node] {
			continue
		}
		for _, p := range pods {
			if p.DeletionTimestamp == nil {
				remove = append(remove, p)
			}
		}
	}
	return c.syncNodes(ctx, key, ds, remove, create, hash)
}

// allowsSurge reports whether a rolling update may run a new pod beside
// the old one on a node (Kubernetes' AllowsSurge).
func allowsSurge(ds *appsv1.DaemonSet) bool {
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType {
		return false
	}
	maxSurge, _, err := updateBudget(ds, 1)
	return err == nil && maxSurge > 0
}

// duplicates returns the running pods of one node beyond the first (they
// come oldest first); with surge, the oldest pod of the current revision
// and the oldest older one may both stay.
func duplicates(running []*v1.Pod, hash string, surge bool) []*v1.Pod {
	if len(running) <= 1 {
		return nil
	}
	if !surge {
		return running[1:]
	}
	var extra []*v1.Pod
	var haveNew, haveOld bool
	for _, p := range running {
		updated := isPodUpdated(p, hash)
		switch {
		case updated && !haveNew:
			haveNew = true
		case !updated && !haveOld:
			haveOld = true
		default:
			extra = append(extra, p)
		}
	}
	return extra
}

// rollingUpdate replaces old pods, never leaving more than maxUnavailable
// of the nodes that should run a pod without an available one (Kubernetes'
// rollingUpdate; with maxSurge, rollingUpdateSurge): old pods that are not available go at
// once, available ones only within the budget. The next sync creates
// their replacements.
func (c *Controller) rollingUpdate(ctx context.Context, key string, ds *appsv1.DaemonSet, nodes []*v1.Node, podsByNode map[string][]*v1.Pod, hash string) error {
	var desired int
	for _, node := range nodes {
		if shouldRun, _ := nodeShouldRunDaemonPod(ctx, node, ds); shouldRun {
			desired++
		}
	}
	maxSurge, maxUnavailable, err := updateBudget(ds, desired)
	if err != nil {
		return err
	}
	if maxSurge > 0 {
		return c.rollingUpdateSurge(ctx, key, ds, nodes, podsByNode, hash, maxSurge)
	}
	now := c.now()
	unavailable := 0
	var replaceNow, candidates []*v1.Pod
	for _, node := range nodes {
		if shouldRun, _ := nodeShouldRunDaemonPod(ctx, node, ds); !shouldRun {
			continue
		}
		newPod, oldPod, ok := updatedPodsOnNode(podsByNode[node.Name], hash)
		switch {
		case !ok, newPod == nil && oldPod == nil, newPod != nil && oldPod != nil:
			unavailable++
		case newPod != nil:
			if !controllerutil.IsPodAvailable(newPod, ds.Spec.MinReadySeconds, now) {
				unavailable++
			}
		default:
			if !controllerutil.IsPodAvailable(oldPod, ds.Spec.MinReadySeconds, now) {
				replaceNow = append(replaceNow, oldPod)
			} else {
				candidates = append(candidates, oldPod)
			}
		}
	}
	budget := min(max(maxUnavailable-unavailable-len(replaceNow), 0), len(candidates))
	remove := append(replaceNow, candidates[:budget]...)
	if len(remove) == 0 {
		return nil
	}
	c.log.Debug("rolling update", "daemonset", key, "deleting", len(remove), "unavailable", unavailable, "maxUnavailable", maxUnavailable)
	return c.syncNodes(ctx, key, ds, remove, nil, hash)
}

// updateBudget resolves maxSurge and maxUnavailable against the desired
// number of nodes (percentages round up); when both are 0, one node may be
// unavailable, as Kubernetes falls back to.
func updateBudget(ds *appsv1.DaemonSet, desired int) (maxSurge, maxUnavailable int, err error) {
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ru == nil {
		return 0, 1, nil
	}
	if ru.MaxSurge != nil {
		if maxSurge, err = intstr.GetScaledValueFromIntOrPercent(ru.MaxSurge, desired, true); err != nil {
			return 0, 0, fmt.Errorf("invalid maxSurge of daemon set %q: %w", ds.Name, err)
		}
	}
	if ru.MaxUnavailable != nil {
		if maxUnavailable, err = intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, desired, true); err != nil {
			return 0, 0, fmt.Errorf("invalid maxUnavailable of daemon set %q: %w", ds.Name, err)
		}
	}
	if maxSurge == 0 && maxUnavailable == 0 {
		maxUnavailable = 1
	}
	return maxSurge, maxUnavailable, nil
}

// rollingUpdateSurge is Kubernetes' surging rolling update: a new pod
// starts beside the old one on up to maxSurge nodes at a time (at once
// where the old pod is not available), and the old pod goes once the new
// one is available.
func (c *Controller) rollingUpdateSurge(ctx context.Context, key string, ds *appsv1.DaemonSet, nodes []*v1.Node, podsByNode map[string][]*v1.Pod, hash string, maxSurge int) error {
	now := c.now()
	available := func(p *v1.Pod) bool { return controllerutil.IsPodAvailable(p, ds.Spec.MinReadySeconds, now) }
	surging := 0
	var remove []*v1.Pod
	var allowed, candidates []string
	for _, node := range nodes {
		if shouldRun, _ := nodeShouldRunDaemonPod(ctx, node, ds); !shouldRun {
			continue
		}
		newPod, oldPod, ok := updatedPodsOnNode(podsByNode[node.Name], hash)
		switch {
		case !ok:
			surging++
		case oldPod == nil:
		case newPod == nil:
			switch {
			case !available(oldPod):
				allowed = append(allowed, node.Name)
			case surging < maxSurge:
				candidates = append(candidates, node.Name)
			}
		case !available(newPod):
			surging++
		default:
			remove = append(remove, oldPod)
		}
	}
	budget := min(max(maxSurge-surging, 0), len(candidates))
	create := append(allowed, candidates[:budget]...)
	if len(create) == 0 && len(remove) == 0 {
		return nil
	}
	c.log.Debug("rolling update with surge", "daemonset", key, "creating", len(create), "deleting", len(remove))
	return c.syncNodes(ctx, key, ds, remove, create, hash)
}

// updatedPodsOnNode returns a node's live pod of the current revision and
// its live pod of an older one; ok is false when it has several of either.
func updatedPodsOnNode(pods []*v1.Pod, hash string) (newPod, oldPod *v1.Pod, ok bool) {
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		if isPodUpdated(p, hash) {
			if newPod != nil {
				return nil, nil, false
			}
			newPod = p
		} else {
			if oldPod != nil {
				return nil, nil, false
			}
			oldPod = p
		}
	}
	return newPod, oldPod, true
}

// syncNodes deletes pods and creates one pod for each named node, with
// expectations so a slow watch does not repeat them.
func (c *Controller) syncNodes(ctx context.Context, key string, ds *appsv1.DaemonSet, remove []*v1.Pod, create []string, hash string) error {
	create = create[:min(len(create), BurstReplicas)]
	remove = remove[:min(len(remove), BurstReplicas)]
	if len(create) == 0 && len(remove) == 0 {
		return nil
	}
	c.expectations.Expect(key, len(create), len(remove))
	var errs []error
	var mu sync.Mutex
	next := 0
	created, err := controllerutil.SlowStartBatch(len(create), controllerutil.SlowStartInitialBatchSize, func() error {
		mu.Lock()
		node := create[next]
		next++
		mu.Unlock()
		return c.createPod(ctx, ds, hash, node)
	})
	if skipped := len(create) - created; skipped > 0 {
		c.expectations.LowerExpectations(key, skipped, 0)
	}
	if err != nil {
		errs = append(errs, err)
	}
	var wg sync.WaitGroup
	for _, p := range remove {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.deletePodFor(ctx, ds, p); err != nil {
				c.expectations.DeletionObserved(key)
				if !apierrors.IsNotFound(err) {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (c *Controller) createPod(ctx context.Context, ds *appsv1.DaemonSet, hash, nodeName string) error {
	pod := newDaemonPod(ds, hash, nodeName)
	created, err := c.client.CoreV1().Pods(ds.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		if !apierrors.HasStatusCause(err, v1.NamespaceTerminatingCause) {
			c.recorder.Eventf(ds, v1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
		}
		return err
	}
	c.recorder.Eventf(ds, v1.EventTypeNormal, "SuccessfulCreate", "Created pod: %v", created.Name)
	return nil
}

func (c *Controller) deletePodFor(ctx context.Context, ds *appsv1.DaemonSet, pod *v1.Pod) error {
	err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{})
	if err != nil {
		if !apierrors.IsNotFound(err) {
			c.recorder.Eventf(ds, v1.EventTypeWarning, "FailedDelete", "Error deleting: %v", err)
		}
		return err
	}
	c.recorder.Eventf(ds, v1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %v", pod.Name)
	return nil
}

// updateStatus counts, over the nodes that should run the DaemonSet, those
// with a pod (current), a ready pod, an available one and an up-to-date
// one, and the nodes running a pod they should not (misscheduled); it
// writes them with the observed generation unless nothing changed.
func (c *Controller) updateStatus(ctx context.Context, ds *appsv1.DaemonSet, nodes []*v1.Node, podsByNode map[string][]*v1.Pod, hash string) error {
	now := c.now()
	st := *ds.Status.DeepCopy()
	var desired, current, misscheduled, ready, available, updated int32
	for _, node := range nodes {
		shouldRun, _ := nodeShouldRunDaemonPod(ctx, node, ds)
		pods := podsByNode[node.Name]
		if !shouldRun {
			if len(pods) > 0 {
				misscheduled++
			}
			continue
		}
		desired++
		if len(pods) == 0 {
			continue
		}
		current++
		pod := pods[0]
		if controllerutil.IsPodReady(pod) {
			ready++
			if controllerutil.IsPodAvailable(pod, ds.Spec.MinReadySeconds, now) {
				available++
			}
		}
		if isPodUpdated(pod, hash) {
			updated++
		}
	}
	st.DesiredNumberScheduled, st.CurrentNumberScheduled, st.NumberMisscheduled = desired, current, misscheduled
	st.NumberReady, st.NumberAvailable, st.UpdatedNumberScheduled = ready, available, updated
	st.NumberUnavailable = desired - available
	st.ObservedGeneration = ds.Generation
	if equality.Semantic.DeepEqual(ds.Status, st) {
		return nil
	}
	client := c.client.AppsV1().DaemonSets(ds.Namespace)
	next := ds.DeepCopy()
	next.Status = st
	_, err := client.UpdateStatus(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("failed to update status of daemon set %q: %w", ds.Namespace+"/"+ds.Name, err)
	}
	if ds.Spec.MinReadySeconds > 0 && ready != available {
		key, _ := controllerutil.KeyFunc(ds)
		c.queue.AddAfter(key, time.Duration(ds.Spec.MinReadySeconds)*time.Second)
	}
	return nil
}
