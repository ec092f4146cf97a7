package node

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/glassplane/glassplane/controlplane/node/runtime"
)

// minimumGraceAfterHook is the least time a container gets between SIGTERM
// and SIGKILL once its preStop hook used up the grace period, as kubelet's
// minimumGracePeriodInSeconds.
const minimumGraceAfterHook = 2 * time.Second

// podGrace is the pod's grace period: the deletion's, else the spec's,
// else Kubernetes' default of 30 seconds.
func podGrace(pod *corev1.Pod) time.Duration {
	switch {
	case pod.DeletionGracePeriodSeconds != nil:
		return time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		return time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	default:
		return DefaultTerminationGrace
	}
}

// runHook runs a lifecycle hook (exec in the container, HTTP GET or TCP
// connect to the pod, or sleep) until it ends or ctx does.
func (a *Agent) runHook(ctx context.Context, t probeTarget, h *corev1.LifecycleHandler) error {
	if h.Sleep != nil {
		timer := time.NewTimer(time.Duration(h.Sleep.Seconds) * time.Second)
		defer timer.Stop()
		select {
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if a.cfg.Simulated {
		return nil
	}
	_, err := a.runHandler(ctx, t, corev1.ProbeHandler{Exec: h.Exec, HTTPGet: h.HTTPGet, TCPSocket: h.TCPSocket}, 0)
	return err
}

// killContainer stops one running container as kubelet does: its preStop
// hook first, within the grace period, then SIGTERM, the rest of the grace
// period (at least two seconds after a hook), and SIGKILL.
func (a *Agent) killContainer(ctx context.Context, w *podWorker, pod *corev1.Pod, c corev1.Container, id string, grace time.Duration) {
	a.killContainerAt(ctx, a.podIP(w, pod), pod, c, id, grace, nil)
}

// killContainerAt is killContainer at a known pod IP. With an order (the
// whole pod stopping), the container stops only when its turn comes, after
// its hook, and notes then that it has stopped.
func (a *Agent) killContainerAt(ctx context.Context, podIP string, pod *corev1.Pod, c corev1.Container, id string, grace time.Duration, order *terminationOrder) {
	defer order.stopped(c.Name)
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && grace > 0 {
		start := time.Now()
		hctx, cancel := context.WithTimeout(ctx, grace)
		err := a.runHook(hctx, probeTarget{pod: pod, container: c, containerID: id, podIP: podIP}, c.Lifecycle.PreStop)
		cancel()
		if err != nil && ctx.Err() == nil {
			a.log.Info("preStop hook failed", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "err", err)
			// Like kubelet, the event leaves the hook's output out: it may hold secrets.
			a.recorder.Event(containerRef(pod, c.Name), corev1.EventTypeWarning, "FailedPreStopHook", "PreStopHook failed")
		}
		grace = max(grace-time.Since(start), minimumGraceAfterHook)
	}
	if waited := order.waitForTurn(ctx, c.Name, grace); waited > 0 {
		grace = max(grace-waited, minimumGraceAfterHook)
	}
	if err := a.cfg.Runtime.StopContainer(ctx, id, grace); err != nil && !errors.Is(err, runtime.ErrNotFound) && ctx.Err() == nil {
		a.log.Warn("failed to stop container", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "err", err)
	}
}

// postStart runs the container's postStart hook right after it started;
// when the hook fails the container is killed, as kubelet does, and its
// restartPolicy decides what follows.
func (a *Agent) postStart(ctx context.Context, w *podWorker, pod *corev1.Pod, c corev1.Container, id string) {
	if c.Lifecycle == nil || c.Lifecycle.PostStart == nil {
		return
	}
	grace := podGrace(pod)
	hctx, cancel := context.WithTimeout(ctx, max(grace, DefaultTerminationGrace))
	err := a.runHook(hctx, probeTarget{pod: pod, container: c, containerID: id, podIP: a.podIP(w, pod)}, c.Lifecycle.PostStart)
	cancel()
	if err == nil || ctx.Err() != nil {
		return
	}
	a.log.Info("postStart hook failed", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "err", err)
	ref := containerRef(pod, c.Name)
	a.recorder.Event(ref, corev1.EventTypeWarning, "FailedPostStartHook", "PostStartHook failed")
	a.recorder.Eventf(ref, corev1.EventTypeNormal, "Killing", "FailedPostStartHook")
	if err := a.cfg.Runtime.StopContainer(ctx, id, grace); err != nil && ctx.Err() == nil {
		a.log.Warn("failed to stop container", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "err", err)
	}
}

// stopContainers stops the pod's running containers as kubelet does: a
// Killing event each and every preStop hook at once, then the app
// containers, then the sidecars, the last declared first (see
// terminationOrder), within the pod's grace period.
func (a *Agent) stopContainers(ctx context.Context, w *podWorker, pod *corev1.Pod, byName map[string][]runtime.ContainerStatus) {
	grace, podIP := podGrace(pod), a.podIP(w, pod)
	running := map[string]string{} // container name → running instance
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		if insts := byName[c.Name]; len(insts) > 0 && insts[len(insts)-1].State == runtime.StateRunning {
			running[c.Name] = insts[len(insts)-1].ID
		}
	}
	order := newTerminationOrder(pod, running)
	var wg sync.WaitGroup
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		id, ok := running[c.Name]
		if !ok {
			continue
		}
		a.recorder.Eventf(containerRef(pod, c.Name), corev1.EventTypeNormal, "Killing", "Stopping container %s", c.Name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.killContainerAt(ctx, podIP, pod, c, id, grace, order)
		}()
	}
	wg.Wait()
}

// terminationOrder is kubelet's order of a pod's containers stopping
// (its terminationOrdering): the sidecars (init containers with
// restartPolicy Always) wait for every app container, and each sidecar
// for the sidecars declared after it, so an app's preStop hook and its
// last requests still reach the sidecars it talks through.
type terminationOrder struct {
	prereqs map[string][]chan struct{} // what a container waits for
	stop    map[string]func()          // closes the container's channel, once
}

// newTerminationOrder is the order for the pod's running containers
// (name → instance); a container that is not running is stopped already.
func newTerminationOrder(pod *corev1.Pod, running map[string]string) *terminationOrder {
	o := &terminationOrder{prereqs: map[string][]chan struct{}{}, stop: map[string]func(){}}
	add := func(name string) chan struct{} {
		ch := make(chan struct{})
		o.stop[name] = sync.OnceFunc(func() { close(ch) })
		if _, ok := running[name]; !ok {
			o.stopped(name)
		}
		return ch
	}
	var apps []chan struct{}
	for _, c := range pod.Spec.Containers {
		apps = append(apps, add(c.Name))
	}
	var later chan struct{} // the sidecar declared after this one
	for i := len(pod.Spec.InitContainers) - 1; i >= 0; i-- {
		c := pod.Spec.InitContainers[i]
		ch := add(c.Name)
		if !isSidecar(c) {
			continue
		}
		o.prereqs[c.Name] = slices.Clone(apps)
		if later != nil {
			o.prereqs[c.Name] = append(o.prereqs[c.Name], later)
		}
		later = ch
	}
	return o
}

// waitForTurn waits until the containers name waits for have stopped, at
// most grace (then it stops anyway, as kubelet's), and says how long it
// waited.
func (o *terminationOrder) waitForTurn(ctx context.Context, name string, grace time.Duration) time.Duration {
	if o == nil || len(o.prereqs[name]) == 0 || grace <= 0 {
		return 0
	}
	start := time.Now()
	timer := time.NewTimer(grace)
	defer timer.Stop()
	for _, ch := range o.prereqs[name] {
		select {
		case <-ch:
		case <-timer.C:
			return time.Since(start)
		case <-ctx.Done():
			return time.Since(start)
		}
	}
	return time.Since(start)
}

// stopped notes that the container has stopped.
func (o *terminationOrder) stopped(name string) {
	if o == nil {
		return
	}
	if stop := o.stop[name]; stop != nil {
		stop()
	}
}

// terminatePod stops the pod's running containers in parallel, each with
// its preStop hook and the pod's grace period, removes them and deletes
// the pod object with grace 0, as kubelet's status manager does once a
// terminating pod's containers are gone.
func (a *Agent) terminatePod(ctx context.Context, w *podWorker, pod *corev1.Pod) {
	if w.deleteSent {
		return
	}
	byName, err := a.containersByName(ctx, w.uid)
	if err != nil {
		a.log.Warn("failed to list containers", "pod", w.namespace+"/"+w.name, "err", err)
		return
	}
	a.log.Debug("stopping pod", "pod", w.namespace+"/"+w.name, "grace", podGrace(pod))
	a.stopContainers(ctx, w, pod, byName)
	if ctx.Err() != nil {
		return
	}
	// Whatever is left (a container created meanwhile) stops at once.
	if err := a.cfg.Runtime.StopPod(ctx, string(w.uid), 0); err != nil {
		if ctx.Err() != nil {
			return
		}
		a.log.Warn("failed to stop pod", "pod", w.namespace+"/"+w.name, "err", err)
	}
	if byName, err = a.containersByName(ctx, w.uid); err == nil {
		a.postStatus(ctx, w, pod, byName, true, true)
	}
	if err := a.cfg.Runtime.RemovePod(ctx, string(w.uid)); err != nil {
		if ctx.Err() == nil {
			a.log.Warn("failed to remove pod containers", "pod", w.namespace+"/"+w.name, "err", err)
		}
		return
	}
	uid := w.uid
	err = a.client.CoreV1().Pods(w.namespace).Delete(ctx, w.name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      &metav1.Preconditions{UID: &uid},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		if ctx.Err() == nil {
			a.log.Warn("failed to delete pod", "pod", w.namespace+"/"+w.name, "err", err)
		}
		return
	}
	w.deleteSent = true
	a.log.Debug("pod terminated", "pod", w.namespace+"/"+w.name)
}
