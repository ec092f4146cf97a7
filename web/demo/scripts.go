package demo

import (
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// Image is the image the demos run: Glassplane's built-in demo image (the
// seed notes use nginx, which a machine without a registry cannot pull).
const Image = "glassplane.local/hello:latest"

// demoLabel marks everything a demo creates.
const demoLabel = "glassplane.io/demo"

// TaintKey is the taint the toleration demo puts on a node.
const TaintKey = "glassplane.io/demo"

// DemoUser is the user the RBAC demo acts as.
const DemoUser = "student"

// All lists the demos in the order a class meets them.
func All() []Demo {
	return []Demo{podLifecycle(), deploymentRollout(), statefulSet(), cronJob(), autoscale(), unschedulable(), toleration(), preemption(), crashLoop(), nodeFailure(), rbacDenied(), serviceDNS(), customResource()}
}

func meta(env *Env, name, demo string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: env.Namespace, Labels: map[string]string{demoLabel: demo}}
}

func container(name string) corev1.Container {
	return corev1.Container{Name: name, Image: Image}
}

func podLifecycle() Demo {
	const name = "mypod"
	var node string
	var uid types.UID
	return Demo{
		Name:  "pod-lifecycle",
		Title: Text{"The seed notes' pod, from kubectl apply to Running", "스터디 노트의 Pod: kubectl apply부터 Running까지"},
		Steps: []Step{
			{Say: Text{
				"kubectl apply -f pod.yaml: the manifest goes to kube-apiserver, which authenticates you, asks RBAC, runs admission (defaults, validation) and writes the pod to etcd under /registry/pods/<namespace>/mypod. The pod is Pending, with no node.",
				"kubectl apply -f pod.yaml: 매니페스트가 kube-apiserver로 전송됩니다. API 서버는 인증, RBAC 인가, 어드미션(기본값, 검증)을 거쳐 Pod를 etcd의 /registry/pods/<namespace>/mypod 키에 저장합니다. 아직 노드가 없으므로 Pending 상태입니다.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				p := &corev1.Pod{ObjectMeta: meta(env, name, "pod-lifecycle"), Spec: corev1.PodSpec{Containers: []corev1.Container{container("mycontainer")}}}
				p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80}}
				got, err := env.createPod(ctx, p)
				if err != nil {
					return Text{}, err
				}
				uid = got.UID
				return textf("pod/%s created: etcd key /registry/pods/%s/%s, resourceVersion %s, phase %s",
					"Pod를 만들었습니다: pod/%s, etcd 키 /registry/pods/%s/%s, resourceVersion %s, phase %s",
					name, env.Namespace, name, got.ResourceVersion, got.Status.Phase), nil
			}},
			{Say: Text{
				"kube-scheduler watches for pods without a node. It filters the nodes (resources, taints, affinity), scores the ones left and binds the pod to the best: a write of spec.nodeName through the API server.",
				"kube-scheduler는 노드가 정해지지 않은 Pod를 watch로 감지합니다. 노드를 필터링(리소스, taint, affinity)하고 남은 노드에 점수를 매긴 뒤, 가장 좋은 노드에 바인딩합니다. 이것도 API 서버를 통해 spec.nodeName을 기록하는 것입니다.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				err := until(ctx, env, Text{"the pod to be scheduled", "Pod 스케줄링"}, func(ctx context.Context) (bool, error) {
					p, err := env.Client.CoreV1().Pods(env.Namespace).Get(ctx, name, metav1.GetOptions{})
					if err != nil {
						return false, err
					}
					node = p.Spec.NodeName
					return node != "", nil
				})
				if err != nil {
					return Text{}, err
				}
				return textf("pod/%s bound to node %s (event Scheduled)", "노드 %[2]s에 바인딩되었습니다: pod/%[1]s (Scheduled 이벤트)", name, node), nil
			}},
			{Say: Text{
				"The node agent (kubelet) of that node sees, in its own watch, a pod bound to it. It asks the container runtime (containerd) to pull the image, create and start the container, then reports the status back to the API server: Running.",
				"해당 노드의 노드 에이전트(kubelet)는 자신의 watch로 자기에게 바인딩된 Pod를 감지합니다. 컨테이너 런타임(containerd)에 이미지 pull, 컨테이너 생성과 시작을 요청하고, 상태를 다시 API 서버에 보고합니다: Running.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				p, err := waitPhase(ctx, env, name, corev1.PodRunning)
				if err != nil {
					return Text{}, err
				}
				return textf("pod/%s Running on %s, pod IP %s", "노드 %[2]s에서 실행 중입니다(Running): pod/%[1]s, Pod IP %[3]s", name, p.Spec.NodeName, p.Status.PodIP), nil
			}},
			{Say: Text{
				"kubectl delete pod mypod: the API server sets a deletion timestamp, the node agent stops the container and confirms, and the key disappears from etcd.",
				"kubectl delete pod mypod: API 서버가 삭제 시각을 기록하고, 노드 에이전트가 컨테이너를 멈춘 뒤 확인하면 etcd에서 키가 사라집니다.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				return deletePodAndWait(ctx, env, name, uid)
			}},
		},
	}
}

func deploymentRollout() Demo {
	const name = "hello"
	replicas := int32(3)
	var uid types.UID
	return Demo{
		Name:  "deployment-rollout",
		Title: Text{"A Deployment of 3 and a rolling update", "Deployment(3개 복제본)와 롤링 업데이트"},
		Steps: []Step{
			{Say: Text{
				"Create a Deployment with 3 replicas. The deployment controller creates a ReplicaSet named after the pod template's hash; the replicaset controller creates 3 Pods; the scheduler and the node agents do the rest. Every hop goes through the API server.",
				"복제본 3개짜리 Deployment를 만듭니다. deployment 컨트롤러가 Pod 템플릿 해시로 이름 붙인 ReplicaSet을 만들고, replicaset 컨트롤러가 Pod 3개를 만들며, 나머지는 스케줄러와 노드 에이전트가 처리합니다. 모든 단계가 API 서버를 거칩니다.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				d := &appsv1.Deployment{ObjectMeta: meta(env, name, "deployment-rollout"), Spec: appsv1.DeploymentSpec{
					Replicas: &replicas,
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name, demoLabel: "deployment-rollout"}},
						Spec:       corev1.PodSpec{Containers: []corev1.Container{withEnv(container(name), "1")}},
					},
				}}
				created, err := env.createDeployment(ctx, d)
				if err != nil {
					return Text{}, err
				}
				uid = created.UID
				return waitRolledOut(ctx, env, name, replicas)
			}},
			{Say: Text{
				"Change the pod template (an environment variable VERSION=2). The deployment controller makes a second ReplicaSet and shifts the replicas over a few at a time (maxSurge 25%, maxUnavailable 25%), so the app never goes down.",
				"Pod 템플릿을 바꿉니다(환경 변수 VERSION=2). deployment 컨트롤러가 두 번째 ReplicaSet을 만들고 복제본을 조금씩 옮깁니다(maxSurge 25%, maxUnavailable 25%). 그래서 서비스가 멈추지 않습니다.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":%q,"env":[{"name":"VERSION","value":"2"}]}]}}}}`, name)
				if _, err := env.Client.AppsV1().Deployments(env.Namespace).Patch(ctx, name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
					return Text{}, err
				}
				return waitRolledOut(ctx, env, name, replicas)
			}},
			{Say: Text{
				"Delete the Deployment. The garbage collector follows the owner references: the ReplicaSets, then their Pods, are deleted after it.",
				"Deployment를 삭제합니다. 가비지 컬렉터가 ownerReference를 따라 ReplicaSet과 그 Pod들을 차례로 삭제합니다.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				if err := env.Client.AppsV1().Deployments(env.Namespace).Delete(ctx, name, metav1.DeleteOptions{
					PropagationPolicy: ptr.To(metav1.DeletePropagationBackground), Preconditions: &metav1.Preconditions{UID: &uid},
				}); err != nil {
					return Text{}, err
				}
				err := until(ctx, env, Text{"the Deployment's pods to be gone", "Deployment의 Pod 삭제"}, func(ctx context.Context) (bool, error) {
					pods, err := env.Client.CoreV1().Pods(env.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
					return err == nil && len(pods.Items) == 0, err
				})
				if err != nil {
					return Text{}, err
				}
				return textf("deployment.apps/%s deleted; its ReplicaSets and Pods followed",
					"Deployment를 삭제했고, 그 ReplicaSet과 Pod도 뒤따라 삭제되었습니다: deployment.apps/%s", name), nil
			}},
		},
	}
}

func withEnv(c corev1.Container, version string) corev1.Container {
	c.Env = []corev1.EnvVar{{Name: "VERSION", Value: version}}
	return c
}

// waitRolledOut waits as `kubectl rollout status` does and describes the
// ReplicaSets.
func waitRolledOut(ctx context.Context, env *Env, name string, replicas int32) (Text, error) {
	err := until(ctx, env, Text{"the rollout to finish", "롤아웃 완료"}, func(ctx context.Context) (bool, error) {
		d, err := env.Client.AppsV1().Deployments(env.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := d.Status
		return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == replicas && s.Replicas == replicas && s.AvailableReplicas == replicas, nil
	})
	if err != nil {
		return Text{}, err
	}
	rss, err := env.Client.AppsV1().ReplicaSets(env.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		return Text{}, err
	}
	slices.SortFunc(rss.Items, func(a, b appsv1.ReplicaSet) int { return strings.Compare(a.Name, b.Name) })
	var en, ko []string
	for _, rs := range rss.Items {
		t := textf("replicaset %s: %d/%d ready", "replicaset %s: %d/%d 준비됨", rs.Name, rs.Status.ReadyReplicas, ptr.Deref(rs.Spec.Replicas, 0))
		en, ko = append(en, t.En), append(ko, t.Ko)
	}
	return Text{
		fmt.Sprintf("deployment.apps/%s successfully rolled out (%s)", name, strings.Join(en, ", ")),
		fmt.Sprintf("롤아웃이 끝났습니다: deployment.apps/%s (%s)", name, strings.Join(ko, ", ")),
	}, nil
}

func unschedulable() Demo {
	const name = "toobig"
	return Demo{
		Name:  "unschedulable",
		Title: Text{"A pod that will not fit", "어느 노드에도 들어가지 않는 Pod"},
		Steps: []Step{
			{Say: Text{
				"Create a pod that requests 1000 CPUs. The API server accepts it: whether it fits is the scheduler's question, not admission's.",
				"CPU 1000개를 요청하는 Pod를 만듭니다. API 서버는 받아들입니다. 들어갈 자리가 있는지는 어드미션이 아니라 스케줄러가 판단합니다.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				c := container("big")
				c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000")}
				p := &corev1.Pod{ObjectMeta: meta(env, name, "unschedulable"), Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}
				if _, err := env.createPod(ctx, p); err != nil {
					return Text{}, err
				}
				return textf("pod/%s created, Pending", "Pod를 만들었습니다: pod/%s (Pending)", name), nil
			}},
			{Say: Text{
				"The scheduler's NodeResourcesFit filter rejects every node. It records FailedScheduling with the reason per node and sets the PodScheduled condition to False; the pod waits in the unschedulable queue until the cluster changes.",
				"스케줄러의 NodeResourcesFit 필터가 모든 노드를 거절합니다. 노드별 이유와 함께 FailedScheduling 이벤트를 남기고 PodScheduled 조건을 False로 설정합니다. Pod는 클러스터가 바뀔 때까지 unschedulable 큐에서 기다립니다.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				return waitUnschedulable(ctx, env, name)
			}},
		},
	}
}

func toleration() Demo {
	var node string
	return Demo{
		Name:  "toleration",
		Title: Text{"A taint keeps pods away; a toleration lets one in", "taint는 Pod를 막고, toleration은 들여보낸다"},
		Steps: []Step{
			{Say: Text{
				"Taint a node with " + TaintKey + "=classroom:NoSchedule: from now on the scheduler places there only pods that tolerate it.",
				"노드에 " + TaintKey + "=classroom:NoSchedule taint를 겁니다. 이제 스케줄러는 이 taint를 용인(toleration)하는 Pod만 그 노드에 배치합니다.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				n, err := pickNode(ctx, env)
				if err != nil {
					return Text{}, err
				}
				node = n.Name
				n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: TaintKey, Value: "classroom", Effect: corev1.TaintEffectNoSchedule})
				if _, err := env.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
					return Text{}, err
				}
				return textf("node/%s tainted", "노드에 taint를 걸었습니다: node/%s", node), nil
			}},
			{Say: Text{
				"A pod that must run on that node (nodeSelector kubernetes.io/hostname) but has no toleration: the TaintToleration filter rejects the node, so the pod stays Pending.",
				"그 노드에서만 실행되어야 하지만(nodeSelector kubernetes.io/hostname) toleration이 없는 Pod: TaintToleration 필터가 노드를 거절하므로 Pod는 Pending으로 남습니다.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				p := pinnedPod(env, "no-toleration", node, false)
				if _, err := env.createPod(ctx, p); err != nil {
					return Text{}, err
				}
				return waitUnschedulable(ctx, env, p.Name)
			}},
			{Say: Text{
				"The same pod with a toleration for the taint: the filter passes and the scheduler binds it to the tainted node.",
				"같은 Pod에 taint에 대한 toleration을 추가하면 필터를 통과하고, 스케줄러가 taint가 걸린 노드에 바인딩합니다.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				p := pinnedPod(env, "with-toleration", node, true)
				if _, err := env.createPod(ctx, p); err != nil {
					return Text{}, err
				}
				var bound string
				err := until(ctx, env, Text{"the tolerating pod to be scheduled", "toleration이 있는 Pod의 스케줄링"}, func(ctx context.Context) (bool, error) {
					got, err := env.Client.CoreV1().Pods(env.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
					if err != nil {
						return false, err
					}
					bound = got.Spec.NodeName
					return bound != "", nil
				})
				if err != nil {
					return Text{}, err
				}
				return textf("pod/%s bound to node %s", "taint가 걸린 노드 %[2]s에 바인딩되었습니다: pod/%[1]s", p.Name, bound), nil
			}},
		},
		// The pods go with what the run created; the taint is the demo's
		// own key.
		Cleanup: func(ctx context.Context, env *Env) {
			if node == "" {
				return
			}
			n, err := env.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			if err != nil {
				return
			}
			n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == TaintKey })
			_, _ = env.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		},
	}
}

// pickNode returns a Ready, schedulable node, preferring simulated ones so a
// real node's containers are left alone. It waits for one while the
// cluster's nodes are still starting.
func pickNode(ctx context.Context, env *Env) (*corev1.Node, error) {
	var ready []*corev1.Node
	err := until(ctx, env, Text{"a Ready, schedulable node", "스케줄 가능한 Ready 노드 찾기"}, func(ctx context.Context) (bool, error) {
		nodes, err := env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		ready = ready[:0]
		for i := range nodes.Items {
			n := &nodes.Items[i]
			if n.Spec.Unschedulable || n.Labels[demoLabel] != "" {
				continue
			}
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					ready = append(ready, n)
				}
			}
		}
		return len(ready) > 0, nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(ready, func(a, b *corev1.Node) int {
		as, bs := strings.HasPrefix(a.Name, "sim-"), strings.HasPrefix(b.Name, "sim-")
		if as != bs {
			if as {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return ready[0], nil
}

func pinnedPod(env *Env, name, node string, tolerate bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: meta(env, name, "toleration"), Spec: corev1.PodSpec{
		Containers:   []corev1.Container{container("app")},
		NodeSelector: map[string]string{corev1.LabelHostname: node},
	}}
	if tolerate {
		p.Spec.Tolerations = []corev1.Toleration{{Key: TaintKey, Operator: corev1.TolerationOpEqual, Value: "classroom", Effect: corev1.TaintEffectNoSchedule}}
	}
	return p
}

func rbacDenied() Demo {
	const pod, binding = "student-pod", "student-edit"
	return Demo{
		Name:  "rbac-denied",
		Title: Text{"RBAC: denied, then allowed", "RBAC: 거부된 뒤 허용되기까지"},
		Steps: []Step{
			{Say: Text{
				"User " + DemoUser + " (authenticated, but with no role) asks to create a pod. Authentication passes; authorization finds no RoleBinding that allows it and answers 403 Forbidden. Nothing reaches admission or etcd.",
				"사용자 " + DemoUser + "(인증은 되었지만 역할이 없음)가 Pod 생성을 요청합니다. 인증은 통과하지만, 인가 단계에서 허용하는 RoleBinding을 찾지 못해 403 Forbidden을 돌려줍니다. 어드미션과 etcd까지 가지 않습니다.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				as, err := asUser(env, DemoUser)
				if err != nil {
					return Text{}, err
				}
				_, err = as.CoreV1().Pods(env.Namespace).Create(ctx, studentPod(env, pod), metav1.CreateOptions{})
				if !apierrors.IsForbidden(err) {
					return Text{}, env.errorf("expected Forbidden for %s, got %v", "사용자 %s의 요청은 Forbidden으로 거부되어야 하는데, 결과가 달랐습니다: %v", DemoUser, err)
				}
				return textf("Error from server (Forbidden): %s", "예상대로 거부되었습니다. Error from server (Forbidden): %s", err), nil
			}},
			{Say: Text{
				"Bind the ClusterRole edit to " + DemoUser + " in this namespace (a RoleBinding). The API server's RBAC cache sees the new binding through its watch.",
				"이 네임스페이스에서 " + DemoUser + "에게 ClusterRole edit를 바인딩합니다(RoleBinding). API 서버의 RBAC 캐시는 watch로 새 바인딩을 알게 됩니다.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				rb := &rbacv1.RoleBinding{
					ObjectMeta: meta(env, binding, "rbac-denied"),
					RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
					Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: DemoUser}},
				}
				created, err := env.Client.RbacV1().RoleBindings(env.Namespace).Create(ctx, rb, metav1.CreateOptions{})
				if err != nil {
					return Text{}, err
				}
				env.remember("rolebinding.rbac.authorization.k8s.io", created, env.Client.RbacV1().RoleBindings(env.Namespace).Delete, metav1.DeleteOptions{})
				return textf("rolebinding.rbac.authorization.k8s.io/%s created", "RoleBinding을 만들었습니다: rolebinding.rbac.authorization.k8s.io/%s", binding), nil
			}},
			{Say: Text{
				"The same request again: authorization now finds the RoleBinding and allows it; admission and the etcd write follow as for anyone.",
				"같은 요청을 다시 보냅니다. 이제 인가 단계에서 RoleBinding을 찾아 허용하고, 이어서 어드미션과 etcd 쓰기가 진행됩니다.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				as, err := asUser(env, DemoUser)
				if err != nil {
					return Text{}, err
				}
				err = until(ctx, env, textf("RBAC to allow %s", "RBAC의 %s 허용", DemoUser), func(ctx context.Context) (bool, error) {
					created, err := as.CoreV1().Pods(env.Namespace).Create(ctx, studentPod(env, pod), metav1.CreateOptions{})
					if apierrors.IsForbidden(err) {
						return false, nil
					}
					if err == nil {
						env.remember("pod", created, env.Client.CoreV1().Pods(env.Namespace).Delete, deletePodNow)
					}
					return err == nil, err
				})
				if err != nil {
					return Text{}, err
				}
				return textf("pod/%s created by %s", "이번에는 허용되어 %[2]s 사용자로 Pod를 만들었습니다: pod/%[1]s", pod, DemoUser), nil
			}},
		},
	}
}

func studentPod(env *Env, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: meta(env, name, "rbac-denied"), Spec: corev1.PodSpec{Containers: []corev1.Container{container("app")}}}
}

// asUser is a client acting as user: env.actAs's when set, else by
// impersonation from env.Config.
func asUser(env *Env, user string) (kubernetes.Interface, error) {
	if env.actAs != nil {
		return env.actAs(user)
	}
	if env.Config == nil {
		return nil, env.errorf("this demo needs a client configuration to act as %s", "이 데모가 다른 사용자(%s)로 요청하려면 클라이언트 설정이 필요합니다", user)
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	return kubernetes.NewForConfig(cfg)
}

func waitPhase(ctx context.Context, env *Env, name string, phase corev1.PodPhase) (*corev1.Pod, error) {
	var pod *corev1.Pod
	err := until(ctx, env, textf("pod %s to be %s", "Pod %s의 %s 전환", name, phase), func(ctx context.Context) (bool, error) {
		p, err := env.Client.CoreV1().Pods(env.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pod = p
		return p.Status.Phase == phase, nil
	})
	return pod, err
}

// waitUnschedulable waits for the scheduler to set PodScheduled=False and
// returns its message.
func waitUnschedulable(ctx context.Context, env *Env, name string) (Text, error) {
	var msg string
	err := until(ctx, env, textf("the scheduler to give up on pod %s", "스케줄러의 Pod %s 배치 포기", name), func(ctx context.Context) (bool, error) {
		p, err := env.Client.CoreV1().Pods(env.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				msg = c.Message
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return Text{}, err
	}
	return textf("pod/%s Pending, FailedScheduling: %s", "들어갈 노드가 없어 Pending으로 남았습니다: pod/%s, FailedScheduling: %s", name, msg), nil
}

// deletePodAndWait deletes the pod the run created as name (uid) and waits
// until it is gone.
func deletePodAndWait(ctx context.Context, env *Env, name string, uid types.UID) (Text, error) {
	if err := env.Client.CoreV1().Pods(env.Namespace).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil {
		return Text{}, err
	}
	err := until(ctx, env, textf("pod %s to be gone", "Pod %s 삭제", name), func(ctx context.Context) (bool, error) {
		_, err := env.Client.CoreV1().Pods(env.Namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		return Text{}, err
	}
	return textf("pod/%s deleted", "Pod를 삭제했습니다: pod/%s", name), nil
}

// deletePodNow is how a run deletes its pods when it ends: at once.
var deletePodNow = metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}

// createPod creates p in the run's namespace and remembers it for the
// cleanup.
func (env *Env) createPod(ctx context.Context, p *corev1.Pod) (*corev1.Pod, error) {
	pods := env.Client.CoreV1().Pods(env.Namespace)
	created, err := pods.Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	env.remember("pod", created, pods.Delete, deletePodNow)
	return created, nil
}

// createDeployment creates d in the run's namespace and remembers it for
// the cleanup, which leaves its ReplicaSets and Pods to the garbage
// collector.
func (env *Env) createDeployment(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	deployments := env.Client.AppsV1().Deployments(env.Namespace)
	created, err := deployments.Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	env.remember("deployment.apps", created, deployments.Delete, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	return created, nil
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
