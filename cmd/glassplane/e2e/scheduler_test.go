package e2e

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/glassplane/glassplane/controlplane/scheduler/explain"
	"github.com/glassplane/glassplane/web/webtest"
)

// schedPod is a small pod for scheduler scenarios.
func schedPod(name string, cpu string, lbls map[string]string) *corev1.Pod {
	zero := int64(0)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: &zero,
			Containers: []corev1.Container{{
				Name: "app", Image: "busybox",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
			}},
		},
	}
}

func createNamespace(t *testing.T, c *Cluster, name string) {
	t.Helper()
	if _, err := c.Client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func createPods(t *testing.T, c *Cluster, ns string, pods ...*corev1.Pod) {
	t.Helper()
	for _, p := range pods {
		if _, err := c.Client.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("failed to create pod %s: %v", p.Name, err)
		}
	}
}

// nodesOf waits until every named pod is bound and returns pod → node.
func nodesOf(t *testing.T, c *Cluster, ns string, names ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	Eventually(t, 60*time.Second, "pods bound", func() error {
		for _, n := range names {
			p, err := c.Client.CoreV1().Pods(ns).Get(context.Background(), n, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if p.Spec.NodeName == "" {
				return fmt.Errorf("pod %s not bound yet", n)
			}
			out[n] = p.Spec.NodeName
		}
		return nil
	})
	return out
}

// failedSchedulingMessage waits for the pod's PodScheduled=False message.
func failedSchedulingMessage(t *testing.T, c *Cluster, ns, name, want string) {
	t.Helper()
	Eventually(t, 60*time.Second, "FailedScheduling on "+name, func() error {
		p, err := c.Client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse {
				if cond.Message == want {
					return nil
				}
				return fmt.Errorf("message %q, want %q", cond.Message, want)
			}
		}
		return fmt.Errorf("no PodScheduled=False condition yet (node %q)", p.Spec.NodeName)
	})
}

// schedulerSeesTaint waits until the scheduler has seen node's taint. The
// scheduler learns of node changes from its node watch and of new pods
// from its pod watch, and nothing orders the two: a pod created right after
// a taint may still be scheduled onto the node as it was, as with
// kube-scheduler. So a probe pod pinned to node (by its hostname label)
// must fail to schedule. Node events arrive in order, so a probe on the
// node changed last vouches for those changed before it.
func schedulerSeesTaint(t *testing.T, c *Cluster, ns, node string) {
	t.Helper()
	probeNode(t, c, ns, node, nil, false)
}

// schedulerSeesLabel waits until the scheduler has seen node's label
// key=value: a probe pod pinned to node that also selects the label must be
// bound (see schedulerSeesTaint).
func schedulerSeesLabel(t *testing.T, c *Cluster, ns, node, key, value string) {
	t.Helper()
	probeNode(t, c, ns, node, map[string]string{key: value}, true)
}

// probeNode creates probe pods pinned to node (and selecting also the
// labels in selector) until one is bound (wantBound) or refused (not
// wantBound), deleting each.
func probeNode(t *testing.T, c *Cluster, ns, node string, selector map[string]string, wantBound bool) {
	t.Helper()
	pods := c.Client.CoreV1().Pods(ns)
	for i := 0; ; i++ {
		if i == 10 {
			t.Fatalf("the scheduler still did not see the change to %s after 10 probe pods", node)
		}
		probe := schedPod(fmt.Sprintf("probe-%s-%d", node, i), "1m", nil)
		probe.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
		for k, v := range selector {
			probe.Spec.NodeSelector[k] = v
		}
		createPods(t, c, ns, probe)
		var bound bool
		Eventually(t, 60*time.Second, "probe "+probe.Name+" scheduled or refused", func() error {
			p, err := pods.Get(context.Background(), probe.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if p.Spec.NodeName != "" {
				bound = true
				return nil
			}
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse {
					return nil
				}
			}
			return errors.New("not yet")
		})
		zero := int64(0)
		if err := pods.Delete(context.Background(), probe.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		Eventually(t, 60*time.Second, "probe "+probe.Name+" gone", func() error {
			if _, err := pods.Get(context.Background(), probe.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("still there (%v)", err)
			}
			return nil
		})
		if bound == wantBound {
			return
		}
	}
}

func patchNode(t *testing.T, c *Cluster, name, patch string) {
	t.Helper()
	if _, err := c.Client.CoreV1().Nodes().Patch(context.Background(), name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("failed to patch node %s: %v", name, err)
	}
}

// TestSchedulerScenarios runs kube-scheduler's behaviours through the real
// API on three simulated nodes (4 cpu each).
func TestSchedulerScenarios(t *testing.T) {
	c := NewCluster(t, "--node-runtime", "none", "--simulated-nodes", "3")
	Eventually(t, 60*time.Second, "3 nodes", func() error {
		nodes, err := c.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
		if err != nil || len(nodes.Items) != 3 {
			return fmt.Errorf("nodes: %v %v", len(nodes.Items), err)
		}
		return nil
	})

	t.Run("taints keep pods off", func(t *testing.T) {
		createNamespace(t, c, "taints")
		for _, n := range []string{"sim-1", "sim-2"} {
			patchNode(t, c, n, `{"spec":{"taints":[{"key":"dedicated","value":"gpu","effect":"NoSchedule"}]}}`)
		}
		defer func() {
			for _, n := range []string{"sim-1", "sim-2"} {
				patchNode(t, c, n, `{"spec":{"taints":null}}`)
			}
		}()
		schedulerSeesTaint(t, c, "taints", "sim-2")
		var names []string
		for i := range 3 {
			names = append(names, fmt.Sprintf("p%d", i))
			createPods(t, c, "taints", schedPod(names[i], "100m", nil))
		}
		for pod, node := range nodesOf(t, c, "taints", names...) {
			if node != "sim-3" {
				t.Errorf("pod %s on tainted %s", pod, node)
			}
		}
		patchNode(t, c, "sim-3", `{"spec":{"taints":[{"key":"dedicated","value":"gpu","effect":"NoSchedule"}]}}`)
		defer patchNode(t, c, "sim-3", `{"spec":{"taints":null}}`)
		schedulerSeesTaint(t, c, "taints", "sim-3")
		createPods(t, c, "taints", schedPod("stuck", "100m", nil))
		failedSchedulingMessage(t, c, "taints", "stuck", "0/3 nodes are available: 3 node(s) had untolerated taint(s). preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.")
		c.MustKubectl(t, "", "delete", "namespace", "taints", "--wait=false")
	})

	t.Run("anti-affinity spreads three replicas over three nodes", func(t *testing.T) {
		createNamespace(t, c, "anti")
		lbls := map[string]string{"app": "web"}
		var names []string
		for i := range 4 {
			p := schedPod(fmt.Sprintf("web-%d", i), "100m", lbls)
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: lbls},
				}},
			}}
			createPods(t, c, "anti", p)
			names = append(names, p.Name)
		}
		placed := nodesOfAny(t, c, "anti", 3, names...)
		seen := map[string]string{}
		for pod, node := range placed {
			if other, ok := seen[node]; ok {
				t.Errorf("pods %s and %s share node %s", pod, other, node)
			}
			seen[node] = pod
		}
		for _, n := range names {
			if _, ok := placed[n]; !ok {
				failedSchedulingMessage(t, c, "anti", n, "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.")
			}
		}
		c.MustKubectl(t, "", "delete", "namespace", "anti", "--wait=false")
	})

	t.Run("topology spread keeps skew at most one across zones", func(t *testing.T) {
		createNamespace(t, c, "spread")
		zones := map[string]string{"sim-1": "zone-a", "sim-2": "zone-a", "sim-3": "zone-b"}
		for _, n := range []string{"sim-1", "sim-2", "sim-3"} {
			patchNode(t, c, n, fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, corev1.LabelTopologyZone, zones[n]))
		}
		schedulerSeesLabel(t, c, "spread", "sim-3", corev1.LabelTopologyZone, zones["sim-3"])
		lbls := map[string]string{"app": "spread"}
		var names []string
		for i := range 6 {
			p := schedPod(fmt.Sprintf("s-%d", i), "100m", lbls)
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{MatchLabels: lbls},
			}}
			createPods(t, c, "spread", p)
			names = append(names, p.Name)
		}
		perZone := map[string]int{}
		for _, node := range nodesOf(t, c, "spread", names...) {
			perZone[zones[node]]++
		}
		if d := perZone["zone-a"] - perZone["zone-b"]; d > 1 || d < -1 {
			t.Errorf("pods per zone %v: skew %d > 1", perZone, d)
		}
		c.MustKubectl(t, "", "delete", "namespace", "spread", "--wait=false")
	})

	t.Run("high priority pod preempts a low one", func(t *testing.T) {
		createNamespace(t, c, "prio")
		ctx := context.Background()
		if _, err := c.Client.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var lows []string
		for i := range 3 {
			lows = append(lows, fmt.Sprintf("low-%d", i))
			createPods(t, c, "prio", schedPod(lows[i], "3", nil))
		}
		nodesOf(t, c, "prio", lows...)
		high := schedPod("high", "2", nil)
		high.Spec.PriorityClassName = "high"
		createPods(t, c, "prio", high)
		got, err := c.Client.CoreV1().Pods("prio").Get(ctx, "high", metav1.GetOptions{})
		if err != nil || got.Spec.Priority == nil || *got.Spec.Priority != 1000 {
			t.Fatalf("high pod priority = %v (%v), want 1000 from its PriorityClass", got.Spec.Priority, err)
		}
		node := nodesOf(t, c, "prio", "high")["high"]
		Eventually(t, 60*time.Second, "a Preempted event", func() error {
			evs, err := c.Client.CoreV1().Events("prio").List(ctx, metav1.ListOptions{FieldSelector: "reason=Preempted"})
			if err != nil {
				return err
			}
			for _, e := range evs.Items {
				if e.Message == fmt.Sprintf("Preempted by pod %s on node %s", got.UID, node) {
					return nil
				}
			}
			return fmt.Errorf("%d Preempted events, none for node %s", len(evs.Items), node)
		})
		pods, err := c.Client.CoreV1().Pods("prio").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) != 3 {
			t.Errorf("%d pods left, want 2 low and the high one", len(pods.Items))
		}
		c.MustKubectl(t, "", "delete", "namespace", "prio", "--wait=false")
	})

	t.Run("too big pod waits for a big enough node", func(t *testing.T) {
		createNamespace(t, c, "big")
		createPods(t, c, "big", schedPod("huge", "10", nil))
		failedSchedulingMessage(t, c, "big", "huge", "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.")
		node := startNodeProcess(t, c, "big", "--capacity", "cpu=16,memory=64Gi,pods=110")
		defer node()
		joined := time.Now()
		if got := nodesOf(t, c, "big", "huge")["huge"]; got != "big" {
			t.Errorf("huge bound to %s, want big", got)
		}
		// The node's arrival retries the pod: no 5-minute leftover timer,
		// at most the pod's backoff (≤ 10 s) and the node's registration.
		if waited := time.Since(joined); waited > 45*time.Second {
			t.Errorf("pod bound %v after the node started", waited)
		}
	})
}

// nodesOfAny waits until want of the named pods are bound and the rest have
// been tried, and returns the bound ones.
func nodesOfAny(t *testing.T, c *Cluster, ns string, want int, names ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	Eventually(t, 60*time.Second, fmt.Sprintf("%d pods bound", want), func() error {
		clear(out)
		for _, n := range names {
			p, err := c.Client.CoreV1().Pods(ns).Get(context.Background(), n, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if p.Spec.NodeName != "" {
				out[n] = p.Spec.NodeName
			}
		}
		if len(out) != want {
			return fmt.Errorf("%d bound", len(out))
		}
		return nil
	})
	return out
}

// startNodeProcess runs `glassplane node` as its own process with the admin
// kubeconfig and returns the function that stops it.
func startNodeProcess(t *testing.T, c *Cluster, name string, extra ...string) func() {
	t.Helper()
	args := append([]string{"node", "--kubeconfig", c.Kubeconfig, "--node-name", name, "--runtime", "simulated", "--data-dir", filepath.Join(t.TempDir(), name)}, extra...)
	return startProcess(t, args...)
}

// startProcess runs the glassplane binary with args until the returned stop
// function (or the test's end) sends SIGTERM.
func startProcess(t *testing.T, args ...string) func() {
	t.Helper()
	log := &lockedBuffer{}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("failed to start %s: %v", strings.Join(args, " "), err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				<-done
			}
			if t.Failed() {
				t.Logf("%s output:\n%s", args[0], tail(log.String(), 40))
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// TestSchedulerLeaderElection runs two `glassplane scheduler` processes
// against a cluster without its own scheduler: one leads and binds, and when
// it is killed the other takes the Lease over within the lease duration; no
// pod is bound twice.
func TestSchedulerLeaderElection(t *testing.T) {
	c := NewCluster(t, "--node-runtime", "none", "--simulated-nodes", "2", "--scheduler=false")
	ctx := context.Background()
	procs := map[string]*exec.Cmd{}
	for _, id := range []string{"a", "b"} {
		cmd := exec.Command(binary, "scheduler", "--kubeconfig", c.Kubeconfig)
		log := &lockedBuffer{}
		cmd.Stdout, cmd.Stderr = log, log
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs[id] = cmd
		t.Cleanup(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
			if t.Failed() {
				t.Logf("scheduler %s:\n%s", id, tail(log.String(), 30))
			}
		})
	}
	holder := func() (string, error) {
		l, err := c.Client.CoordinationV1().Leases("kube-system").Get(ctx, "kube-scheduler", metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
			return "", fmt.Errorf("lease has no holder")
		}
		return *l.Spec.HolderIdentity, nil
	}
	var first string
	Eventually(t, 60*time.Second, "a lease holder", func() (err error) { first, err = holder(); return err })

	createNamespace(t, c, "le")
	createPods(t, c, "le", schedPod("before", "100m", nil))
	nodesOf(t, c, "le", "before")

	// Kill the leader: the holder identity is "<hostname>_<uuid>"; find the
	// process whose log names it.
	var leader *exec.Cmd
	for _, cmd := range procs {
		if strings.Contains(cmd.Stdout.(*lockedBuffer).String(), "became leader") {
			leader = cmd
		}
	}
	if leader == nil {
		t.Fatal("no scheduler process logged that it became leader")
	}
	if err := leader.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	Eventually(t, 60*time.Second, "another lease holder", func() error {
		h, err := holder()
		if err != nil {
			return err
		}
		if h == first {
			return fmt.Errorf("still held by %s", h)
		}
		return nil
	})
	if took := time.Since(killed); took > 15*time.Second+2*2*time.Second+5*time.Second {
		t.Errorf("takeover took %v, want within the 15 s lease duration plus retries", took)
	}
	createPods(t, c, "le", schedPod("after", "100m", nil))
	nodesOf(t, c, "le", "after")

	// The scheduler writes its Scheduled Event after the bind, through
	// its event broadcaster: the bind can be seen before the Event is.
	var count map[string]int32
	Eventually(t, 30*time.Second, "a Scheduled Event for each pod", func() error {
		evs, err := c.Client.CoreV1().Events("le").List(ctx, metav1.ListOptions{FieldSelector: "reason=Scheduled"})
		if err != nil {
			return err
		}
		count = map[string]int32{}
		for _, e := range evs.Items {
			count[e.InvolvedObject.Name] += max(e.Count, 1)
		}
		for _, n := range []string{"before", "after"} {
			if count[n] == 0 {
				return fmt.Errorf("pod %s has no Scheduled Event yet", n)
			}
		}
		return nil
	})
	for _, n := range []string{"before", "after"} {
		if count[n] != 1 {
			t.Errorf("pod %s has %d Scheduled events, want exactly 1", n, count[n])
		}
	}
}

// TestSchedulerExplainedAcrossProcesses runs the scheduler as its own
// process (`glassplane scheduler --kubeconfig`) and reads its explanation
// in the dashboard of `glassplane up`: the pod's decision record is a
// SchedulingDecision in the pod's namespace, owned by the pod, the
// scheduler page shows the real filter results and scores in chromium,
// and the record goes with the pod.
func TestSchedulerExplainedAcrossProcesses(t *testing.T) {
	c := NewCluster(t, "--node-runtime", "none", "--simulated-nodes", "3", "--scheduler=false")
	ctx := context.Background()
	cmd := exec.Command(binary, "scheduler", "--kubeconfig", c.Kubeconfig)
	log := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if t.Failed() {
			t.Logf("scheduler:\n%s", tail(log.String(), 30))
		}
	})
	Eventually(t, 60*time.Second, "3 nodes", func() error {
		nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil || len(nodes.Items) != 3 {
			return fmt.Errorf("nodes: %v %v", len(nodes.Items), err)
		}
		return nil
	})
	patchNode(t, c, "sim-1", `{"spec":{"taints":[{"key":"dedicated","value":"gpu","effect":"NoSchedule"}]}}`)
	createNamespace(t, c, "explain")
	schedulerSeesTaint(t, c, "explain", "sim-1")
	createPods(t, c, "explain", schedPod("web", "100m", nil))
	node := nodesOf(t, c, "explain", "web")["web"]
	pod, err := c.Client.CoreV1().Pods("explain").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	var history explain.History
	Eventually(t, 60*time.Second, "the decision record", func() error {
		r, err := decisionRecord(ctx, c, "explain", "web")
		if err != nil {
			return err
		}
		if r.PodUID != pod.UID {
			return fmt.Errorf("record of pod uid %s, want the pod's %s", r.PodUID, pod.UID)
		}
		history = explain.HistoryOf(r)
		return nil
	})
	last := history.Attempts[len(history.Attempts)-1]
	if last.Node != node || last.Nodes != 3 || last.Feasible != 2 || len(last.Scores) != 2 {
		t.Fatalf("recorded attempt: node %q of %d nodes, %d feasible, %d scored; want %s, 3, 2, 2", last.Node, last.Nodes, last.Feasible, len(last.Scores), node)
	}

	tab := webtest.Browser(t)
	webtest.Navigate(t, tab, c.WebURL+"/objects/pods/explain/web")
	webtest.WaitSelector(t, tab, webtest.TestID("object-scheduler-link"))
	webtest.Eval[bool](t, tab, `document.querySelector('[data-testid="object-scheduler-link"]').click(), true`)
	webtest.WaitSelector(t, tab, webtest.TestID("sched-matrix"))
	webtest.WaitFor(t, tab, `document.getElementById("sched-matrix").classList.contains("decided")`)

	if got := webtest.Eval[string](t, tab, `document.querySelector('tr[data-winner="true"]').dataset.node`); got != node {
		t.Errorf("the page's winner is %q, the pod is on %q", got, node)
	}
	why := webtest.Eval[string](t, tab, `document.querySelector('tr[data-node="sim-1"] [data-testid="sched-why"]').textContent`)
	if !strings.HasPrefix(why, "TaintToleration: ") || !strings.Contains(why, "untolerated taint") {
		t.Errorf("sim-1's reason %q", why)
	}
	heads := webtest.Eval[int](t, tab, `document.querySelectorAll('[data-testid="sched-score-head"]').length`)
	if heads != len(last.Scores[0].Plugins) || heads < 5 {
		t.Errorf("%d score columns, the record has %d plugins", heads, len(last.Scores[0].Plugins))
	}
	// Each scored row's sum is the sum of its weighted cells, and both
	// match the record.
	sums := webtest.Eval[map[string]float64](t, tab, `Object.fromEntries([...document.querySelectorAll('tr[data-passed="true"]')].map(r =>
		[r.dataset.node, [...r.querySelectorAll('[data-testid="sched-score-cell"]')].reduce((s, c) => s + Number(c.dataset.weighted), 0)]))`)
	totals := webtest.Eval[map[string]string](t, tab, `Object.fromEntries([...document.querySelectorAll('tr[data-passed="true"]')].map(r =>
		[r.dataset.node, r.querySelector('[data-testid="sched-total"]').textContent.trim()]))`)
	for _, s := range last.Scores {
		if int64(sums[s.Node]) != s.Total || totals[s.Node] != strconv.FormatInt(s.Total, 10) {
			t.Errorf("node %s: cells sum to %v and the total reads %q; the record says %d", s.Node, sums[s.Node], totals[s.Node], s.Total)
		}
	}
	// Each bar is as long as its normalised score (under the dashboard's
	// Content-Security-Policy, which refuses inline styles).
	webtest.WaitFor(t, tab, `[...document.querySelectorAll('td.scell[data-normalized]')].every(c => {
		const fill = c.querySelector('.bar-fill').getBoundingClientRect().width, bar = c.querySelector('.bar').getBoundingClientRect().width;
		return bar > 0 && Math.abs(fill - bar * Number(c.dataset.normalized) / 100) < 2;
	})`)
	webtest.Screenshot(t, tab, filepath.Join(webtest.OutputDir(t), "scheduler-explained.png"))

	if err := c.Client.CoreV1().Pods("explain").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 90*time.Second, "the record deleted with the pod", func() error {
		_, err := decisionRecord(ctx, c, "explain", "web")
		if err == nil {
			return fmt.Errorf("the record of explain/web still exists")
		}
		if !apierrors.IsNotFound(err) {
			return err
		}
		return nil
	})
}
