package admission

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// kubeStoredSeedPod is what kube-apiserver (default admission plugins, minus
// the ServiceAccount plugin's token volume and metadata it sets itself)
// stores for the seed's minimal pod.
func kubeStoredSeedPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metaNS("mypod", "default"),
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:                     "mycontainer",
				Image:                    "nginx",
				ImagePullPolicy:          corev1.PullAlways,
				TerminationMessagePath:   "/dev/termination-log",
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			}},
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptrTo(int64(30)),
			DNSPolicy:                     corev1.DNSClusterFirst,
			SecurityContext:               &corev1.PodSecurityContext{},
			SchedulerName:                 "default-scheduler",
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrTo(int64(300))},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrTo(int64(300))},
			},
			Priority:           ptrTo(int32(0)),
			EnableServiceLinks: ptrTo(true),
			PreemptionPolicy:   ptrTo(corev1.PreemptLowerPriority),
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBestEffort},
	}
}

func TestDefaultChainStoresSeedPodAsKubernetesDoes(t *testing.T) {
	pod := seedPod()
	before, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	a := &Attributes{Operation: Create, Resource: podsResource, Kind: podKind, Namespace: "default", Name: "mypod", Object: pod}
	steps, err := NewDefaultChain(fakeNamespaces{"default": corev1.NamespaceActive}).Run(context.Background(), a)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if diff := cmp.Diff(kubeStoredSeedPod(), pod); diff != "" {
		t.Fatalf("stored pod differs from kube-apiserver's (-want +got):\n%s", diff)
	}
	wantSteps := []struct{ plugin, phase string }{
		{DefaultingPluginName, PhaseMutating},
		{DefaultTolerationSecondsPluginName, PhaseMutating},
		{NamespaceLifecyclePluginName, PhaseValidating},
		{ValidationPluginName, PhaseValidating},
	}
	if len(steps) != len(wantSteps) {
		t.Fatalf("got %d steps, want %d: %+v", len(steps), len(wantSteps), steps)
	}
	for i, w := range wantSteps {
		if steps[i].Plugin != w.plugin || steps[i].Phase != w.phase || steps[i].Error != "" {
			t.Errorf("step %d = %+v, want plugin %s phase %s without error", i, steps[i], w.plugin, w.phase)
		}
	}
	for _, op := range []string{
		`{"op":"add","path":"/spec/dnsPolicy","value":"ClusterFirst"}`,
		`{"op":"add","path":"/spec/restartPolicy","value":"Always"}`,
		`{"op":"add","path":"/spec/schedulerName","value":"default-scheduler"}`,
		`{"op":"add","path":"/spec/securityContext","value":{}}`,
		`{"op":"add","path":"/spec/terminationGracePeriodSeconds","value":30}`,
		`{"op":"add","path":"/spec/enableServiceLinks","value":true}`,
		`{"op":"add","path":"/spec/priority","value":0}`,
		`{"op":"add","path":"/spec/preemptionPolicy","value":"PreemptLowerPriority"}`,
		`{"op":"add","path":"/spec/containers/0/imagePullPolicy","value":"Always"}`,
		`{"op":"add","path":"/spec/containers/0/terminationMessagePath","value":"/dev/termination-log"}`,
		`{"op":"add","path":"/spec/containers/0/terminationMessagePolicy","value":"File"}`,
		`{"op":"add","path":"/status/phase","value":"Pending"}`,
		`{"op":"add","path":"/status/qosClass","value":"BestEffort"}`,
	} {
		if !strings.Contains(steps[0].Patch, op) {
			t.Errorf("defaulting patch lacks %s\npatch: %s", op, steps[0].Patch)
		}
	}
	if !strings.Contains(steps[1].Patch, `{"op":"add","path":"/spec/tolerations"`) {
		t.Errorf("toleration patch = %s", steps[1].Patch)
	}
	for _, s := range steps[2:] {
		if s.Patch != "" {
			t.Errorf("validating step %s has a patch %s", s.Plugin, s.Patch)
		}
	}
	defaulted, err := json.Marshal(kubeStoredSeedPod())
	if err != nil {
		t.Fatal(err)
	}
	afterDefaulting := kubeStoredSeedPod()
	afterDefaulting.Spec.Tolerations = nil
	mid, err := json.Marshal(afterDefaulting)
	if err != nil {
		t.Fatal(err)
	}
	assertPatchApplies(t, string(before), steps[0].Patch, string(mid))
	assertPatchApplies(t, string(mid), steps[1].Patch, string(defaulted))
}

func TestDefaultPodContainers(t *testing.T) {
	tests := []struct {
		image string
		want  corev1.PullPolicy
	}{
		{"nginx", corev1.PullAlways},
		{"nginx:latest", corev1.PullAlways},
		{"nginx:1.27", corev1.PullIfNotPresent},
		{"registry.k8s.io/pause:3.10", corev1.PullIfNotPresent},
		{"localhost:5000/app", corev1.PullAlways},
		{"localhost:5000/app:v1", corev1.PullIfNotPresent},
		{"busybox@sha256:" + strings.Repeat("a", 64), corev1.PullIfNotPresent},
		{"busybox:latest@sha256:" + strings.Repeat("a", 64), corev1.PullAlways},
		{"Invalid Image", corev1.PullIfNotPresent},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: tt.image}}}}
			Default(pod)
			if got := pod.Spec.Containers[0].ImagePullPolicy; got != tt.want {
				t.Fatalf("imagePullPolicy = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestDefaultPodResourcesAndPorts(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{
			Name: "c", Image: "nginx:1",
			Ports: []corev1.ContainerPort{{ContainerPort: 80}, {ContainerPort: 53, Protocol: corev1.ProtocolUDP}},
			Resources: corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
			},
			Env:           []corev1.EnvVar{{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
			LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80)}}},
		}},
		InitContainers: []corev1.Container{{Name: "init", Image: "busybox", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.0001")},
		}}},
		Volumes: []corev1.Volume{{Name: "scratch"}, {Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}}},
	}}
	Default(pod)
	c := pod.Spec.Containers[0]
	if got := c.Resources.Requests[corev1.ResourceMemory]; got.String() != "128Mi" {
		t.Errorf("memory request = %s, want 128Mi copied from the limit", got.String())
	}
	if got := c.Resources.Requests[corev1.ResourceCPU]; got.String() != "100m" {
		t.Errorf("cpu request = %s, want the given 100m", got.String())
	}
	if got := pod.Spec.InitContainers[0].Resources.Requests[corev1.ResourceCPU]; got.String() != "1m" {
		t.Errorf("init cpu request = %s, want 1m (copied and rounded up to milli)", got.String())
	}
	if c.Ports[0].Protocol != corev1.ProtocolTCP || c.Ports[1].Protocol != corev1.ProtocolUDP {
		t.Errorf("port protocols = %s, %s", c.Ports[0].Protocol, c.Ports[1].Protocol)
	}
	if c.Env[0].ValueFrom.FieldRef.APIVersion != "v1" {
		t.Errorf("fieldRef apiVersion = %q", c.Env[0].ValueFrom.FieldRef.APIVersion)
	}
	wantProbe := &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(80), Scheme: corev1.URISchemeHTTP}},
		TimeoutSeconds:   1,
		PeriodSeconds:    10,
		SuccessThreshold: 1,
		FailureThreshold: 3,
	}
	if diff := cmp.Diff(wantProbe, c.LivenessProbe); diff != "" {
		t.Errorf("probe (-want +got):\n%s", diff)
	}
	if pod.Spec.Volumes[0].EmptyDir == nil {
		t.Errorf("volume without source should default to emptyDir")
	}
	if m := pod.Spec.Volumes[1].ConfigMap.DefaultMode; m == nil || *m != 420 {
		t.Errorf("configMap defaultMode = %v, want 420", m)
	}
}

func TestDefaultKinds(t *testing.T) {
	tests := []struct {
		name string
		in   runtime.Object
		want runtime.Object
	}{
		{
			name: "deployment",
			in: &appsv1.Deployment{ObjectMeta: metaNS("web", "default"), Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1.27", Ports: []corev1.ContainerPort{{ContainerPort: 80}}}}},
				},
			}},
			want: &appsv1.Deployment{ObjectMeta: metaNS("web", "default"), Spec: appsv1.DeploymentSpec{
				Replicas: ptrTo(int32(1)),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
					Spec: corev1.PodSpec{
						Containers: []corev1.Container{{
							Name: "nginx", Image: "nginx:1.27",
							Ports:                    []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}},
							ImagePullPolicy:          corev1.PullIfNotPresent,
							TerminationMessagePath:   "/dev/termination-log",
							TerminationMessagePolicy: corev1.TerminationMessageReadFile,
						}},
						RestartPolicy:                 corev1.RestartPolicyAlways,
						TerminationGracePeriodSeconds: ptrTo(int64(30)),
						DNSPolicy:                     corev1.DNSClusterFirst,
						SecurityContext:               &corev1.PodSecurityContext{},
						SchedulerName:                 "default-scheduler",
					},
				},
				Strategy: appsv1.DeploymentStrategy{
					Type:          appsv1.RollingUpdateDeploymentStrategyType,
					RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: ptrTo(intstr.FromString("25%")), MaxSurge: ptrTo(intstr.FromString("25%"))},
				},
				RevisionHistoryLimit:    ptrTo(int32(10)),
				ProgressDeadlineSeconds: ptrTo(int32(600)),
			}},
		},
		{
			name: "recreate deployment keeps no rolling update",
			in:   &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptrTo(int32(0)), Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}}},
			want: &appsv1.Deployment{Spec: appsv1.DeploymentSpec{
				Replicas: ptrTo(int32(0)), Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
				RevisionHistoryLimit: ptrTo(int32(10)), ProgressDeadlineSeconds: ptrTo(int32(600)),
				Template: corev1.PodTemplateSpec{Spec: defaultedEmptyPodSpec()},
			}},
		},
		{
			name: "replicaset",
			in:   &appsv1.ReplicaSet{},
			want: &appsv1.ReplicaSet{Spec: appsv1.ReplicaSetSpec{Replicas: ptrTo(int32(1)), Template: corev1.PodTemplateSpec{Spec: defaultedEmptyPodSpec()}}},
		},
		{
			name: "service",
			in: &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
				{Name: "http", Port: 80}, {Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("dns")},
			}}},
			want: &corev1.Service{Spec: corev1.ServiceSpec{
				Ports: []corev1.ServicePort{
					{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(80)},
					{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("dns")},
				},
				Type:                  corev1.ServiceTypeClusterIP,
				SessionAffinity:       corev1.ServiceAffinityNone,
				InternalTrafficPolicy: ptrTo(corev1.ServiceInternalTrafficPolicyCluster),
			}},
		},
		{
			name: "nodeport service",
			in:   &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, SessionAffinity: corev1.ServiceAffinityClientIP}},
			want: &corev1.Service{Spec: corev1.ServiceSpec{
				Type:                  corev1.ServiceTypeNodePort,
				SessionAffinity:       corev1.ServiceAffinityClientIP,
				SessionAffinityConfig: &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptrTo(int32(10800))}},
				ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster,
				InternalTrafficPolicy: ptrTo(corev1.ServiceInternalTrafficPolicyCluster),
			}},
		},
		{
			name: "namespace",
			in:   &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
			want: &corev1.Namespace{
				ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{"kubernetes.io/metadata.name": "team-a"}},
				Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
			},
		},
		{
			name: "secret",
			in:   &corev1.Secret{},
			want: &corev1.Secret{Type: corev1.SecretTypeOpaque},
		},
		{
			name: "node allocatable from capacity",
			in:   &corev1.Node{Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}},
			want: &corev1.Node{Status: corev1.NodeStatus{
				Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			}},
		},
		{
			name: "endpoints",
			in:   &corev1.Endpoints{Subsets: []corev1.EndpointSubset{{Ports: []corev1.EndpointPort{{Port: 80}}}}},
			want: &corev1.Endpoints{Subsets: []corev1.EndpointSubset{{Ports: []corev1.EndpointPort{{Port: 80, Protocol: corev1.ProtocolTCP}}}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			Default(tt.in)
			if !equality.Semantic.DeepEqual(tt.want, tt.in) {
				t.Fatalf("defaulted object (-want +got):\n%s", cmp.Diff(tt.want, tt.in))
			}
		})
	}
}

func defaultedEmptyPodSpec() corev1.PodSpec {
	return corev1.PodSpec{
		RestartPolicy:                 corev1.RestartPolicyAlways,
		TerminationGracePeriodSeconds: ptrTo(int64(30)),
		DNSPolicy:                     corev1.DNSClusterFirst,
		SecurityContext:               &corev1.PodSecurityContext{},
		SchedulerName:                 "default-scheduler",
	}
}

func TestDefaultingPluginCreateOnlyParts(t *testing.T) {
	tests := []struct {
		name  string
		attrs *Attributes
		check func(t *testing.T, a *Attributes)
	}{
		{
			name: "namespace create gets the kubernetes finalizer and Active",
			attrs: &Attributes{Operation: Create, Kind: namespaceKind, Resource: namespacesResource,
				Object: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}},
			check: func(t *testing.T, a *Attributes) {
				ns := a.Object.(*corev1.Namespace)
				if len(ns.Spec.Finalizers) != 1 || ns.Spec.Finalizers[0] != corev1.FinalizerKubernetes || ns.Status.Phase != corev1.NamespaceActive {
					t.Fatalf("namespace = %+v", ns)
				}
			},
		},
		{
			name: "service create gets single stack IPv4",
			attrs: &Attributes{Operation: Create, Object: &corev1.Service{Spec: corev1.ServiceSpec{
				Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80}}}}},
			check: func(t *testing.T, a *Attributes) {
				s := a.Object.(*corev1.Service)
				if *s.Spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack || len(s.Spec.IPFamilies) != 1 || s.Spec.IPFamilies[0] != corev1.IPv4Protocol {
					t.Fatalf("ip families = %v %v", *s.Spec.IPFamilyPolicy, s.Spec.IPFamilies)
				}
			},
		},
		{
			name: "guaranteed pod",
			attrs: &Attributes{Operation: Create, Kind: podKind, Resource: podsResource, Object: &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "c", Image: "nginx", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}},
			}}}}},
			check: func(t *testing.T, a *Attributes) {
				if q := a.Object.(*corev1.Pod).Status.QOSClass; q != corev1.PodQOSGuaranteed {
					t.Fatalf("qosClass = %s", q)
				}
			},
		},
		{
			name: "burstable pod",
			attrs: &Attributes{Operation: Create, Kind: podKind, Resource: podsResource, Object: &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "c", Image: "nginx", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}},
			}}}}},
			check: func(t *testing.T, a *Attributes) {
				if q := a.Object.(*corev1.Pod).Status.QOSClass; q != corev1.PodQOSBurstable {
					t.Fatalf("qosClass = %s", q)
				}
			},
		},
		{
			name: "system priority class",
			attrs: &Attributes{Operation: Create, Kind: podKind, Resource: podsResource, Object: &corev1.Pod{Spec: corev1.PodSpec{
				PriorityClassName: "system-node-critical", Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}},
			check: func(t *testing.T, a *Attributes) {
				if p := a.Object.(*corev1.Pod).Spec.Priority; p == nil || *p != 2000001000 {
					t.Fatalf("priority = %v", p)
				}
			},
		},
		{
			name: "update keeps the stored priority and status",
			attrs: &Attributes{Operation: Update, Kind: podKind, Resource: podsResource,
				Object:    &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}, Status: corev1.PodStatus{Phase: corev1.PodRunning}},
				OldObject: &corev1.Pod{Spec: corev1.PodSpec{Priority: ptrTo(int32(7)), PreemptionPolicy: ptrTo(corev1.PreemptNever)}}},
			check: func(t *testing.T, a *Attributes) {
				pod := a.Object.(*corev1.Pod)
				if *pod.Spec.Priority != 7 || *pod.Spec.PreemptionPolicy != corev1.PreemptNever || pod.Status.Phase != corev1.PodRunning {
					t.Fatalf("pod spec priority %v policy %v phase %s", *pod.Spec.Priority, *pod.Spec.PreemptionPolicy, pod.Status.Phase)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := NewDefaultValues().Admit(context.Background(), tt.attrs); err != nil {
				t.Fatalf("Admit: %v", err)
			}
			tt.check(t, tt.attrs)
		})
	}
}

func TestDefaultingRefusesUnknownPriorityClass(t *testing.T) {
	pod := seedPod()
	pod.Spec.PriorityClassName = "gold"
	_, err := NewChain(NewDefaultValues()).Run(context.Background(), &Attributes{Operation: Create, Kind: podKind, Resource: podsResource, Namespace: "default", Object: pod})
	want := `pods "mypod" is forbidden: no PriorityClass with name gold was found`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %s", err, want)
	}
}

func TestDefaultTolerationSecondsKeepsExisting(t *testing.T) {
	pod := seedPod()
	pod.Spec.Tolerations = []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrTo(int64(5))}}
	a := &Attributes{Operation: Create, Kind: podKind, Resource: podsResource, Object: pod}
	if err := NewDefaultTolerationSeconds().Admit(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.Tolerations) != 2 || *pod.Spec.Tolerations[0].TolerationSeconds != 5 || pod.Spec.Tolerations[1].Key != corev1.TaintNodeUnreachable {
		t.Fatalf("tolerations = %+v", pod.Spec.Tolerations)
	}
}
