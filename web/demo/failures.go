package demo

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// The objects of the preemption, node-failure and crash-loop demos.
const (
	// PriorityClassName is the PriorityClass of the preemption demo's
	// important pod.
	PriorityClassName = "demo-high"
	// FailingNode is the node the node-failure demo registers and then
	// silences.
	FailingNode = "demo-node"
	// leaseNamespace holds the nodes' heartbeat Leases.
	leaseNamespace = "kube-node-lease"
	// heartbeatEvery is how often the node-failure demo renews its
	// node's Lease, as a kubelet does (every 10s by default).
	heartbeatEvery = 2 * time.Second
	// evictAfter is the tolerationSeconds of the node-failure demo's
	// pods for the not-ready and unreachable taints (Kubernetes'
	// DefaultTolerationSeconds admission gives 300).
	evictAfter = 10
)

func preemption() Demo {
	const low, high = "low-priority", "high-priority"
	var node string
	var cpu resource.Quantity
	return Demo{
		Name:  "preemption",
		Title: Text{"A high-priority pod preempts a low-priority one", "우선순위가 높은 Pod가 낮은 Pod를 선점한다"},
		Steps: []Step{
			{Say: Text{
				"Create a PriorityClass " + PriorityClassName + " with value 1000. Admission (Priority) turns a pod's priorityClassName into spec.priority; pods without one get 0.",
				"값이 1000인 PriorityClass " + PriorityClassName + "를 만듭니다. 어드미션(Priority)이 Pod의 priorityClassName을 spec.priority 숫자로 바꿉니다. 지정하지 않은 Pod는 0입니다.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				pc := &schedulingv1.PriorityClass{
					ObjectMeta:  metav1.ObjectMeta{Name: PriorityClassName, Labels: map[string]string{demoLabel: "preemption"}},
					Value:       1000,
					Description: "The preemption demo's important pods.",
				}
				created, err := env.Client.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{})
				if err != nil {
					return Text{}, err
				}
				env.remember("priorityclass.scheduling.k8s.io", created, env.Client.SchedulingV1().PriorityClasses().Delete, metav1.DeleteOptions{})
				return textf("priorityclass.scheduling.k8s.io/%s created (value 1000)", "PriorityClass를 만들었습니다: priorityclass.scheduling.k8s.io/%s (value 1000)", PriorityClassName), nil
			}},
			{Say: Text{
				"A pod of priority 0 takes all the CPU still free on one node (a nodeSelector pins it there). The node is now full.",
				"우선순위 0인 Pod가 한 노드에 남은 CPU를 모두 요청합니다(nodeSelector로 그 노드에 고정). 이제 노드가 가득 찼습니다.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				n, err := pickNode(ctx, env)
				if err != nil {
					return Text{}, err
				}
				node = n.Name
				if cpu, err = freeCPU(ctx, env, n); err != nil {
					return Text{}, err
				}
				if _, err := env.createPod(ctx, cpuPod(env, low, node, cpu, "")); err != nil {
					return Text{}, err
				}
				if _, err := waitPhase(ctx, env, low, corev1.PodRunning); err != nil {
					return Text{}, err
				}
				return textf("pod/%s Running on node %s, requesting cpu %s (all that was free)",
					"노드 %[2]s에서 실행 중입니다(Running): pod/%[1]s, CPU 요청 %[3]s (남아 있던 CPU 전부)", low, node, cpu.String()), nil
			}},
			{Say: Text{
				"A pod of class " + PriorityClassName + " asks for the same CPU on the same node. No node fits, so the scheduler's PostFilter plugin DefaultPreemption looks for lower-priority pods whose removal makes room: it marks the victim DisruptionTarget, records the Preempted event, deletes it and sets the new pod's status.nominatedNodeName.",
				"" + PriorityClassName + " 클래스의 Pod가 같은 노드에 같은 CPU를 요청합니다. 맞는 노드가 없으므로 스케줄러의 PostFilter 플러그인 DefaultPreemption이 자리를 만들 수 있는 낮은 우선순위 Pod를 찾습니다. 희생 Pod(victim)에 DisruptionTarget 조건을 달고 Preempted 이벤트를 남긴 뒤 삭제하고, 새 Pod의 status.nominatedNodeName을 설정합니다.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				p := cpuPod(env, high, node, cpu, PriorityClassName)
				created, err := env.createPod(ctx, p)
				if err != nil {
					return Text{}, err
				}
				want := fmt.Sprintf("Preempted by pod %s on node %s", created.UID, node)
				var nominated string
				err = until(ctx, env, textf("the scheduler to preempt pod %s", "스케줄러의 Pod %s 선점", low), func(ctx context.Context) (bool, error) {
					if p, err := env.Client.CoreV1().Pods(env.Namespace).Get(ctx, high, metav1.GetOptions{}); err == nil && p.Status.NominatedNodeName != "" {
						nominated = p.Status.NominatedNodeName
					}
					return hasEvent(ctx, env, low, "Preempted", want)
				})
				if err != nil {
					return Text{}, err
				}
				res := textf("pod/%s priority %d; event Preempted on pod/%s: %s", "pod/%s의 우선순위는 %d입니다. pod/%s에 Preempted 이벤트가 기록되었습니다: %s",
					high, ptr.Deref(created.Spec.Priority, 0), low, want)
				if nominated != "" {
					res.En += "; status.nominatedNodeName " + nominated
					res.Ko += ". 지명된 노드(status.nominatedNodeName): " + nominated
				}
				return res, nil
			}},
			{Say: Text{
				"Once the victim is gone, its CPU is free again: the next scheduling attempt binds the high-priority pod to the nominated node, and its node agent starts it.",
				"희생 Pod가 사라지면 CPU가 다시 비므로, 다음 스케줄링 시도에서 우선순위가 높은 Pod가 지명된 노드에 바인딩되고 노드 에이전트가 실행합니다.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				err := until(ctx, env, textf("pod %s to be gone", "Pod %s 삭제", low), func(ctx context.Context) (bool, error) {
					_, err := env.Client.CoreV1().Pods(env.Namespace).Get(ctx, low, metav1.GetOptions{})
					if apierrors.IsNotFound(err) {
						return true, nil
					}
					return false, err
				})
				if err != nil {
					return Text{}, err
				}
				p, err := waitPhase(ctx, env, high, corev1.PodRunning)
				if err != nil {
					return Text{}, err
				}
				if p.Spec.NodeName != node {
					return Text{}, wrongNode(env, high, p.Spec.NodeName, node)
				}
				return textf("pod/%s deleted; pod/%s bound to node %s and Running",
					"희생 Pod가 삭제되었습니다(pod/%[1]s). 노드 %[3]s에 바인딩되어 실행 중입니다(Running): pod/%[2]s", low, high, p.Spec.NodeName), nil
			}},
		},
	}
}

// freeCPU is node's allocatable CPU less what its pods request, as the
// scheduler's NodeResourcesFit counts it.
func freeCPU(ctx context.Context, env *Env, node *corev1.Node) (resource.Quantity, error) {
	free := node.Status.Allocatable.Cpu().DeepCopy()
	pods, err := env.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node.Name).String()})
	if err != nil {
		return free, err
	}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		free.Sub(podCPURequest(&p))
	}
	if free.MilliValue() < 100 {
		return free, env.errorf("node %s has only %s CPU free; the demo needs at least 100m", "노드 %s에 남은 CPU가 %s뿐입니다. 이 데모에는 최소 100m이 필요합니다", node.Name, free.String())
	}
	return free, nil
}

// podCPURequest is a pod's effective CPU request: the larger of its
// containers' sum and its largest init container, plus its overhead.
func podCPURequest(p *corev1.Pod) resource.Quantity {
	var sum resource.Quantity
	for _, c := range p.Spec.Containers {
		sum.Add(*c.Resources.Requests.Cpu())
	}
	for _, c := range p.Spec.InitContainers {
		if r := c.Resources.Requests.Cpu(); r.Cmp(sum) > 0 {
			sum = r.DeepCopy()
		}
	}
	if o, ok := p.Spec.Overhead[corev1.ResourceCPU]; ok {
		sum.Add(o)
	}
	return sum
}

// wrongNode is the failure of a pod that the scheduler put on another
// node than the demo expects.
func wrongNode(env *Env, pod, node, want string) error {
	return env.errorf("pod %s went to node %s, not %s", "예상과 다른 노드에 배치되었습니다: Pod %s, 노드 %s (예상한 노드 %s)", pod, node, want)
}

func cpuPod(env *Env, name, node string, cpu resource.Quantity, class string) *corev1.Pod {
	c := container("app")
	c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: cpu}
	return &corev1.Pod{ObjectMeta: meta(env, name, "preemption"), Spec: corev1.PodSpec{
		Containers:                    []corev1.Container{c},
		NodeSelector:                  map[string]string{corev1.LabelHostname: node},
		PriorityClassName:             class,
		TerminationGracePeriodSeconds: ptr.To[int64](1),
	}}
}

// hasEvent reports whether the pod name has an event of reason with
// message.
func hasEvent(ctx context.Context, env *Env, name, reason, message string) (bool, error) {
	sel := fields.AndSelectors(fields.OneTermEqualSelector("involvedObject.name", name), fields.OneTermEqualSelector("reason", reason))
	evs, err := env.Client.CoreV1().Events(env.Namespace).List(ctx, metav1.ListOptions{FieldSelector: sel.String()})
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(evs.Items, func(e corev1.Event) bool { return e.Message == message }), nil
}

func nodeFailure() Demo {
	const name = "web"
	replicas := int32(2)
	var hb heartbeat
	var onFailing []string
	// bound are the pods first bound to the failing node, by name; the
	// cleanup removes them by force once evicted.
	bound := map[string]types.UID{}
	return Demo{
		Name:  "node-failure",
		Title: Text{"A node stops answering: its pods are evicted and replaced", "노드가 응답을 멈추면: Pod가 축출되고 다른 노드에 다시 만들어진다"},
		Steps: []Step{
			{Say: Text{
				"Register node " + FailingNode + ". No machine stands behind it: the demo plays its node agent, posting a Ready status and renewing its Lease in kube-node-lease every few seconds, which is the heartbeat the node lifecycle controller watches. A taint keeps other pods off it.",
				"노드 " + FailingNode + "를 등록합니다. 실제 머신은 없고, 데모가 노드 에이전트 역할을 맡아 Ready 상태를 보고하고 kube-node-lease의 Lease를 몇 초마다 갱신합니다. 노드 라이프사이클 컨트롤러가 지켜보는 하트비트가 바로 이것입니다. 다른 Pod가 오지 않도록 taint를 겁니다.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				if err := registerNode(ctx, env); err != nil {
					return Text{}, err
				}
				hb.start(ctx, env)
				return textf("node/%[1]s registered, Ready; lease %[2]s/%[1]s renewed every %[3]s",
					"노드를 등록했습니다: node/%[1]s, Ready. Lease %[2]s/%[1]s를 %[3]s마다 갱신합니다", FailingNode, leaseNamespace, heartbeatEvery), nil
			}},
			{Say: Text{
				fmt.Sprintf("Create a Deployment of %d replicas that prefers %s (node affinity) and tolerates the node.kubernetes.io/unreachable and not-ready NoExecute taints for %d seconds only (the default is 300). The scheduler binds both pods to %s; with no real agent they never start.", replicas, FailingNode, evictAfter, FailingNode),
				fmt.Sprintf("복제본 %d개짜리 Deployment를 만듭니다. %s를 선호(node affinity)하고, node.kubernetes.io/unreachable과 not-ready NoExecute taint를 %d초만 용인합니다(기본값은 300초). 스케줄러가 두 Pod를 %s에 바인딩하지만, 실제 에이전트가 없으므로 시작되지는 않습니다.", replicas, FailingNode, evictAfter, FailingNode),
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				if _, err := env.createDeployment(ctx, failoverDeployment(env, name, replicas)); err != nil {
					return Text{}, err
				}
				err := until(ctx, env, textf("%d pods bound to %s", "Pod %d개의 %s 바인딩", replicas, FailingNode), func(ctx context.Context) (bool, error) {
					pods, err := env.Client.CoreV1().Pods(env.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
					if err != nil {
						return false, err
					}
					onFailing = onFailing[:0]
					for _, p := range pods.Items {
						if p.Spec.NodeName != "" && p.Spec.NodeName != FailingNode {
							return false, wrongNode(env, p.Name, p.Spec.NodeName, FailingNode)
						}
						if p.Spec.NodeName == FailingNode {
							onFailing = append(onFailing, p.Name)
							bound[p.Name] = p.UID
						}
					}
					return len(onFailing) == int(replicas), nil
				})
				if err != nil {
					return Text{}, err
				}
				slices.Sort(onFailing)
				return textf("deployment.apps/%s created; pods %s bound to node %s",
					"Deployment를 만들었습니다: deployment.apps/%[1]s. 노드 %[3]s에 바인딩된 Pod: %[2]s", name, strings.Join(onFailing, ", "), FailingNode), nil
			}},
			{Say: Text{
				"The node goes silent, as when its machine loses power: no more Lease renewals. After --node-monitor-grace-period (40s by default) the node lifecycle controller sets its conditions to Unknown (\"Kubelet stopped posting node status.\") and taints it node.kubernetes.io/unreachable, NoSchedule and NoExecute.",
				"전원이 끊긴 것처럼 노드가 조용해집니다. Lease 갱신이 멈춥니다. --node-monitor-grace-period(기본 40초)가 지나면 노드 라이프사이클 컨트롤러가 노드 상태를 Unknown(\"Kubelet stopped posting node status.\")으로 바꾸고 node.kubernetes.io/unreachable taint(NoSchedule, NoExecute)를 겁니다.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				hb.stop()
				var reason string
				err := until(ctx, env, textf("node %s to be unreachable", "노드 %s의 unreachable 판정", FailingNode), func(ctx context.Context) (bool, error) {
					n, err := env.Client.CoreV1().Nodes().Get(ctx, FailingNode, metav1.GetOptions{})
					if err != nil {
						return false, err
					}
					unknown := false
					for _, c := range n.Status.Conditions {
						if c.Type == corev1.NodeReady && c.Status == corev1.ConditionUnknown {
							unknown, reason = true, c.Reason+": "+c.Message
						}
					}
					return unknown && slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
						return t.Key == corev1.TaintNodeUnreachable && t.Effect == corev1.TaintEffectNoExecute
					}), nil
				})
				if err != nil {
					return Text{}, err
				}
				return textf("node/%s Ready=Unknown (%s); taint %s:NoExecute",
					"노드가 응답하지 않는 것으로 판정되었습니다: node/%s Ready=Unknown (%s), taint %s:NoExecute", FailingNode, reason, corev1.TaintNodeUnreachable), nil
			}},
			{Say: Text{
				fmt.Sprintf("The pods tolerate the taint for %d seconds. Then the controller's taint eviction deletes them (event TaintManagerEviction); the ReplicaSet sees too few pods and creates replacements, which the scheduler puts on the nodes that are still alive. The evicted pods stay Terminating until the node comes back or is deleted, as in Kubernetes.", evictAfter),
				fmt.Sprintf("Pod는 taint를 %d초 동안 용인합니다. 그 뒤 컨트롤러의 taint 축출이 Pod를 삭제하고(TaintManagerEviction 이벤트), ReplicaSet은 Pod가 부족한 것을 보고 새 Pod를 만들며, 스케줄러가 살아 있는 노드에 배치합니다. 축출된 Pod는 Kubernetes와 마찬가지로 노드가 돌아오거나 삭제될 때까지 Terminating으로 남습니다.", evictAfter),
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				var evicted []string
				var where []Text
				err := until(ctx, env, Text{"the pods to be evicted and replaced", "Pod 축출과 교체"}, func(ctx context.Context) (bool, error) {
					pods, err := env.Client.CoreV1().Pods(env.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
					if err != nil {
						return false, err
					}
					evicted, where = evicted[:0], where[:0]
					for _, p := range pods.Items {
						switch {
						case slices.Contains(onFailing, p.Name):
							if p.DeletionTimestamp == nil {
								return false, nil
							}
							ok, err := hasEvent(ctx, env, p.Name, "TaintManagerEviction", "Marking for deletion Pod "+p.Namespace+"/"+p.Name)
							if !ok || err != nil {
								return false, err
							}
							evicted = append(evicted, p.Name)
						case p.DeletionTimestamp == nil && p.Spec.NodeName != "" && p.Spec.NodeName != FailingNode && p.Status.Phase == corev1.PodRunning:
							where = append(where, textf("%s on %s", "%s (노드 %s)", p.Name, p.Spec.NodeName))
						}
					}
					return len(evicted) == len(onFailing) && len(where) == int(replicas), nil
				})
				if err != nil {
					return Text{}, err
				}
				slices.Sort(evicted)
				slices.SortFunc(where, func(a, b Text) int { return strings.Compare(a.En, b.En) })
				var placedEn, placedKo []string
				for _, w := range where {
					placedEn, placedKo = append(placedEn, w.En), append(placedKo, w.Ko)
				}
				return Text{
					fmt.Sprintf("evicted (TaintManagerEviction): %s; replacements Running: %s", strings.Join(evicted, ", "), strings.Join(placedEn, ", ")),
					fmt.Sprintf("축출된 Pod(TaintManagerEviction): %s. 다른 노드에서 실행 중인(Running) 대체 Pod: %s", strings.Join(evicted, ", "), strings.Join(placedKo, ", ")),
				}, nil
			}},
		},
		// The Deployment, the node and its Lease go with what the run
		// created (not another run's node, which a second presenter may
		// be playing).
		Cleanup: func(ctx context.Context, env *Env) {
			hb.stop()
			// The evicted pods wait for an agent that will not come:
			// remove them the way the pod garbage collector does for a
			// deleted node, by force.
			for name, uid := range bound {
				_ = ignoreNotFound(env.Client.CoreV1().Pods(env.Namespace).Delete(ctx, name, metav1.DeleteOptions{
					GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &uid},
				}))
			}
		},
	}
}

// heartbeat renews the failing node's Lease until stopped.
type heartbeat struct {
	mu     sync.Mutex // guards cancel
	cancel context.CancelFunc
	done   chan struct{}
}

func (h *heartbeat) start(ctx context.Context, env *Env) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ctx, h.cancel = context.WithCancel(ctx)
	h.done = make(chan struct{})
	go func() {
		defer close(h.done)
		t := time.NewTicker(heartbeatEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			l, err := env.Client.CoordinationV1().Leases(leaseNamespace).Get(ctx, FailingNode, metav1.GetOptions{})
			if err != nil {
				continue
			}
			l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
			_, _ = env.Client.CoordinationV1().Leases(leaseNamespace).Update(ctx, l, metav1.UpdateOptions{})
		}
	}()
}

// stop ends the renewals and waits for the last one to finish.
func (h *heartbeat) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cancel == nil {
		return
	}
	h.cancel()
	<-h.done
	h.cancel = nil
}

// registerNode creates the failing node, Ready, with its Lease, as a node
// agent registers, and remembers both for the cleanup.
func registerNode(ctx context.Context, env *Env) error {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("4"),
		corev1.ResourceMemory: resource.MustParse("16Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: FailingNode, Labels: map[string]string{
			demoLabel: "node-failure", corev1.LabelHostname: FailingNode, corev1.LabelOSStable: "linux",
		}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: TaintKey, Value: "node-failure", Effect: corev1.TaintEffectNoSchedule}}},
	}
	created, err := env.Client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	env.remember("node", created, env.Client.CoreV1().Nodes().Delete, metav1.DeleteOptions{})
	now := metav1.Now()
	created.Status = corev1.NodeStatus{
		Capacity: capacity, Allocatable: capacity,
		Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status",
			LastHeartbeatTime: now, LastTransitionTime: now,
		}},
	}
	if _, err := env.Client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return err
	}
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: FailingNode, Namespace: leaseNamespace,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: FailingNode, UID: created.UID}}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(FailingNode), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &metav1.MicroTime{Time: time.Now()}},
	}
	leases := env.Client.CoordinationV1().Leases(leaseNamespace)
	createdLease, err := leases.Create(ctx, lease, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	env.remember("lease.coordination.k8s.io", createdLease, leases.Delete, metav1.DeleteOptions{})
	return nil
}

func failoverDeployment(env *Env, name string, replicas int32) *appsv1.Deployment {
	tolerate := func(key string) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](evictAfter)}
	}
	return &appsv1.Deployment{ObjectMeta: meta(env, name, "node-failure"), Spec: appsv1.DeploymentSpec{
		Replicas: &replicas,
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name, demoLabel: "node-failure"}},
			Spec: corev1.PodSpec{
				Containers:                    []corev1.Container{container(name)},
				TerminationGracePeriodSeconds: ptr.To[int64](1),
				Tolerations: []corev1.Toleration{
					{Key: TaintKey, Operator: corev1.TolerationOpEqual, Value: "node-failure", Effect: corev1.TaintEffectNoSchedule},
					tolerate(corev1.TaintNodeUnreachable),
					tolerate(corev1.TaintNodeNotReady),
				},
				Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
					PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
						Weight: 100,
						Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
							Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{FailingNode},
						}}},
					}},
				}},
			},
		},
	}}
}

func crashLoop() Demo {
	const name = "crasher"
	var uid types.UID
	return Demo{
		Name:  "crash-loop",
		Title: Text{"A container that keeps crashing: CrashLoopBackOff", "계속 죽는 컨테이너: CrashLoopBackOff"},
		Steps: []Step{
			{Say: Text{
				"Create a pod whose container runs sh -c 'echo starting; exit 1': it fails as soon as it starts. restartPolicy is Always (the default), so the node agent will restart it.",
				"컨테이너가 sh -c 'echo starting; exit 1'을 실행하는 Pod를 만듭니다. 시작하자마자 실패합니다. restartPolicy가 Always(기본값)이므로 노드 에이전트가 다시 시작합니다.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				c := container(name)
				c.Command = []string{"sh", "-c", "echo starting; exit 1"}
				p := &corev1.Pod{ObjectMeta: meta(env, name, "crash-loop"), Spec: corev1.PodSpec{Containers: []corev1.Container{c}, TerminationGracePeriodSeconds: ptr.To[int64](1)}}
				created, err := env.createPod(ctx, p)
				if err != nil {
					return Text{}, err
				}
				uid = created.UID
				return textf("pod/%s created", "Pod를 만들었습니다: pod/%s", name), nil
			}},
			{Say: Text{
				"The container exits with code 1 (reason Error). The node agent restarts it and counts: status.containerStatuses[].restartCount goes up, and lastState keeps how the previous run ended.",
				"컨테이너가 종료 코드 1(reason Error)로 끝납니다. 노드 에이전트가 다시 시작하며 횟수를 셉니다. status.containerStatuses[].restartCount가 올라가고, lastState에 이전 실행이 어떻게 끝났는지 남습니다.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				var st corev1.ContainerStatus
				var node string
				err := until(ctx, env, textf("container %s to be restarted", "컨테이너 %s 재시작", name), func(ctx context.Context) (bool, error) {
					var err error
					node, st, err = containerStatus(ctx, env, name)
					return err == nil && st.RestartCount >= 1 && st.LastTerminationState.Terminated != nil, err
				})
				if err != nil {
					return Text{}, err
				}
				t := st.LastTerminationState.Terminated
				return textf("container %s on node %s exited with code %d (%s); restartCount %d",
					"컨테이너가 종료되었고 노드 에이전트가 다시 시작했습니다: 노드 %[2]s의 컨테이너 %[1]s, 종료 코드 %[3]d (%[4]s), restartCount %[5]d",
					name, node, t.ExitCode, t.Reason, st.RestartCount), nil
			}},
			{Say: Text{
				"Each restart waits twice as long as the one before (10s, 20s, 40s ... up to 5 minutes). While it waits the container is Waiting with reason CrashLoopBackOff, the BackOff event says \"Back-off restarting failed container\", and kubectl get pods shows CrashLoopBackOff.",
				"재시작할 때마다 대기 시간이 두 배로 늘어납니다(10초, 20초, 40초 ... 최대 5분). 기다리는 동안 컨테이너는 CrashLoopBackOff 이유로 Waiting 상태이고, BackOff 이벤트에는 \"Back-off restarting failed container\"가 남으며, kubectl get pods에는 CrashLoopBackOff가 보입니다.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				var st corev1.ContainerStatus
				err := until(ctx, env, textf("container %s to be in CrashLoopBackOff", "컨테이너 %s의 CrashLoopBackOff 진입", name), func(ctx context.Context) (bool, error) {
					var err error
					_, st, err = containerStatus(ctx, env, name)
					return err == nil && st.State.Waiting != nil && st.State.Waiting.Reason == "CrashLoopBackOff", err
				})
				if err != nil {
					return Text{}, err
				}
				return textf("pod/%s CrashLoopBackOff: %s (restartCount %d)",
					"재시작 전 대기(back-off) 중입니다: pod/%[1]s CrashLoopBackOff: %[2]s (restartCount %[3]d)", name, st.State.Waiting.Message, st.RestartCount), nil
			}},
			{Say: Text{
				"Delete the pod. A crash loop does not fix itself: the cure is a new pod spec (a Deployment rollout) that does not exit.",
				"Pod를 삭제합니다. 크래시 루프는 저절로 낫지 않습니다. 종료하지 않는 새 Pod 스펙(Deployment 롤아웃)이 해결책입니다.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				return deletePodAndWait(ctx, env, name, uid)
			}},
		},
	}
}

// containerStatus returns the node of pod name and the status of its
// container of the same name.
func containerStatus(ctx context.Context, env *Env, name string) (string, corev1.ContainerStatus, error) {
	p, err := env.Client.CoreV1().Pods(env.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", corev1.ContainerStatus{}, err
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == name {
			return p.Spec.NodeName, s, nil
		}
	}
	return p.Spec.NodeName, corev1.ContainerStatus{}, nil
}
