package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/glassplane/glassplane/auditwebhook"
	"github.com/glassplane/glassplane/controlplane/pki"
	"github.com/glassplane/glassplane/etcdview"
)

// upstreamCluster is kube-apiserver v1.37.2 (built by
// test/conformance/kube-apiserver.sh) on Debian's etcd, sending its audit
// events to a webhook.
type upstreamCluster struct {
	URL        string
	Kubeconfig string
	Client     kubernetes.Interface
	// EtcdURL is the etcd member's client URL (plain HTTP).
	EtcdURL string
	Etcd    *clientv3.Client
	mu      sync.Mutex // guards audit
	audit   []auditv1.Event
}

// kubeAPIServer builds (or finds in the cache) kube-apiserver v1.37.2.
func kubeAPIServer(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "..", "test", "conformance", "kube-apiserver.sh")
	out, err := exec.Command("bash", script).Output()
	if err != nil {
		msg := err.Error()
		if ee, ok := err.(*exec.ExitError); ok {
			msg += "\n" + string(ee.Stderr)
		}
		t.Fatalf("building kube-apiserver v1.37.2 failed: %s", msg)
	}
	return strings.TrimSpace(string(out))
}

// startUpstream runs kube-apiserver on a one-member etcd for the test, its
// audit events going to an auditwebhook.Receiver in the test (auditEvents).
func startUpstream(t *testing.T) *upstreamCluster {
	t.Helper()
	u := &upstreamCluster{}
	recv := httptest.NewServer(&auditwebhook.Receiver{Deliver: func(evs []auditv1.Event) {
		u.mu.Lock()
		u.audit = append(u.audit, evs...)
		u.mu.Unlock()
	}})
	t.Cleanup(recv.Close)
	u.start(t, recv.URL)
	return u
}

// startUpstreamAuditingTo runs kube-apiserver on a one-member etcd for the
// test, its audit webhook posting to auditURL (which need not answer yet:
// kube-apiserver retries a batch).
func startUpstreamAuditingTo(t *testing.T, auditURL string) *upstreamCluster {
	t.Helper()
	u := &upstreamCluster{}
	u.start(t, auditURL)
	return u
}

// start runs etcd and kube-apiserver, its audit webhook posting to
// auditURL, and waits until it is ready.
func (u *upstreamCluster) start(t *testing.T, auditURL string) {
	t.Helper()
	etcdBin := requireTool(t, "etcd", "kube-apiserver's storage")
	kas := kubeAPIServer(t)
	member := startEtcdCluster(t, etcdBin, 1)[0]
	dir := t.TempDir()
	ca, err := pki.LoadOrCreateCAIn(filepath.Join(dir, "pki"), "kubernetes")
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	servingCert, servingKey, err := ca.Issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")},
	})
	if err != nil {
		t.Fatal(err)
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	saPriv, _ := x509.MarshalECPrivateKey(saKey)
	saPub, _ := x509.MarshalPKIXPublicKey(saKey.Public())

	auditKubeconfig := write("audit-webhook.kubeconfig", fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: glassplane-dashboard
  cluster: {server: %q}
contexts:
- name: default
  context: {cluster: glassplane-dashboard, user: kube-apiserver}
current-context: default
users:
- name: kube-apiserver
  user: {}
`, auditURL))
	policy := write("audit-policy.yaml", []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"))

	addr := freeAddr()
	_, port, _ := net.SplitHostPort(addr)
	u.URL = "https://" + addr
	cmd := exec.Command(kas,
		"--etcd-servers", "http://"+member.client,
		"--bind-address", "127.0.0.1", "--secure-port", port, "--advertise-address", "127.0.0.1",
		"--tls-cert-file", write("apiserver.crt", servingCert), "--tls-private-key-file", write("apiserver.key", servingKey),
		"--client-ca-file", write("ca.crt", ca.CertPEM),
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", write("sa.pub", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPub})),
		"--service-account-signing-key-file", write("sa.key", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: saPriv})),
		"--service-cluster-ip-range", "10.0.0.0/24",
		// The kubernetes Service's endpoints cannot be a loopback address.
		"--endpoint-reconciler-type", "none",
		"--authorization-mode", "Node,RBAC",
		"--audit-policy-file", policy,
		"--audit-webhook-config-file", auditKubeconfig,
		"--audit-webhook-batch-max-wait", "1s",
	)
	log := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("--- kube-apiserver log tail ---\n%s", tail(log.String(), 40))
		}
	})

	kc, err := ca.Kubeconfig(u.URL, "upstream-admin", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	u.Kubeconfig = write("kubeconfig", kc)
	cfg, err := clientcmd.BuildConfigFromFlags("", u.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if u.Client, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 3*time.Minute, "kube-apiserver is ready", func() error {
		select {
		case <-done:
			t.Fatalf("kube-apiserver exited:\n%s", tail(log.String(), 30))
		default:
		}
		body, err := u.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background())
		if err != nil {
			return fmt.Errorf("%v: %s", err, body)
		}
		return nil
	})
	// No kube-controller-manager runs: make the default ServiceAccount its
	// serviceaccount controller would, which pods' admission looks up.
	Eventually(t, time.Minute, "the default ServiceAccount is made", func() error {
		_, err := u.Client.CoreV1().ServiceAccounts("default").Create(context.Background(),
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
		return err
	})
	u.EtcdURL = "http://" + member.client
	u.Etcd, err = clientv3.New(clientv3.Config{Endpoints: []string{u.EtcdURL}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Etcd.Close() })
}

// auditEvents returns the audit events the receiver has had.
func (u *upstreamCluster) auditEvents() []auditv1.Event {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]auditv1.Event(nil), u.audit...)
}

// TestUpstreamKubernetesSeenThrough runs upstream kube-apiserver v1.37.2
// and reads what the dashboard shows of it through the parts that do not
// depend on Glassplane's API server: a pod created with kubectl is in etcd
// as Kubernetes' protobuf, which etcdview decodes to the pod, and its
// create reaches the audit webhook receiver as an audit.k8s.io/v1 Event.
func TestUpstreamKubernetesSeenThrough(t *testing.T) {
	u := startUpstream(t)
	ctx := context.Background()
	manifest := `apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default, labels: {app: web}}
spec:
  containers: [{name: web, image: busybox}]
`
	cmd := exec.Command(kubectlPath(t), "apply", "-f", "-")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+u.Kubeconfig)
	cmd.Stdin = strings.NewReader(manifest)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "pod/web created") {
		t.Fatalf("kubectl apply against kube-apiserver: %v\n%s", err, out)
	}

	r := etcdview.New(u.Etcd)
	k, err := r.Get(ctx, "/registry/pods/default/web", 0)
	if err != nil {
		t.Fatal(err)
	}
	if k.Value.Encoding != "protobuf" || k.Value.Object == nil {
		t.Fatalf("the pod's etcd value = %+v", k.Value)
	}
	var pod corev1.Pod
	if err := json.Unmarshal(k.Value.Object.Raw, &pod); err != nil {
		t.Fatal(err)
	}
	if pod.Kind != "Pod" || pod.Name != "web" || pod.Labels["app"] != "web" || pod.Spec.Containers[0].Image != "busybox" {
		t.Errorf("decoded pod = %s", k.Value.Object.Raw)
	}
	page, err := r.List(ctx, "/registry/", "", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, key := range page.Keys {
		found = found || key.Key == "/registry/pods/default/web"
	}
	if !found {
		t.Errorf("the pod's key is not among the %d keys under /registry/", len(page.Keys))
	}

	Eventually(t, time.Minute, "the pod's create reaches the audit webhook", func() error {
		evs := u.auditEvents()
		for _, ev := range evs {
			if r := ev.ObjectRef; ev.Verb == "create" && r != nil && r.Resource == "pods" && r.Name == "web" && ev.Stage == auditv1.StageResponseComplete {
				if ev.User.Username != "upstream-admin" || ev.ResponseStatus == nil || ev.ResponseStatus.Code != 201 {
					return fmt.Errorf("the create's event: %+v", ev)
				}
				return nil
			}
		}
		return fmt.Errorf("not among %d events", len(evs))
	})
}
