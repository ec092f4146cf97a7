package node

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/glassplane/glassplane/controlplane/node/runtime"
)

// podIP is the pod's IP: the one its runtime gave it, a made-up one on
// simulated nodes, or the node's for pods sharing the node's network
// (hostNetwork, or no pod network on the node). Before the runtime
// prepared the pod it has none.
func (a *Agent) podIP(w *podWorker, pod *corev1.Pod) string {
	switch {
	case pod.Spec.HostNetwork:
		return a.nodeIP
	case a.podIPs != nil:
		return a.podIPs.get(string(pod.UID))
	case w.podIP != "":
		return w.podIP
	case w.sandboxReady:
		return a.nodeIP
	default:
		return ""
	}
}

// postStatus computes the pod's status from its containers and writes it
// with UpdateStatus if it changed.
func (a *Agent) postStatus(ctx context.Context, w *podWorker, pod *corev1.Pod, byName map[string][]runtime.ContainerStatus, sandboxReady, terminating bool) {
	status := a.podStatus(w, pod, byName, sandboxReady, terminating)
	if w.lastStatus != nil && equality.Semantic.DeepEqual(*w.lastStatus, *status) {
		return
	}
	if equality.Semantic.DeepEqual(pod.Status, *status) {
		w.lastStatus = status
		return
	}
	// Like kubelet's status manager, patch the status instead of updating
	// the object: a patch needs no resourceVersion, so the agent's own
	// earlier writes (not yet in its informer) do not make it conflict.
	// A strategic merge patch merges conditions by type, so a condition
	// another component added since the agent's copy (DisruptionTarget,
	// set by an eviction) stays. metadata.uid makes the patch fail if the
	// pod was replaced.
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": pod.UID},
		"status":   status,
	})
	if err == nil {
		_, err = a.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	}
	switch {
	case err == nil:
		w.lastStatus = status
		a.log.Debug("pod status updated", "pod", pod.Namespace+"/"+pod.Name, "phase", status.Phase)
	case apierrors.IsNotFound(err) || ctx.Err() != nil:
	default:
		a.log.Warn("failed to update pod status", "pod", pod.Namespace+"/"+pod.Name, "err", err)
	}
}

// podStatus builds the status kubelet would report: phase, conditions,
// IPs, start time and one container status per spec container.
func (a *Agent) podStatus(w *podWorker, pod *corev1.Pod, byName map[string][]runtime.ContainerStatus, sandboxReady, terminating bool) *corev1.PodStatus {
	// Like kubelet's status manager, start from the status this agent last
	// posted: the informer's copy may not show it yet, and rebuilding from
	// that older copy would stamp new transition times and write again.
	base := &pod.Status
	if w.lastStatus != nil {
		base = w.lastStatus
	}
	st := base.DeepCopy()
	if w.startTime == nil {
		if st.StartTime != nil {
			w.startTime = st.StartTime.DeepCopy()
		} else {
			now := metav1.Now()
			w.startTime = &now
		}
	}
	st.StartTime = w.startTime.DeepCopy()
	// The spec generation this status was made from, as the kubelet
	// reports it (PodObservedGenerationTracking).
	st.ObservedGeneration = pod.Generation
	st.HostIP = a.nodeIP
	st.HostIPs = []corev1.HostIP{{IP: a.nodeIP}}
	if ip := a.podIP(w, pod); ip != "" {
		st.PodIP = ip
		st.PodIPs = []corev1.PodIP{{IP: ip}}
	}

	scheme := a.cfg.Runtime.Name()
	defaultWaiting := "ContainerCreating"
	if len(pod.Spec.InitContainers) > 0 {
		defaultWaiting = "PodInitializing"
	}
	st.InitContainerStatuses = nil
	var incomplete []string
	// phaseInit are the init containers the phase waits for: sidecars only
	// until they started.
	var phaseInit []corev1.ContainerStatus
	for _, c := range pod.Spec.InitContainers {
		cs := containerStatus(w, c, byName[c.Name], scheme, defaultWaiting)
		if isSidecar(c) {
			statusResources(w, &cs, c, latestID(byName[c.Name]))
			if cs.State.Running == nil || cs.Started == nil || !*cs.Started {
				incomplete = append(incomplete, c.Name)
				phaseInit = append(phaseInit, corev1.ContainerStatus{})
			}
			st.InitContainerStatuses = append(st.InitContainerStatuses, cs)
			continue
		}
		// An init container is ready once it completed.
		cs.Ready = cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0
		if !cs.Ready {
			incomplete = append(incomplete, c.Name)
		}
		st.InitContainerStatuses = append(st.InitContainerStatuses, cs)
		phaseInit = append(phaseInit, cs)
	}
	st.ContainerStatuses = make([]corev1.ContainerStatus, 0, len(pod.Spec.Containers))
	var unready []string
	appStarted := false
	for _, c := range pod.Spec.Containers {
		insts := byName[c.Name]
		appStarted = appStarted || len(insts) > 0
		cs := containerStatus(w, c, insts, scheme, defaultWaiting)
		statusResources(w, &cs, c, latestID(insts))
		if !cs.Ready {
			unready = append(unready, c.Name)
		}
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}
	st.EphemeralContainerStatuses = nil
	for _, ec := range pod.Spec.EphemeralContainers {
		cs := containerStatus(w, corev1.Container(ec.EphemeralContainerCommon), byName[ec.Name], scheme, defaultWaiting)
		cs.Ready = false
		st.EphemeralContainerStatuses = append(st.EphemeralContainerStatuses, cs)
	}
	st.Phase = podPhase(pod.Spec.RestartPolicy, phaseInit, st.ContainerStatuses, terminating)
	if w.failReason != "" {
		st.Phase, st.Reason, st.Message = corev1.PodFailed, w.failReason, w.failMessage
	}

	ready := corev1.ConditionTrue
	reason, msg := "", ""
	if len(unready) > 0 {
		ready = corev1.ConditionFalse
		reason = "ContainersNotReady"
		msg = fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " "))
	}
	podReady, podReason, podMsg := ready, reason, msg
	if st.Phase == corev1.PodSucceeded || st.Phase == corev1.PodFailed {
		podReady, podReason, podMsg = corev1.ConditionFalse, "PodCompleted", ""
		ready, reason, msg = corev1.ConditionFalse, "PodCompleted", ""
	}
	// Once an app container ran, the pod stays initialized (its init
	// containers may since have been removed), as kubelet has it.
	initialized := corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}
	if len(incomplete) > 0 && !appStarted {
		initialized.Status = corev1.ConditionFalse
		initialized.Reason = "ContainersNotInitialized"
		initialized.Message = fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(incomplete, " "))
	}
	sandbox := corev1.ConditionFalse
	if sandboxReady && !terminating {
		sandbox = corev1.ConditionTrue
	}
	scheduled := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}
	for _, c := range base.Conditions {
		if c.Type == corev1.PodScheduled {
			scheduled = c
		}
	}
	want := []corev1.PodCondition{
		{Type: corev1.PodReadyToStartContainers, Status: sandbox},
		initialized,
		{Type: corev1.PodReady, Status: podReady, Reason: podReason, Message: podMsg},
		{Type: corev1.ContainersReady, Status: ready, Reason: reason, Message: msg},
		scheduled,
	}
	want = append(want, resizeConditions(w, pod)...)
	st.Conditions = mergeConditions(withoutResizeConditions(base.Conditions), want)
	return st
}

// latestID is the runtime ID of a container's latest instance ("" for
// none).
func latestID(insts []runtime.ContainerStatus) string {
	if len(insts) == 0 {
		return ""
	}
	return insts[len(insts)-1].ID
}

// mergeConditions returns want (in its order, then any other old
// conditions), keeping an old condition's transition time when its status
// did not change.
func mergeConditions(old, want []corev1.PodCondition) []corev1.PodCondition {
	now := metav1.Now()
	out := make([]corev1.PodCondition, 0, len(want)+len(old))
	seen := map[corev1.PodConditionType]bool{}
	for _, c := range want {
		seen[c.Type] = true
		c.LastTransitionTime = now
		for _, o := range old {
			if o.Type == c.Type && o.Status == c.Status {
				c.LastTransitionTime = o.LastTransitionTime
				c.LastProbeTime = o.LastProbeTime
			}
		}
		out = append(out, c)
	}
	for _, o := range old {
		if !seen[o.Type] {
			out = append(out, o)
		}
	}
	return out
}

// containerStatus reports one spec container from its runtime instances
// (oldest first), the worker's waiting reasons and its probes' results;
// defaultWaiting is the reason of a container not created yet.
func containerStatus(w *podWorker, c corev1.Container, insts []runtime.ContainerStatus, scheme, defaultWaiting string) corev1.ContainerStatus {
	cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, Started: ptr.To(false)}
	if norm, err := runtime.NormalizeImageRef(c.Image); err == nil {
		cs.Image = norm
	}
	waiting, hasWaiting := w.waiting[c.Name]
	if len(insts) == 0 {
		if !hasWaiting {
			waiting = waitingReason{reason: defaultWaiting}
		}
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: waiting.reason, Message: waiting.message}
		return cs
	}
	latest := insts[len(insts)-1]
	cs.ContainerID = scheme + "://" + latest.ID
	cs.ImageID = latest.ImageID
	cs.RestartCount = int32(latest.Attempt)
	switch latest.State {
	case runtime.StateRunning:
		cs.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(latest.StartedAt)}
		started, ready := probeState(w, c, latest.ID)
		cs.Ready = ready
		cs.Started = ptr.To(started)
	case runtime.StateCreated:
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
	default:
		term := terminatedState(latest, scheme)
		if hasWaiting {
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: waiting.reason, Message: waiting.message}
			cs.LastTerminationState.Terminated = term
		} else {
			cs.State.Terminated = term
		}
	}
	if cs.LastTerminationState.Terminated == nil && len(insts) > 1 {
		prev := insts[len(insts)-2]
		if prev.State == runtime.StateExited || prev.State == runtime.StateUnknown {
			cs.LastTerminationState.Terminated = terminatedState(prev, scheme)
		}
	}
	return cs
}

// probeState is whether a running container instance has started (its
// startup probe passed) and is ready (its readiness probe passed), per its
// probes so far; without probes it is both.
func probeState(w *podWorker, c corev1.Container, id string) (started, ready bool) {
	if p := w.probes[c.Name]; p != nil && p.id == id {
		started, ready, _ = p.state()
		return started, ready
	}
	started = c.StartupProbe == nil
	return started, started && c.ReadinessProbe == nil
}

func terminatedState(c runtime.ContainerStatus, scheme string) *corev1.ContainerStateTerminated {
	t := &corev1.ContainerStateTerminated{
		ExitCode:    c.ExitCode,
		Reason:      c.Reason,
		Message:     c.Message,
		StartedAt:   metav1.NewTime(c.StartedAt),
		FinishedAt:  metav1.NewTime(c.FinishedAt),
		ContainerID: scheme + "://" + c.ID,
	}
	if c.State == runtime.StateUnknown {
		t.ExitCode = 137
		t.Reason = "ContainerStatusUnknown"
		t.Message = "The container could not be located when the pod was terminated"
	}
	return t
}

// podPhase follows kubelet's getPhase: a failed init container fails the
// pod under restartPolicy Never, unfinished ones keep it Pending; waiting
// containers keep the pod Pending, any running one makes it Running, and when all have stopped the
// restartPolicy decides between Running, Succeeded and Failed. A
// terminating pod whose containers have all stopped is terminal.
func podPhase(policy corev1.RestartPolicy, initStatuses, statuses []corev1.ContainerStatus, terminating bool) corev1.PodPhase {
	var pendingInit, failedInit int
	for _, cs := range initStatuses {
		switch {
		case cs.State.Terminated != nil:
			if cs.State.Terminated.ExitCode != 0 {
				failedInit++
			}
		case cs.State.Waiting != nil && cs.LastTerminationState.Terminated != nil:
			if cs.LastTerminationState.Terminated.ExitCode != 0 {
				failedInit++
			}
		default:
			pendingInit++
		}
	}
	var waiting, running, stopped, succeeded int
	for _, cs := range statuses {
		switch {
		case cs.State.Running != nil:
			running++
		case cs.State.Terminated != nil:
			stopped++
			if cs.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case cs.LastTerminationState.Terminated != nil:
			stopped++
		default:
			waiting++
		}
	}
	switch {
	case terminating && running == 0:
		if stopped > 0 && stopped == succeeded && waiting == 0 {
			return corev1.PodSucceeded
		}
		return corev1.PodFailed
	case failedInit > 0 && policy == corev1.RestartPolicyNever:
		return corev1.PodFailed
	case pendingInit > 0:
		return corev1.PodPending
	case waiting > 0:
		return corev1.PodPending
	case running > 0:
		return corev1.PodRunning
	case stopped > 0:
		switch {
		case policy == corev1.RestartPolicyAlways:
			return corev1.PodRunning
		case stopped == succeeded:
			return corev1.PodSucceeded
		case policy == corev1.RestartPolicyNever:
			return corev1.PodFailed
		default:
			return corev1.PodRunning
		}
	default:
		return corev1.PodPending
	}
}
