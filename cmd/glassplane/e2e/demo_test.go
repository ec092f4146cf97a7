package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/glassplane/glassplane/web/webtest"
)

// runDemo plays one demo through the binary, as a presenter would, and
// returns its narrated output.
func runDemo(t *testing.T, c *Cluster, ns, name, lang string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, "demo", "run", name, "--kubeconfig", c.Kubeconfig, "-n", ns, "--lang", lang).CombinedOutput()
	if err != nil {
		t.Fatalf("glassplane demo run %s: %v\n%s", name, err, out)
	}
	return string(out)
}

// eventsOf lists the events of reason in ns.
func eventsOf(t *testing.T, c *Cluster, ns, reason string) []corev1.Event {
	t.Helper()
	evs, err := c.Client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("reason", reason).String()})
	if err != nil {
		t.Fatal(err)
	}
	return evs.Items
}

// TestDemoPreemption runs the preemption demo and checks, from the events
// the scheduler left, that the low-priority pod was preempted for the
// high-priority one and that the high-priority pod was then bound to the
// very node the victim left.
func TestDemoPreemption(t *testing.T) {
	c := SharedCluster(t)
	const ns = "demo-preemption"
	createNamespace(t, c, ns)
	t.Cleanup(func() { c.Kubectl(t, "", "delete", "namespace", ns, "--wait=false") })
	out := runDemo(t, c, ns, "preemption", "en")
	for _, w := range []string{"priorityclass.scheduling.k8s.io/demo-high created", "pod/low-priority Running on node ", "event Preempted on pod/low-priority: Preempted by pod ", "pod/high-priority bound to node "} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	m := regexp.MustCompile(`pod/low-priority Running on node (\S+),`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no node in the output:\n%s", out)
	}
	node := m[1]

	preempted := eventsOf(t, c, ns, "Preempted")
	if len(preempted) != 1 || preempted[0].InvolvedObject.Name != "low-priority" || !strings.HasSuffix(preempted[0].Message, " on node "+node) {
		t.Errorf("Preempted events = %v, want one on low-priority for node %s", eventMessages(preempted), node)
	}
	want := fmt.Sprintf("Successfully assigned %s/high-priority to %s", ns, node)
	if !hasMessage(eventsOf(t, c, ns, "Scheduled"), want) {
		t.Errorf("no Scheduled event %q", want)
	}
	if _, err := c.Client.SchedulingV1().PriorityClasses().Get(context.Background(), "demo-high", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the demo left its PriorityClass: %v", err)
	}
	expectNoPods(t, c, ns)
}

// TestDemoCrashLoop runs the crash-loop demo on each runtime (the nodes of
// the other runtime cordoned meanwhile), in Korean on containerd, and
// checks the container really crashed and backed off: restartCount at
// least 1 with exit code 1, the CrashLoopBackOff reason with Kubernetes'
// back-off message, and the BackOff event.
func TestDemoCrashLoop(t *testing.T) {
	c := SharedCluster(t)
	for _, tc := range []struct{ runtime, lang string }{{"simulated", "en"}, {"containerd", "ko"}} {
		t.Run(tc.runtime, func(t *testing.T) {
			if tc.runtime == "containerd" {
				requireTool(t, "containerd", "real containers")
				requireTool(t, "runc", "real containers")
			}
			ns := "demo-crashloop-" + tc.runtime
			createNamespace(t, c, ns)
			t.Cleanup(func() { c.Kubectl(t, "", "delete", "namespace", ns, "--wait=false") })
			onlyRuntime(t, c, tc.runtime)
			out := runDemo(t, c, ns, "crash-loop", tc.lang)
			if tc.lang == "ko" && (!strings.Contains(out, "CrashLoopBackOff 이유로 Waiting") || !strings.Contains(out, "→ Pod를 만들었습니다: pod/crasher")) {
				t.Errorf("the narration or the results are not in Korean:\n%s", out)
			}
			exited := `container crasher on node (\S+) exited with code 1 \(Error\); restartCount (\d+)`
			if tc.lang == "ko" {
				exited = `노드 (\S+)의 컨테이너 crasher, 종료 코드 1 \(Error\), restartCount (\d+)`
			}
			m := regexp.MustCompile(exited).FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("output lacks the exit and restart:\n%s", out)
			}
			node, err := c.Client.CoreV1().Nodes().Get(context.Background(), m[1], metav1.GetOptions{})
			if err != nil || node.Labels["node.glassplane.io/runtime"] != tc.runtime {
				t.Errorf("the pod ran on node %s (%v), want a %s node", m[1], err, tc.runtime)
			}
			if n, _ := strconv.Atoi(m[2]); n < 1 {
				t.Errorf("restartCount %d, want at least 1", n)
			}
			if !regexp.MustCompile(`pod/crasher CrashLoopBackOff: back-off \S+ restarting failed container=crasher pod=crasher_` + ns + `\(`).MatchString(out) {
				t.Errorf("output lacks the CrashLoopBackOff message:\n%s", out)
			}
			backoff := eventsOf(t, c, ns, "BackOff")
			if len(backoff) == 0 || !strings.HasPrefix(backoff[0].Message, "Back-off restarting failed container crasher in pod crasher_"+ns) {
				t.Errorf("BackOff events = %v", eventMessages(backoff))
			}
			expectNoPods(t, c, ns)
		})
	}
}

// onlyRuntime waits for a Ready node of runtime and cordons the shared
// cluster's nodes of any other runtime until the test ends.
func onlyRuntime(t *testing.T, c *Cluster, runtime string) {
	t.Helper()
	var nodes *corev1.NodeList
	Eventually(t, 2*time.Minute, "a Ready "+runtime+" node", func() error {
		var err error
		nodes, err = c.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, n := range nodes.Items {
			if n.Labels["node.glassplane.io/runtime"] == runtime && readyStatus(&n) == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("none among %d nodes", len(nodes.Items))
	})
	for _, n := range nodes.Items {
		if n.Labels["node.glassplane.io/runtime"] == runtime || n.Spec.Unschedulable {
			continue
		}
		c.MustKubectl(t, "", "cordon", n.Name)
		t.Cleanup(func() { c.MustKubectl(t, "", "uncordon", n.Name) })
	}
}

// TestDemoNodeFailure runs the node-failure demo on a cluster with a short
// grace period and checks what the node lifecycle controller did: the
// node went NotReady, both pods on it were evicted by the taint manager,
// and their replacements were scheduled onto other nodes; afterwards the
// node and every pod are gone.
func TestDemoNodeFailure(t *testing.T) {
	c := NewCluster(t, "--node-runtime", "none", "--simulated-nodes", "2", "--node-monitor-grace-period", "15s")
	const ns = "demo-nodefailure"
	createNamespace(t, c, ns)
	out := runDemo(t, c, ns, "node-failure", "en")
	for _, w := range []string{"node/demo-node registered, Ready", "bound to node demo-node", "node/demo-node Ready=Unknown (NodeStatusUnknown: Kubelet stopped posting node status.); taint node.kubernetes.io/unreachable:NoExecute", "evicted (TaintManagerEviction): web-", "replacements Running: web-"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if !hasMessage(eventsOf(t, c, metav1.NamespaceDefault, "NodeNotReady"), "Node demo-node status is now: NodeNotReady") {
		t.Error("no NodeNotReady event for demo-node")
	}
	if got := eventsOf(t, c, ns, "TaintManagerEviction"); len(got) != 2 {
		t.Errorf("TaintManagerEviction events = %v, want 2", eventMessages(got))
	}
	onDemo, elsewhere := 0, 0
	for _, e := range eventsOf(t, c, ns, "Scheduled") {
		if strings.HasSuffix(e.Message, " to demo-node") {
			onDemo++
		} else if strings.Contains(e.Message, " to sim-") {
			elsewhere++
		}
	}
	if onDemo != 2 || elsewhere != 2 {
		t.Errorf("scheduled %d pods to demo-node and %d elsewhere, want 2 and 2", onDemo, elsewhere)
	}
	if _, err := c.Client.CoreV1().Nodes().Get(context.Background(), "demo-node", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the demo left its node: %v", err)
	}
	expectNoPods(t, c, ns)
}

func expectNoPods(t *testing.T, c *Cluster, ns string) {
	t.Helper()
	Eventually(t, 2*time.Minute, "the demo's pods to be gone", func() error {
		pods, err := c.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(pods.Items) > 0 {
			return fmt.Errorf("%d pods left", len(pods.Items))
		}
		return nil
	})
}

func hasMessage(evs []corev1.Event, msg string) bool {
	for _, e := range evs {
		if e.Message == msg {
			return true
		}
	}
	return false
}

func eventMessages(evs []corev1.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.InvolvedObject.Name+": "+e.Message)
	}
	return out
}

// TestBrowserDemoPreemption plays the preemption demo from the dashboard's
// Demos page, as the admin (logged in by the one-time link), to its last
// step.
func TestBrowserDemoPreemption(t *testing.T) {
	c := SharedCluster(t)
	tab := webtest.Browser(t)
	loginAdmin(t, c, tab)
	webtest.Navigate(t, tab, c.WebURL+"/demos")
	for _, name := range []string{"preemption", "crash-loop", "node-failure"} {
		webtest.WaitSelector(t, tab, webtest.TestID("demo-"+name))
	}
	before := webtest.Eval[int](t, tab, `document.querySelectorAll('[data-testid="demo-run"]').length`)
	click(t, tab, "demo-run-preemption")
	// The new run is prepended to the runs already shown.
	const run = `document.querySelector('[data-testid="demo-run"]')`
	webtest.WaitFor(t, tab, `document.querySelectorAll('[data-testid="demo-run"]').length > `+strconv.Itoa(before)+
		` && `+run+`.querySelector("h3 code").textContent === "preemption" && `+run+`.dataset.done === "true"`)
	if msg := webtest.Eval[string](t, tab, run+`.querySelector('[data-testid="demo-run-error"]')?.textContent ?? ""`); msg != "" {
		t.Fatalf("the demo failed: %s", msg)
	}
	steps := webtest.Eval[[]string](t, tab, `[...`+run+`.querySelectorAll('[data-testid="demo-step"] .demo-result')].map(s => s.textContent)`)
	if len(steps) != 4 || !strings.Contains(steps[2], "event Preempted on pod/low-priority") || !strings.Contains(steps[3], "pod/high-priority bound to node ") {
		t.Errorf("the run's results: %q", steps)
	}
	// The run played in a namespace of its own, gone with its pods.
	Eventually(t, 2*time.Minute, "the preemption demo's namespace to be gone", func() error {
		if _, err := c.Client.CoreV1().Namespaces().Get(context.Background(), "glassplane-demo-preemption", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("namespace glassplane-demo-preemption: %v", err)
		}
		return nil
	})
}
