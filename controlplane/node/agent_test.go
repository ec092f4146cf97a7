package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/glassplane/glassplane/controlplane/node/runtime"
)

const testNode = "node-a"

// failingPulls is a simulated runtime whose registry knows no image with
// "missing" in its name.
type failingPulls struct{ *runtime.Simulated }

func (f failingPulls) PullImage(ctx context.Context, ref string) (runtime.Image, error) {
	if strings.Contains(ref, "missing") {
		return runtime.Image{}, errors.New("failed to pull and unpack image: not found")
	}
	return f.Simulated.PullImage(ctx, ref)
}

type harness struct {
	client *fake.Clientset
	rt     runtime.Runtime
	agent  *Agent
	cancel context.CancelFunc
	done   chan error
}

func startAgent(t *testing.T, rt runtime.Runtime, mutate func(*Config)) *harness {
	t.Helper()
	return startAgentWith(t, rt, mutate, nil)
}

// startAgentWith is startAgent with prepare called on the fake client
// before the agent starts (reactors may not be added while it runs).
func startAgentWith(t *testing.T, rt runtime.Runtime, mutate func(*Config), prepare func(*fake.Clientset)) *harness {
	t.Helper()
	client := fake.NewClientset()
	if prepare != nil {
		prepare(client)
	}
	// The API server assigns UIDs on create; the fake tracker does not.
	client.PrependReactor("create", "*", func(action k8stesting.Action) (bool, kruntime.Object, error) {
		if obj, ok := action.(k8stesting.CreateAction).GetObject().(metav1.Object); ok && obj.GetUID() == "" {
			obj.SetUID(types.UID("uid-" + obj.GetName()))
		}
		return false, nil, nil
	})
	cfg := Config{
		NodeName:           testNode,
		Runtime:            rt,
		Simulated:          true,
		Labels:             map[string]string{"tier": "test"},
		LeaseRenewInterval: 50 * time.Millisecond,
		NodeStatusInterval: 100 * time.Millisecond,
		PodResyncInterval:  20 * time.Millisecond,
		Logger:             slog.New(slog.DiscardHandler),
	}
	if mutate != nil {
		mutate(&cfg)
	}
	agent, err := New(cfg, client)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{client: client, rt: rt, agent: agent, cancel: cancel, done: make(chan error, 1)}
	go func() { h.done <- agent.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-h.done:
			if err != nil {
				t.Errorf("Run returned %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("Run did not return after cancel")
		}
	})
	select {
	case <-agent.Ready():
	case err := <-h.done:
		t.Fatalf("Run returned before ready: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("agent not ready after 30s")
	}
	return h
}

func simRuntime() *runtime.Simulated {
	return runtime.NewSimulated(runtime.SimulatedConfig{StartDelay: 10 * time.Millisecond, CompleteAfter: 200 * time.Millisecond})
}

func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; last seen: %s", what, detail)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func newPod(name string, policy corev1.RestartPolicy, images ...string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:       corev1.PodSpec{NodeName: testNode, RestartPolicy: policy},
		Status: corev1.PodStatus{
			Phase:      corev1.PodPending,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
		},
	}
	for i, img := range images {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "c" + string(rune('0'+i)), Image: img})
	}
	return pod
}

func (h *harness) createPod(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	if _, err := h.client.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
}

func (h *harness) getPod(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	pod, err := h.client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get pod: %v", err)
	}
	return pod
}

// eventMessages returns "Reason: message" of the events about a pod.
func (h *harness) eventMessages(t *testing.T, podName string) []string {
	t.Helper()
	list, err := h.client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list events: %v", err)
	}
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Name == podName {
			out = append(out, e.Reason+": "+e.Message)
		}
	}
	return out
}

func hasAll(got []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, g := range got {
			if strings.HasPrefix(g, w) {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func TestNodeRegistration(t *testing.T) {
	tests := []struct {
		name      string
		simulated bool
		capacity  corev1.ResourceList
		wantCPU   string
		wantPods  string
	}{
		{name: "simulated defaults", simulated: true, wantCPU: "4", wantPods: "110"},
		{name: "capacity override", simulated: true, capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")}, wantCPU: "64", wantPods: "110"},
		{name: "host capacity", simulated: false, wantPods: "110"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := startAgent(t, simRuntime(), func(c *Config) {
				c.Simulated = tc.simulated
				c.Capacity = tc.capacity
			})
			node, err := h.client.CoreV1().Nodes().Get(context.Background(), testNode, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("get node: %v", err)
			}
			for k, v := range map[string]string{
				"kubernetes.io/hostname":     testNode,
				"kubernetes.io/os":           "linux",
				"kubernetes.io/arch":         node.Labels["kubernetes.io/arch"],
				"node.glassplane.io/runtime": "simulated",
				"tier":                       "test",
			} {
				if node.Labels[k] != v || v == "" {
					t.Errorf("label %s = %q, want %q", k, node.Labels[k], v)
				}
			}
			if tc.wantCPU != "" && node.Status.Capacity.Cpu().String() != tc.wantCPU {
				t.Errorf("cpu capacity = %s, want %s", node.Status.Capacity.Cpu(), tc.wantCPU)
			}
			if tc.wantCPU == "" && node.Status.Capacity.Cpu().Value() < 1 {
				t.Errorf("cpu capacity = %s, want the host's CPU count", node.Status.Capacity.Cpu())
			}
			if node.Status.Capacity.Pods().String() != tc.wantPods {
				t.Errorf("pods capacity = %s, want %s", node.Status.Capacity.Pods(), tc.wantPods)
			}
			if node.Status.Capacity.Memory().IsZero() || node.Status.Allocatable.Memory().IsZero() {
				t.Errorf("memory capacity/allocatable missing: %v / %v", node.Status.Capacity, node.Status.Allocatable)
			}
			var ready *corev1.NodeCondition
			for i, c := range node.Status.Conditions {
				if c.Type == corev1.NodeReady {
					ready = &node.Status.Conditions[i]
				}
			}
			if ready == nil || ready.Status != corev1.ConditionTrue || ready.Reason != "KubeletReady" || ready.Message != "kubelet is posting ready status" {
				t.Errorf("Ready condition = %+v", ready)
			}
			if got := node.Status.NodeInfo.ContainerRuntimeVersion; got != runtime.SimulatedVersion {
				t.Errorf("containerRuntimeVersion = %q, want %q", got, runtime.SimulatedVersion)
			}
			if node.Status.NodeInfo.KubeletVersion != DefaultKubeletVersion {
				t.Errorf("kubeletVersion = %q", node.Status.NodeInfo.KubeletVersion)
			}
			types := map[corev1.NodeAddressType]string{}
			for _, a := range node.Status.Addresses {
				types[a.Type] = a.Address
			}
			if types[corev1.NodeInternalIP] == "" || types[corev1.NodeHostName] != testNode {
				t.Errorf("addresses = %v", node.Status.Addresses)
			}
		})
	}
}

func TestNodeLeaseIsCreatedAndRenewed(t *testing.T) {
	h := startAgent(t, simRuntime(), nil)
	var first *coordinationv1.Lease
	eventually(t, "the node lease", func() (bool, string) {
		l, err := h.client.CoordinationV1().Leases(LeaseNamespace).Get(context.Background(), testNode, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		first = l
		return true, ""
	})
	if ptr.Deref(first.Spec.HolderIdentity, "") != testNode || ptr.Deref(first.Spec.LeaseDurationSeconds, 0) != 40 || first.Spec.RenewTime == nil {
		t.Fatalf("lease spec = %+v", first.Spec)
	}
	if len(first.OwnerReferences) != 1 || first.OwnerReferences[0].Kind != "Node" || first.OwnerReferences[0].Name != testNode {
		t.Errorf("lease owner = %+v, want the Node", first.OwnerReferences)
	}
	eventually(t, "the lease to be renewed", func() (bool, string) {
		l, err := h.client.CoordinationV1().Leases(LeaseNamespace).Get(context.Background(), testNode, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return l.Spec.RenewTime.After(first.Spec.RenewTime.Time), l.Spec.RenewTime.String()
	})
}

// TestNodeLeaseRenewsWithoutReading checks that, like kubelet's lease
// controller, the agent renews its Lease from the copy it last wrote rather
// than reading it first, and still recreates a Lease someone deleted.
func TestNodeLeaseRenewsWithoutReading(t *testing.T) {
	h := startAgent(t, simRuntime(), nil)
	leaseActions := func(verb string) int {
		n := 0
		for _, a := range h.client.Actions() {
			if a.GetResource().Resource == "leases" && a.GetVerb() == verb {
				n++
			}
		}
		return n
	}
	eventually(t, "three lease renewals", func() (bool, string) {
		n := leaseActions("update")
		return n >= 3, fmt.Sprintf("%d updates", n)
	})
	// One read only: the first renewal found no Lease and created it.
	if gets, creates := leaseActions("get"), leaseActions("create"); gets != 1 || creates != 1 {
		t.Errorf("%d lease reads and %d creates for the renewals, want 1 and 1", gets, creates)
	}

	if err := h.client.CoordinationV1().Leases(LeaseNamespace).Delete(context.Background(), testNode, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deleted lease to be created again", func() (bool, string) {
		n := leaseActions("create")
		return n >= 2, fmt.Sprintf("%d creates", n)
	})
	if _, err := h.client.CoordinationV1().Leases(LeaseNamespace).Get(context.Background(), testNode, metav1.GetOptions{}); err != nil {
		t.Errorf("lease after recreation: %v", err)
	}
}

// TestNodeStatusPostedWhenChanged checks that, like kubelet, the agent
// posts an unchanged node status only every NodeStatusReportInterval, and
// posts at once when the status changed (here its image list).
func TestNodeStatusPostedWhenChanged(t *testing.T) {
	h := startAgent(t, simRuntime(), nil)
	statusUpdates := func() int {
		n := 0
		for _, a := range h.client.Actions() {
			if a.GetResource().Resource == "nodes" && a.GetVerb() == "update" && a.GetSubresource() == "status" {
				n++
			}
		}
		return n
	}
	statusReads := func() int {
		n := 0
		for _, a := range h.client.Actions() {
			if a.GetResource().Resource == "nodes" && a.GetVerb() == "get" {
				n++
			}
		}
		return n
	}
	// The first round posts (nothing was posted by the loop yet); the
	// next rounds, 100 ms apart, find nothing changed.
	eventually(t, "the first status post", func() (bool, string) { return statusUpdates() >= 1, "" })
	reads := statusReads()
	eventually(t, "five more status rounds", func() (bool, string) {
		n := statusReads()
		return n >= reads+5, fmt.Sprintf("%d reads", n)
	})
	if n := statusUpdates(); n != 1 {
		t.Fatalf("%d status posts for an unchanged status, want 1", n)
	}

	h.createPod(t, newPod("web", corev1.RestartPolicyAlways, "nginx:1.27"))
	eventually(t, "the new image in the node status", func() (bool, string) {
		node, err := h.client.CoreV1().Nodes().Get(context.Background(), testNode, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, img := range node.Status.Images {
			if slices.Contains(img.Names, "nginx:1.27") || slices.ContainsFunc(img.Names, func(n string) bool { return strings.HasSuffix(n, "nginx:1.27") }) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d status posts, images %v", statusUpdates(), node.Status.Images)
	})
}

func TestBoundPodRuns(t *testing.T) {
	h := startAgent(t, simRuntime(), nil)
	h.createPod(t, newPod("web", corev1.RestartPolicyAlways, "nginx", "busybox:1.36"))
	var pod *corev1.Pod
	eventually(t, "pod Running with ready containers", func() (bool, string) {
		pod = h.getPod(t, "web")
		ok := pod.Status.Phase == corev1.PodRunning && len(pod.Status.ContainerStatuses) == 2 &&
			pod.Status.ContainerStatuses[0].Ready && pod.Status.ContainerStatuses[1].Ready
		return ok, string(pod.Status.Phase)
	})
	st := pod.Status
	if st.HostIP == "" || len(st.HostIPs) != 1 || st.PodIP == "" || st.StartTime == nil {
		t.Errorf("hostIP=%q hostIPs=%v podIP=%q startTime=%v", st.HostIP, st.HostIPs, st.PodIP, st.StartTime)
	}
	cs := st.ContainerStatuses[0]
	if cs.Name != "c0" || cs.Image != "docker.io/library/nginx:latest" || !strings.HasPrefix(cs.ContainerID, "simulated://") ||
		!strings.HasPrefix(cs.ImageID, "docker.io/library/nginx@sha256:") || cs.State.Running == nil || cs.State.Running.StartedAt.IsZero() ||
		!ptr.Deref(cs.Started, false) || cs.RestartCount != 0 {
		t.Errorf("container status = %+v", cs)
	}
	wantConds := []corev1.PodConditionType{corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled}
	if len(st.Conditions) != len(wantConds) {
		t.Fatalf("conditions = %+v", st.Conditions)
	}
	for i, c := range st.Conditions {
		if c.Type != wantConds[i] || c.Status != corev1.ConditionTrue {
			t.Errorf("condition %d = %s %s, want %s True", i, c.Type, c.Status, wantConds[i])
		}
	}
	eventually(t, "kubelet's events", func() (bool, string) {
		got := h.eventMessages(t, "web")
		return hasAll(got,
			`Pulling: Pulling image "nginx"`,
			`Pulled: Successfully pulled image "nginx" in `,
			"Created: Created container: c0",
			"Started: Started container c0",
			"Started: Started container c1",
		), strings.Join(got, " | ")
	})
	list, err := h.client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range list.Items {
		if e.InvolvedObject.Name == "web" && (e.Source.Component != "kubelet" || e.Source.Host != testNode) {
			t.Errorf("event source = %+v, want kubelet on %s", e.Source, testNode)
		}
	}

	h.createPod(t, newPod("web2", corev1.RestartPolicyAlways, "nginx"))
	eventually(t, "already-present event for a second pod", func() (bool, string) {
		got := h.eventMessages(t, "web2")
		return hasAll(got, `Pulled: Container image "nginx" already present on machine`), strings.Join(got, " | ")
	})
}

func TestRunToCompletionPods(t *testing.T) {
	tests := []struct {
		name   string
		policy corev1.RestartPolicy
	}{
		{"never", corev1.RestartPolicyNever},
		{"on-failure", corev1.RestartPolicyOnFailure},
	}
	h := startAgent(t, simRuntime(), nil)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h.createPod(t, newPod("job-"+tc.name, tc.policy, "busybox"))
			var pod *corev1.Pod
			eventually(t, "pod Succeeded", func() (bool, string) {
				pod = h.getPod(t, "job-"+tc.name)
				return pod.Status.Phase == corev1.PodSucceeded, string(pod.Status.Phase)
			})
			term := pod.Status.ContainerStatuses[0].State.Terminated
			if term == nil || term.ExitCode != 0 || term.Reason != "Completed" || term.FinishedAt.IsZero() {
				t.Errorf("terminated state = %+v", term)
			}
			for _, c := range pod.Status.Conditions {
				if c.Type == corev1.PodReady && (c.Status != corev1.ConditionFalse || c.Reason != "PodCompleted") {
					t.Errorf("Ready condition = %+v, want False PodCompleted", c)
				}
			}
		})
	}
}

func TestPodsOfOtherNodesAreIgnored(t *testing.T) {
	h := startAgent(t, simRuntime(), nil)
	other := newPod("elsewhere", corev1.RestartPolicyAlways, "nginx")
	other.Spec.NodeName = "node-b"
	h.createPod(t, other)
	mine := newPod("mine", corev1.RestartPolicyAlways, "nginx")
	h.createPod(t, mine)
	eventually(t, "own pod Running", func() (bool, string) {
		p := h.getPod(t, "mine")
		return p.Status.Phase == corev1.PodRunning, string(p.Status.Phase)
	})
	if p := h.getPod(t, "elsewhere"); p.Status.Phase != corev1.PodPending || p.Status.HostIP != "" {
		t.Errorf("pod of another node was touched: %+v", p.Status)
	}
	if list, _ := h.rt.ListContainers(context.Background(), "uid-elsewhere"); len(list) != 0 {
		t.Errorf("containers started for another node's pod: %v", list)
	}
}

func TestGracefulDeletion(t *testing.T) {
	h := startAgent(t, simRuntime(), nil)
	h.createPod(t, newPod("doomed", corev1.RestartPolicyAlways, "nginx"))
	eventually(t, "pod Running", func() (bool, string) {
		p := h.getPod(t, "doomed")
		return p.Status.Phase == corev1.PodRunning, string(p.Status.Phase)
	})
	// What the API server does on a graceful delete: set the deletion
	// timestamp and grace period, keep the object.
	pod := h.getPod(t, "doomed")
	now := metav1.Now()
	pod.DeletionTimestamp = &now
	pod.DeletionGracePeriodSeconds = ptr.To[int64](30)
	if _, err := h.client.CoreV1().Pods("default").Update(context.Background(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the final delete with grace 0", func() (bool, string) {
		for _, a := range h.client.Actions() {
			del, ok := a.(k8stesting.DeleteActionImpl)
			if !ok || del.GetResource().Resource != "pods" || del.GetName() != "doomed" {
				continue
			}
			opts := del.GetDeleteOptions()
			return ptr.Deref(opts.GracePeriodSeconds, -1) == 0 && opts.Preconditions != nil &&
				ptr.Deref(opts.Preconditions.UID, "") == "uid-doomed", ""
		}
		return false, "no delete action"
	})
	eventually(t, "the Killing event", func() (bool, string) {
		got := h.eventMessages(t, "doomed")
		return hasAll(got, "Killing: Stopping container c0"), strings.Join(got, " | ")
	})
	eventually(t, "containers removed", func() (bool, string) {
		list, err := h.rt.ListContainers(context.Background(), "uid-doomed")
		return err == nil && len(list) == 0, ""
	})
}

func TestForceDeletedPodIsCleanedUp(t *testing.T) {
	h := startAgent(t, simRuntime(), nil)
	h.createPod(t, newPod("gone", corev1.RestartPolicyAlways, "nginx"))
	eventually(t, "pod Running", func() (bool, string) {
		p := h.getPod(t, "gone")
		return p.Status.Phase == corev1.PodRunning, string(p.Status.Phase)
	})
	if err := h.client.CoreV1().Pods("default").Delete(context.Background(), "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "containers removed", func() (bool, string) {
		list, err := h.rt.ListContainers(context.Background(), "uid-gone")
		return err == nil && len(list) == 0, ""
	})
}

func TestOrphanContainersRemovedAtStart(t *testing.T) {
	rt := simRuntime()
	ctx := context.Background()
	orphan := runtime.PodSpec{UID: "uid-orphan", Namespace: "default", Name: "orphan", RestartPolicy: "Always"}
	if _, err := rt.PullImage(ctx, "nginx"); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.StartPod(ctx, orphan); err != nil {
		t.Fatal(err)
	}
	id, err := rt.CreateContainer(ctx, orphan, runtime.ContainerSpec{Name: "c0", Image: "nginx"})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	startAgent(t, rt, nil)
	if list, err := rt.ListContainers(ctx, "uid-orphan"); err != nil || len(list) != 0 {
		t.Errorf("orphan containers after start = %v, %v; want none", list, err)
	}
}

func TestImagePullFailure(t *testing.T) {
	h := startAgent(t, failingPulls{simRuntime()}, nil)
	h.createPod(t, newPod("badimage", corev1.RestartPolicyAlways, "example.com/missing:1"))
	eventually(t, "ImagePullBackOff after ErrImagePull", func() (bool, string) {
		p := h.getPod(t, "badimage")
		if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Waiting == nil {
			return false, "no waiting state"
		}
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w.Reason == "ImagePullBackOff" && p.Status.Phase == corev1.PodPending, w.Reason
	})
	eventually(t, "pull failure events", func() (bool, string) {
		got := h.eventMessages(t, "badimage")
		return hasAll(got,
			`Pulling: Pulling image "example.com/missing:1"`,
			`Failed: Failed to pull image "example.com/missing:1": failed to pull and unpack image`,
			"Failed: Error: ErrImagePull",
			`BackOff: Back-off pulling image "example.com/missing:1"`,
			"Failed: Error: ImagePullBackOff",
		), strings.Join(got, " | ")
	})
}

func TestPodPhase(t *testing.T) {
	running := corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	ok := corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}}
	bad := corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}}
	waiting := corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}
	crashLoop := corev1.ContainerStatus{
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}},
	}
	tests := []struct {
		name        string
		policy      corev1.RestartPolicy
		statuses    []corev1.ContainerStatus
		terminating bool
		want        corev1.PodPhase
		init        []corev1.ContainerStatus
	}{
		{"init running", corev1.RestartPolicyAlways, []corev1.ContainerStatus{waiting}, false, corev1.PodPending, []corev1.ContainerStatus{ok, running}},
		{"init done", corev1.RestartPolicyAlways, []corev1.ContainerStatus{running}, false, corev1.PodRunning, []corev1.ContainerStatus{ok, ok}},
		{"init failed, never", corev1.RestartPolicyNever, []corev1.ContainerStatus{waiting}, false, corev1.PodFailed, []corev1.ContainerStatus{bad}},
		{"init crash loop, always", corev1.RestartPolicyAlways, []corev1.ContainerStatus{waiting}, false, corev1.PodPending, []corev1.ContainerStatus{crashLoop}},
		{"creating", corev1.RestartPolicyAlways, []corev1.ContainerStatus{waiting}, false, corev1.PodPending, nil},
		{"one waiting one running", corev1.RestartPolicyAlways, []corev1.ContainerStatus{running, waiting}, false, corev1.PodPending, nil},
		{"running", corev1.RestartPolicyAlways, []corev1.ContainerStatus{running, running}, false, corev1.PodRunning, nil},
		{"crash loop stays running", corev1.RestartPolicyAlways, []corev1.ContainerStatus{crashLoop}, false, corev1.PodRunning, nil},
		{"always exited", corev1.RestartPolicyAlways, []corev1.ContainerStatus{ok}, false, corev1.PodRunning, nil},
		{"never all succeeded", corev1.RestartPolicyNever, []corev1.ContainerStatus{ok, ok}, false, corev1.PodSucceeded, nil},
		{"never one failed", corev1.RestartPolicyNever, []corev1.ContainerStatus{ok, bad}, false, corev1.PodFailed, nil},
		{"on-failure restarting", corev1.RestartPolicyOnFailure, []corev1.ContainerStatus{bad}, false, corev1.PodRunning, nil},
		{"on-failure succeeded", corev1.RestartPolicyOnFailure, []corev1.ContainerStatus{ok}, false, corev1.PodSucceeded, nil},
		{"terminated by deletion cleanly", corev1.RestartPolicyAlways, []corev1.ContainerStatus{ok}, true, corev1.PodSucceeded, nil},
		{"terminated by deletion with error", corev1.RestartPolicyAlways, []corev1.ContainerStatus{bad}, true, corev1.PodFailed, nil},
		{"terminating still running", corev1.RestartPolicyAlways, []corev1.ContainerStatus{running}, true, corev1.PodRunning, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := podPhase(tc.policy, tc.init, tc.statuses, tc.terminating); got != tc.want {
				t.Errorf("podPhase = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestRestartPolicy(t *testing.T) {
	tests := []struct {
		policy   corev1.RestartPolicy
		exitCode int32
		restart  bool
	}{
		{corev1.RestartPolicyAlways, 0, true},
		{corev1.RestartPolicyAlways, 1, true},
		{corev1.RestartPolicyOnFailure, 0, false},
		{corev1.RestartPolicyOnFailure, 2, true},
		{corev1.RestartPolicyNever, 1, false},
	}
	for _, tc := range tests {
		t.Run(string(tc.policy), func(t *testing.T) {
			if got := shouldRestart(tc.policy, tc.exitCode); got != tc.restart {
				t.Errorf("shouldRestart(%s, %d) = %v", tc.policy, tc.exitCode, got)
			}
		})
	}
	delays := map[int]time.Duration{0: 0, 1: 10 * time.Second, 2: 20 * time.Second, 3: 40 * time.Second, 10: 5 * time.Minute}
	for attempt, want := range delays {
		if got := restartDelay(attempt); got != want {
			t.Errorf("restartDelay(%d) = %s, want %s", attempt, got, want)
		}
	}
}
