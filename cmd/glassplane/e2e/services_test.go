package e2e

import (
	"net/netip"
	"strconv"
	"strings"
	"testing"
)

// TestServicesGetClusterIPsAndNodePorts drives the first Service lesson
// with kubectl: expose a Deployment, see its ClusterIP, a NodePort's port,
// the kubernetes Service and the ServiceCIDR and IPAddress objects behind
// them.
func TestServicesGetClusterIPsAndNodePorts(t *testing.T) {
	c := SharedCluster(t)
	const ns = "services-e2e"
	serviceRange := netip.MustParsePrefix("10.96.0.0/16")
	c.MustKubectl(t, "", "create", "namespace", ns)
	c.MustKubectl(t, "", "-n", ns, "create", "deployment", "web", "--image=glassplane.local/hello:latest")

	if out := c.MustKubectl(t, "", "-n", ns, "expose", "deployment", "web", "--port=80"); !strings.Contains(out, "service/web exposed") {
		t.Fatalf("kubectl expose: %q", out)
	}
	ipText := c.MustKubectl(t, "", "-n", ns, "get", "svc", "web", "-o", "jsonpath={.spec.clusterIP}")
	ip, err := netip.ParseAddr(strings.TrimSpace(ipText))
	if err != nil || !serviceRange.Contains(ip) {
		t.Fatalf("web's clusterIP = %q, want one in %s", ipText, serviceRange)
	}
	if out := c.MustKubectl(t, "", "-n", ns, "get", "svc", "web"); !strings.Contains(out, ip.String()) {
		t.Errorf("kubectl get svc web does not show %s:\n%s", ip, out)
	}

	c.MustKubectl(t, "", "-n", ns, "expose", "deployment", "web", "--name=web-np", "--port=80", "--type=NodePort")
	portText := c.MustKubectl(t, "", "-n", ns, "get", "svc", "web-np", "-o", "jsonpath={.spec.ports[0].nodePort}")
	if port, err := strconv.Atoi(strings.TrimSpace(portText)); err != nil || port < 30000 || port > 32767 {
		t.Fatalf("web-np's nodePort = %q, want one in 30000-32767", portText)
	}

	if out := c.MustKubectl(t, "", "get", "svc", "kubernetes"); !strings.Contains(out, "10.96.0.1 ") || !strings.Contains(out, "443/TCP") {
		t.Errorf("kubectl get svc kubernetes:\n%s", out)
	}
	out := c.MustKubectl(t, "", "get", "servicecidrs,ipaddresses")
	for _, want := range []string{"servicecidr.networking.k8s.io/kubernetes", "ipaddress.networking.k8s.io/10.96.0.1", "ipaddress.networking.k8s.io/" + ip.String()} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get servicecidrs,ipaddresses lacks %s:\n%s", want, out)
		}
	}

	c.MustKubectl(t, "", "-n", ns, "delete", "svc", "web")
	if out, _ := c.Kubectl(t, "", "get", "ipaddress", ip.String()); !strings.Contains(out, "NotFound") {
		t.Errorf("ipaddress %s outlived its Service:\n%s", ip, out)
	}
}
