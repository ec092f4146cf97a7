package node

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/glassplane/glassplane/controlplane/node/runtime"
)

func service(ns, name, ip string, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.ServiceSpec{ClusterIP: ip, Ports: ports},
	}
}

func tcp(name string, port int32) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: port, Protocol: corev1.ProtocolTCP}
}

func envList(vars []corev1.EnvVar) []string {
	out := make([]string, len(vars))
	for i, e := range vars {
		out[i] = e.Name + "=" + e.Value
	}
	return out
}

// TestServiceEnvVars mirrors kubelet's envvars_test.go: names, values and
// order of the variables of each Service.
func TestServiceEnvVars(t *testing.T) {
	tests := []struct {
		name     string
		services []*corev1.Service
		want     []string
	}{{
		name:     "one unnamed port",
		services: []*corev1.Service{service("", "foo-bar", "1.2.3.4", tcp("", 8080))},
		want: []string{
			"FOO_BAR_SERVICE_HOST=1.2.3.4",
			"FOO_BAR_SERVICE_PORT=8080",
			"FOO_BAR_PORT=tcp://1.2.3.4:8080",
			"FOO_BAR_PORT_8080_TCP=tcp://1.2.3.4:8080",
			"FOO_BAR_PORT_8080_TCP_PROTO=tcp",
			"FOO_BAR_PORT_8080_TCP_PORT=8080",
			"FOO_BAR_PORT_8080_TCP_ADDR=1.2.3.4",
		},
	}, {
		name: "named UDP and TCP ports, the first gives the link variable",
		services: []*corev1.Service{service("", "abc-123", "5.6.7.8",
			corev1.ServicePort{Name: "u-d-p", Port: 8081, Protocol: corev1.ProtocolUDP}, tcp("t-c-p", 8081))},
		want: []string{
			"ABC_123_SERVICE_HOST=5.6.7.8",
			"ABC_123_SERVICE_PORT=8081",
			"ABC_123_SERVICE_PORT_U_D_P=8081",
			"ABC_123_SERVICE_PORT_T_C_P=8081",
			"ABC_123_PORT=udp://5.6.7.8:8081",
			"ABC_123_PORT_8081_UDP=udp://5.6.7.8:8081",
			"ABC_123_PORT_8081_UDP_PROTO=udp",
			"ABC_123_PORT_8081_UDP_PORT=8081",
			"ABC_123_PORT_8081_UDP_ADDR=5.6.7.8",
			"ABC_123_PORT_8081_TCP=tcp://5.6.7.8:8081",
			"ABC_123_PORT_8081_TCP_PROTO=tcp",
			"ABC_123_PORT_8081_TCP_PORT=8081",
			"ABC_123_PORT_8081_TCP_ADDR=5.6.7.8",
		},
	}, {
		name:     "unnamed first port, named second; protocol defaults to TCP",
		services: []*corev1.Service{service("", "q-u-u-x", "9.8.7.6", corev1.ServicePort{Port: 8082}, tcp("8083", 8083))},
		want: []string{
			"Q_U_U_X_SERVICE_HOST=9.8.7.6",
			"Q_U_U_X_SERVICE_PORT=8082",
			"Q_U_U_X_SERVICE_PORT_8083=8083",
			"Q_U_U_X_PORT=tcp://9.8.7.6:8082",
			"Q_U_U_X_PORT_8082_TCP=tcp://9.8.7.6:8082",
			"Q_U_U_X_PORT_8082_TCP_PROTO=tcp",
			"Q_U_U_X_PORT_8082_TCP_PORT=8082",
			"Q_U_U_X_PORT_8082_TCP_ADDR=9.8.7.6",
			"Q_U_U_X_PORT_8083_TCP=tcp://9.8.7.6:8083",
			"Q_U_U_X_PORT_8083_TCP_PROTO=tcp",
			"Q_U_U_X_PORT_8083_TCP_PORT=8083",
			"Q_U_U_X_PORT_8083_TCP_ADDR=9.8.7.6",
		},
	}, {
		name:     "IPv6 address in brackets in the URLs",
		services: []*corev1.Service{service("", "v6", "fd00::1", tcp("", 80))},
		want: []string{
			"V6_SERVICE_HOST=fd00::1",
			"V6_SERVICE_PORT=80",
			"V6_PORT=tcp://[fd00::1]:80",
			"V6_PORT_80_TCP=tcp://[fd00::1]:80",
			"V6_PORT_80_TCP_PROTO=tcp",
			"V6_PORT_80_TCP_PORT=80",
			"V6_PORT_80_TCP_ADDR=fd00::1",
		},
	}, {
		name: "headless, empty ClusterIP, ExternalName and portless Services give none",
		services: []*corev1.Service{
			service("", "svrc-clusterip-none", corev1.ClusterIPNone, tcp("", 8082)),
			service("", "svrc-clusterip-empty", "", tcp("", 8082)),
			{ObjectMeta: metav1.ObjectMeta{Name: "ext"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com"}},
			service("", "no-ports", "1.1.1.1"),
		},
		want: []string{},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := envList(serviceEnvVars(tt.services))
			if !slices.Equal(got, tt.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestServiceEnvMap: which Services a pod of namespace "app" gets
// variables for (kubelet's getServiceEnvVarMap).
func TestServiceEnvMap(t *testing.T) {
	kubernetes := service("default", "kubernetes", "10.96.0.1", tcp("https", 443))
	web := service("app", "web", "10.96.0.50", tcp("", 80))
	other := service("other", "db", "10.96.0.60", tcp("", 5432))
	defaultWeb := service("default", "default-web", "10.96.0.70", tcp("", 8080))
	headless := service("app", "headless", corev1.ClusterIPNone, tcp("", 80))
	ownKubernetes := service("app", "kubernetes", "10.96.0.80", tcp("", 6443))
	tests := []struct {
		name      string
		services  []*corev1.Service
		links     bool
		wantHosts []string
	}{
		{"links: own namespace and the kubernetes Service", []*corev1.Service{kubernetes, web, other, defaultWeb, headless}, true,
			[]string{"KUBERNETES_SERVICE_HOST=10.96.0.1", "WEB_SERVICE_HOST=10.96.0.50"}},
		{"no links: only the kubernetes Service", []*corev1.Service{kubernetes, web, other, defaultWeb}, false,
			[]string{"KUBERNETES_SERVICE_HOST=10.96.0.1"}},
		{"no links and no kubernetes Service: nothing", []*corev1.Service{web}, false, nil},
		{"the namespace's own kubernetes Service wins when listed after", []*corev1.Service{kubernetes, ownKubernetes}, true,
			[]string{"KUBERNETES_SERVICE_HOST=10.96.0.80"}},
		{"the namespace's own kubernetes Service wins when listed before", []*corev1.Service{ownKubernetes, kubernetes}, true,
			[]string{"KUBERNETES_SERVICE_HOST=10.96.0.80"}},
		{"no links: the namespace's own kubernetes Service is not used", []*corev1.Service{ownKubernetes, kubernetes}, false,
			[]string{"KUBERNETES_SERVICE_HOST=10.96.0.1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := serviceEnvMap(tt.services, "app", tt.links)
			var hosts []string
			for k, v := range env {
				if strings.HasSuffix(k, "_SERVICE_HOST") {
					hosts = append(hosts, k+"="+v)
				}
			}
			slices.Sort(hosts)
			if !slices.Equal(hosts, tt.wantHosts) {
				t.Errorf("hosts = %v, want %v (all: %v)", hosts, tt.wantHosts, env)
			}
		})
	}
}

// TestContainerServiceEnv: a container's environment and command with the
// service variables, as kubelet's makeEnvironmentVariables builds them.
func TestContainerServiceEnv(t *testing.T) {
	services := []*corev1.Service{
		service("default", "kubernetes", "10.96.0.1", tcp("https", 443)),
		service("app", "web", "10.96.0.50", tcp("", 80)),
	}
	tests := []struct {
		name  string
		links *bool
		c     corev1.Container
		// exact is the whole environment, in order, when set.
		exact []string
		// want are variables the environment has, once.
		want    []string
		absent  []string
		command []string
	}{{
		name: "default links: pod env first, then the service variables sorted",
		c:    corev1.Container{Env: []corev1.EnvVar{{Name: "A", Value: "1"}}},
		exact: []string{"A=1",
			"KUBERNETES_PORT=tcp://10.96.0.1:443",
			"KUBERNETES_PORT_443_TCP=tcp://10.96.0.1:443",
			"KUBERNETES_PORT_443_TCP_ADDR=10.96.0.1",
			"KUBERNETES_PORT_443_TCP_PORT=443",
			"KUBERNETES_PORT_443_TCP_PROTO=tcp",
			"KUBERNETES_SERVICE_HOST=10.96.0.1",
			"KUBERNETES_SERVICE_PORT=443",
			"KUBERNETES_SERVICE_PORT_HTTPS=443",
			"WEB_PORT=tcp://10.96.0.50:80",
			"WEB_PORT_80_TCP=tcp://10.96.0.50:80",
			"WEB_PORT_80_TCP_ADDR=10.96.0.50",
			"WEB_PORT_80_TCP_PORT=80",
			"WEB_PORT_80_TCP_PROTO=tcp",
			"WEB_SERVICE_HOST=10.96.0.50",
			"WEB_SERVICE_PORT=80",
		},
	}, {
		name:   "enableServiceLinks false: only the kubernetes Service",
		links:  ptr.To(false),
		want:   []string{"KUBERNETES_SERVICE_HOST=10.96.0.1", "KUBERNETES_SERVICE_PORT=443"},
		absent: []string{"WEB_SERVICE_HOST", "WEB_PORT"},
	}, {
		name: "the pod's env overrides a service variable, in its place",
		c:    corev1.Container{Env: []corev1.EnvVar{{Name: "WEB_SERVICE_HOST", Value: "mine"}}},
		want: []string{"WEB_SERVICE_HOST=mine", "WEB_SERVICE_PORT=80"},
	}, {
		name: "$(VAR) sees the service variables, the pod's own first",
		c: corev1.Container{
			Env: []corev1.EnvVar{
				{Name: "WEB_SERVICE_PORT", Value: "8080"},
				{Name: "URL", Value: "http://$(WEB_SERVICE_HOST):$(WEB_SERVICE_PORT)/"},
				{Name: "UNKNOWN", Value: "$(NOPE_SERVICE_HOST)"},
			},
			Command: []string{"wget", "$(WEB_PORT)", "$(URL)"},
		},
		want:    []string{"URL=http://10.96.0.50:8080/", "UNKNOWN=$(NOPE_SERVICE_HOST)", "WEB_PORT=tcp://10.96.0.50:80"},
		command: []string{"wget", "tcp://10.96.0.50:80", "http://10.96.0.50:8080/"},
	}}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, svc := range services {
		if err := indexer.Add(svc); err != nil {
			t.Fatal(err)
		}
	}
	a := &Agent{serviceLister: corelisters.NewServiceLister(indexer), log: slog.New(slog.DiscardHandler)}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "p"}, Spec: corev1.PodSpec{EnableServiceLinks: tt.links}}
			tt.c.Name = "c"
			spec, err := a.containerSpec(context.Background(), &podWorker{}, pod, tt.c, 0)
			if err != nil {
				t.Fatal(err)
			}
			if tt.exact != nil && !slices.Equal(spec.Env, tt.exact) {
				t.Errorf("env =\n%s\nwant\n%s", strings.Join(spec.Env, "\n"), strings.Join(tt.exact, "\n"))
			}
			for _, w := range tt.want {
				if n := count(spec.Env, w); n != 1 {
					t.Errorf("%q appears %d times in %v", w, n, spec.Env)
				}
			}
			for _, name := range tt.absent {
				for _, kv := range spec.Env {
					if strings.HasPrefix(kv, name+"=") {
						t.Errorf("%s set with enableServiceLinks false", kv)
					}
				}
			}
			if tt.command != nil && !slices.Equal(spec.Command, tt.command) {
				t.Errorf("command = %v, want %v", spec.Command, tt.command)
			}
			names := map[string]bool{}
			for _, kv := range spec.Env {
				name, _, _ := strings.Cut(kv, "=")
				if names[name] {
					t.Errorf("%s set twice in %v", name, spec.Env)
				}
				names[name] = true
			}
		})
	}
}

func count(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

// recordingRuntime is a simulated runtime that keeps the spec of each
// container it creates.
type recordingRuntime struct {
	*runtime.Simulated
	mu    sync.Mutex // guards specs
	specs map[string]runtime.ContainerSpec
}

func (r *recordingRuntime) CreateContainer(ctx context.Context, pod runtime.PodSpec, c runtime.ContainerSpec) (string, error) {
	r.mu.Lock()
	r.specs[pod.Name+"/"+c.Name] = c
	r.mu.Unlock()
	return r.Simulated.CreateContainer(ctx, pod, c)
}

func (r *recordingRuntime) env(key string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.specs[key].Env
}

// TestPodGetsServiceEnv: a pod on a simulated node starts with the
// variables of the Services that exist, read through the agent's Service
// cache, and of Services created after the agent started.
func TestPodGetsServiceEnv(t *testing.T) {
	rt := &recordingRuntime{Simulated: simRuntime(), specs: map[string]runtime.ContainerSpec{}}
	h := startAgent(t, rt, nil)
	ctx := context.Background()
	for _, svc := range []*corev1.Service{
		service("default", "kubernetes", "10.96.0.1", tcp("https", 443)),
		service("default", "web", "10.96.0.50", tcp("", 80)),
	} {
		if _, err := h.client.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the agent's Service cache has both Services", func() (bool, string) {
		list, err := h.agent.serviceLister.List(labels.Everything())
		return err == nil && len(list) == 2, ""
	})
	linked := newPod("linked", corev1.RestartPolicyAlways, "busybox")
	unlinked := newPod("unlinked", corev1.RestartPolicyAlways, "busybox")
	unlinked.Spec.EnableServiceLinks = ptr.To(false)
	h.createPod(t, linked)
	h.createPod(t, unlinked)
	eventually(t, "both pods' containers created", func() (bool, string) {
		return rt.env("linked/c0") != nil && rt.env("unlinked/c0") != nil, ""
	})
	for _, want := range []string{"WEB_SERVICE_HOST=10.96.0.50", "WEB_SERVICE_PORT=80", "WEB_PORT=tcp://10.96.0.50:80", "KUBERNETES_SERVICE_HOST=10.96.0.1"} {
		if !slices.Contains(rt.env("linked/c0"), want) {
			t.Errorf("linked pod's env lacks %s: %v", want, rt.env("linked/c0"))
		}
	}
	got := rt.env("unlinked/c0")
	if !slices.Contains(got, "KUBERNETES_SERVICE_HOST=10.96.0.1") || slices.ContainsFunc(got, func(kv string) bool { return strings.HasPrefix(kv, "WEB_") }) {
		t.Errorf("unlinked pod's env = %v, want the kubernetes Service's and no WEB_ variables", got)
	}
}
