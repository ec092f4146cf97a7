package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/glassplane/glassplane/web/webtest"
)

// TestServicePage opens a Service's page in chromium before its pods
// exist: the EndpointSlice controller's endpoints (each pod linked, on the
// containerd node, ready) appear without a reload as the two pods on the
// containerd node turn Ready; the page names the Service's DNS records
// and shows the containerd node's service proxy rules (the cluster IP, a
// DNAT to each pod); a pod deleted leaves the endpoints and the rules
// live.
func TestServicePage(t *testing.T) {
	requireTool(t, "containerd", "real containers")
	requireTool(t, "runc", "real containers")
	c := SharedCluster(t)
	ctx := context.Background()
	const ns = "service-page"
	createNamespace(t, c, ns)
	t.Cleanup(func() { c.Kubectl(t, "", "delete", "namespace", ns, "--wait=false") })
	svc, err := c.Client.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	tab := webtest.Browser(t)
	// The page is live once its websocket opened; a page that missed it
	// (a resync racing the load on a busy machine) is loaded again.
	for attempt := 1; ; attempt++ {
		webtest.Navigate(t, tab, c.WebURL+"/objects/services/"+ns+"/web")
		webtest.WaitSelector(t, tab, webtest.TestID("service"))
		err := pollJS(tab, `document.querySelector('[data-testid="connection"]').dataset.state === "live"`, 20*time.Second)
		if err == nil {
			break
		}
		if attempt == 3 {
			t.Fatalf("the Service page never went live: %v", err)
		}
	}
	webtest.Eval[bool](t, tab, `window.__noReload = true`)
	if got := webtest.Eval[string](t, tab, `document.querySelector('[data-testid="service-cluster-ips"]').textContent`); got != svc.Spec.ClusterIP {
		t.Errorf("clusterIPs %q, want %s", got, svc.Spec.ClusterIP)
	}
	dns := webtest.Eval[[]string](t, tab, `[...document.querySelectorAll('[data-testid="dns-name"]')].map(r => r.dataset.name + " " + r.dataset.type)`)
	for _, want := range []string{"web." + ns + ".svc.cluster.local A", "web." + ns + " A", "web A", "_http._tcp.web." + ns + ".svc.cluster.local SRV"} {
		if !anyContains(dns, want) {
			t.Errorf("DNS names %q lack %q", dns, want)
		}
	}

	nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "node.glassplane.io/runtime=containerd"})
	if err != nil || len(nodes.Items) == 0 {
		t.Fatalf("no containerd node: %v", err)
	}
	node := nodes.Items[0].Name
	for _, name := range []string{"web-1", "web-2"} {
		p := onContainerdNode(name, corev1.RestartPolicyAlways, corev1.Container{Name: "httpd", Image: demoImage, Ports: []corev1.ContainerPort{{ContainerPort: 8080}}})
		p.Namespace, p.Labels = ns, map[string]string{"app": "web"}
		// The namespace's default ServiceAccount may not exist yet.
		Eventually(t, time.Minute, "pod "+name+" created", func() error {
			_, err := c.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
			return err
		})
	}
	// The ready endpoints shown, each exactly once: the page renders the
	// Service's EndpointSlices as read, so an endpoint in two slices (the
	// EndpointSlice controller acting on a stale cache) would show twice.
	ready := `[...document.querySelectorAll('[data-testid="endpoint"]')].filter(e => e.dataset.ready === "true").map(e => e.dataset.pod + "@" + e.dataset.node).sort().join(",")`
	want := fmt.Sprintf("web-1@%s,web-2@%s", node, node)
	waitShown(t, c, tab, ns, ready, want)
	if !webtest.Eval[bool](t, tab, `window.__noReload === true`) {
		t.Fatal("the Service page reloaded instead of updating live")
	}
	links := webtest.Eval[[]string](t, tab, `[...document.querySelectorAll('[data-testid="endpoint-pod"]')].map(a => a.getAttribute("href")).sort()`)
	if strings.Join(links, ",") != "/objects/pods/"+ns+"/web-1,/objects/pods/"+ns+"/web-2" {
		t.Errorf("endpoint pod links %q", links)
	}

	// The containerd node's proxy rules as the kernel holds them: the
	// Service's cluster IP and a DNAT to each ready pod. They may be read
	// before the proxy programmed the second pod; its EndpointsProgrammed
	// Event reloads them.
	rules := fmt.Sprintf(`[data-testid="node-rules"][data-node=%s] [data-testid="rules"]`, webtest.JSString(node))
	var ips []string
	for _, name := range []string{"web-1", "web-2"} {
		p, err := c.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ips = append(ips, p.Status.PodIP)
	}
	rulesText := `(document.querySelector(` + webtest.JSString(rules) + `)?.textContent || "")`
	has := fmt.Sprintf(`[%s, %s, %s].every(s => %s.includes(s)) ? "programmed" : %s`,
		webtest.JSString(svc.Spec.ClusterIP), webtest.JSString("dnat to "+ips[0]+":8080"), webtest.JSString("dnat to "+ips[1]+":8080"), rulesText, rulesText)
	waitShown(t, c, tab, ns, has, "programmed")
	if n := webtest.Eval[int](t, tab, `document.querySelectorAll('[data-testid="service-simulated"]').length`); n != 0 {
		t.Error("a cluster with a containerd node says its nodes are all simulated")
	}
	webtest.Screenshot(t, tab, filepath.Join(webtest.OutputDir(t), "service.png"))

	if err := c.Client.CoreV1().Pods(ns).Delete(ctx, "web-1", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	waitShown(t, c, tab, ns, ready, "web-2@"+node)
	gone := fmt.Sprintf(`!%s.includes(%s) && %s.includes(%s) ? "reprogrammed" : %s`,
		rulesText, webtest.JSString("dnat to "+ips[0]+":8080"), rulesText, webtest.JSString("dnat to "+ips[1]+":8080"), rulesText)
	waitShown(t, c, tab, ns, gone, "reprogrammed")
	if !webtest.Eval[bool](t, tab, `window.__noReload === true`) {
		t.Fatal("the Service page reloaded instead of updating live")
	}
}

// waitShown waits until the page's expression shown is want; when it does
// not come, it says what the page showed and what the API holds.
func waitShown(t *testing.T, c *Cluster, tab context.Context, ns, shown, want string) {
	t.Helper()
	deadline := time.Now().Add(webtest.Timeout)
	var got string
	for time.Now().Before(deadline) {
		if got = webtest.Eval[string](t, tab, shown); got == want {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	pods, _ := c.Kubectl(t, "", "get", "pods,endpointslices", "-n", ns, "-o", "wide")
	panel := webtest.Eval[string](t, tab, `document.getElementById("service-panel").dataset.reloads + " reloads: " + document.getElementById("service-panel").textContent.replace(/\s+/g, " ")`)
	t.Fatalf("the page shows %q, want %q\npage: %s\nAPI:\n%s", got, want, panel, pods)
}
