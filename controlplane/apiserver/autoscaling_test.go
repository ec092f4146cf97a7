package apiserver_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
	"k8s.io/utils/ptr"

	"github.com/glassplane/glassplane/controlplane/usage"
)

func testHPA(name string, minReplicas, maxReplicas int32) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    &minReplicas, MaxReplicas: maxReplicas,
		},
	}
}

func TestHorizontalPodAutoscalerDefaultsAndStatus(t *testing.T) {
	ns := shared.namespace(t)
	ctx := ctxT(t)
	hpas := shared.client.AutoscalingV2().HorizontalPodAutoscalers(ns)
	in := testHPA("web", 1, 5)
	in.Spec.MinReplicas = nil
	in.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To(int32(10))}}
	in.Status.DesiredReplicas = 9
	got, err := hpas.Create(ctx, in, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.MinReplicas == nil || *got.Spec.MinReplicas != 1 {
		t.Errorf("minReplicas = %v, want the default 1", got.Spec.MinReplicas)
	}
	if len(got.Spec.Metrics) != 1 || got.Spec.Metrics[0].Resource == nil || got.Spec.Metrics[0].Resource.Name != corev1.ResourceCPU ||
		got.Spec.Metrics[0].Resource.Target.AverageUtilization == nil || *got.Spec.Metrics[0].Resource.Target.AverageUtilization != 80 {
		t.Errorf("metrics = %+v, want the default 80%% CPU utilization", got.Spec.Metrics)
	}
	b := got.Spec.Behavior
	if b.ScaleUp == nil || len(b.ScaleUp.Policies) != 2 || *b.ScaleUp.StabilizationWindowSeconds != 0 {
		t.Errorf("scaleUp = %+v, want the default rules", b.ScaleUp)
	}
	if b.ScaleDown == nil || *b.ScaleDown.StabilizationWindowSeconds != 10 || len(b.ScaleDown.Policies) != 1 || *b.ScaleDown.SelectPolicy != autoscalingv2.MaxChangePolicySelect {
		t.Errorf("scaleDown = %+v, want the window kept and the default policies", b.ScaleDown)
	}
	if got.Status.DesiredReplicas != 0 {
		t.Errorf("status.desiredReplicas = %d on create, want it cleared", got.Status.DesiredReplicas)
	}
	got.Status.CurrentReplicas, got.Status.DesiredReplicas = 2, 3
	st, err := hpas.UpdateStatus(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Status.DesiredReplicas != 3 {
		t.Errorf("status.desiredReplicas = %d after the status update, want 3", st.Status.DesiredReplicas)
	}
	st.Status.DesiredReplicas = -1
	if _, err := hpas.UpdateStatus(ctx, st, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "status.desiredReplicas") {
		t.Errorf("a negative desiredReplicas: %v, want a 422 on status.desiredReplicas", err)
	}
	// The table kubectl get hpa shows.
	req, _ := http.NewRequest(http.MethodGet, shared.url+"/apis/autoscaling/v2/namespaces/"+ns+"/horizontalpodautoscalers", nil)
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	tr, err := shared.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Body.Close()
	var table metav1.Table
	if err := json.NewDecoder(tr.Body).Decode(&table); err != nil {
		t.Fatalf("decoding the table: %v", err)
	}
	if len(table.Rows) != 1 {
		t.Fatalf("table rows = %d, want 1", len(table.Rows))
	}
	cells := table.Rows[0].Cells
	if cells[1] != "Deployment/web" || cells[2] != "cpu: <unknown>/80%" || cells[3] != "1" || cells[4] != float64(5) || cells[5] != float64(2) {
		t.Errorf("table row = %v", cells)
	}
}

func TestHorizontalPodAutoscalerValidation(t *testing.T) {
	ns := shared.namespace(t)
	ctx := ctxT(t)
	hpas := shared.client.AutoscalingV2().HorizontalPodAutoscalers(ns)
	tests := []struct {
		name   string
		mutate func(*autoscalingv2.HorizontalPodAutoscaler)
		want   field.ErrorType
		path   string
		detail string
	}{
		{"min above max", func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MinReplicas = ptr.To(int32(6)) }, field.ErrorTypeInvalid, "spec.maxReplicas", "must be greater than or equal to `minReplicas`"},
		{"min zero", func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MinReplicas = ptr.To(int32(0)) }, field.ErrorTypeInvalid, "spec.minReplicas", "must be greater than or equal to 1"},
		{"max zero", func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.MinReplicas = nil
			h.Spec.MaxReplicas = 0
		}, field.ErrorTypeInvalid, "spec.maxReplicas", "must be greater than 0"},
		{"no target kind", func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.ScaleTargetRef.Kind = "" }, field.ErrorTypeRequired, "spec.scaleTargetRef.kind", ""},
		{"utilization zero", func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(int32(0))}}}}
		}, field.ErrorTypeInvalid, "spec.metrics[0].resource.target.averageUtilization", "must be greater than 0"},
		{"negative stabilization", func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To(int32(-1))}}
		}, field.ErrorTypeInvalid, "spec.behavior.scaleDown.stabilizationWindowSeconds", "must be greater than or equal to zero"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := testHPA("bad", 1, 5)
			tt.mutate(h)
			_, err := hpas.Create(ctx, h, metav1.CreateOptions{})
			status, ok := err.(apierrors.APIStatus)
			if !ok || status.Status().Code != http.StatusUnprocessableEntity {
				t.Fatalf("create: %v, want 422", err)
			}
			found := false
			for _, c := range status.Status().Details.Causes {
				if c.Field == tt.path && string(c.Type) == string(tt.want) && strings.Contains(c.Message, tt.detail) {
					found = true
				}
			}
			if !found {
				t.Errorf("causes %+v, want %s on %s with %q", status.Status().Details.Causes, tt.want, tt.path, tt.detail)
			}
			if _, err := hpas.Get(ctx, "bad", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("after the refusal get = %v, want not found (nothing stored)", err)
			}
		})
	}
	if _, err := hpas.Create(ctx, testHPA("minmax", 6, 5), metav1.CreateOptions{}); err == nil ||
		!strings.Contains(err.Error(), `HorizontalPodAutoscaler.autoscaling "minmax" is invalid: spec.maxReplicas: Invalid value: 5: must be greater than or equal to `+"`minReplicas`") {
		t.Errorf("min 6 max 5: %v, want kube-apiserver's message", err)
	}
}

// TestMetricsOfSimulatedNodes reads metrics.k8s.io for pods on a simulated
// node: their annotation's usage, else the node's, summed on the node.
func TestMetricsOfSimulatedNodes(t *testing.T) {
	ns := shared.namespace(t)
	ctx := ctxT(t)
	nodeName := "metrics-sim-node"
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName,
		Labels:      map[string]string{"node.glassplane.io/runtime": "simulated", "metrics-test": "yes"},
		Annotations: map[string]string{usage.AnnotationSimulatedUsage: "cpu=20m,memory=10Mi"}}}
	if _, err := shared.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shared.client.CoreV1().Nodes().Delete(ctx, nodeName, metav1.DeleteOptions{}) })
	for name, ann := range map[string]string{"busy": "cpu=700m,memory=64Mi", "idle": ""} {
		p := testPod(name)
		p.Spec.NodeName = nodeName
		if ann != "" {
			p.Annotations = map[string]string{usage.AnnotationSimulatedUsage: ann}
		}
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "side", Image: "busybox"})
		created, err := shared.client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Status.Phase = corev1.PodRunning
		if _, err := shared.client.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mc, err := metricsclient.NewForConfig(shared.config)
	if err != nil {
		t.Fatal(err)
	}
	pods, err := mc.MetricsV1beta1().PodMetricses(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]metricsv1beta1.PodMetrics{}
	for _, p := range pods.Items {
		byName[p.Name] = p
	}
	busy, idle := byName["busy"], byName["idle"]
	if len(busy.Containers) != 2 || busy.Containers[0].Usage.Cpu().MilliValue() != 700 || busy.Containers[1].Usage.Memory().Value() != 64<<20 {
		t.Errorf("busy = %+v, want 700m and 64Mi in each of 2 containers", busy)
	}
	if len(idle.Containers) != 2 || idle.Containers[0].Usage.Cpu().MilliValue() != 20 || busy.Window.Duration <= 0 {
		t.Errorf("idle = %+v, want the node's 20m in each of 2 containers and a window", idle)
	}
	one, err := mc.MetricsV1beta1().PodMetricses(ns).Get(ctx, "busy", metav1.GetOptions{})
	if err != nil || one.Name != "busy" || one.Namespace != ns {
		t.Errorf("get busy = %+v, %v", one, err)
	}
	if _, err := mc.MetricsV1beta1().PodMetricses(ns).Get(ctx, "nothing", metav1.GetOptions{}); !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), `pods.metrics.k8s.io "nothing" not found`) {
		t.Errorf("get of a missing pod: %v, want metrics-server's not found", err)
	}
	nodes, err := mc.MetricsV1beta1().NodeMetricses().List(ctx, metav1.ListOptions{LabelSelector: "metrics-test=yes"})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 1 || nodes.Items[0].Usage.Cpu().MilliValue() != 1440 || nodes.Items[0].Usage.Memory().Value() != 148<<20 {
		t.Errorf("node metrics = %+v, want 2×700m+2×20m and 2×64Mi+2×10Mi", nodes.Items)
	}
	if _, err := mc.MetricsV1beta1().NodeMetricses().Watch(ctx, metav1.ListOptions{}); err == nil {
		t.Error("watch on node metrics: no error, want 405 as metrics-server")
	}
}

// TestHorizontalPodAutoscalerV1 writes an HPA as autoscaling/v1 (as kubectl
// autoscale does) and reads it as v2, and back.
func TestHorizontalPodAutoscalerV1(t *testing.T) {
	ns := shared.namespace(t)
	ctx := ctxT(t)
	v1hpa := &autoscalingv1.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MaxReplicas:    5, TargetCPUUtilizationPercentage: ptr.To(int32(50)),
		},
	}
	created, err := shared.client.AutoscalingV1().HorizontalPodAutoscalers(ns).Create(ctx, v1hpa, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Spec.MinReplicas == nil || *created.Spec.MinReplicas != 1 || *created.Spec.TargetCPUUtilizationPercentage != 50 {
		t.Errorf("v1 created = %+v", created.Spec)
	}
	v2hpa, err := shared.client.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(v2hpa.Spec.Metrics) != 1 || *v2hpa.Spec.Metrics[0].Resource.Target.AverageUtilization != 50 || v2hpa.Spec.MaxReplicas != 5 {
		t.Errorf("as v2 = %+v", v2hpa.Spec)
	}
	v2hpa.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To(int32(30))}}
	if _, err := shared.client.AutoscalingV2().HorizontalPodAutoscalers(ns).Update(ctx, v2hpa, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	back, err := shared.client.AutoscalingV1().HorizontalPodAutoscalers(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(back.Annotations["autoscaling.alpha.kubernetes.io/behavior"], `"stabilizationWindowSeconds":30`) {
		t.Errorf("v1 annotations = %v, want the behavior carried", back.Annotations)
	}
	// An update through v1 keeps the behavior it cannot show.
	back.Spec.MaxReplicas = 7
	if _, err := shared.client.AutoscalingV1().HorizontalPodAutoscalers(ns).Update(ctx, back, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	again, err := shared.client.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Spec.MaxReplicas != 7 || again.Spec.Behavior == nil || *again.Spec.Behavior.ScaleDown.StabilizationWindowSeconds != 30 || len(again.Annotations) != 0 {
		t.Errorf("after the v1 update, v2 = %+v %v", again.Spec, again.Annotations)
	}
	bad := v1hpa.DeepCopy()
	bad.Name, bad.Spec.MinReplicas = "bad", ptr.To(int32(9))
	if _, err := shared.client.AutoscalingV1().HorizontalPodAutoscalers(ns).Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) ||
		!strings.Contains(err.Error(), "spec.maxReplicas: Invalid value: 5: must be greater than or equal to `minReplicas`") {
		t.Errorf("v1 min 9 max 5: %v", err)
	}
}
