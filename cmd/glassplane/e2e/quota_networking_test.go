package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestResourceQuotaAndLimitRange drives quota and limit-range admission and
// the resourcequota controller with kubectl on the shared cluster.
func TestResourceQuotaAndLimitRange(t *testing.T) {
	requireTool(t, "kubectl", "the quota test drives kubectl")
	c := SharedCluster(t)
	ns := "quota-e2e"
	c.MustKubectl(t, "", "create", "namespace", ns)
	t.Cleanup(func() { c.Kubectl(t, "", "delete", "namespace", ns, "--wait=false") })

	c.MustKubectl(t, `apiVersion: v1
kind: ResourceQuota
metadata:
  name: compute-resources
spec:
  hard:
    requests.cpu: "3"
    pods: "10"
`, "apply", "-n", ns, "-f", "-")
	Eventually(t, 30*time.Second, "the controller fills in status.used", func() error {
		out, err := c.Kubectl(t, "", "get", "quota", "compute-resources", "-n", ns, "-o", "jsonpath={.status.used.pods}")
		if err != nil || strings.TrimSpace(out) != "0" {
			return fmt.Errorf("used pods %q: %v", out, err)
		}
		return nil
	})

	pod := func(name, cpu string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  containers:
  - name: c
    image: busybox
    resources:
      requests:
        cpu: "%s"
`, name, cpu)
	}
	c.MustKubectl(t, pod("one", "2"), "apply", "-n", ns, "-f", "-")
	c.MustKubectl(t, pod("two", "1"), "apply", "-n", ns, "-f", "-")
	out, err := c.Kubectl(t, pod("three", "1"), "apply", "-n", ns, "-f", "-")
	want := `pods "three" is forbidden: exceeded quota: compute-resources, requested: requests.cpu=1, used: requests.cpu=3, limited: requests.cpu=3`
	if err == nil || !strings.Contains(out, want) {
		t.Fatalf("pod over the quota: err %v, output %q, want %q", err, out, want)
	}
	if out, err := c.Kubectl(t, "", "get", "pod", "three", "-n", ns); err == nil {
		t.Errorf("the refused pod is stored: %s", out)
	}
	describe := c.MustKubectl(t, "", "describe", "quota", "compute-resources", "-n", ns)
	for _, line := range []string{"requests.cpu  3     3", "pods          2     10"} {
		if !strings.Contains(strings.Join(strings.Fields(describe), " "), strings.Join(strings.Fields(line), " ")) {
			t.Errorf("kubectl describe quota lacks %q:\n%s", line, describe)
		}
	}
	table := c.MustKubectl(t, "", "get", "quota", "-n", ns)
	if !strings.Contains(table, "pods: 2/10, requests.cpu: 3/3") {
		t.Errorf("kubectl get quota:\n%s", table)
	}

	c.MustKubectl(t, "", "delete", "pod", "one", "-n", ns, "--grace-period=0", "--force")
	Eventually(t, time.Minute, "the controller frees the deleted pod's cpu", func() error {
		out, err := c.Kubectl(t, "", "get", "quota", "compute-resources", "-n", ns, "-o", "jsonpath={.status.used.requests\\.cpu}")
		if err != nil || strings.TrimSpace(out) != "1" {
			return fmt.Errorf("used requests.cpu %q: %v", out, err)
		}
		return nil
	})

	t.Run("limit range defaults requests and refuses below its minimum", func(t *testing.T) {
		c.MustKubectl(t, `apiVersion: v1
kind: LimitRange
metadata:
  name: cpu-defaults
spec:
  limits:
  - type: Container
    min:
      cpu: 100m
    defaultRequest:
      cpu: 250m
    default:
      cpu: 500m
`, "apply", "-n", ns, "-f", "-")
		c.MustKubectl(t, `apiVersion: v1
kind: Pod
metadata:
  name: defaulted
spec:
  containers:
  - name: c
    image: busybox
`, "apply", "-n", ns, "-f", "-")
		got := c.MustKubectl(t, "", "get", "pod", "defaulted", "-n", ns, "-o", "jsonpath={.spec.containers[0].resources.requests.cpu} {.spec.containers[0].resources.limits.cpu}")
		if got != "250m 500m" {
			t.Errorf("defaulted request and limit = %q, want \"250m 500m\"", got)
		}
		out, err := c.Kubectl(t, pod("small", "50m"), "apply", "-n", ns, "-f", "-")
		if want := `pods "small" is forbidden: minimum cpu usage per Container is 100m, but request is 50m`; err == nil || !strings.Contains(out, want) {
			t.Errorf("pod under the minimum: err %v, output %q, want %q", err, out, want)
		}
	})

	t.Run("bad quota and limit range are refused with 422 and not stored", func(t *testing.T) {
		out, err := c.Kubectl(t, `apiVersion: v1
kind: ResourceQuota
metadata:
  name: negative
spec:
  hard:
    pods: "-1"
`, "apply", "-n", ns, "-f", "-")
		if want := `spec.hard[pods]: Invalid value: "-1": must be greater than or equal to 0`; err == nil || !strings.Contains(out, want) {
			t.Errorf("negative quota: err %v, output %q, want %q", err, out, want)
		}
		out, err = c.Kubectl(t, `apiVersion: v1
kind: LimitRange
metadata:
  name: minmax
spec:
  limits:
  - type: Container
    min:
      memory: 2Gi
    max:
      memory: 1Gi
`, "apply", "-n", ns, "-f", "-")
		if want := `spec.limits[0].min[memory]: Invalid value: "2Gi": min value 2Gi is greater than max value 1Gi`; err == nil || !strings.Contains(out, want) {
			t.Errorf("min > max: err %v, output %q, want %q", err, out, want)
		}
		for _, obj := range []string{"quota/negative", "limitrange/minmax"} {
			if out, err := c.Kubectl(t, "", "get", obj, "-n", ns); err == nil {
				t.Errorf("%s was stored: %s", obj, out)
			}
		}
	})
}

// TestIngressAndNetworkPolicy round-trips the networking.k8s.io kinds with
// kubectl: stored, printed with kubectl's columns, deleted.
func TestIngressAndNetworkPolicy(t *testing.T) {
	requireTool(t, "kubectl", "the networking test drives kubectl")
	c := SharedCluster(t)
	ns := "networking-e2e"
	c.MustKubectl(t, "", "create", "namespace", ns)
	t.Cleanup(func() {
		c.Kubectl(t, "", "delete", "namespace", ns, "--wait=false")
		c.Kubectl(t, "", "delete", "ingressclass", "e2e-default", "--ignore-not-found")
	})
	c.MustKubectl(t, `apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  name: e2e-default
  annotations:
    ingressclass.kubernetes.io/is-default-class: "true"
spec:
  controller: example.com/ingress-controller
`, "apply", "-f", "-")
	classes := c.MustKubectl(t, "", "get", "ingressclass", "e2e-default")
	if !strings.Contains(classes, "CONTROLLER") || !strings.Contains(classes, "example.com/ingress-controller") {
		t.Errorf("kubectl get ingressclass:\n%s", classes)
	}
	c.MustKubectl(t, `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: web
spec:
  tls:
  - hosts: [shop.example.com]
  rules:
  - host: shop.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service:
            name: web
            port:
              number: 80
`, "apply", "-n", ns, "-f", "-")
	ing := c.MustKubectl(t, "", "get", "ingress", "web", "-n", ns)
	if fields := strings.Fields(lines(ing, "web")[0]); len(fields) < 5 || fields[1] != "e2e-default" || fields[2] != "shop.example.com" || !strings.Contains(ing, "80, 443") {
		t.Errorf("kubectl get ingress (class defaulted to e2e-default, host, ports 80, 443):\n%s", ing)
	}
	out, err := c.Kubectl(t, `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: bad
spec:
  rules:
  - http:
      paths:
      - path: /
        backend:
          service:
            name: web
            port:
              number: 80
`, "apply", "-n", ns, "-f", "-")
	if want := "spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified"; err == nil || !strings.Contains(out, want) {
		t.Errorf("ingress without pathType: err %v, output %q", err, out)
	}

	c.MustKubectl(t, `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: db-from-web
spec:
  podSelector:
    matchLabels:
      app: db
  ingress:
  - from:
    - podSelector:
        matchLabels:
          app: web
    ports:
    - port: 5432
`, "apply", "-n", ns, "-f", "-")
	np := c.MustKubectl(t, "", "get", "netpol", "db-from-web", "-n", ns)
	if !strings.Contains(np, "POD-SELECTOR") || !strings.Contains(np, "app=db") {
		t.Errorf("kubectl get networkpolicy:\n%s", np)
	}
	got := c.MustKubectl(t, "", "get", "netpol", "db-from-web", "-n", ns, "-o", "jsonpath={.spec.policyTypes} {.spec.ingress[0].ports[0].protocol}")
	if got != `["Ingress"] TCP` {
		t.Errorf("defaulted policyTypes and protocol = %q", got)
	}
	c.MustKubectl(t, "", "delete", "ingress", "web", "-n", ns)
	c.MustKubectl(t, "", "delete", "netpol", "db-from-web", "-n", ns)
	c.MustKubectl(t, "", "delete", "ingressclass", "e2e-default")
	if out, err := c.Kubectl(t, "", "get", "ingress,netpol", "-n", ns, "-o", "name"); err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("after delete: %q %v", out, err)
	}
}

// TestEventsAPIGroup: events.k8s.io/v1 lists the same stored events as
// core/v1, and an Event created through client-go's EventsV1 is listed by
// core/v1.
func TestEventsAPIGroup(t *testing.T) {
	requireTool(t, "kubectl", "the events test drives kubectl")
	c := SharedCluster(t)
	ctx := context.Background()
	ns := "events-e2e"
	c.MustKubectl(t, "", "create", "namespace", ns)
	t.Cleanup(func() { c.Kubectl(t, "", "delete", "namespace", ns, "--wait=false") })
	_, err := c.Client.EventsV1().Events(ns).Create(ctx, &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "from-events-v1"}, EventTime: metav1.NowMicro(),
		ReportingController: "example.com/e2e", ReportingInstance: "e2e-1", Action: "Checking", Reason: "Checked",
		Note: "written through events.k8s.io/v1", Type: v1.EventTypeNormal,
		Regarding: v1.ObjectReference{Kind: "ConfigMap", Namespace: ns, Name: "make-an-event", APIVersion: "v1"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	core, err := c.Client.CoreV1().Events(ns).Get(ctx, "from-events-v1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if core.Message != "written through events.k8s.io/v1" || core.ReportingController != "example.com/e2e" || core.InvolvedObject.Name != "make-an-event" {
		t.Errorf("core/v1 view: %+v", core)
	}
	c.MustKubectl(t, "", "create", "configmap", "make-an-event", "-n", ns)
	names := func(args ...string) string {
		return strings.TrimSpace(c.MustKubectl(t, "", append(args, "-n", ns, "-o", "custom-columns=NAME:.metadata.name", "--no-headers", "--sort-by=.metadata.name")...))
	}
	coreNames, v1Names := names("get", "events"), names("get", "events.v1.events.k8s.io")
	if coreNames != v1Names || !strings.Contains(v1Names, "from-events-v1") {
		t.Errorf("kubectl get events:\n%s\nkubectl get events.v1.events.k8s.io:\n%s", coreNames, v1Names)
	}
	note := c.MustKubectl(t, "", "get", "events.v1.events.k8s.io", "from-events-v1", "-n", ns, "-o", "jsonpath={.note}|{.regarding.name}|{.reportingController}")
	if note != "written through events.k8s.io/v1|make-an-event|example.com/e2e" {
		t.Errorf("events.k8s.io/v1 view: %q", note)
	}
}
