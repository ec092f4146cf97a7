package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// waitEvent waits for an event on the named object whose reason and
// message contain the given texts.
func waitEvent(t *testing.T, c *Cluster, name, reason, message string) {
	t.Helper()
	Eventually(t, 2*time.Minute, fmt.Sprintf("event %s %q on %s", reason, message, name), func() error {
		evs, err := c.Client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
		if err != nil {
			return err
		}
		var seen []string
		for _, e := range evs.Items {
			if e.Reason == reason && strings.Contains(e.Message, message) {
				return nil
			}
			seen = append(seen, e.Reason+": "+e.Message)
		}
		return fmt.Errorf("events:\n%s", strings.Join(seen, "\n"))
	})
}

// fastProbe probes every second and gives up after two failures.
func fastProbe(h corev1.ProbeHandler) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: h, PeriodSeconds: 1, FailureThreshold: 2}
}

// TestNodeLivenessProbeRestartsContainer: a container whose liveness probe
// (httpGet, exec or tcpSocket) starts failing, or whose startup probe never
// passes, is killed and restarted with kubelet's Unhealthy and Killing
// events.
func TestNodeLivenessProbeRestartsContainer(t *testing.T) {
	requireTool(t, "containerd", "real containers")
	c := SharedCluster(t)
	tests := []struct {
		name    string
		cmd     string
		probe   corev1.ProbeHandler
		failure string
		// startup makes the probe a startup probe that never passes.
		startup bool
	}{
		{
			name:    "live-http",
			cmd:     "mkdir -p /www; echo ok > /www/healthz; (sleep 5; rm /www/healthz) & exec httpd -f -p 8080 -h /www",
			probe:   corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("web")}},
			failure: "Liveness probe failed: HTTP probe failed with statuscode: 404",
		},
		{
			name:    "live-exec",
			cmd:     "touch /tmp/alive; sleep 5; rm /tmp/alive; exec sleep 3600",
			probe:   corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/alive"}}},
			failure: "Liveness probe failed: cat: can't open '/tmp/alive': No such file or directory",
		},
		{
			name:    "live-tcp",
			cmd:     "timeout 5 httpd -f -p 9000 -h /; exec sleep 3600",
			probe:   corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(9000)}},
			failure: "Liveness probe failed: dial tcp ",
		},
		{
			name:    "never-starts",
			cmd:     "exec sleep 3600",
			probe:   corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-f", "/tmp/started"}}},
			failure: "Startup probe failed: ",
			startup: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctr := corev1.Container{
				Name: "main", Image: demoImage,
				Command: []string{"sh", "-c", tc.cmd},
				Ports:   []corev1.ContainerPort{{Name: "web", ContainerPort: 8080}},
			}
			kind := "liveness"
			if tc.startup {
				kind = "startup"
				ctr.StartupProbe = fastProbe(tc.probe)
			} else {
				ctr.LivenessProbe = fastProbe(tc.probe)
			}
			createPod(t, c, onContainerdNode(tc.name, corev1.RestartPolicyAlways, ctr))
			waitPodPhase(t, c, "default", tc.name, corev1.PodRunning, 3*time.Minute)
			waitEvent(t, c, tc.name, "Unhealthy", tc.failure)
			waitEvent(t, c, tc.name, "Killing", "Container main failed "+kind+" probe, will be restarted")
			Eventually(t, 2*time.Minute, "the container restarted and runs again", func() error {
				p, err := getPod(t, c, tc.name)
				if err != nil {
					return err
				}
				cs := p.Status.ContainerStatuses[0]
				if cs.RestartCount < 1 || cs.State.Running == nil {
					return fmt.Errorf("restartCount %d, state %+v", cs.RestartCount, cs.State)
				}
				return nil
			})
		})
	}
}

// TestNodeReadinessAndStartupProbes: readiness gates the container's ready
// flag and the pod's Ready and ContainersReady conditions both ways; a
// startup probe holds started (and ready) back until it passes.
func TestNodeReadinessAndStartupProbes(t *testing.T) {
	requireTool(t, "containerd", "real containers")
	c := SharedCluster(t)
	pod := onContainerdNode("gated", corev1.RestartPolicyAlways,
		corev1.Container{Name: "web", Image: demoImage,
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-f", "/tmp/ready"}}}, PeriodSeconds: 1, FailureThreshold: 1}},
		corev1.Container{Name: "slow", Image: demoImage, Command: []string{"sleep", "3600"},
			StartupProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-f", "/tmp/started"}}}, PeriodSeconds: 1, FailureThreshold: 600}},
	)
	createPod(t, c, pod)
	waitPodPhase(t, c, "default", "gated", corev1.PodRunning, 3*time.Minute)

	type want struct {
		webReady, slowStarted, slowReady bool
		podReady                         corev1.ConditionStatus
	}
	check := func(what string, w want) {
		t.Helper()
		Eventually(t, time.Minute, what, func() error {
			p, err := getPod(t, c, "gated")
			if err != nil {
				return err
			}
			got := want{podReady: corev1.ConditionUnknown}
			for _, cs := range p.Status.ContainerStatuses {
				switch cs.Name {
				case "web":
					got.webReady = cs.Ready
				case "slow":
					got.slowReady = cs.Ready
					got.slowStarted = cs.Started != nil && *cs.Started
				}
			}
			containersReady := corev1.ConditionUnknown
			for _, cond := range p.Status.Conditions {
				switch cond.Type {
				case corev1.PodReady:
					got.podReady = cond.Status
				case corev1.ContainersReady:
					containersReady = cond.Status
				}
			}
			if got != w || containersReady != w.podReady {
				return fmt.Errorf("got %+v (ContainersReady %s), want %+v", got, containersReady, w)
			}
			return nil
		})
	}
	check("nothing ready or started yet", want{podReady: corev1.ConditionFalse})
	c.MustKubectl(t, "", "exec", "gated", "-c", "web", "--", "touch", "/tmp/ready")
	check("web ready, slow not started", want{webReady: true, podReady: corev1.ConditionFalse})
	c.MustKubectl(t, "", "exec", "gated", "-c", "slow", "--", "touch", "/tmp/started")
	check("all ready", want{webReady: true, slowStarted: true, slowReady: true, podReady: corev1.ConditionTrue})
	out := c.MustKubectl(t, "", "get", "pod", "gated")
	if !strings.Contains(out, "2/2") {
		t.Errorf("kubectl get pod shows %q, want 2/2 ready", out)
	}
	c.MustKubectl(t, "", "exec", "gated", "-c", "web", "--", "rm", "/tmp/ready")
	check("web unready again", want{slowStarted: true, slowReady: true, podReady: corev1.ConditionFalse})
	waitEvent(t, c, "gated", "Unhealthy", "Readiness probe failed: ")
	p, err := getPod(t, c, "gated")
	if err != nil {
		t.Fatal(err)
	}
	if rc := p.Status.ContainerStatuses[0].RestartCount; rc != 0 {
		t.Errorf("a failing readiness probe restarted the container (%d restarts)", rc)
	}
}
