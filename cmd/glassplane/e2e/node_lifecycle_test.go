package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestNodeInitContainersRunInOrder: two init containers run one after the
// other to completion before the app container starts; kubectl shows
// Init:0/2 meanwhile, and the statuses and the Initialized condition are
// kubelet's.
func TestNodeInitContainersRunInOrder(t *testing.T) {
	requireTool(t, "containerd", "real containers")
	c := SharedCluster(t)
	pod := onContainerdNode("initialized", corev1.RestartPolicyAlways, corev1.Container{
		Name: "app", Image: demoImage, Command: []string{"sh", "-c", "cat /work/order; exec sleep 3600"},
		VolumeMounts: []corev1.VolumeMount{{Name: "work", MountPath: "/work"}},
	})
	pod.Spec.Volumes = []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	pod.Spec.InitContainers = []corev1.Container{
		{Name: "first", Image: demoImage, Command: []string{"sh", "-c", "sleep 4; echo one > /work/order"},
			VolumeMounts: []corev1.VolumeMount{{Name: "work", MountPath: "/work"}}},
		{Name: "second", Image: demoImage, Command: []string{"sh", "-c", "test -f /work/order && echo two >> /work/order"},
			VolumeMounts: []corev1.VolumeMount{{Name: "work", MountPath: "/work"}}},
	}
	createPod(t, c, pod)
	Eventually(t, 2*time.Minute, "kubectl shows Init:0/2", func() error {
		out, err := c.Kubectl(t, "", "get", "pod", "initialized")
		if err != nil || !strings.Contains(out, "Init:0/2") {
			return fmt.Errorf("%s %v", out, err)
		}
		return nil
	})
	p, err := getPod(t, c, "initialized")
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.Phase != corev1.PodPending {
		t.Errorf("phase while initializing = %s, want Pending", p.Status.Phase)
	}
	if w := p.Status.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != "PodInitializing" {
		t.Errorf("app container state while initializing = %+v, want waiting PodInitializing", p.Status.ContainerStatuses[0].State)
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodInitialized && (cond.Status != corev1.ConditionFalse || cond.Reason != "ContainersNotInitialized" || !strings.Contains(cond.Message, "[first second]")) {
			t.Errorf("Initialized while initializing = %+v", cond)
		}
	}

	p = waitPodPhase(t, c, "default", "initialized", corev1.PodRunning, 3*time.Minute)
	if len(p.Status.InitContainerStatuses) != 2 {
		t.Fatalf("initContainerStatuses = %+v", p.Status.InitContainerStatuses)
	}
	for _, cs := range p.Status.InitContainerStatuses {
		if term := cs.State.Terminated; term == nil || term.ExitCode != 0 || term.Reason != "Completed" || !cs.Ready {
			t.Errorf("init container %s: ready %v, state %+v; want ready and Completed", cs.Name, cs.Ready, cs.State)
		}
	}
	first, second := p.Status.InitContainerStatuses[0].State.Terminated, p.Status.InitContainerStatuses[1].State.Terminated
	if second.StartedAt.Before(&first.FinishedAt) {
		t.Errorf("second init container started %s, before the first finished %s", second.StartedAt, first.FinishedAt)
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodInitialized && cond.Status != corev1.ConditionTrue {
			t.Errorf("Initialized once running = %+v", cond)
		}
	}
	Eventually(t, time.Minute, "the app saw both init containers' work", func() error {
		out, err := c.Kubectl(t, "", "logs", "initialized", "-c", "app")
		if err != nil || out != "one\ntwo\n" {
			return fmt.Errorf("logs %q %v", out, err)
		}
		return nil
	})
}

// TestNodeFailedInitContainer: with restartPolicy Never a failing init
// container fails the pod and the app never starts; with Always it is
// retried with back-off and the pod stays Pending.
func TestNodeFailedInitContainer(t *testing.T) {
	requireTool(t, "containerd", "real containers")
	c := SharedCluster(t)
	tests := []struct {
		name   string
		policy corev1.RestartPolicy
		phase  corev1.PodPhase
		shows  string
	}{
		{"init-fails-never", corev1.RestartPolicyNever, corev1.PodFailed, "Init:Error"},
		{"init-fails-always", corev1.RestartPolicyAlways, corev1.PodPending, "Init:CrashLoopBackOff"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pod := onContainerdNode(tc.name, tc.policy, corev1.Container{Name: "app", Image: demoImage})
			pod.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: demoImage, Command: []string{"sh", "-c", "exit 3"}}}
			createPod(t, c, pod)
			Eventually(t, 2*time.Minute, "kubectl shows "+tc.shows, func() error {
				out, err := c.Kubectl(t, "", "get", "pod", tc.name)
				if err != nil || !strings.Contains(out, tc.shows) {
					return fmt.Errorf("%s %v", out, err)
				}
				return nil
			})
			p, err := getPod(t, c, tc.name)
			if err != nil {
				t.Fatal(err)
			}
			if p.Status.Phase != tc.phase {
				t.Errorf("phase = %s, want %s", p.Status.Phase, tc.phase)
			}
			if cs := p.Status.ContainerStatuses[0]; cs.ContainerID != "" || cs.State.Waiting == nil {
				t.Errorf("app container ran: %+v", cs)
			}
		})
	}
}

// TestNodePreStopHooksRunBeforeSIGTERM: deleting a pod runs each
// container's preStop hook (exec, and httpGet to a CGI of busybox httpd),
// then SIGTERM, within the grace period; the hooks' marks land in a
// hostPath before the containers' own TERM handlers'.
func TestNodePreStopHooksRunBeforeSIGTERM(t *testing.T) {
	requireTool(t, "containerd", "real containers")
	c := SharedCluster(t)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	mount := []corev1.VolumeMount{{Name: "marks", MountPath: "/marks"}}
	cgi := `mkdir -p /www/cgi-bin; printf '#!/bin/sh\necho http-prestop >> /marks/http\necho Content-Type: text/plain\necho\necho ok\n' > /www/cgi-bin/stop; chmod +x /www/cgi-bin/stop; ` +
		`trap 'echo term >> /marks/http; exit 0' TERM; httpd -f -p 8080 -h /www & wait`
	pod := onContainerdNode("stopping", corev1.RestartPolicyAlways,
		corev1.Container{Name: "exec", Image: demoImage, VolumeMounts: mount,
			Command: []string{"sh", "-c", "trap 'echo term >> /marks/exec; exit 0' TERM; while true; do sleep 0.2; done"},
			Lifecycle: &corev1.Lifecycle{
				PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "echo post-start >> /marks/exec"}}},
				PreStop:   &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "echo exec-prestop >> /marks/exec; sleep 1"}}},
			}},
		corev1.Container{Name: "http", Image: demoImage, VolumeMounts: mount, Command: []string{"sh", "-c", cgi},
			Lifecycle: &corev1.Lifecycle{
				PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/cgi-bin/stop", Port: intstr.FromInt32(8080)}},
			}},
	)
	pod.Spec.TerminationGracePeriodSeconds = new(int64(20))
	pod.Spec.Volumes = []corev1.Volume{{Name: "marks", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}}}}
	createPod(t, c, pod)
	waitPodPhase(t, c, "default", "stopping", corev1.PodRunning, 3*time.Minute)
	// The http container's httpd must be listening before it is asked to stop.
	time.Sleep(time.Second)
	if err := c.Client.CoreV1().Pods("default").Delete(context.Background(), "stopping", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPodGone(t, c, "default", "stopping", 2*time.Minute)
	for file, want := range map[string]string{
		"exec": "post-start\nexec-prestop\nterm\n",
		"http": "http-prestop\nterm\n",
	} {
		got, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil || string(got) != want {
			t.Errorf("marks of the %s container = %q (%v), want %q", file, got, err, want)
		}
	}
}

// TestNodeForceDelete: `kubectl delete --grace-period=0 --force` removes
// the pod object at once and the node removes its container anyway.
func TestNodeForceDelete(t *testing.T) {
	requireTool(t, "containerd", "real containers")
	c := SharedCluster(t)
	pod := onContainerdNode("forced", corev1.RestartPolicyAlways, corev1.Container{Name: "main", Image: demoImage,
		Command: []string{"sh", "-c", "trap '' TERM; while true; do sleep 1; done"}})
	pod.Spec.TerminationGracePeriodSeconds = new(int64(300))
	createPod(t, c, pod)
	p := waitPodPhase(t, c, "default", "forced", corev1.PodRunning, 3*time.Minute)
	id := strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://")
	out := c.MustKubectl(t, "", "delete", "pod", "forced", "--grace-period=0", "--force")
	if !strings.Contains(out, `pod "forced" force deleted`) {
		t.Errorf("kubectl delete said %q", out)
	}
	if _, err := getPod(t, c, "forced"); !apierrors.IsNotFound(err) {
		t.Errorf("pod after force delete: %v, want NotFound at once", err)
	}
	cli, err := containerd.New(filepath.Join(c.DataDir, "containerd", "containerd.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	cctx := namespaces.WithNamespace(context.Background(), "glassplane")
	Eventually(t, time.Minute, "the container is gone from containerd", func() error {
		if _, err := cli.LoadContainer(cctx, id); err == nil {
			return fmt.Errorf("container %s still exists", id)
		}
		return nil
	})
}

// TestNodeSidecarInitContainer: an init container with restartPolicy
// Always is a sidecar: it starts in order with the init containers, the
// next one waits for its startup probe, and it keeps running beside the
// app container, which reaches it on localhost; when the pod is deleted
// the sidecar gets its SIGTERM only after the app container has stopped.
func TestNodeSidecarInitContainer(t *testing.T) {
	requireTool(t, "containerd", "real containers")
	c := SharedCluster(t)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	mount := []corev1.VolumeMount{{Name: "marks", MountPath: "/marks"}}
	always := corev1.ContainerRestartPolicyAlways
	// The app takes a second over its SIGTERM: a sidecar stopped beside
	// it would mark first.
	pod := onContainerdNode("with-sidecar", corev1.RestartPolicyAlways, corev1.Container{Name: "app", Image: demoImage, VolumeMounts: mount,
		Command: []string{"sh", "-c", "wget -q -O - http://127.0.0.1:9000/; trap 'sleep 1; echo app >> /marks/order; exit 0' TERM; while true; do sleep 0.2; done"}})
	pod.Spec.InitContainers = []corev1.Container{
		{Name: "proxy", Image: demoImage, RestartPolicy: &always, VolumeMounts: mount,
			Command:      []string{"sh", "-c", `sleep 2; mkdir -p /s; echo "from the sidecar" > /s/index.html; httpd -f -p 9000 -h /s & trap 'echo sidecar >> /marks/order; kill $!; exit 0' TERM; wait`},
			StartupProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(9000)}}, PeriodSeconds: 1, FailureThreshold: 30}},
		{Name: "after", Image: demoImage, Command: []string{"wget", "-q", "-O", "-", "http://127.0.0.1:9000/"}},
	}
	pod.Spec.TerminationGracePeriodSeconds = new(int64(20))
	pod.Spec.Volumes = []corev1.Volume{{Name: "marks", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}}}}
	createPod(t, c, pod)
	p := waitPodPhase(t, c, "default", "with-sidecar", corev1.PodRunning, 3*time.Minute)
	Eventually(t, time.Minute, "the sidecar runs, started and ready, and the app is ready", func() error {
		var err error
		if p, err = getPod(t, c, "with-sidecar"); err != nil {
			return err
		}
		side := p.Status.InitContainerStatuses[0]
		if side.State.Running == nil || side.Started == nil || !*side.Started || !side.Ready {
			return fmt.Errorf("sidecar status %+v", side)
		}
		if !p.Status.ContainerStatuses[0].Ready {
			return fmt.Errorf("app status %+v", p.Status.ContainerStatuses[0])
		}
		return nil
	})
	if term := p.Status.InitContainerStatuses[1].State.Terminated; term == nil || term.ExitCode != 0 {
		t.Errorf("the init container after the sidecar: %+v, want completed", p.Status.InitContainerStatuses[1].State)
	}
	for _, name := range []string{"after", "app"} {
		if out := c.MustKubectl(t, "", "logs", "with-sidecar", "-c", name); !strings.Contains(out, "from the sidecar") {
			t.Errorf("%s reached the sidecar? logs %q", name, out)
		}
	}
	if out := c.MustKubectl(t, "", "get", "pod", "with-sidecar"); !strings.Contains(out, "2/2") || !strings.Contains(out, "Running") {
		t.Errorf("kubectl get pod shows %q, want 2/2 Running", out)
	}
	if err := c.Client.CoreV1().Pods("default").Delete(context.Background(), "with-sidecar", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPodGone(t, c, "default", "with-sidecar", 2*time.Minute)
	if got, err := os.ReadFile(filepath.Join(dir, "order")); err != nil || string(got) != "app\nsidecar\n" {
		t.Errorf("the containers stopped in the order %q (%v), want the app, then the sidecar", got, err)
	}
}
