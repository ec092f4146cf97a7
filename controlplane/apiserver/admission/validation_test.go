package admission

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const (
	dns1123SubdomainMsg = `a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`
	dns1123LabelMsg     = `a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`
	dns1035LabelMsg     = `a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`
	portRangeMsg        = `must be between 1 and 65535, inclusive`
)

func podWith(mutate func(*corev1.Pod)) *corev1.Pod {
	p := seedPod()
	mutate(p)
	return p
}

func webDeployment(mutate func(*appsv1.Deployment)) *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: metaNS("web", "default"),
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx"}}},
			},
		},
	}
	mutate(d)
	return d
}

func webService(mutate func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metaNS("web", "default"),
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80}}},
	}
	mutate(s)
	return s
}

// TestValidateCreate checks the errors Kubernetes returns for objects as a
// client sends them (defaults applied first, as kube-apiserver does).
func TestValidateCreate(t *testing.T) {
	tests := []struct {
		name string
		obj  runtime.Object
		want []string
	}{
		{name: "seed pod is valid", obj: seedPod()},
		{
			name: "invalid pod name",
			obj:  podWith(func(p *corev1.Pod) { p.Name = "My_Pod" }),
			want: []string{`metadata.name: Invalid value: "My_Pod": ` + dns1123SubdomainMsg},
		},
		{
			name: "pod without namespace",
			obj:  podWith(func(p *corev1.Pod) { p.Namespace = "" }),
			want: []string{`metadata.namespace: Required value`},
		},
		{
			name: "pod without name",
			obj:  podWith(func(p *corev1.Pod) { p.Name = "" }),
			want: []string{`metadata.name: Required value: name or generateName is required`},
		},
		{
			name: "invalid generateName",
			obj:  podWith(func(p *corev1.Pod) { p.GenerateName = "Web-" }),
			want: []string{`metadata.generateName: Invalid value: "Web-": ` + dns1123SubdomainMsg},
		},
		{
			name: "invalid label value",
			obj:  podWith(func(p *corev1.Pod) { p.Labels = map[string]string{"app": "bad value"} }),
			want: []string{`metadata.labels: Invalid value: "bad value": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`},
		},
		{
			name: "annotations over 256 KiB",
			obj:  podWith(func(p *corev1.Pod) { p.Annotations = map[string]string{"big": strings.Repeat("x", 256*1024)} }),
			want: []string{`metadata.annotations: Too long: may not be more than 262144 bytes`},
		},
		{
			name: "missing image",
			obj:  podWith(func(p *corev1.Pod) { p.Spec.Containers[0].Image = "" }),
			want: []string{`spec.containers[0].image: Required value`},
		},
		{
			name: "no containers",
			obj:  podWith(func(p *corev1.Pod) { p.Spec.Containers = nil }),
			want: []string{`spec.containers: Required value`},
		},
		{
			name: "duplicate container names",
			obj: podWith(func(p *corev1.Pod) {
				p.Spec.Containers = []corev1.Container{{Name: "c", Image: "nginx"}, {Name: "c", Image: "busybox"}}
			}),
			want: []string{`spec.containers[1].name: Duplicate value: "c"`},
		},
		{
			name: "init container named like an app container",
			obj: podWith(func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{{Name: "mycontainer", Image: "busybox"}}
			}),
			want: []string{`spec.initContainers[0].name: Duplicate value: "mycontainer"`},
		},
		{
			name: "invalid container name",
			obj:  podWith(func(p *corev1.Pod) { p.Spec.Containers[0].Name = "My.Container" }),
			want: []string{`spec.containers[0].name: Invalid value: "My.Container": ` + dns1123LabelMsg},
		},
		{
			name: "image with trailing whitespace",
			obj:  podWith(func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx " }),
			want: []string{`spec.containers[0].image: Invalid value: "nginx ": must not have leading or trailing whitespace`},
		},
		{
			name: "container port out of range",
			obj: podWith(func(p *corev1.Pod) {
				p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 70000}}
			}),
			want: []string{`spec.containers[0].ports[0].containerPort: Invalid value: 70000: ` + portRangeMsg},
		},
		{
			name: "container port missing and host port out of range",
			obj: podWith(func(p *corev1.Pod) {
				p.Spec.Containers[0].Ports = []corev1.ContainerPort{{HostPort: -1}}
			}),
			want: []string{
				`spec.containers[0].ports[0].containerPort: Required value`,
				`spec.containers[0].ports[0].hostPort: Invalid value: -1: ` + portRangeMsg,
			},
		},
		{
			name: "bad and duplicate port names",
			obj: podWith(func(p *corev1.Pod) {
				p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 80}, {Name: "http", ContainerPort: 81}, {Name: "Web_Port", ContainerPort: 82}}
			}),
			want: []string{
				`spec.containers[0].ports[1].name: Duplicate value: "http"`,
				`spec.containers[0].ports[2].name: Invalid value: "Web_Port": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)`,
			},
		},
		{
			name: "host port clash",
			obj: podWith(func(p *corev1.Pod) {
				p.Spec.Containers = []corev1.Container{
					{Name: "a", Image: "nginx", Ports: []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}},
					{Name: "b", Image: "nginx", Ports: []corev1.ContainerPort{{ContainerPort: 81, HostPort: 8080}}},
				}
			}),
			want: []string{`spec.containers[1].ports[0].hostPort: Duplicate value: "TCP//8080"`},
		},
		{
			name: "unsupported restart policy",
			obj:  podWith(func(p *corev1.Pod) { p.Spec.RestartPolicy = "Sometimes" }),
			want: []string{`spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`},
		},
		{
			name: "request above limit",
			obj: podWith(func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
				}
			}),
			want: []string{`spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1`},
		},
		{
			name: "negative memory limit",
			obj: podWith(func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("-1Mi")}}
			}),
			want: []string{
				`spec.containers[0].resources.limits[memory]: Invalid value: "-1Mi": must be greater than or equal to 0`,
				`spec.containers[0].resources.requests[memory]: Invalid value: "-1Mi": must be greater than or equal to 0`,
			},
		},
		{
			name: "env name with '='",
			obj: podWith(func(p *corev1.Pod) {
				p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A=B", Value: "x"}, {Value: "y"}}
			}),
			want: []string{
				`spec.containers[0].env[0].name: Invalid value: "A=B": a valid environment variable name must consist only of printable ASCII characters other than '='`,
				`spec.containers[0].env[1].name: Required value`,
			},
		},
		{
			name: "mount of an undeclared volume",
			obj: podWith(func(p *corev1.Pod) {
				p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
			}),
			want: []string{`spec.containers[0].volumeMounts[0].name: Not found: "data"`},
		},
		{
			name: "duplicate volume names",
			obj: podWith(func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "v"}, {Name: "v"}}
			}),
			want: []string{`spec.volumes[1].name: Duplicate value: "v"`},
		},
		{
			name: "two volume sources",
			obj: podWith(func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{
					EmptyDir: &corev1.EmptyDirVolumeSource{}, HostPath: &corev1.HostPathVolumeSource{Path: "/tmp"}}}}
			}),
			want: []string{`spec.volumes[0].hostPath: Forbidden: may not specify more than 1 volume type`},
		},
		{
			name: "image volume without a reference, with an unknown pull policy",
			obj: podWith(func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{PullPolicy: "Sometimes"}}}}
			}),
			want: []string{
				`spec.volumes[0].image.reference: Required value`,
				`spec.volumes[0].image.pullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"`,
			},
		},
		{
			name: "toleration with unknown operator",
			obj: podWith(func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: "Maybe"}}
			}),
			want: []string{`spec.tolerations[0].operator: Unsupported value: "Maybe": supported values: "Equal", "Exists"`},
		},
		{
			name: "toleration seconds without NoExecute",
			obj: podWith(func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule, TolerationSeconds: ptrTo(int64(1))}}
			}),
			want: []string{`spec.tolerations[0].effect: Invalid value: "NoSchedule": effect must be 'NoExecute' when ` + "`tolerationSeconds`" + ` is set`},
		},
		{
			name: "invalid node selector",
			obj:  podWith(func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"-bad": "x"} }),
			want: []string{`spec.nodeSelector: Invalid value: "-bad": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`},
		},
		{
			name: "probe with two handlers",
			obj: podWith(func(p *corev1.Pod) {
				p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
					Exec: &corev1.ExecAction{Command: []string{"true"}}, TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}}
			}),
			want: []string{`spec.containers[0].readinessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type`},
		},
		{
			name: "bound pod with scheduling gates",
			obj: podWith(func(p *corev1.Pod) {
				p.Spec.NodeName = "node-1"
				p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/wait"}}
			}),
			want: []string{`spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared`},
		},
		{
			name: "deployment is valid",
			obj:  webDeployment(func(*appsv1.Deployment) {}),
		},
		{
			name: "deployment selector does not match template",
			obj: webDeployment(func(d *appsv1.Deployment) {
				d.Spec.Template.Labels = map[string]string{"app": "other"}
			}),
			want: []string{`spec.template.metadata.labels: Invalid value: {"app":"other"}: ` + "`selector` does not match template `labels`"},
		},
		{
			name: "deployment without selector",
			obj:  webDeployment(func(d *appsv1.Deployment) { d.Spec.Selector = nil }),
			want: []string{
				`spec.selector: Required value`,
				`spec.template.metadata.labels: Invalid value: {"app":"web"}: ` + "`selector` does not match template `labels`",
			},
		},
		{
			name: "deployment with empty selector",
			obj:  webDeployment(func(d *appsv1.Deployment) { d.Spec.Selector = &metav1.LabelSelector{} }),
			want: []string{`spec.selector: Invalid value: {}: empty selector is invalid for deployment`},
		},
		{
			name: "deployment with negative replicas",
			obj:  webDeployment(func(d *appsv1.Deployment) { d.Spec.Replicas = ptrTo(int32(-1)) }),
			want: []string{`spec.replicas: Invalid value: -1: must be greater than or equal to 0`},
		},
		{
			name: "deployment template with restartPolicy Never",
			obj:  webDeployment(func(d *appsv1.Deployment) { d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever }),
			want: []string{`spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"`},
		},
		{
			name: "deployment strategy with zero surge and unavailable",
			obj: webDeployment(func(d *appsv1.Deployment) {
				d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: ptrTo(intstr.FromInt32(0)), MaxUnavailable: ptrTo(intstr.FromString("0%"))}
			}),
			want: []string{`spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "0%": may not be 0 when ` + "`maxSurge`" + ` is 0`},
		},
		{
			name: "replicaset selector does not match template",
			obj: &appsv1.ReplicaSet{ObjectMeta: metaNS("web-1", "default"), Spec: appsv1.ReplicaSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}},
			}},
			want: []string{`spec.template.metadata.labels: Invalid value: null: ` + "`selector` does not match template `labels`"},
		},
		{name: "service is valid", obj: webService(func(*corev1.Service) {})},
		{
			name: "service without ports",
			obj:  webService(func(s *corev1.Service) { s.Spec.Ports = nil }),
			want: []string{`spec.ports: Required value`},
		},
		{
			name: "service name must be a DNS-1035 label",
			obj:  webService(func(s *corev1.Service) { s.Name = "1web" }),
			want: []string{`metadata.name: Invalid value: "1web": ` + dns1035LabelMsg},
		},
		{
			name: "service ports need unique names",
			obj: webService(func(s *corev1.Service) {
				s.Spec.Ports = []corev1.ServicePort{{Name: "http", Port: 80}, {Name: "http", Port: 8080}, {Port: 0}}
			}),
			want: []string{
				`spec.ports[1].name: Duplicate value: "http"`,
				`spec.ports[2].name: Required value`,
				`spec.ports[2].port: Invalid value: 0: ` + portRangeMsg,
				`spec.ports[2].targetPort: Invalid value: 0: ` + portRangeMsg,
			},
		},
		{
			name: "nodePort on a ClusterIP service",
			obj:  webService(func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 30080 }),
			want: []string{`spec.ports[0].nodePort: Forbidden: may not be used when ` + "`type`" + ` is 'ClusterIP'`},
		},
		{
			name: "unsupported service type",
			obj:  webService(func(s *corev1.Service) { s.Spec.Type = "Magic" }),
			want: []string{`spec.type: Unsupported value: "Magic": supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort"`},
		},
		{
			name: "configmap key and size",
			obj:  &corev1.ConfigMap{ObjectMeta: metaNS("cfg", "default"), Data: map[string]string{"a b": strings.Repeat("x", 1<<20+1)}},
			want: []string{
				`data[a b]: Invalid value: "a b": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`,
				`[]: Too long: may not be more than 1048576 bytes`,
			},
		},
		{
			name: "tls secret without its keys",
			obj:  &corev1.Secret{ObjectMeta: metaNS("tls", "default"), Type: corev1.SecretTypeTLS},
			want: []string{`data[tls.crt]: Required value`, `data[tls.key]: Required value`},
		},
		{
			name: "namespace name must be a DNS-1123 label",
			obj:  &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team.a"}},
			want: []string{`metadata.name: Invalid value: "team.a": must not contain dots`},
		},
		{
			name: "namespace name with upper case",
			obj:  &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "Team"}},
			want: []string{`metadata.name: Invalid value: "Team": ` + dns1123LabelMsg},
		},
		{
			name: "node with a bad taint",
			obj: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{
				{Key: "dedicated", Value: "gpu", Effect: "Sometimes"}, {Key: "k", Effect: corev1.TaintEffectNoSchedule}, {Key: "k", Effect: corev1.TaintEffectNoSchedule},
			}}},
			want: []string{
				`metadata.taints[0].effect: Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`,
				`metadata.taints[2]: Duplicate value: {"key":"k","effect":"NoSchedule"}: taints must be unique by key and effect pair`,
			},
		},
		{
			name: "namespaced node",
			obj:  &corev1.Node{ObjectMeta: metaNS("node-1", "default")},
			want: []string{`metadata.namespace: Forbidden: not allowed on this type`},
		},
		{
			name: "lease with a negative duration",
			obj:  &coordinationv1.Lease{ObjectMeta: metaNS("node-1", "kube-node-lease"), Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptrTo(int32(-5))}},
			want: []string{`spec.leaseDurationSeconds: Invalid value: -5: must be greater than 0`},
		},
		{
			name: "event for an object in another namespace",
			obj: &corev1.Event{ObjectMeta: metaNS("mypod.1", "default"),
				InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "other", Name: "mypod"}, Reason: "Scheduled"},
			want: []string{`involvedObject.namespace: Invalid value: "other": does not match event.namespace`},
		},
		{
			name: "service account name",
			obj:  &corev1.ServiceAccount{ObjectMeta: metaNS("Builder", "default")},
			want: []string{`metadata.name: Invalid value: "Builder": ` + dns1123SubdomainMsg},
		},
		{
			name: "endpoints on loopback",
			obj: &corev1.Endpoints{ObjectMeta: metaNS("web", "default"), Subsets: []corev1.EndpointSubset{{
				Addresses: []corev1.EndpointAddress{{IP: "127.0.0.1"}}, Ports: []corev1.EndpointPort{{Port: 80}}}}},
			want: []string{`subsets[0].addresses[0].ip: Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)`},
		},
		{
			name: "binding without a target",
			obj:  &corev1.Binding{ObjectMeta: metaNS("mypod", "default"), Target: corev1.ObjectReference{Kind: "Pod"}},
			want: []string{
				`target.kind: Unsupported value: "Pod": supported values: "Node", "<empty>"`,
				`target.name: Required value`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := tt.obj.DeepCopyObject()
			Default(obj)
			assertStrings(t, errorStrings(Validate(obj, nil)), tt.want)
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	stored := func() *corev1.Pod {
		p := seedPod()
		Default(p)
		p.ResourceVersion = "5"
		p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}
		return p
	}
	tests := []struct {
		name      string
		old       runtime.Object
		obj       runtime.Object
		want      []string
		wantStart string
	}{
		{
			name: "image change is allowed",
			old:  stored(),
			obj:  func() *corev1.Pod { p := stored(); p.Spec.Containers[0].Image = "nginx:1.27"; return p }(),
		},
		{
			name: "added toleration is allowed",
			old:  stored(),
			obj: func() *corev1.Pod {
				p := stored()
				p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "x", Operator: corev1.TolerationOpExists})
				return p
			}(),
		},
		{
			name: "removed toleration",
			old:  stored(),
			obj:  func() *corev1.Pod { p := stored(); p.Spec.Tolerations = nil; return p }(),
			want: []string{`spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds`},
		},
		{
			name: "added container",
			old:  stored(),
			obj: func() *corev1.Pod {
				p := stored()
				p.Spec.Containers = append(p.Spec.Containers, p.Spec.Containers[0])
				p.Spec.Containers[1].Name = "second"
				return p
			}(),
			want: []string{`spec.containers: Forbidden: pod updates may not add or remove containers`},
		},
		{
			name:      "changed restart policy",
			old:       stored(),
			obj:       func() *corev1.Pod { p := stored(); p.Spec.RestartPolicy = corev1.RestartPolicyNever; return p }(),
			wantStart: "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n",
		},
		{
			name: "renamed pod without resourceVersion",
			old:  stored(),
			obj:  func() *corev1.Pod { p := stored(); p.Name = "other"; p.ResourceVersion = ""; return p }(),
			want: []string{
				`metadata.resourceVersion: Invalid value: "": must be specified for an update`,
				`metadata.name: Invalid value: "other": field is immutable`,
			},
		},
		{
			name: "deployment selector is immutable",
			old: func() *appsv1.Deployment {
				d := webDeployment(func(*appsv1.Deployment) {})
				d.ResourceVersion = "3"
				Default(d)
				return d
			}(),
			obj: func() *appsv1.Deployment {
				d := webDeployment(func(d *appsv1.Deployment) {
					d.ResourceVersion = "3"
					d.Spec.Selector.MatchLabels["tier"] = "front"
					d.Spec.Template.Labels["tier"] = "front"
				})
				return d
			}(),
			want: []string{`spec.selector: Invalid value: {"matchLabels":{"app":"web","tier":"front"}}: field is immutable`},
		},
		{
			name: "immutable configmap",
			old: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default", ResourceVersion: "1"},
				Immutable: ptrTo(true), Data: map[string]string{"a": "1"}},
			obj: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default", ResourceVersion: "1"},
				Immutable: ptrTo(true), Data: map[string]string{"a": "2"}},
			want: []string{"data: Forbidden: field is immutable when `immutable` is set"},
		},
		{
			name: "service cluster IP is immutable",
			old: webService(func(s *corev1.Service) {
				s.ResourceVersion = "1"
				s.Spec.ClusterIP = "10.96.0.10"
			}),
			obj: webService(func(s *corev1.Service) {
				s.ResourceVersion = "1"
				s.Spec.ClusterIP = "10.96.0.11"
			}),
			want: []string{`spec.clusterIPs[0]: Invalid value: ["10.96.0.11"]: may not change once set`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := tt.obj.DeepCopyObject()
			old := tt.old.DeepCopyObject()
			Default(old)
			Default(obj)
			for _, o := range []runtime.Object{old, obj} {
				if s, ok := o.(*corev1.Service); ok {
					defaultServiceIPFamilies(s)
				}
			}
			got := errorStrings(Validate(obj, old))
			if tt.wantStart != "" {
				if len(got) != 1 || !strings.HasPrefix(got[0], tt.wantStart) || !strings.Contains(got[0], "RestartPolicy:") || !strings.Contains(got[0], `"Never"`) {
					t.Fatalf("errors = %q, want one starting %q with a diff", got, tt.wantStart)
				}
				return
			}
			assertStrings(t, got, tt.want)
		})
	}
}

func TestValidationPluginErrors(t *testing.T) {
	bindingsResource := podsResource
	tests := []struct {
		name     string
		attrs    *Attributes
		wantMsg  string
		wantCode int32
	}{
		{
			name:     "invalid pod through the chain",
			attrs:    &Attributes{Operation: Create, Resource: podsResource, Kind: podKind, Namespace: "default", Object: podWith(func(p *corev1.Pod) { p.Name = "My_Pod" })},
			wantMsg:  `Pod "My_Pod" is invalid: metadata.name: Invalid value: "My_Pod": ` + dns1123SubdomainMsg,
			wantCode: 422,
		},
		{
			name: "pod with two problems",
			attrs: &Attributes{Operation: Create, Resource: podsResource, Kind: podKind, Namespace: "default", Object: podWith(func(p *corev1.Pod) {
				p.Spec.Containers = []corev1.Container{{Name: "c"}, {Name: "c", Image: "nginx"}}
			})},
			wantMsg:  `Pod "mypod" is invalid: [spec.containers[0].image: Required value, spec.containers[1].name: Duplicate value: "c"]`,
			wantCode: 422,
		},
		{
			name: "deployment mismatch",
			attrs: &Attributes{Operation: Create, Resource: deploymentsResource, Kind: deploymentKind, Namespace: "default",
				Object: webDeployment(func(d *appsv1.Deployment) { d.Spec.Template.Labels = map[string]string{"app": "other"} })},
			wantMsg:  `Deployment.apps "web" is invalid: spec.template.metadata.labels: Invalid value: {"app":"other"}: ` + "`selector` does not match template `labels`",
			wantCode: 422,
		},
		{
			name: "binding without target",
			attrs: &Attributes{Operation: Create, Resource: bindingsResource, Subresource: "binding", Kind: schema.GroupVersionKind{Version: "v1", Kind: "Binding"},
				Namespace: "default", Name: "mypod", Object: &corev1.Binding{ObjectMeta: metaNS("mypod", "default")}},
			wantMsg:  `Binding "mypod" is invalid: target.name: Required value`,
			wantCode: 422,
		},
		{
			name: "pod status update may not move the pod",
			attrs: &Attributes{Operation: Update, Resource: podsResource, Subresource: "status", Kind: podKind, Namespace: "default", Name: "mypod",
				Object: podWith(func(p *corev1.Pod) {
					p.ResourceVersion = "2"
					p.Spec.NodeName = "node-2"
					p.Status.Phase = corev1.PodRunning
				}),
				OldObject: podWith(func(p *corev1.Pod) { p.ResourceVersion = "2"; p.Spec.NodeName = "node-1" })},
			wantMsg:  `Pod "mypod" is invalid: status.nodeName: Forbidden: may not be changed directly`,
			wantCode: 422,
		},
		{
			name: "valid binding",
			attrs: &Attributes{Operation: Create, Resource: bindingsResource, Subresource: "binding", Kind: schema.GroupVersionKind{Version: "v1", Kind: "Binding"},
				Namespace: "default", Name: "mypod", Object: &corev1.Binding{ObjectMeta: metaNS("mypod", "default"), Target: corev1.ObjectReference{Kind: "Node", Name: "node-1"}}},
		},
		{
			name:  "delete is not validated",
			attrs: &Attributes{Operation: Delete, Resource: podsResource, Kind: podKind, Namespace: "default", Name: "mypod"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			steps, err := NewChain(NewDefaultValues(), NewValidation()).Run(context.Background(), tt.attrs)
			if tt.wantMsg == "" {
				if err != nil {
					t.Fatalf("want admitted, got %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("want refused")
			}
			if !apierrors.IsInvalid(err) || apiCode(err) != tt.wantCode {
				t.Errorf("err = %T code %d, want Invalid %d", err, apiCode(err), tt.wantCode)
			}
			if err.Error() != tt.wantMsg {
				t.Errorf("message\ngot:  %s\nwant: %s", err.Error(), tt.wantMsg)
			}
			last := steps[len(steps)-1]
			if last.Plugin != ValidationPluginName || last.Error != tt.wantMsg {
				t.Errorf("last step = %+v", last)
			}
		})
	}
}

// TestValidatePodCertificateProjection: a projected podCertificate source
// needs a signer and a known key type, and a lifetime between an hour and
// 91 days (a day for kubernetes.io signers), with upstream's messages.
func TestValidatePodCertificateProjection(t *testing.T) {
	secs := func(n int32) *int32 { return &n }
	for _, tc := range []struct {
		pc   corev1.PodCertificateProjection
		want string
	}{
		{corev1.PodCertificateProjection{SignerName: "example.com/spiffe", KeyType: "ECDSAP256", MaxExpirationSeconds: secs(3600)}, ""},
		{corev1.PodCertificateProjection{SignerName: "example.com/spiffe", KeyType: "ECDSAP256", MaxExpirationSeconds: secs(3599)}, "maxExpirationSeconds: Invalid value: 3599: if provided, maxExpirationSeconds must be >= 3600"},
		{corev1.PodCertificateProjection{SignerName: "example.com/spiffe", KeyType: "ECDSAP256", MaxExpirationSeconds: secs(7862401)}, "maxExpirationSeconds: Invalid value: 7862401: if provided, maxExpirationSeconds must be <= 7862400"},
		{corev1.PodCertificateProjection{SignerName: "kubernetes.io/kube-apiserver-client-pod", KeyType: "ED25519", MaxExpirationSeconds: secs(86401)}, "if provided, maxExpirationSeconds must be <= 86400"},
		{corev1.PodCertificateProjection{KeyType: "DSA"}, "signerName: Required value"},
		{corev1.PodCertificateProjection{SignerName: "example.com/x", KeyType: "DSA"}, `keyType: Unsupported value: "DSA"`},
	} {
		errs := validatePodCertificateProjection(&tc.pc, field.NewPath("podCertificate"))
		if tc.want == "" {
			if len(errs) > 0 {
				t.Errorf("%+v: %v", tc.pc, errs)
			}
			continue
		}
		if !strings.Contains(errs.ToAggregate().Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.pc, errs, tc.want)
		}
	}
}

// TestValidateSysctls: the conformance spec's names: "foo-" and "bar.."
// are refused with upstream's message, well-formed names pass whether or
// not the node allows them.
func TestValidateSysctls(t *testing.T) {
	errs := validateSysctls([]corev1.Sysctl{{Name: "foo-"}, {Name: "kernel.shmmax"}, {Name: "safe-and-unsafe"}, {Name: "bar.."}, {Name: "net/ipv4/tcp_syncookies"}, {Name: "kernel.shmmax"}}, field.NewPath("sysctls"))
	got := errs.ToAggregate().Error()
	for _, want := range []string{`sysctls[0].name: Invalid value: "foo-": must have at most 253 characters and match regex ^([a-z0-9]`, `sysctls[3].name: Invalid value: "bar.."`, `sysctls[5].name: Duplicate value: "kernel.shmmax"`} {
		if !strings.Contains(got, want) {
			t.Errorf("errors %s, want %q", got, want)
		}
	}
	if len(errs) != 3 {
		t.Errorf("%d errors, want 3: %v", len(errs), errs)
	}
}
