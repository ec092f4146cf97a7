package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	toolscache "k8s.io/client-go/tools/cache"
)

// TestJobsAndDaemonSets drives the Job and DaemonSet controllers with
// kubectl on a cluster of three simulated nodes (simulated containers of
// restartPolicy Never pods exit 0 after 5 s, or with N when their command
// ends in "exit N").
func TestJobsAndDaemonSets(t *testing.T) {
	requireTool(t, "kubectl", "the job and daemon set tests drive kubectl")
	c := NewCluster(t, "--node-runtime", "none", "--simulated-nodes", "3", "--web-listen", "")
	ctx := context.Background()
	Eventually(t, time.Minute, "three ready nodes", func() error {
		nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(nodes.Items) != 3 {
			return fmt.Errorf("%d nodes", len(nodes.Items))
		}
		return nil
	})

	t.Run("job with completions 3 and parallelism 2 completes, never running more than 2", func(t *testing.T) {
		var mu sync.Mutex
		running := map[string]bool{}
		maxRunning := 0
		factory := informers.NewSharedInformerFactoryWithOptions(c.Client, 0, informers.WithNamespace("default"),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = batchv1.JobNameLabel + "=three" }))
		track := func(obj any) {
			p, ok := obj.(*v1.Pod)
			if !ok {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			running[p.Name] = p.DeletionTimestamp == nil && p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed
			n := 0
			for _, r := range running {
				if r {
					n++
				}
			}
			maxRunning = max(maxRunning, n)
		}
		factory.Core().V1().Pods().Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: track, UpdateFunc: func(_, obj any) { track(obj) },
		})
		stop := make(chan struct{})
		defer close(stop)
		factory.Start(stop)
		factory.WaitForCacheSync(stop)

		c.MustKubectl(t, `apiVersion: batch/v1
kind: Job
metadata: {name: three}
spec:
  completions: 3
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, image: busybox, command: [sh, -c, "echo done"]}]
`, "apply", "-f", "-")
		c.MustKubectl(t, "", "wait", "--for=condition=complete", "job/three", "--timeout=2m")
		job, err := c.Client.BatchV1().Jobs("default").Get(ctx, "three", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if job.Status.Succeeded != 3 || job.Status.Failed != 0 || job.Status.Active != 0 || job.Status.CompletionTime == nil || job.Status.StartTime == nil {
			t.Fatalf("status = %+v, want 3 succeeded, none failed or active, start and completion times", job.Status)
		}
		if !jobCondition(job, batchv1.JobSuccessCriteriaMet) {
			t.Errorf("conditions %+v lack SuccessCriteriaMet", job.Status.Conditions)
		}
		mu.Lock()
		seen := maxRunning
		mu.Unlock()
		if seen > 2 {
			t.Errorf("%d pods ran at once, parallelism is 2", seen)
		}
		pods, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=three"})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) != 3 {
			t.Errorf("%d pods, want 3", len(pods.Items))
		}
		for _, p := range pods.Items {
			if len(p.Finalizers) != 0 {
				t.Errorf("pod %s keeps finalizers %v after being counted", p.Name, p.Finalizers)
			}
		}
		out := c.MustKubectl(t, "", "get", "job", "three")
		if !strings.Contains(out, "Complete") || !strings.Contains(out, "3/3") {
			t.Errorf("kubectl get job:\n%s", out)
		}
		events := c.MustKubectl(t, "", "get", "events", "--field-selector", "involvedObject.kind=Job,involvedObject.name=three")
		if strings.Count(events, "SuccessfulCreate") != 3 || !strings.Contains(events, "Completed") {
			t.Errorf("events:\n%s", events)
		}
	})

	t.Run("job whose pods fail stops at its backoffLimit", func(t *testing.T) {
		c.MustKubectl(t, `apiVersion: batch/v1
kind: Job
metadata: {name: failing}
spec:
  backoffLimit: 1
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, image: busybox, command: [sh, -c, "exit 1"]}]
`, "apply", "-f", "-")
		c.MustKubectl(t, "", "wait", "--for=condition=failed", "job/failing", "--timeout=2m")
		job, err := c.Client.BatchV1().Jobs("default").Get(ctx, "failing", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if job.Status.Failed != 2 || job.Status.Succeeded != 0 {
			t.Errorf("status = %+v, want 2 failed (backoffLimit 1 allows one retry)", job.Status)
		}
		for _, cond := range job.Status.Conditions {
			if cond.Type == batchv1.JobFailed && cond.Reason != "BackoffLimitExceeded" {
				t.Errorf("Failed reason %q, want BackoffLimitExceeded", cond.Reason)
			}
		}
		events := c.MustKubectl(t, "", "get", "events", "--field-selector", "involvedObject.kind=Job,involvedObject.name=failing")
		if !strings.Contains(events, "BackoffLimitExceeded") {
			t.Errorf("events lack BackoffLimitExceeded:\n%s", events)
		}
	})

	t.Run("job past its activeDeadlineSeconds fails with DeadlineExceeded", func(t *testing.T) {
		c.MustKubectl(t, `apiVersion: batch/v1
kind: Job
metadata: {name: slow}
spec:
  activeDeadlineSeconds: 1
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, image: busybox, command: [sleep, "3600"]}]
`, "apply", "-f", "-")
		c.MustKubectl(t, "", "wait", "--for=condition=failed", "job/slow", "--timeout=2m")
		job, err := c.Client.BatchV1().Jobs("default").Get(ctx, "slow", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, cond := range job.Status.Conditions {
			if cond.Type == batchv1.JobFailed && cond.Reason != "DeadlineExceeded" {
				t.Errorf("Failed reason %q, want DeadlineExceeded", cond.Reason)
			}
		}
		Eventually(t, time.Minute, "the job's pods deleted", func() error {
			pods, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=slow"})
			if err != nil {
				return err
			}
			for _, p := range pods.Items {
				if p.Status.Phase == v1.PodRunning && p.DeletionTimestamp == nil {
					return fmt.Errorf("pod %s still running", p.Name)
				}
			}
			return nil
		})
	})

	t.Run("indexed job runs each index once", func(t *testing.T) {
		c.MustKubectl(t, `apiVersion: batch/v1
kind: Job
metadata: {name: indexed}
spec:
  completions: 3
  parallelism: 3
  completionMode: Indexed
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, image: busybox, command: [sh, -c, "echo $JOB_COMPLETION_INDEX"]}]
`, "apply", "-f", "-")
		c.MustKubectl(t, "", "wait", "--for=condition=complete", "job/indexed", "--timeout=2m")
		out := c.MustKubectl(t, "", "get", "job", "indexed", "-o", "jsonpath={.status.completedIndexes} {.status.succeeded}")
		if out != "0-2 3" {
			t.Errorf("completedIndexes and succeeded = %q, want \"0-2 3\"", out)
		}
		hosts := c.MustKubectl(t, "", "get", "pods", "-l", "batch.kubernetes.io/job-name=indexed", "-o", "jsonpath={.items[*].spec.hostname}")
		for _, h := range []string{"indexed-0", "indexed-1", "indexed-2"} {
			if !strings.Contains(hosts, h) {
				t.Errorf("pod hostnames %q lack %s", hosts, h)
			}
		}
	})

	t.Run("kubectl create job runs to completion", func(t *testing.T) {
		c.MustKubectl(t, "", "create", "job", "oneshot", "--image=busybox", "--", "echo", "hello")
		c.MustKubectl(t, "", "wait", "--for=condition=complete", "job/oneshot", "--timeout=2m")
		out := c.MustKubectl(t, "", "get", "job", "oneshot", "-o", "jsonpath={.spec.completions} {.spec.parallelism} {.spec.backoffLimit} {.spec.completionMode} {.spec.template.metadata.labels.batch\\.kubernetes\\.io/job-name}")
		if out != "1 1 6 NonIndexed oneshot" {
			t.Errorf("defaults = %q, want \"1 1 6 NonIndexed oneshot\"", out)
		}
		if out := c.MustKubectl(t, "", "explain", "job.spec.backoffLimit"); !strings.Contains(out, "Specifies the number of retries before marking this job failed") {
			t.Errorf("kubectl explain job.spec.backoffLimit:\n%s", out)
		}
		if out := c.MustKubectl(t, "", "explain", "ds.spec.updateStrategy"); !strings.Contains(out, "DaemonSetUpdateStrategy") {
			t.Errorf("kubectl explain ds.spec.updateStrategy:\n%s", out)
		}
	})

	t.Run("daemon set runs one pod per untainted node and rolls out a new image", func(t *testing.T) {
		c.MustKubectl(t, "", "taint", "node", "sim-3", "dedicated=infra:NoSchedule")
		c.MustKubectl(t, `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: main, image: "busybox:1.36", command: [sleep, "3600"]}]
`, "apply", "-f", "-")
		waitDaemonSet(t, c, "agent", 2)
		pods := daemonPodsByNode(t, c, "agent")
		if len(pods["sim-1"]) != 1 || len(pods["sim-2"]) != 1 || len(pods["sim-3"]) != 0 {
			t.Fatalf("pods by node = %v, want one on sim-1 and sim-2, none on the tainted sim-3", pods)
		}

		c.MustKubectl(t, "", "taint", "node", "sim-3", "dedicated-")
		waitDaemonSet(t, c, "agent", 3)
		pods = daemonPodsByNode(t, c, "agent")
		if len(pods["sim-3"]) != 1 {
			t.Fatalf("pods by node = %v, want one on sim-3 once untainted", pods)
		}

		c.MustKubectl(t, "", "set", "image", "ds/agent", "main=busybox:1.37")
		c.MustKubectl(t, "", "rollout", "status", "ds/agent", "--timeout=2m")
		ds := waitDaemonSet(t, c, "agent", 3)
		list, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=agent"})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range list.Items {
			if p.DeletionTimestamp != nil {
				continue
			}
			if img := p.Spec.Containers[0].Image; img != "busybox:1.37" {
				t.Errorf("pod %s runs %s after the rollout", p.Name, img)
			}
		}
		revisions, err := c.Client.AppsV1().ControllerRevisions("default").List(ctx, metav1.ListOptions{LabelSelector: "app=agent"})
		if err != nil {
			t.Fatal(err)
		}
		if len(revisions.Items) != 2 {
			t.Errorf("%d controller revisions, want 2", len(revisions.Items))
		}
		if ds.Status.UpdatedNumberScheduled != 3 {
			t.Errorf("status %+v", ds.Status)
		}
		events := c.MustKubectl(t, "", "get", "events", "--field-selector", "involvedObject.kind=DaemonSet,involvedObject.name=agent")
		if !strings.Contains(events, "SuccessfulCreate") || !strings.Contains(events, "SuccessfulDelete") {
			t.Errorf("events:\n%s", events)
		}
		out := c.MustKubectl(t, "", "get", "ds", "agent")
		if !strings.Contains(out, "UP-TO-DATE") || !strings.Contains(out, "NODE SELECTOR") {
			t.Errorf("kubectl get ds:\n%s", out)
		}

		// A surging update: the new pod starts beside the old one.
		c.MustKubectl(t, "", "patch", "ds", "agent", "--type=merge", "-p",
			`{"spec":{"updateStrategy":{"rollingUpdate":{"maxSurge":1,"maxUnavailable":0}},"template":{"spec":{"containers":[{"name":"main","image":"busybox:1.36"}]}}}}`)
		c.MustKubectl(t, "", "rollout", "status", "ds/agent", "--timeout=2m")
		waitDaemonSet(t, c, "agent", 3)
		if pods := daemonPodsByNode(t, c, "agent"); len(pods["sim-1"])+len(pods["sim-2"])+len(pods["sim-3"]) != 3 {
			t.Errorf("pods by node after the surging update = %v, want one per node", pods)
		}
	})

	t.Run("daemon set gets a pod on a node that joins", func(t *testing.T) {
		kubeconfig := filepath.Join(t.TempDir(), "node.kubeconfig")
		kc, err := exec.Command(binary, "kubeconfig", "--data-dir", c.DataDir, "--user", "system:node:joined", "--group", "system:nodes").Output()
		if err != nil {
			t.Fatalf("glassplane kubeconfig: %v", err)
		}
		if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
			t.Fatal(err)
		}
		node := exec.Command(binary, "node", "--kubeconfig", kubeconfig, "--node-name", "joined", "--runtime", "simulated",
			"--simulated-start-delay", "200ms", "--data-dir", t.TempDir())
		var log lockedBuffer
		node.Stdout, node.Stderr = &log, &log
		if err := node.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			node.Process.Signal(os.Interrupt)
			node.Wait()
		})
		waitDaemonSet(t, c, "agent", 4)
		if pods := daemonPodsByNode(t, c, "agent"); len(pods["joined"]) != 1 {
			t.Fatalf("pods by node = %v, want one on the joined node\n%s", pods, log.String())
		}
	})
}

func jobCondition(job *batchv1.Job, t batchv1.JobConditionType) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == t && c.Status == v1.ConditionTrue {
			return true
		}
	}
	return false
}

// waitDaemonSet waits until the daemon set's status, for its current
// generation, has want nodes desired and all of them ready, updated and
// available.
func waitDaemonSet(t *testing.T, c *Cluster, name string, want int32) *appsv1.DaemonSet {
	t.Helper()
	var ds *appsv1.DaemonSet
	Eventually(t, 2*time.Minute, "daemon set "+name+" on "+fmt.Sprint(want)+" nodes", func() error {
		var err error
		ds, err = c.Client.AppsV1().DaemonSets("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s := ds.Status
		if s.ObservedGeneration < ds.Generation || s.DesiredNumberScheduled != want || s.CurrentNumberScheduled != want ||
			s.NumberReady != want || s.UpdatedNumberScheduled != want || s.NumberAvailable != want || s.NumberMisscheduled != 0 {
			return fmt.Errorf("status %+v", s)
		}
		return nil
	})
	return ds
}

// daemonPodsByNode returns the names of the app's live pods on each node.
func daemonPodsByNode(t *testing.T, c *Cluster, app string) map[string][]string {
	t.Helper()
	list, err := c.Client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out[p.Spec.NodeName] = append(out[p.Spec.NodeName], p.Name)
		}
	}
	return out
}
