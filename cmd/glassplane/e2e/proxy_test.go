package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"
)

// proxyTable is the nftables table of the node's service proxy.
const proxyTable = "glassplane-proxy"

// nftTable lists the service proxy's table as nft prints it.
func nftTable(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("nft", "list", "table", "ip", proxyTable).CombinedOutput()
	if err != nil {
		return "no table: " + string(out)
	}
	return string(out)
}

// hostGet fetches url from the test process (the host) with a short
// timeout.
func hostGet(url string) (string, error) {
	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// TestProxyServiceDataPath: kubectl create deployment and kubectl expose
// give a Service whose ClusterIP a pod reaches (both replicas answer), a
// pod reaches itself through it (hairpin), the kubernetes Service at
// 10.96.0.1:443 accepts a pod's connection (its endpoint is the API
// server on 127.0.0.1), the NodePort answers on 127.0.0.1 from the host,
// the node serves the Service's rules through nodes/proxy, the Service
// gets EndpointsProgrammed Events, scaling to one replica sends all
// traffic to it, and deleting the Service removes its rules.
func TestProxyServiceDataPath(t *testing.T) {
	requireTool(t, "containerd", "real containers")
	requireTool(t, "nft", "the service proxy's rules")
	c := SharedCluster(t)
	ctx := context.Background()
	const ns = "proxy-e2e"
	c.MustKubectl(t, "", "create", "namespace", ns)
	t.Cleanup(func() { _ = c.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })

	// kubectl's deployment, pinned to the containerd node (the shared
	// cluster also has simulated nodes, which have no data path).
	manifest := c.MustKubectl(t, "", "create", "deployment", "web", "-n", ns, "--image", demoImage, "--replicas", "2", "--port", "8080", "--dry-run=client", "-o", "json")
	var deploy appsv1.Deployment
	if err := json.Unmarshal([]byte(manifest), &deploy); err != nil {
		t.Fatalf("kubectl create deployment --dry-run printed %q: %v", manifest, err)
	}
	deploy.Spec.Template.Spec.NodeSelector = map[string]string{"node.glassplane.io/runtime": "containerd"}
	deploy.Spec.Template.Spec.TerminationGracePeriodSeconds = new(int64(2))
	b, err := json.Marshal(&deploy)
	if err != nil {
		t.Fatal(err)
	}
	c.MustKubectl(t, string(b), "create", "-f", "-")
	if out := c.MustKubectl(t, "", "expose", "deployment", "web", "-n", ns, "--port", "80", "--target-port", "8080", "--type", "NodePort"); !strings.Contains(out, "service/web exposed") {
		t.Fatalf("kubectl expose printed %q", out)
	}
	svc, err := c.Client.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	clusterIP, nodePort := svc.Spec.ClusterIP, svc.Spec.Ports[0].NodePort
	if clusterIP == "" || clusterIP == corev1.ClusterIPNone || nodePort == 0 {
		t.Fatalf("Service web has clusterIP %q, nodePort %d", clusterIP, nodePort)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("table:\n%s\ncluster log:\n%s", nftTable(t), tail(c.Log(), 40))
		}
	})

	var pods []corev1.Pod
	Eventually(t, 3*time.Minute, "two web pods ready", func() error {
		list, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return err
		}
		pods = nil
		for _, p := range list.Items {
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
					pods = append(pods, p)
				}
			}
		}
		if len(pods) != 2 {
			return fmt.Errorf("%d ready", len(pods))
		}
		return nil
	})
	nodeName := pods[0].Spec.NodeName

	// A client pod that stays up; each check retries, as another
	// cluster's proxy on this host may hold the table for a few seconds.
	client := onContainerdNode("proxy-client", corev1.RestartPolicyAlways, corev1.Container{Name: "web", Image: demoImage})
	client.Namespace = ns
	createPod(t, c, client)
	waitPodPhase(t, c, ns, "proxy-client", corev1.PodRunning, 3*time.Minute)
	fetchLoop := fmt.Sprintf("for i in $(seq 1 20); do timeout 3 wget -q -O- http://%s/; done", clusterIP)

	t.Run("pod reaches the ClusterIP, both replicas answer", func(t *testing.T) {
		seen := map[string]bool{}
		Eventually(t, 2*time.Minute, "both replicas answer a pod at the ClusterIP", func() error {
			out, _ := c.Kubectl(t, "", "exec", "-n", ns, "proxy-client", "--", "sh", "-c", fetchLoop)
			for _, p := range pods {
				if strings.Contains(out, "Hello from "+p.Name) {
					seen[p.Name] = true
				}
			}
			if len(seen) < 2 {
				return fmt.Errorf("answered by %v: %s", seen, out)
			}
			return nil
		})
	})

	t.Run("a pod reaches itself through its Service", func(t *testing.T) {
		self := pods[0].Name
		Eventually(t, 2*time.Minute, self+" reaches itself through its Service", func() error {
			out, _ := c.Kubectl(t, "", "exec", "-n", ns, self, "--", "sh", "-c", fetchLoop)
			if !strings.Contains(out, "Hello from "+self) {
				return fmt.Errorf("20 requests never came back to it: %s", out)
			}
			return nil
		})
	})

	t.Run("the kubernetes Service accepts a pod's connection", func(t *testing.T) {
		k, err := c.Client.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		Eventually(t, 2*time.Minute, "a pod connects to the kubernetes Service", func() error {
			out, _ := c.Kubectl(t, "", "exec", "-n", ns, "proxy-client", "--", "sh", "-c",
				fmt.Sprintf("nc -w 5 %s 443 </dev/null && echo CONNECTED", k.Spec.ClusterIP))
			if !strings.Contains(out, "CONNECTED") {
				return fmt.Errorf("nc to %s:443: %q", k.Spec.ClusterIP, out)
			}
			return nil
		})
	})

	t.Run("the API's certificate holds at the kubernetes Service's address", func(t *testing.T) {
		// What a pod's in-cluster config does: https://$KUBERNETES_SERVICE_HOST
		// verified with the cluster's CA (from the host here, through the
		// same rules: pods have no TLS client that verifies).
		k, err := c.Client.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Host = "https://" + net.JoinHostPort(k.Spec.ClusterIP, "443")
		dc, err := discovery.NewDiscoveryClientForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		Eventually(t, time.Minute, "the API answers at "+cfg.Host+" with a certificate for it", func() error {
			v, err := dc.ServerVersion()
			if err != nil {
				return err
			}
			if v.GitVersion == "" {
				return fmt.Errorf("version %+v", v)
			}
			return nil
		})
	})

	t.Run("the NodePort answers on 127.0.0.1 from the host", func(t *testing.T) {
		seen := map[string]bool{}
		Eventually(t, time.Minute, "both replicas answer at the NodePort", func() error {
			body, err := hostGet(fmt.Sprintf("http://127.0.0.1:%d/", nodePort))
			if err != nil {
				return err
			}
			for _, p := range pods {
				if strings.Contains(body, "Hello from "+p.Name) {
					seen[p.Name] = true
				}
			}
			if len(seen) < 2 {
				return fmt.Errorf("answered by %v", seen)
			}
			return nil
		})
	})

	t.Run("the node serves the Service's rules through nodes/proxy", func(t *testing.T) {
		want := []string{clusterIP + " . tcp . 80", fmt.Sprintf("tcp . %d", nodePort), "numgen random mod 2"}
		for _, p := range pods {
			want = append(want, fmt.Sprintf("dnat to %s:8080", p.Status.PodIP))
		}
		Eventually(t, time.Minute, "the node lists the Service's rules", func() error {
			out, err := c.Kubectl(t, "", "get", "--raw", fmt.Sprintf("/api/v1/nodes/%s/proxy/glassplane/proxy-rules?namespace=%s&name=web", nodeName, ns))
			if err != nil {
				return err
			}
			for _, w := range want {
				if !strings.Contains(out, w) {
					return fmt.Errorf("rules of %s/web have no %q:\n%s", ns, w, out)
				}
			}
			return nil
		})
	})

	t.Run("nodes/proxy needs get on nodes/proxy", func(t *testing.T) {
		out, err := c.Kubectl(t, "", "get", "--raw", fmt.Sprintf("/api/v1/nodes/%s/proxy/glassplane/proxy-rules?namespace=%s&name=web", nodeName, ns), "--as", "jane")
		if err == nil || !strings.Contains(out, `cannot get resource "nodes/proxy"`) {
			t.Errorf("jane read the node's proxy rules (err %v): %s", err, out)
		}
	})

	t.Run("EndpointsProgrammed Events", func(t *testing.T) {
		want := fmt.Sprintf("Programmed 2 ready endpoints for %s:80/TCP on node %s (nftables, ", clusterIP, nodeName)
		Eventually(t, time.Minute, "an EndpointsProgrammed Event for 2 endpoints", func() error {
			events, err := c.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web,reason=EndpointsProgrammed"})
			if err != nil {
				return err
			}
			for _, e := range events.Items {
				if strings.HasPrefix(e.Message, want) && e.Source.Component == "glassplane-proxy" && e.Source.Host == nodeName && e.ReportingController == "glassplane-proxy" && e.Type == corev1.EventTypeNormal {
					return nil
				}
			}
			return fmt.Errorf("none with %q among %d", want, len(events.Items))
		})
	})

	t.Run("scaled to one replica, all traffic goes to it", func(t *testing.T) {
		c.MustKubectl(t, "", "scale", "deployment", "web", "-n", ns, "--replicas", "1")
		Eventually(t, 2*time.Minute, "20 answers in a row from one replica", func() error {
			first := ""
			for range 20 {
				body, err := hostGet(fmt.Sprintf("http://127.0.0.1:%d/", nodePort))
				if err != nil {
					return err
				}
				if first == "" {
					first = body
				}
				if body != first {
					return fmt.Errorf("answers from two replicas: %q and %q", first, body)
				}
			}
			return nil
		})
	})

	t.Run("deleting the Service removes its rules", func(t *testing.T) {
		c.MustKubectl(t, "", "delete", "service", "web", "-n", ns)
		Eventually(t, time.Minute, "the table has nothing of "+ns+"/web", func() error {
			table := nftTable(t)
			if !strings.Contains(table, "default/kubernetes") {
				return fmt.Errorf("the table has no kubernetes Service either:\n%s", table)
			}
			for _, gone := range []string{ns + "/web", clusterIP} {
				if strings.Contains(table, gone) {
					return fmt.Errorf("%q still in the table", gone)
				}
			}
			return nil
		})
	})
}

// TestProxyRestartRemovesDrift: a chain and a map element added to the
// proxy's table by hand are gone once glassplane up restarts (its proxy's
// first sync writes the table whole).
func TestProxyRestartRemovesDrift(t *testing.T) {
	requireTool(t, "containerd", "real containers")
	requireTool(t, "nft", "the service proxy's rules")
	dir, err := os.MkdirTemp("", "gp-proxy-drift-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	c, err := StartCluster(dir, "--node-runtime", "containerd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	// The table outlives the cluster that wrote it: wait for this one's
	// proxy (its kubernetes Service leads to this API server), not for what
	// an earlier test's cluster left, so the stop below does not cut this
	// cluster's start short.
	apiPort := c.APIURL[strings.LastIndex(c.APIURL, ":")+1:]
	Eventually(t, time.Minute, "the kubernetes Service programmed", func() error {
		if table := nftTable(t); !strings.Contains(table, "default/kubernetes/tcp/https__127.0.0.1/"+apiPort) {
			return fmt.Errorf("the kubernetes Service does not lead to this API server (port %s):\n%s", apiPort, table)
		}
		return nil
	})
	// One nft transaction: another cluster's proxy on this host may
	// rewrite the table at any time.
	handMade := fmt.Sprintf("add chain ip %[1]s stale-by-hand\nadd rule ip %[1]s stale-by-hand drop\nadd element ip %[1]s service-ips { 10.96.255.254 . tcp . 80 : goto stale-by-hand }\n", proxyTable)
	nft := exec.Command("nft", "-f", "-")
	nft.Stdin = strings.NewReader(handMade)
	if out, err := nft.CombinedOutput(); err != nil {
		t.Fatalf("nft -f - <<%q: %v: %s", handMade, err, out)
	}
	if table := nftTable(t); !strings.Contains(table, "stale-by-hand") {
		t.Fatalf("the hand-made chain is not in the table:\n%s", table)
	}
	c.Stop()
	// The kubeconfig still names the stopped API server's port until the
	// new one writes its own.
	if err := os.Remove(filepath.Join(c.DataDir, "kubeconfig")); err != nil {
		t.Fatal(err)
	}
	c2, err := StartCluster(dir, "--node-runtime", "containerd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c2.Stop()
		if t.Failed() {
			t.Logf("--- the restarted glassplane's log tail ---\n%s", tail(c2.Log(), 80))
		}
	})
	apiPort = c2.APIURL[strings.LastIndex(c2.APIURL, ":")+1:]
	Eventually(t, time.Minute, "the restarted proxy's table without the hand-made rules", func() error {
		table := nftTable(t)
		if !strings.Contains(table, "default/kubernetes/tcp/https__127.0.0.1/"+apiPort) {
			return fmt.Errorf("the kubernetes Service does not lead to the new API server (port %s):\n%s", apiPort, table)
		}
		for _, gone := range []string{"stale-by-hand", "10.96.255.254"} {
			if strings.Contains(table, gone) {
				return fmt.Errorf("%q still in the table:\n%s", gone, table)
			}
		}
		return nil
	})
}
