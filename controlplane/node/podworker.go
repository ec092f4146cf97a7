package node

import (
	"context"
	"fmt"
	"k8s.io/apimachinery/pkg/labels"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/glassplane/glassplane/controlplane/node/runtime"
	"github.com/glassplane/glassplane/controlplane/tempo"
)

// podWorker runs one pod. Its fields below wakeCh belong to the worker's
// goroutine alone.
type podWorker struct {
	uid       types.UID
	namespace string
	name      string
	wakeCh    chan struct{}

	startTime *metav1.Time
	// podIP is the address the runtime gave the pod ("" until then, or
	// when the pod shares the node's network).
	podIP string
	// sandboxReady is set once the runtime prepared the pod.
	sandboxReady bool
	// sandboxCh, while the runtime attaches a new pod to the network as
	// its first containers are created, receives StartPod's result
	// (awaitSandbox); sandboxStart is when that began.
	sandboxCh    chan sandboxResult
	sandboxStart time.Time
	// volumes maps the pod's volumes to their host paths once prepared.
	volumes map[string]string
	// mountError is the last volume failure reported, to report it once.
	mountError string
	// waiting says why a container is not running (ErrImagePull,
	// ImagePullBackOff, CrashLoopBackOff, ...), by container name.
	waiting map[string]waitingReason
	// backoffs delay retries of failed image pulls and container creations.
	backoffs map[string]*backoff
	// restartBase is, by container name, the attempt after which the
	// container's crash-loop back-off started over.
	restartBase map[string]int
	// lastStatus is the status last written, to skip identical writes.
	lastStatus *corev1.PodStatus
	// probes run the probes of the pod's running containers, by
	// container name.
	probes map[string]*containerProbes
	// deleteSent is set once the pod's containers are gone and the final
	// Delete was sent; the worker then waits for the pod to disappear.
	deleteSent bool
	// failReason and failMessage are set once the node failed the pod:
	// it ran past its activeDeadlineSeconds (DeadlineExceeded), or asks
	// for sysctls the node does not allow (SysctlForbidden). Its
	// containers are stopped, or never started, and it is Failed.
	failReason, failMessage string
	// admitted is set once the pod passed the node's admission (its
	// sysctls, its host ports), or had already started when the worker
	// began, and cleared when the node fails it: other workers read it to
	// know which pods hold host ports.
	admitted atomic.Bool
	// syncedAt is when the worker last synced in full; seen is what the
	// last quiet check found (the pod's resourceVersion and its
	// containers' states), so that a periodic check finding nothing new
	// costs one container list and no status work.
	syncedAt time.Time
	seen     string
	// checks counts the worker's checks (each loop of runWorker).
	checks atomic.Int64
	// applied is the resources each container (by runtime ID) was given:
	// what it started with, or a resize since (resize.go).
	applied map[string]corev1.ResourceRequirements
	// resize is what the last resize found, for the pod's conditions.
	resize resizeState
	// podCerts are the pod's podCertificate projections, by volume and
	// source index (podcertificate.go).
	podCerts map[string]*podCertificate
}

type waitingReason struct {
	reason  string
	message string
}

type backoff struct {
	delay time.Duration
	until time.Time
	err   string
}

func newPodWorker(pod *corev1.Pod) *podWorker {
	return &podWorker{
		uid:         pod.UID,
		namespace:   pod.Namespace,
		name:        pod.Name,
		wakeCh:      make(chan struct{}, 1),
		waiting:     map[string]waitingReason{},
		backoffs:    map[string]*backoff{},
		restartBase: map[string]int{},
		probes:      map[string]*containerProbes{},
		applied:     map[string]corev1.ResourceRequirements{},
	}
}

// wake asks the worker to sync soon; it never blocks.
func (w *podWorker) wake() {
	select {
	case w.wakeCh <- struct{}{}:
	default:
	}
}

// fail records a failure of key and doubles its back-off.
func (w *podWorker) fail(key string, err error, initial, maxDelay time.Duration) {
	b := w.backoffs[key]
	if b == nil {
		b = &backoff{}
		w.backoffs[key] = b
	}
	if b.delay == 0 {
		b.delay = initial
	} else {
		b.delay = min(b.delay*2, maxDelay)
	}
	b.until = time.Now().Add(b.delay)
	b.err = err.Error()
}

// backingOff returns the key's back-off if it has not expired.
func (w *podWorker) backingOff(key string) (*backoff, bool) {
	b := w.backoffs[key]
	if b == nil || !time.Now().Before(b.until) {
		return b, false
	}
	return b, true
}

// runWorker syncs the pod on every change and at each check (nextCheck)
// until the pod is gone or ctx ends.
func (a *Agent) runWorker(ctx context.Context, w *podWorker) {
	t := time.NewTimer(a.cfg.PodResyncInterval)
	defer t.Stop()
	defer w.stopProbes()
	full := true
	for {
		w.checks.Add(1)
		if full || !a.quiet(ctx, w) {
			w.syncedAt = time.Now()
			if a.syncPod(ctx, w) {
				return
			}
		}
		t.Reset(a.nextCheck(w))
		select {
		case <-ctx.Done():
			return
		case <-w.wakeCh:
			full = true
		case <-t.C:
			full = time.Since(w.syncedAt) >= podFullResyncInterval
		}
	}
}

// podFullResyncInterval is how often a worker syncs its pod in full even
// when nothing seems to change, as the kubelet's pod workers resync (it
// refreshes volume contents, for one).
const podFullResyncInterval = 10 * time.Second

// nextCheck is how long the worker sleeps before its next check unless
// something wakes it: a PodResyncInterval while it polls its containers or
// has something pending, and until its next full resync while the runtime
// reports exits and the pod is settled, since then an exit, a change of the
// pod and a probe result each wake the worker themselves. A node of
// thousands of pods thus wakes for each only every podFullResyncInterval.
func (a *Agent) nextCheck(w *podWorker) time.Duration {
	if _, ok := a.settled(w); ok && a.exitEvents.Load() {
		return max(a.cfg.PodResyncInterval, time.Until(w.syncedAt.Add(podFullResyncInterval)))
	}
	return a.cfg.PodResyncInterval
}

// settled returns the worker's pod when nothing about it is pending: its
// status was posted, it is not being deleted, and it has no waiting
// container or back-off to come back to.
func (a *Agent) settled(w *podWorker) (*corev1.Pod, bool) {
	pod, err := a.podLister.Pods(w.namespace).Get(w.name)
	if err != nil || pod.UID != w.uid || pod.DeletionTimestamp != nil || w.lastStatus == nil || len(w.waiting) > 0 {
		return nil, false
	}
	for _, b := range w.backoffs {
		if !b.until.Before(w.syncedAt) {
			return nil, false
		}
	}
	return pod, true
}

// quiet reports whether a periodic check can skip the sync: the pod is
// unchanged since the last check, not being deleted, has no back-off or
// waiting container to come back to, and its containers are in the states
// they were in. Like the kubelet's PLEG relist, this notices containers
// that exited or started by themselves; changes to the pod, probe results
// and events wake the worker for a full sync instead. While the runtime
// reports exits (Agent.watchExits), exits wake the worker too and the
// check does not list the containers.
func (a *Agent) quiet(ctx context.Context, w *podWorker) bool {
	pod, ok := a.settled(w)
	if !ok {
		return false
	}
	if a.exitEvents.Load() {
		// An exit wakes the worker: there is nothing to look at. The
		// next check that polls starts afresh.
		w.seen = ""
		return true
	}
	list, err := a.cfg.Runtime.ListContainers(ctx, string(w.uid))
	if err != nil {
		return false
	}
	list = slices.Clone(list)
	sort.Slice(list, func(i, j int) bool {
		if list[i].Name != list[j].Name {
			return list[i].Name < list[j].Name
		}
		return list[i].Attempt < list[j].Attempt
	})
	var sb strings.Builder
	sb.WriteString(pod.ResourceVersion)
	for _, c := range list {
		fmt.Fprintf(&sb, "|%s/%d/%s/%s/%d", c.Name, c.Attempt, c.ID, c.State, c.ExitCode)
	}
	seen := sb.String()
	same := seen == w.seen
	w.seen = seen
	return same
}

// syncPod moves the pod one step towards what its spec asks and reports
// the result. It returns true once the pod is gone from the API and its
// containers are removed.
func (a *Agent) syncPod(ctx context.Context, w *podWorker) bool {
	pod, err := a.podLister.Pods(w.namespace).Get(w.name)
	if err != nil || pod.UID != w.uid {
		if err := a.cfg.Runtime.RemovePod(ctx, string(w.uid)); err != nil {
			if ctx.Err() == nil {
				a.log.Warn("failed to remove containers of deleted pod", "pod", w.namespace+"/"+w.name, "err", err)
			}
			return false
		}
		if a.podIPs != nil {
			a.podIPs.release(string(w.uid))
		}
		a.log.Debug("pod gone", "pod", w.namespace+"/"+w.name)
		return true
	}
	if pod.DeletionTimestamp != nil {
		w.stopProbes()
		a.terminatePod(ctx, w, pod)
		return false
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		w.stopProbes()
		return false
	}
	if pastActiveDeadline(w, pod, time.Now()) {
		w.stopProbes()
		a.failPod(ctx, w, pod, "DeadlineExceeded", deadlineMessage, deadlineMessage)
		return false
	}
	if !w.admitted.Load() {
		if reason, msg := a.admit(pod); reason != "" {
			w.stopProbes()
			a.failPod(ctx, w, pod, reason, msg, "Pod was rejected: "+msg)
			return false
		}
		w.admitted.Store(true)
	}
	a.runPod(ctx, w, pod)
	return false
}

// deadlineMessage is the kubelet's message for a pod past its
// activeDeadlineSeconds.
const deadlineMessage = "Pod was active on the node longer than the specified deadline"

// pastActiveDeadline reports whether the pod has been active on the node
// (since its status's startTime) for its activeDeadlineSeconds, which may
// have been shortened since it started.
func pastActiveDeadline(w *podWorker, pod *corev1.Pod, now time.Time) bool {
	d := pod.Spec.ActiveDeadlineSeconds
	if d == nil {
		return false
	}
	start := pod.Status.StartTime
	if w.startTime != nil {
		start = w.startTime
	}
	return start != nil && now.Sub(start.Time) >= time.Duration(*d)*time.Second
}

// safeSysctls are the kubelet's default allowlist: the namespaced sysctls
// a pod may set without --allowed-unsafe-sysctls.
var safeSysctls = []string{
	"kernel.shm_rmid_forced",
	"net.ipv4.ip_local_port_range",
	"net.ipv4.tcp_syncookies",
	"net.ipv4.ping_group_range",
	"net.ipv4.ip_unprivileged_port_start",
	"net.ipv4.ip_local_reserved_ports",
	"net.ipv4.tcp_keepalive_time",
	"net.ipv4.tcp_fin_timeout",
	"net.ipv4.tcp_keepalive_intvl",
	"net.ipv4.tcp_keepalive_probes",
	"net.ipv4.tcp_rmem",
	"net.ipv4.tcp_wmem",
}

// forbiddenSysctl is the kubelet's sysctl admission: the message for the
// first sysctl of the pod that is not allowlisted (a net. one is also
// refused with the host's network), "" when all are allowed.
func forbiddenSysctl(pod *corev1.Pod) string {
	if pod.Spec.SecurityContext == nil {
		return ""
	}
	for _, s := range pod.Spec.SecurityContext.Sysctls {
		name := strings.ReplaceAll(s.Name, "/", ".")
		if !slices.Contains(safeSysctls, name) {
			return fmt.Sprintf("forbidden sysctl: %q not allowlisted", s.Name)
		}
		if pod.Spec.HostNetwork && strings.HasPrefix(name, "net.") {
			return fmt.Sprintf("forbidden sysctl: %q not allowed with host net enabled", s.Name)
		}
	}
	return ""
}

// admit is the kubelet's admission of a pod new to the node: its sysctls
// must be allowlisted (SysctlForbidden), and its host ports free of the
// pods admitted before it (NodePorts, the scheduler's predicate, which a
// pod bound by spec.nodeName never went through). A pod that had already
// started is admitted as it is.
func (a *Agent) admit(pod *corev1.Pod) (reason, message string) {
	if pod.Status.StartTime != nil {
		return "", ""
	}
	if msg := forbiddenSysctl(pod); msg != "" {
		return "SysctlForbidden", msg
	}
	if a.podLister == nil {
		return "", ""
	}
	others, err := a.podLister.List(labels.Everything())
	if err != nil {
		return "", ""
	}
	a.mu.Lock()
	var held []*corev1.Pod
	for _, o := range others {
		if w := a.workers[o.UID]; o.UID != pod.UID && w != nil && w.admitted.Load() &&
			o.Status.Phase != corev1.PodSucceeded && o.Status.Phase != corev1.PodFailed {
			held = append(held, o)
		}
	}
	a.mu.Unlock()
	if hostPortsConflict(pod, held) {
		return "NodePorts", "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"
	}
	return "", ""
}

// hostPortsConflict reports whether one of pod's host ports is one another
// pod holds: the same port and protocol on the same address, or on any
// address when either binds 0.0.0.0.
func hostPortsConflict(pod *corev1.Pod, others []*corev1.Pod) bool {
	type hostPort struct {
		ip, protocol string
		port         int32
	}
	ports := func(p *corev1.Pod) []hostPort {
		var out []hostPort
		for _, c := range append(slices.Clone(p.Spec.InitContainers), p.Spec.Containers...) {
			for _, cp := range c.Ports {
				if cp.HostPort == 0 {
					continue
				}
				ip, proto := cp.HostIP, string(cp.Protocol)
				if ip == "" {
					ip = "0.0.0.0"
				}
				if proto == "" {
					proto = string(corev1.ProtocolTCP)
				}
				out = append(out, hostPort{ip, proto, cp.HostPort})
			}
		}
		return out
	}
	want := ports(pod)
	if len(want) == 0 {
		return false
	}
	for _, o := range others {
		for _, h := range ports(o) {
			for _, w := range want {
				if h.port == w.port && h.protocol == w.protocol && (h.ip == w.ip || h.ip == "0.0.0.0" || w.ip == "0.0.0.0") {
					return true
				}
			}
		}
	}
	return false
}

// failPod does what the kubelet does to a pod it fails (past its active
// deadline, or refused at admission): a Warning event with the reason,
// its containers stopped with the pod's grace period, and the pod Failed
// with the reason and the status message.
func (a *Agent) failPod(ctx context.Context, w *podWorker, pod *corev1.Pod, reason, message, statusMessage string) {
	// A failed pod holds no host ports.
	w.admitted.Store(false)
	if w.failReason == "" {
		w.failReason, w.failMessage = reason, statusMessage
		a.recorder.Event(podRef(pod), corev1.EventTypeWarning, reason, message)
	}
	byName, err := a.containersByName(ctx, w.uid)
	if err != nil {
		a.log.Warn("failed to list containers", "pod", w.namespace+"/"+w.name, "err", err)
		return
	}
	a.stopContainers(ctx, w, pod, byName)
	if err := a.cfg.Runtime.StopPod(ctx, string(w.uid), 0); err != nil && ctx.Err() == nil {
		a.log.Warn("failed to stop pod", "pod", w.namespace+"/"+w.name, "err", err)
	}
	if byName, err = a.containersByName(ctx, w.uid); err == nil {
		a.postStatus(ctx, w, pod, byName, true, false)
	}
}

// runPod makes sure each container of the pod runs (or has run, per its
// restartPolicy) and posts the pod's status.
func (a *Agent) runPod(ctx context.Context, w *podWorker, pod *corev1.Pod) {
	spec := podSpecFor(pod)
	if sub := pod.Spec.Subdomain; sub != "" && a.cfg.ClusterDomain != "" {
		spec.HostDomain = sub + "." + pod.Namespace + ".svc." + a.cfg.ClusterDomain
	}
	if !w.sandboxReady && w.sandboxCh == nil {
		spec.DNS = a.podDNS(pod)
	}
	if !a.startSandbox(ctx, w, pod, spec) {
		return
	}
	// Whatever ends this sync, a network attach it began is waited for.
	defer a.awaitSandbox(ctx, w, pod)
	if err := a.prepareVolumes(ctx, w, pod); err != nil {
		if ctx.Err() != nil {
			return
		}
		if err.Error() != w.mountError {
			w.mountError = err.Error()
			a.recorder.Event(podRef(pod), corev1.EventTypeWarning, "FailedMount", err.Error())
		}
		a.postStatus(ctx, w, pod, nil, true, false)
		return
	}
	w.mountError = ""
	byName, err := a.containersByName(ctx, w.uid)
	if err != nil {
		a.log.Warn("failed to list containers", "pod", w.namespace+"/"+w.name, "err", err)
		return
	}
	acted := false
	// Once an app container ran, the pod is initialized: init containers
	// do not run again, sidecars are only kept running.
	appStarted := false
	for _, c := range pod.Spec.Containers {
		appStarted = appStarted || len(byName[c.Name]) > 0
	}
	initialized := true
	for _, c := range pod.Spec.InitContainers {
		insts := byName[c.Name]
		n := len(insts)
		if isSidecar(c) {
			// A sidecar (an init container with restartPolicy Always) runs
			// beside the app containers; the next init container starts
			// once it has started.
			acted = a.syncContainer(ctx, w, pod, spec, c, insts) || acted
			if appStarted || n > 0 && insts[n-1].State == runtime.StateRunning && sidecarStarted(w, c, insts[n-1].ID) {
				continue
			}
			initialized = false
			break
		}
		if appStarted || n > 0 && insts[n-1].State == runtime.StateExited && insts[n-1].ExitCode == 0 {
			delete(w.waiting, c.Name)
			continue
		}
		initialized = false
		acted = a.syncContainer(ctx, w, pod, spec, c, insts) || acted
		break
	}
	if initialized {
		for _, c := range pod.Spec.Containers {
			acted = a.syncContainer(ctx, w, pod, spec, c, byName[c.Name]) || acted
		}
		// An ephemeral container (kubectl debug) is started once, beside
		// the app containers, and never restarted, as the kubelet runs it.
		for _, ec := range pod.Spec.EphemeralContainers {
			if c := corev1.Container(ec.EphemeralContainerCommon); len(byName[c.Name]) == 0 {
				acted = a.syncContainer(ctx, w, pod, spec, c, nil) || acted
			}
		}
	}
	if ctx.Err() != nil {
		return
	}
	if !a.awaitSandbox(ctx, w, pod) {
		return
	}
	if acted {
		if byName, err = a.containersByName(ctx, w.uid); err != nil {
			a.log.Warn("failed to list containers", "pod", w.namespace+"/"+w.name, "err", err)
			return
		}
	}
	a.syncProbes(ctx, w, pod, byName)
	a.postStatus(ctx, w, pod, byName, true, false)
}

// podPreparer is a runtime that can make what a pod's containers need to
// be created (its directory and network namespace) apart from attaching
// the pod to the network, which StartPod then does.
type podPreparer interface {
	PreparePod(ctx context.Context, pod runtime.PodSpec) error
}

// sandboxResult is what StartPod returned, and when.
type sandboxResult struct {
	ip   string
	err  error
	done time.Time
}

// startSandbox makes sure the pod's sandbox is up, or on its way, and
// reports whether the sync may go on. A new pod on a podPreparer runtime
// gets its namespace at once and is attached to the network (the CNI ADD)
// in the background while its first containers are created; awaitSandbox
// collects the result before any of them starts. A pod whose environment
// asks for its own IP is attached first.
func (a *Agent) startSandbox(ctx context.Context, w *podWorker, pod *corev1.Pod, spec runtime.PodSpec) bool {
	if w.sandboxCh != nil {
		return true
	}
	start := time.Now()
	if pp, ok := a.cfg.Runtime.(podPreparer); ok && !w.sandboxReady && !needsPodIP(pod) {
		if err := pp.PreparePod(ctx, spec); err != nil {
			return a.sandboxDone(ctx, w, pod, sandboxResult{err: err, done: time.Now()}, start)
		}
		ch := make(chan sandboxResult, 1)
		w.sandboxCh, w.sandboxStart = ch, start
		go func() {
			ip, err := a.cfg.Runtime.StartPod(ctx, spec)
			ch <- sandboxResult{ip, err, time.Now()}
		}()
		return true
	}
	ip, err := a.cfg.Runtime.StartPod(ctx, spec)
	return a.sandboxDone(ctx, w, pod, sandboxResult{ip, err, time.Now()}, start)
}

// awaitSandbox waits for the network attach startSandbox began, if any,
// and reports whether the pod's sandbox is ready.
func (a *Agent) awaitSandbox(ctx context.Context, w *podWorker, pod *corev1.Pod) bool {
	if w.sandboxCh == nil {
		return w.sandboxReady
	}
	select {
	case res := <-w.sandboxCh:
		w.sandboxCh = nil
		return a.sandboxDone(ctx, w, pod, res, w.sandboxStart)
	case <-ctx.Done():
		return false
	}
}

// sandboxDone records StartPod's result: the pod's IP, or the
// FailedCreatePodSandBox event and a status without a ready sandbox.
func (a *Agent) sandboxDone(ctx context.Context, w *podWorker, pod *corev1.Pod, res sandboxResult, start time.Time) bool {
	if res.err != nil {
		if ctx.Err() != nil {
			return false
		}
		w.sandboxReady = false
		a.recorder.Eventf(podRef(pod), corev1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %v", res.err)
		a.postStatus(ctx, w, pod, nil, false, false)
		return false
	}
	if !w.sandboxReady {
		a.log.Debug("pod sandbox ready", "pod", w.namespace+"/"+w.name, "ip", res.ip, "took", res.done.Sub(start))
	}
	w.podIP, w.sandboxReady = res.ip, true
	return true
}

// needsPodIP says whether a container's environment refers to the pod's
// own IP, which its container spec then needs before it is created.
func needsPodIP(pod *corev1.Pod) bool {
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && strings.HasPrefix(e.ValueFrom.FieldRef.FieldPath, "status.podIP") {
				return true
			}
		}
	}
	return false
}

// syncContainer moves one container (init or app) towards running, or
// having run, per the pod's restartPolicy: it creates, starts, restarts
// with CrashLoopBackOff, and kills it when its liveness or startup probe
// failed. It returns true when it changed anything in the runtime.
func (a *Agent) syncContainer(ctx context.Context, w *podWorker, pod *corev1.Pod, spec runtime.PodSpec, c corev1.Container, insts []runtime.ContainerStatus) bool {
	if len(insts) == 0 {
		a.startContainer(ctx, w, pod, spec, c, 0)
		return true
	}
	latest := insts[len(insts)-1]
	switch latest.State {
	case runtime.StateRunning:
		delete(w.waiting, c.Name)
		if p := w.probes[c.Name]; p != nil && p.id == latest.ID {
			if _, _, failed := p.state(); failed != "" {
				a.killForProbe(ctx, w, pod, c, latest.ID, failed)
				return true
			}
		}
		return a.resize(ctx, w, pod, spec, c, latest)
	case runtime.StateCreated:
		a.startCreated(ctx, w, pod, c, latest.ID)
		return true
	}
	policy := pod.Spec.RestartPolicy
	if isSidecar(c) {
		policy = corev1.RestartPolicyAlways
	}
	if !shouldRestart(policy, latest.ExitCode) {
		delete(w.waiting, c.Name)
		return false
	}
	// kubelet forgets a container's back-off once it ran for
	// twice the maximum back-off.
	if !latest.StartedAt.IsZero() && latest.FinishedAt.Sub(latest.StartedAt) >= 2*maxRestartBackoff {
		w.restartBase[c.Name] = latest.Attempt
	}
	delay := restartDelay(latest.Attempt - w.restartBase[c.Name])
	finished := latest.FinishedAt
	if finished.IsZero() {
		finished = latest.StartedAt
	}
	if time.Now().Before(finished.Add(delay)) {
		if w.waiting[c.Name].reason != "CrashLoopBackOff" {
			a.recorder.Eventf(containerRef(pod, c.Name), corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s", c.Name, podDescription(pod))
		}
		w.waiting[c.Name] = waitingReason{"CrashLoopBackOff", fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", delay, c.Name, podDescription(pod))}
		return false
	}
	for _, old := range insts[:len(insts)-1] {
		if err := a.cfg.Runtime.RemoveContainer(ctx, old.ID); err != nil {
			a.log.Warn("failed to remove old container", "pod", w.namespace+"/"+w.name, "container", c.Name, "err", err)
		}
	}
	a.startContainer(ctx, w, pod, spec, c, latest.Attempt+1)
	return true
}

// syncProbes keeps one probe goroutine per running app container that
// has probes, started afresh for each new instance, and stops the others.
func (a *Agent) syncProbes(ctx context.Context, w *podWorker, pod *corev1.Pod, byName map[string][]runtime.ContainerStatus) {
	var probed []corev1.Container
	for _, c := range pod.Spec.InitContainers {
		if isSidecar(c) {
			probed = append(probed, c)
		}
	}
	for _, c := range append(probed, pod.Spec.Containers...) {
		if !hasProbes(c) {
			continue
		}
		p := w.probes[c.Name]
		insts := byName[c.Name]
		if len(insts) == 0 || insts[len(insts)-1].State != runtime.StateRunning {
			if p != nil {
				p.stop()
				delete(w.probes, c.Name)
			}
			continue
		}
		latest := insts[len(insts)-1]
		if p != nil && p.id == latest.ID {
			continue
		}
		if p != nil {
			p.stop()
		}
		w.probes[c.Name] = a.startProbes(ctx, probeTarget{
			pod:         pod,
			container:   c,
			containerID: latest.ID,
			podIP:       a.podIP(w, pod),
			startedAt:   latest.StartedAt,
		}, w.wake)
	}
}

// killForProbe kills a container whose liveness or startup probe failed,
// with kubelet's Killing event; the restartPolicy then decides whether it
// starts again.
func (a *Agent) killForProbe(ctx context.Context, w *podWorker, pod *corev1.Pod, c corev1.Container, id string, failed probeType) {
	if p := w.probes[c.Name]; p != nil {
		p.stop()
		delete(w.probes, c.Name)
	}
	msg := fmt.Sprintf("Container %s failed %s probe", c.Name, strings.ToLower(string(failed)))
	if pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
		msg += ", will be restarted"
	}
	grace := podGrace(pod)
	probe := c.LivenessProbe
	if failed == probeStartup {
		probe = c.StartupProbe
	}
	if probe != nil && probe.TerminationGracePeriodSeconds != nil {
		grace = time.Duration(*probe.TerminationGracePeriodSeconds) * time.Second
	}
	a.recorder.Event(containerRef(pod, c.Name), corev1.EventTypeNormal, "Killing", msg)
	a.killContainer(ctx, w, pod, c, id, grace)
}

// stopProbes ends every probe goroutine of the pod.
func (w *podWorker) stopProbes() {
	for name, p := range w.probes {
		p.stop()
		delete(w.probes, name)
	}
}

// containersByName groups the pod's containers by name, oldest attempt first.
func (a *Agent) containersByName(ctx context.Context, uid types.UID) (map[string][]runtime.ContainerStatus, error) {
	list, err := a.cfg.Runtime.ListContainers(ctx, string(uid))
	if err != nil {
		return nil, err
	}
	out := map[string][]runtime.ContainerStatus{}
	for _, c := range list {
		out[c.Name] = append(out[c.Name], c)
	}
	for _, insts := range out {
		sort.SliceStable(insts, func(i, j int) bool { return insts[i].Attempt < insts[j].Attempt })
	}
	return out, nil
}

// startContainer gets the image, creates and starts one container,
// emitting kubelet's events for each step.
func (a *Agent) startContainer(ctx context.Context, w *podWorker, pod *corev1.Pod, spec runtime.PodSpec, c corev1.Container, attempt int) {
	ref := containerRef(pod, c.Name)
	if tempo.Wait(ctx, "start container "+c.Name+" of pod "+pod.Namespace+"/"+pod.Name) != nil {
		return
	}
	start := time.Now()
	if !a.ensureImage(ctx, w, pod, c) {
		return
	}
	imageReady := time.Now()
	createKey := "create/" + c.Name
	if b, ok := w.backingOff(createKey); ok {
		w.waiting[c.Name] = waitingReason{"CreateContainerError", b.err}
		return
	}
	cspec, err := a.containerSpec(ctx, w, pod, c, attempt)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		if w.waiting[c.Name].message != err.Error() {
			a.recorder.Eventf(ref, corev1.EventTypeWarning, "Failed", "Error: %v", err)
		}
		w.waiting[c.Name] = waitingReason{"CreateContainerConfigError", err.Error()}
		return
	}
	id, err := a.cfg.Runtime.CreateContainer(ctx, spec, cspec)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		w.fail(createKey, err, initialRestartBackoff, maxRestartBackoff)
		w.waiting[c.Name] = waitingReason{"CreateContainerError", err.Error()}
		a.recorder.Eventf(ref, corev1.EventTypeWarning, "Failed", "Error: %v", err)
		return
	}
	delete(w.backoffs, createKey)
	w.applied[id] = *c.Resources.DeepCopy()
	a.recorder.Eventf(ref, corev1.EventTypeNormal, "Created", "Created container: %s", c.Name)
	// Where a start's time goes (with startCreated's), to find what slows
	// a burst of pods.
	a.log.Debug("container created", "pod", w.namespace+"/"+w.name, "container", c.Name,
		"image", imageReady.Sub(start), "create", time.Since(imageReady))
	a.startCreated(ctx, w, pod, c, id)
}

// startCreated starts a created container.
func (a *Agent) startCreated(ctx context.Context, w *podWorker, pod *corev1.Pod, c corev1.Container, id string) {
	ref := containerRef(pod, c.Name)
	if !a.awaitSandbox(ctx, w, pod) {
		return
	}
	start := time.Now()
	if err := a.cfg.Runtime.StartContainer(ctx, id); err != nil {
		if ctx.Err() != nil {
			return
		}
		w.waiting[c.Name] = waitingReason{"RunContainerError", err.Error()}
		a.recorder.Eventf(ref, corev1.EventTypeWarning, "Failed", "Error: %v", err)
		if rmErr := a.cfg.Runtime.RemoveContainer(ctx, id); rmErr != nil {
			a.log.Warn("failed to remove container that did not start", "pod", w.namespace+"/"+w.name, "container", c.Name, "err", rmErr)
		}
		return
	}
	a.log.Debug("container started", "pod", w.namespace+"/"+w.name, "container", c.Name, "took", time.Since(start))
	delete(w.waiting, c.Name)
	a.recorder.Eventf(ref, corev1.EventTypeNormal, "Started", "Started container %s", c.Name)
	a.postStart(ctx, w, pod, c, id)
}

// ensureImage finds or pulls the container's image per its
// imagePullPolicy, with kubelet's events and waiting reasons (ErrImagePull,
// then ImagePullBackOff, ErrImageNeverPull): Never uses only what is on the
// node, IfNotPresent pulls what is missing, Always pulls every time. Two
// exceptions keep offline nodes working: images under LocalImageDomain
// (built or imported on the node) are never pulled, and when an Always
// pull fails but the node has the image, the node's copy is used with a
// warning.
func (a *Agent) ensureImage(ctx context.Context, w *podWorker, pod *corev1.Pod, c corev1.Container) bool {
	ref := containerRef(pod, c.Name)
	had, present, err := a.cfg.Runtime.ImageStatus(ctx, c.Image)
	if err != nil {
		if ctx.Err() != nil {
			return false
		}
		if w.waiting[c.Name].reason != "InvalidImageName" {
			msg := fmt.Sprintf("Failed to apply default image tag %q: %v", c.Image, err)
			a.recorder.Event(ref, corev1.EventTypeWarning, "InspectFailed", msg)
			a.recorder.Event(ref, corev1.EventTypeWarning, "Failed", "Error: InvalidImageName")
			w.waiting[c.Name] = waitingReason{"InvalidImageName", msg}
		}
		return false
	}
	if !mustPull(c.Image, c.ImagePullPolicy, present) {
		a.recorder.Eventf(ref, corev1.EventTypeNormal, "Pulled", "Container image %q already present on machine", c.Image)
		return true
	}
	if c.ImagePullPolicy == corev1.PullNever {
		if w.waiting[c.Name].reason != "ErrImageNeverPull" {
			msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", c.Image)
			a.recorder.Event(ref, corev1.EventTypeWarning, "ErrImageNeverPull", msg)
			a.recorder.Event(ref, corev1.EventTypeWarning, "Failed", "Error: ErrImageNeverPull")
			w.waiting[c.Name] = waitingReason{"ErrImageNeverPull", msg}
		}
		return false
	}
	pullKey := "pull/" + c.Image
	if b, ok := w.backingOff(pullKey); ok {
		if w.waiting[c.Name].reason != "ImagePullBackOff" {
			a.recorder.Eventf(ref, corev1.EventTypeNormal, "BackOff", "Back-off pulling image %q", c.Image)
			a.recorder.Event(ref, corev1.EventTypeWarning, "Failed", "Error: ImagePullBackOff")
		}
		w.waiting[c.Name] = waitingReason{"ImagePullBackOff", fmt.Sprintf("Back-off pulling image %q: ErrImagePull: %s", c.Image, b.err)}
		return false
	}
	a.recorder.Eventf(ref, corev1.EventTypeNormal, "Pulling", "Pulling image %q", c.Image)
	start := time.Now()
	img, err := a.cfg.Runtime.PullImage(ctx, c.Image)
	if err != nil && present && ctx.Err() == nil {
		a.recorder.Eventf(ref, corev1.EventTypeWarning, "Failed", "Failed to pull image %q: %v; using the image already present on machine", c.Image, err)
		return true
	}
	if err != nil {
		if ctx.Err() != nil {
			return false
		}
		w.fail(pullKey, err, initialImagePullBackoff, maxImagePullBackoff)
		a.recorder.Eventf(ref, corev1.EventTypeWarning, "Failed", "Failed to pull image %q: %v", c.Image, err)
		a.recorder.Event(ref, corev1.EventTypeWarning, "Failed", "Error: ErrImagePull")
		w.waiting[c.Name] = waitingReason{"ErrImagePull", err.Error()}
		return false
	}
	delete(w.backoffs, pullKey)
	if !present || img.ID != had.ID {
		// The node's image list changed: post it now, for ImageLocality.
		// A pull that found the same image (pull policy Always) leaves it
		// to the periodic status.
		select {
		case a.statusKick <- struct{}{}:
		default:
		}
	}
	took := time.Since(start).Truncate(time.Millisecond)
	a.recorder.Eventf(ref, corev1.EventTypeNormal, "Pulled", "Successfully pulled image %q in %v (%v including waiting). Image size: %d bytes.", c.Image, took, took, img.Size)
	return true
}

// isSidecar says whether an init container is a sidecar: restartPolicy
// Always, started in order with the init containers and kept running.
func isSidecar(c corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// sidecarStarted says whether a running sidecar instance counts as
// started (its startup probe, if any, passed).
func sidecarStarted(w *podWorker, c corev1.Container, id string) bool {
	started, _ := probeState(w, c, id)
	return started
}

// LocalImageDomain is the registry domain of images that exist only on
// nodes (the demo image, images made for `glassplane image import`); they
// are never pulled.
const LocalImageDomain = "glassplane.local"

// isLocalImage says whether ref is under LocalImageDomain.
func isLocalImage(ref string) bool {
	return strings.HasPrefix(ref, LocalImageDomain+"/")
}

// mustPull says whether an image (a container's or an image volume's) is
// pulled: when it is missing, or always under PullAlways unless it is a
// local one, which no registry serves.
func mustPull(ref string, policy corev1.PullPolicy, present bool) bool {
	return !present || (policy == corev1.PullAlways && !isLocalImage(ref))
}

// shouldRestart applies the pod's restartPolicy to an exited container.
func shouldRestart(policy corev1.RestartPolicy, exitCode int32) bool {
	switch policy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return exitCode != 0
	default:
		return true
	}
}

// restartDelay is how long an exited container waits before the restart
// that makes attempt+1: none for the first restart, then 10s doubling up
// to 5 minutes, like kubelet's CrashLoopBackOff.
func restartDelay(attempt int) time.Duration {
	if attempt <= 0 {
		return 0
	}
	d := initialRestartBackoff
	for i := 1; i < attempt && d < maxRestartBackoff; i++ {
		d *= 2
	}
	return min(d, maxRestartBackoff)
}

// podSpecFor is what the runtime needs to know of the pod.
func podSpecFor(pod *corev1.Pod) runtime.PodSpec {
	hostname := pod.Spec.Hostname
	if hostname == "" {
		hostname = truncatePodHostname(pod.Name)
	}
	spec := runtime.PodSpec{
		UID:           string(pod.UID),
		Namespace:     pod.Namespace,
		Name:          pod.Name,
		Hostname:      hostname,
		HostNetwork:   pod.Spec.HostNetwork,
		RestartPolicy: string(pod.Spec.RestartPolicy),
	}
	for _, h := range pod.Spec.HostAliases {
		spec.HostAliases = append(spec.HostAliases, runtime.HostAlias{IP: h.IP, Hostnames: h.Hostnames})
	}
	if !pod.Spec.HostNetwork {
		for _, c := range pod.Spec.Containers {
			for _, p := range c.Ports {
				if p.HostPort > 0 {
					spec.Ports = append(spec.Ports, runtime.PortMapping{HostPort: p.HostPort, ContainerPort: p.ContainerPort, Protocol: string(p.Protocol), HostIP: p.HostIP})
				}
			}
		}
	}
	return spec
}

// containerSpec resolves a pod container for the runtime: its
// environment, volume mounts, securityContext and resource limits.
func (a *Agent) containerSpec(ctx context.Context, w *podWorker, pod *corev1.Pod, c corev1.Container, attempt int) (runtime.ContainerSpec, error) {
	env, err := a.resolveEnv(ctx, w, pod, c)
	if err != nil {
		return runtime.ContainerSpec{}, err
	}
	mounts, err := mountsFor(w, pod, c, env)
	if err != nil {
		return runtime.ContainerSpec{}, err
	}
	spec := runtime.ContainerSpec{
		Name:       c.Name,
		Image:      c.Image,
		Command:    expandArgs(c.Command, env),
		Args:       expandArgs(c.Args, env),
		Env:        env,
		WorkingDir: c.WorkingDir,
		Attempt:    attempt,
		Mounts:     mounts,
		// Kubernetes defaults it to /dev/termination-log.
		TerminationMessagePath:     c.TerminationMessagePath,
		TerminationMessageFromLogs: c.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError,
	}
	for _, ic := range pod.Spec.InitContainers {
		spec.Init = spec.Init || ic.Name == c.Name
	}
	if psc := pod.Spec.SecurityContext; psc != nil {
		spec.RunAsUser, spec.RunAsGroup = psc.RunAsUser, psc.RunAsGroup
		// The kubelet's order: fsGroup, then supplementalGroups.
		if psc.FSGroup != nil {
			spec.SupplementalGroups = append(spec.SupplementalGroups, *psc.FSGroup)
		}
		spec.SupplementalGroups = append(spec.SupplementalGroups, psc.SupplementalGroups...)
		spec.StrictSupplementalGroups = ptr.Deref(psc.SupplementalGroupsPolicy, corev1.SupplementalGroupsPolicyMerge) == corev1.SupplementalGroupsPolicyStrict
		for _, sc := range psc.Sysctls {
			if spec.Sysctls == nil {
				spec.Sysctls = map[string]string{}
			}
			spec.Sysctls[strings.ReplaceAll(sc.Name, "/", ".")] = sc.Value
		}
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			spec.RunAsUser = sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			spec.RunAsGroup = sc.RunAsGroup
		}
		spec.ReadOnlyRootFS = ptr.Deref(sc.ReadOnlyRootFilesystem, false)
		// allowPrivilegeEscalation: false is no_new_privs, as the
		// kubelet asks the runtime for it: setuid files then give no
		// privileges.
		spec.NoNewPrivileges = !ptr.Deref(sc.AllowPrivilegeEscalation, true)
		if sc.Capabilities != nil {
			for _, c := range sc.Capabilities.Add {
				spec.AddCapabilities = append(spec.AddCapabilities, string(c))
			}
			for _, c := range sc.Capabilities.Drop {
				spec.DropCapabilities = append(spec.DropCapabilities, string(c))
			}
		}
	}
	// The cgroup settings a resize changes too (resize.go).
	r := resourcesOf(c)
	spec.CPUMillis, spec.CPURequestMillis, spec.MemoryBytes = r.CPULimitMillis, r.CPURequestMillis, r.MemoryLimitBytes
	capacity := a.capacity()
	adj := oomScoreAdj(pod, c, capacity.Memory().Value())
	spec.OOMScoreAdj = &adj
	return spec, nil
}

// expandArgs replaces $(NAME) in command and args with the container's
// environment, as kubelet does.
func expandArgs(args []string, env []string) []string {
	if len(args) == 0 {
		return args
	}
	vals := make(map[string]string, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vals[k] = v
	}
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = expandEnv(a, vals)
	}
	return out
}

// fieldRefValue resolves the downward-API fields kubelet resolves itself.
func (a *Agent) fieldRefValue(w *podWorker, pod *corev1.Pod, path string) string {
	switch path {
	case "metadata.name":
		return pod.Name
	case "metadata.namespace":
		return pod.Namespace
	case "metadata.uid":
		return string(pod.UID)
	case "spec.nodeName":
		return pod.Spec.NodeName
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName
	case "status.hostIP":
		return a.nodeIP
	case "status.podIP":
		return a.podIP(w, pod)
	}
	if key, ok := strings.CutPrefix(path, "metadata.labels['"); ok {
		return pod.Labels[strings.TrimSuffix(key, "']")]
	}
	if key, ok := strings.CutPrefix(path, "metadata.annotations['"); ok {
		return pod.Annotations[strings.TrimSuffix(key, "']")]
	}
	return ""
}

// podRef refers to the pod in events.
func podRef(pod *corev1.Pod) *corev1.ObjectReference {
	return &corev1.ObjectReference{
		Kind:            "Pod",
		APIVersion:      "v1",
		Namespace:       pod.Namespace,
		Name:            pod.Name,
		UID:             pod.UID,
		ResourceVersion: pod.ResourceVersion,
	}
}

// containerRef refers to one container (or init container) of the pod in
// events, with the fieldPath kubelet uses.
func containerRef(pod *corev1.Pod, name string) *corev1.ObjectReference {
	ref := podRef(pod)
	ref.FieldPath = fmt.Sprintf("spec.containers{%s}", name)
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			ref.FieldPath = fmt.Sprintf("spec.initContainers{%s}", name)
		}
	}
	return ref
}

// podDescription names a pod the way kubelet's messages do: name_namespace(uid).
func podDescription(pod *corev1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// hostnameMaxLen is the longest hostname Linux takes (sethostname refuses
// 64 and more), as the kubelet's truncatePodHostnameIfNeeded has it.
const hostnameMaxLen = 63

// truncatePodHostname cuts a pod name used as its hostname to 63
// characters, without a trailing '-' or '.', as the kubelet does.
func truncatePodHostname(name string) string {
	if len(name) <= hostnameMaxLen {
		return name
	}
	return strings.TrimRight(name[:hostnameMaxLen], "-.")
}
