package demo

import (
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/glassplane/glassplane/controlplane/usage"
)

// simulatedRuntime is the runtime label of a simulated node, whose
// containers report the usage their pod's usage.AnnotationSimulatedUsage
// says (the node's --simulated-usage otherwise).
const simulatedRuntime = "simulated"

// Load the autoscale demo's pods report: on a simulated node through the
// usage annotation, on a containerd node by what their command burns.
const (
	busyUsage = "cpu=400m,memory=20Mi"
	idleUsage = "cpu=1m,memory=8Mi"
	busyLoop  = "while true; do :; done"
	idleLoop  = "sleep 3600"
)

// autoscale shows a HorizontalPodAutoscaler: a Deployment whose pods use
// 400% of their CPU request is scaled up to its maximum, then back down
// when they go idle, each decision an Event with its reason.
func autoscale() Demo {
	const name = "web"
	simulated := false
	return Demo{
		Name:  "autoscale",
		Title: Text{"A HorizontalPodAutoscaler: scale on CPU, up and down", "HorizontalPodAutoscaler: CPU에 따라 늘리고 줄이기"},
		Steps: []Step{
			{Say: Text{
				"Create a Deployment web of 1 pod requesting 100m of CPU. On a simulated node its container reports the usage of the pod's metrics.glassplane.io/simulated-usage annotation (cpu=400m: 400% of the request), which overrides the node's default (`glassplane up --simulated-usage`); on a containerd node the pod burns CPU in a shell loop. The node agents serve the figures through metrics.k8s.io (kubectl top pods).",
				"CPU 100m를 요청하는 Pod 1개짜리 Deployment web을 만듭니다. 시뮬레이션 노드에서는 컨테이너가 Pod의 metrics.glassplane.io/simulated-usage 애너테이션에 적힌 사용량(cpu=400m: 요청의 400%)을 보고합니다. 이 값은 노드의 기본값(`glassplane up --simulated-usage`)보다 우선합니다. containerd 노드에서는 Pod가 셸 루프로 CPU를 실제로 씁니다. 노드 에이전트가 그 수치를 metrics.k8s.io로 제공합니다(kubectl top pods).",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				var err error
				simulated, err = hasReadyNode(ctx, env, simulatedRuntime)
				if err != nil {
					return Text{}, err
				}
				deployments := env.Client.AppsV1().Deployments(env.Namespace)
				created, err := deployments.Create(ctx, &appsv1.Deployment{ObjectMeta: meta(env, name, "autoscale"), Spec: appsv1.DeploymentSpec{
					Replicas: ptr.To(int32(1)),
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
					Template: loadTemplate(name, simulated, true),
				}}, metav1.CreateOptions{})
				if err != nil {
					return Text{}, err
				}
				env.remember("deployment.apps", created, deployments.Delete, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
				err = until(ctx, env, Text{"the pod to run", "Pod 실행"}, func(ctx context.Context) (bool, error) {
					pods, err := env.Client.CoreV1().Pods(env.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
					return err == nil && slices.ContainsFunc(pods.Items, func(p corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning }), err
				})
				if err != nil {
					return Text{}, err
				}
				if simulated {
					return textf("deployment.apps/%s: 1 pod on a simulated node, requests cpu 100m, reporting %s",
						"Deployment를 만들었습니다: deployment.apps/%s, 시뮬레이션 노드의 Pod 1개, cpu 요청 100m, 보고하는 사용량 %s", name, busyUsage), nil
				}
				return textf("deployment.apps/%s: 1 pod on a containerd node, requests cpu 100m, burning CPU (%s)",
					"Deployment를 만들었습니다: deployment.apps/%s, containerd 노드의 Pod 1개, cpu 요청 100m, CPU 사용 중(%s)", name, busyLoop), nil
			}},
			{Say: Text{
				"Create a HorizontalPodAutoscaler (autoscaling/v2, as kubectl autoscale deployment web --cpu-percent=50 --min=1 --max=4 does). Every 15 s the horizontal-pod-autoscaler controller reads the pods' CPU from metrics.k8s.io: 400% against a target of 50% asks for 8 replicas, held to maxReplicas 4 (condition ScalingLimited, TooManyReplicas). It scales the Deployment and records Event SuccessfulRescale: \"New size: 4; reason: cpu resource utilization (percentage of request) above target\". The HPA's page plots the metric against the target.",
				"HorizontalPodAutoscaler를 만듭니다(autoscaling/v2, kubectl autoscale deployment web --cpu-percent=50 --min=1 --max=4와 같습니다). horizontal-pod-autoscaler 컨트롤러는 15초마다 metrics.k8s.io에서 Pod의 CPU를 읽습니다: 목표 50%에 대해 400%이므로 레플리카 8개가 필요하지만 maxReplicas 4로 제한됩니다(컨디션 ScalingLimited, TooManyReplicas). 컨트롤러는 Deployment를 스케일하고 Event SuccessfulRescale을 남깁니다: \"New size: 4; reason: cpu resource utilization (percentage of request) above target\". HPA 페이지에서 메트릭과 목표를 그래프로 볼 수 있습니다.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				hpas := env.Client.AutoscalingV2().HorizontalPodAutoscalers(env.Namespace)
				created, err := hpas.Create(ctx, &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: meta(env, name, "autoscale"), Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
					ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
					MinReplicas:    ptr.To(int32(1)), MaxReplicas: 4,
					Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
						Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(int32(50))},
					}}},
					// Scale down as soon as the pods are idle (the default
					// window is 5 minutes), so the class sees it.
					Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To(int32(0))}},
				}}, metav1.CreateOptions{})
				if err != nil {
					return Text{}, err
				}
				env.remember("horizontalpodautoscaler.autoscaling", created, hpas.Delete, metav1.DeleteOptions{})
				reason, err := waitRescale(ctx, env, name, 4)
				if err != nil {
					return Text{}, err
				}
				return textf("horizontalpodautoscaler.autoscaling/%s scaled deployment.apps/%s to 4: %s",
					"HPA가 스케일했습니다: horizontalpodautoscaler.autoscaling/%s가 deployment.apps/%s를 4개로: %s", name, name, reason), nil
			}},
			{Say: Text{
				"Make the pods idle: change the Deployment's pod template (usage cpu=1m, or sleep on containerd), which rolls out new pods. Their utilization is about 1%, below the 50% target; with scaleDown.stabilizationWindowSeconds 0 the controller scales back to minReplicas 1 (SuccessfulRescale, \"All metrics below target\").",
				"Pod를 유휴 상태로 만듭니다: Deployment의 Pod 템플릿을 바꾸면(사용량 cpu=1m, containerd에서는 sleep) 새 Pod가 롤아웃됩니다. 사용률은 약 1%로 목표 50%보다 낮고, scaleDown.stabilizationWindowSeconds가 0이므로 컨트롤러가 minReplicas 1로 다시 줄입니다(SuccessfulRescale, \"All metrics below target\").",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				deployments := env.Client.AppsV1().Deployments(env.Namespace)
				err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
					d, err := deployments.Get(ctx, name, metav1.GetOptions{})
					if err != nil {
						return err
					}
					d.Spec.Template = loadTemplate(name, simulated, false)
					_, err = deployments.Update(ctx, d, metav1.UpdateOptions{})
					return err
				})
				if err != nil {
					return Text{}, err
				}
				reason, err := waitRescale(ctx, env, name, 1)
				if err != nil {
					return Text{}, err
				}
				return textf("horizontalpodautoscaler.autoscaling/%s scaled deployment.apps/%s back to 1: %s",
					"HPA가 다시 줄였습니다: horizontalpodautoscaler.autoscaling/%s가 deployment.apps/%s를 1개로: %s", name, name, reason), nil
			}},
		},
	}
}

// loadTemplate is the autoscale demo's pod template: on a simulated node
// the usage annotation says the load, on containerd the command makes it.
func loadTemplate(name string, simulated, busy bool) corev1.PodTemplateSpec {
	labels := map[string]string{"app": name, demoLabel: "autoscale"}
	c := container(name)
	c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("16Mi")}
	t := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To(int64(1))}}
	if simulated {
		load := idleUsage
		if busy {
			load = busyUsage
		}
		t.Annotations = map[string]string{usage.AnnotationSimulatedUsage: load}
		t.Spec.NodeSelector = map[string]string{runtimeLabel: simulatedRuntime}
		c.Command = []string{"sh", "-c", idleLoop}
	} else {
		loop := idleLoop
		if busy {
			loop = busyLoop
		}
		t.Spec.NodeSelector = map[string]string{runtimeLabel: realRuntime}
		c.Command = []string{"sh", "-c", loop}
	}
	t.Spec.Containers = []corev1.Container{c}
	return t
}

// waitRescale waits until the Deployment has replicas and a
// SuccessfulRescale Event of the HPA says that size, and returns the
// Event's reason.
func waitRescale(ctx context.Context, env *Env, name string, replicas int32) (string, error) {
	want := fmt.Sprintf("New size: %d; reason: ", replicas)
	var reason string
	err := until(ctx, env, textf("the HorizontalPodAutoscaler to scale to %d", "HorizontalPodAutoscaler의 %d개 스케일", replicas), func(ctx context.Context) (bool, error) {
		d, err := env.Client.AppsV1().Deployments(env.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil || ptr.Deref(d.Spec.Replicas, 1) != replicas {
			return false, err
		}
		events, err := env.Client.CoreV1().Events(env.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Kind == "HorizontalPodAutoscaler" && e.InvolvedObject.Name == name && e.Reason == "SuccessfulRescale" && strings.HasPrefix(e.Message, want) {
				reason = strings.TrimPrefix(e.Message, want)
				return true, nil
			}
		}
		return false, nil
	})
	return reason, err
}

// hasReadyNode tells whether a schedulable node of runtime is Ready.
func hasReadyNode(ctx context.Context, env *Env, runtime string) (bool, error) {
	nodes, err := env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: runtimeLabel + "=" + runtime})
	if err != nil {
		return false, err
	}
	for _, n := range nodes.Items {
		if !n.Spec.Unschedulable && slices.ContainsFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool {
			return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
		}) {
			return true, nil
		}
	}
	return false, nil
}
