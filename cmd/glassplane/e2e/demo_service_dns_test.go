package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDemoServiceDNS runs the service-dns demo with only simulated nodes
// schedulable (the Service and its endpoints part, said in Korean) and on
// the containerd node (the client resolves the name through cluster DNS,
// a replica answers, and once one is killed the other answers every
// connection); afterwards nothing of the demo is left.
func TestDemoServiceDNS(t *testing.T) {
	c := SharedCluster(t)
	t.Run("simulated", func(t *testing.T) {
		const ns = "demo-servicedns-sim"
		createNamespace(t, c, ns)
		t.Cleanup(func() { c.Kubectl(t, "", "delete", "namespace", ns, "--wait=false") })
		// The shared cluster's containerd node registers after the
		// simulated ones; it is cordoned once it is there.
		if _, err := exec.LookPath("containerd"); err == nil {
			Eventually(t, 2*time.Minute, "the containerd node to register", func() error {
				nodes, err := c.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: "node.glassplane.io/runtime=containerd"})
				if err == nil && len(nodes.Items) == 0 {
					err = fmt.Errorf("not yet")
				}
				return err
			})
		}
		onlyRuntime(t, c, "simulated")
		out := runDemo(t, c, ns, "service-dns", "ko")
		for _, w := range []string{
			"데이터 경로에는 실제(containerd) 노드가 필요하므로",
			"→ Service를 만들었습니다: service/hello, type ClusterIP, clusterIP 10.",
			"service/hello의 EndpointSlice, Ready 엔드포인트: hello-1=",
			"Ready 엔드포인트: hello-2=",
		} {
			if !strings.Contains(out, w) {
				t.Errorf("output lacks %q:\n%s", w, out)
			}
		}
		expectNoPods(t, c, ns)
	})
	t.Run("containerd", func(t *testing.T) {
		requireTool(t, "containerd", "real containers")
		requireTool(t, "runc", "real containers")
		requireTool(t, "nft", "the node's service proxy")
		const ns = "demo-servicedns"
		createNamespace(t, c, ns)
		t.Cleanup(func() { c.Kubectl(t, "", "delete", "namespace", ns, "--wait=false") })
		// The demo plays the data path when a containerd node is Ready.
		onlyRuntime(t, c, "containerd")
		out := runDemo(t, c, ns, "service-dns", "en")
		t.Log(out)
		svc := "hello." + ns + ".svc.cluster.local"
		m := regexp.MustCompile(`client: nslookup ` + regexp.QuoteMeta(svc) + ` → (\S+); wget http://` + regexp.QuoteMeta(svc) + `/ → answered by pod (hello-[12])`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("output lacks the client's lookup and reply:\n%s", out)
		}
		ip := regexp.MustCompile(`clusterIP (\S+),`).FindStringSubmatch(out)
		if ip == nil || ip[1] != m[1] {
			t.Errorf("the name resolved to %s, the Service's clusterIP is %v", m[1], ip)
		}
		if !regexp.MustCompile(`the client's connections since: #\d+ hello-2, #\d+ hello-2, #\d+ hello-2`).MatchString(out) {
			t.Errorf("output lacks three replies from hello-2 after hello-1 was killed:\n%s", out)
		}
		programmed := eventsOf(t, c, ns, "EndpointsProgrammed")
		if len(programmed) == 0 || programmed[0].Source.Component != "glassplane-proxy" || programmed[0].InvolvedObject.Name != "hello" {
			t.Errorf("EndpointsProgrammed events = %v", eventMessages(programmed))
		}
		expectNoPods(t, c, ns)
		if svcs, err := c.Client.CoreV1().Services(ns).List(context.Background(), metav1.ListOptions{}); err != nil || len(svcs.Items) != 0 {
			t.Errorf("the demo left its Service: %v %v", svcs, err)
		}
	})
}
