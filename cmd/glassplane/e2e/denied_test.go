package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glassplane/glassplane/web/webtest"
)

// TestBrowserShowsDeniedRequestAtAuthorization: a request RBAC refuses is
// shown on the request page stopping, red, at the authorization step, with
// Kubernetes' reason.
func TestBrowserShowsDeniedRequestAtAuthorization(t *testing.T) {
	c := SharedCluster(t)
	tab := webtest.Browser(t)
	// Only mallory's requests: other tests on the shared cluster are
	// refused too.
	webtest.Navigate(t, tab, c.WebURL+"/requests?user=mallory")
	webtest.WaitSelector(t, tab, webtest.TestID("request-list"))
	webtest.WaitLive(t, tab)

	kc := filepath.Join(t.TempDir(), "mallory")
	if err := os.WriteFile(kc, []byte(run(t, "kubeconfig", "--data-dir", c.DataDir, "--user", "mallory")), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(kubectlPath(t), "--kubeconfig", kc, "get", "secrets", "-n", "kube-system").CombinedOutput()
	if err == nil {
		t.Fatalf("mallory may list secrets: %s", out)
	}
	const want = `secrets is forbidden: User "mallory" cannot list resource "secrets" in API group "" in the namespace "kube-system"`
	if !strings.Contains(string(out), want) {
		t.Fatalf("kubectl said %q, want %q", out, want)
	}

	row := `[data-testid="request"][data-code="403"]`
	webtest.WaitSelector(t, tab, row+` [data-stage="authorization"][data-state="failed"]`)
	if webtest.Eval[bool](t, tab, `!!document.querySelector('`+row+` [data-stage="etcd"][data-state="ok"]')`) {
		t.Error("the denied request is shown reaching etcd")
	}
	reason := webtest.Eval[string](t, tab, `document.querySelector('`+row+` [data-testid="request-reason"]').textContent`)
	if !strings.Contains(reason, `User "mallory" cannot list resource "secrets"`) {
		t.Errorf("the denied request's reason = %q", reason)
	}
	webtest.Screenshot(t, tab, filepath.Join(webtest.OutputDir(t), "denied.png"))
}
