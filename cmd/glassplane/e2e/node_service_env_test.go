package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestNodeServiceEnv: a pod on the containerd node starts with the
// kubelet's variables for the Services of its namespace that exist
// (WEB_SERVICE_HOST, WEB_SERVICE_PORT, the Docker link variables), which
// its own env can use as $(VAR); with enableServiceLinks false it gets only
// the kubernetes Service's.
func TestNodeServiceEnv(t *testing.T) {
	requireTool(t, "containerd", "real containers")
	c := SharedCluster(t)
	ctx := context.Background()
	const ns = "service-env"
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	web := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: corev1.ServiceSpec{
			ClusterIP: "10.96.0.50",
			Selector:  map[string]string{"app": "web"},
			Ports:     []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}},
		},
	}
	if _, err := c.Client.CoreV1().Services(ns).Create(ctx, web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Client.CoreV1().Services(ns).Delete(context.Background(), "web", metav1.DeleteOptions{}) })

	envOf := func(t *testing.T, name string, links bool) string {
		t.Helper()
		pod := onContainerdNode(name, corev1.RestartPolicyNever, corev1.Container{Name: "env", Image: demoImage,
			Env:     []corev1.EnvVar{{Name: "WEB_URL", Value: "http://$(WEB_SERVICE_HOST):$(WEB_SERVICE_PORT)/"}},
			Command: []string{"env"}})
		pod.Namespace = ns
		pod.Spec.EnableServiceLinks = ptr.To(links)
		// The namespace's default ServiceAccount may not exist yet.
		Eventually(t, time.Minute, "pod "+name+" created", func() error {
			_, err := c.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
			return err
		})
		t.Cleanup(func() {
			_ = c.Client.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
		})
		waitPodPhase(t, c, ns, name, corev1.PodSucceeded, 3*time.Minute)
		return c.MustKubectl(t, "", "logs", "-n", ns, name)
	}
	kubernetesHost := ""
	if k, err := c.Client.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{}); err == nil && k.Spec.ClusterIP != "" && k.Spec.ClusterIP != corev1.ClusterIPNone {
		kubernetesHost = "KUBERNETES_SERVICE_HOST=" + k.Spec.ClusterIP
	}

	t.Run("enableServiceLinks", func(t *testing.T) {
		out := envOf(t, "linked", true)
		want := []string{
			"WEB_SERVICE_HOST=10.96.0.50",
			"WEB_SERVICE_PORT=80",
			"WEB_PORT=tcp://10.96.0.50:80",
			"WEB_PORT_80_TCP=tcp://10.96.0.50:80",
			"WEB_PORT_80_TCP_PROTO=tcp",
			"WEB_PORT_80_TCP_PORT=80",
			"WEB_PORT_80_TCP_ADDR=10.96.0.50",
			"WEB_URL=http://10.96.0.50:80/",
		}
		if kubernetesHost != "" {
			want = append(want, kubernetesHost)
		}
		for _, line := range want {
			if !hasLine(out, line) {
				t.Errorf("env has no line %q:\n%s", line, out)
			}
		}
	})
	t.Run("enableServiceLinks false", func(t *testing.T) {
		out := envOf(t, "unlinked", false)
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "WEB_SERVICE") || strings.HasPrefix(line, "WEB_PORT") {
				t.Errorf("env has %q with enableServiceLinks false", line)
			}
		}
		// $(VAR) of an unknown variable stays as written.
		if !hasLine(out, "WEB_URL=http://$(WEB_SERVICE_HOST):$(WEB_SERVICE_PORT)/") {
			t.Errorf("WEB_URL expanded without the Service's variables:\n%s", out)
		}
		if kubernetesHost != "" && !hasLine(out, kubernetesHost) {
			t.Errorf("env has no line %q:\n%s", kubernetesHost, out)
		}
	})
}

func hasLine(out, line string) bool {
	return strings.Contains("\n"+out, fmt.Sprintf("\n%s\n", line))
}
