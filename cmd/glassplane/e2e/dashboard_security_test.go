package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/web/webtest"
)

// DashboardLoginLink is the dashboard's current one-time link, which logs a
// browser in as the cluster admin (glassplane up prints the first; each use
// writes the next to <data-dir>/dashboard-login).
func (c *Cluster) DashboardLoginLink(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.DataDir, "dashboard-login"))
	if err != nil {
		t.Fatalf("failed to read the dashboard login link: %v", err)
	}
	return strings.TrimSpace(string(b))
}

// loginAdmin logs the browser in to the dashboard as the cluster admin by
// opening the one-time link.
func loginAdmin(t *testing.T, c *Cluster, tab context.Context) {
	t.Helper()
	webtest.Navigate(t, tab, c.DashboardLoginLink(t))
	webtest.WaitFor(t, tab, `!location.pathname.startsWith("/login") && document.querySelector('[data-testid="viewer"]')?.textContent === "glassplane-admin"`)
}

// dashClient is a scripted browser of the dashboard: its own cookies, no
// redirects followed, and the headers a same-origin form post carries.
type dashClient struct {
	t    *testing.T
	c    *Cluster
	http *http.Client
}

func newDashClient(t *testing.T, c *Cluster) *dashClient {
	jar, _ := cookiejar.New(nil)
	return &dashClient{t: t, c: c, http: &http.Client{Jar: jar, Timeout: time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// do sends a request; a form is posted with the page's own Origin and
// Sec-Fetch-Site, as the dashboard's forms are. header pairs are added,
// "Host" sets the Host header.
func (d *dashClient) do(method, path string, form url.Values, header ...string) (*http.Response, string) {
	d.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	target := path
	if !strings.HasPrefix(path, "http") {
		target = d.c.WebURL + path
	}
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		d.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", d.c.WebURL)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := d.http.Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp, string(raw)
}

var csrfField = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

// csrf reads the form token of page path (setting the cookie it goes with).
func (d *dashClient) csrf(path string) string {
	d.t.Helper()
	resp, body := d.do(http.MethodGet, path, nil)
	m := csrfField.FindStringSubmatch(body)
	if resp.StatusCode != http.StatusOK || m == nil {
		d.t.Fatalf("GET %s = %d, no CSRF token", path, resp.StatusCode)
	}
	return m[1]
}

// apply posts manifest to the apply form.
func (d *dashClient) apply(manifest string) (*http.Response, string) {
	d.t.Helper()
	return d.do(http.MethodPost, "/apply", url.Values{"_csrf": {d.csrf("/apply")}, "manifest": {manifest}, "action": {"apply"}})
}

// impersonatorManifest is what an attacker would apply: a ClusterRole that
// allows impersonating anyone, bound to an unprivileged user.
const impersonatorManifest = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: e2e-impersonator
rules:
- apiGroups: [""]
  resources: ["users", "groups"]
  verbs: ["impersonate"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: e2e-impersonator
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: e2e-impersonator
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: mallory
`

// configMapManifest is a harmless object to apply.
func configMapManifest(name string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: default\ndata:\n  k: v\n"
}

// TestDashboardRefusesRebinding: a page of another site whose name resolves
// to this machine (DNS rebinding) gets neither the pages nor the websocket.
func TestDashboardRefusesRebinding(t *testing.T) {
	c := SharedCluster(t)
	u, _ := url.Parse(c.WebURL)
	evil := "evil.example:" + u.Port()
	d := newDashClient(t, c)
	for _, path := range []string{"/", "/apply", "/ws"} {
		resp, body := d.do(http.MethodGet, path, nil, "Host", evil, "Upgrade", "websocket", "Connection", "Upgrade",
			"Sec-WebSocket-Version", "13", "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==", "Origin", "http://"+evil)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "does not answer to the host") {
			t.Errorf("GET %s with Host %s = %d %q", path, evil, resp.StatusCode, body)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wsURL := "ws://" + u.Host + "/ws"
	conn, resp, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"http://" + evil}}})
	if err == nil {
		conn.CloseNow()
		t.Fatal("a websocket from another origin was accepted")
	}
	if resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("websocket from another origin: %v %v", resp, err)
	}
	conn, _, err = websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {c.WebURL}}})
	if err != nil {
		t.Fatalf("the dashboard's own websocket: %v", err)
	}
	conn.CloseNow()
}

// TestDashboardWithoutLoginIsReadOnly: without a login, a form post with a
// valid CSRF token from the dashboard's own origin still changes nothing.
func TestDashboardWithoutLoginIsReadOnly(t *testing.T) {
	c := SharedCluster(t)
	ctx := context.Background()
	d := newDashClient(t, c)
	resp, body := d.apply(impersonatorManifest)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "Log in to make changes") {
		t.Fatalf("POST /apply without a login = %d\n%s", resp.StatusCode, body)
	}
	if _, err := c.Client.RbacV1().ClusterRoles().Get(ctx, "e2e-impersonator", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the ClusterRole exists after a refused apply: %v", err)
	}
	if _, err := c.Client.RbacV1().ClusterRoleBindings().Get(ctx, "e2e-impersonator", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the ClusterRoleBinding exists after a refused apply: %v", err)
	}
	token := d.csrf("/")
	resp, body = d.do(http.MethodPost, "/tempo", url.Values{"_csrf": {token}, "mode": {"step"}}, "Accept", "application/json")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "Log in to make changes") {
		t.Errorf("POST /tempo without a login = %d %s", resp.StatusCode, body)
	}
	// The dashboard's own identity cannot write either.
	out, err := c.Kubectl(t, "", "auth", "can-i", "create", "clusterroles", "--as", "system:glassplane-dashboard")
	if err == nil || !strings.HasSuffix(strings.TrimSpace(out), "no") {
		t.Errorf("kubectl auth can-i create clusterroles as the dashboard: %q %v", out, err)
	}
}

// TestDashboardLoginLinkWorksOnce: the one-time link logs in as the admin,
// who may apply; the same link a second time logs nobody in.
func TestDashboardLoginLinkWorksOnce(t *testing.T) {
	c := SharedCluster(t)
	ctx := context.Background()
	link := c.DashboardLoginLink(t)
	t.Cleanup(func() { c.Kubectl(t, "", "delete", "configmap", "e2e-by-link", "--ignore-not-found") })

	d := newDashClient(t, c)
	if resp, _ := d.do(http.MethodGet, link, nil); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("GET the link = %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, body := d.apply(configMapManifest("e2e-by-link"))
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `data-action="created"`) {
		t.Fatalf("apply after the link = %d\n%s", resp.StatusCode, body)
	}
	if _, err := c.Client.CoreV1().ConfigMaps("default").Get(ctx, "e2e-by-link", metav1.GetOptions{}); err != nil {
		t.Fatalf("the applied ConfigMap: %v", err)
	}

	again := newDashClient(t, c)
	resp, body = again.do(http.MethodGet, link, nil)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "used already") {
		t.Fatalf("the link a second time = %d", resp.StatusCode)
	}
	if resp, _ := again.apply(configMapManifest("e2e-by-link-again")); resp.StatusCode != http.StatusForbidden {
		t.Errorf("apply after a used link = %d", resp.StatusCode)
	}
	if next := c.DashboardLoginLink(t); next == link || !strings.HasPrefix(next, c.WebURL+"/login?once=") {
		t.Errorf("the next link %q", next)
	}
	// Only glassplane up's "Dashboard:" line may show a code.
	if code := strings.TrimPrefix(link, c.WebURL+"/login?once="); strings.Count(c.Log(), code) > 1 {
		t.Error("the link's code was logged")
	}
}

// TestDashboardLoginEndsWithItsServiceAccount: a login with a
// ServiceAccount token ends when the ServiceAccount is deleted, at the next
// write: it is refused and the session is gone.
func TestDashboardLoginEndsWithItsServiceAccount(t *testing.T) {
	c := SharedCluster(t)
	ctx := context.Background()
	c.MustKubectl(t, "", "create", "serviceaccount", "e2e-short-lived")
	t.Cleanup(func() {
		c.Kubectl(t, "", "delete", "serviceaccount", "e2e-short-lived", "--ignore-not-found")
		c.Kubectl(t, "", "delete", "rolebinding", "e2e-short-lived", "--ignore-not-found")
		c.Kubectl(t, "", "delete", "configmap", "e2e-sa-first", "--ignore-not-found")
	})
	c.MustKubectl(t, "", "create", "rolebinding", "e2e-short-lived", "--clusterrole=edit", "--serviceaccount=default:e2e-short-lived")
	token := strings.TrimSpace(c.MustKubectl(t, "", "create", "token", "e2e-short-lived"))

	d := newDashClient(t, c)
	resp, _ := d.do(http.MethodPost, "/login", url.Values{"_csrf": {d.csrf("/login")}, "token": {token}, "next": {"/apply"}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/apply" {
		t.Fatalf("POST /login = %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, body := d.apply(configMapManifest("e2e-sa-first"))
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `data-action="created"`) {
		t.Fatalf("apply as the ServiceAccount = %d\n%s", resp.StatusCode, body)
	}

	c.MustKubectl(t, "", "delete", "serviceaccount", "e2e-short-lived")
	Eventually(t, time.Minute, "the API refuses the deleted ServiceAccount's token", func() error {
		req, _ := http.NewRequest(http.MethodGet, c.APIURL+"/api/v1/namespaces/default/configmaps", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			return fmt.Errorf("the API answers the token with %s", resp.Status)
		}
		return nil
	})
	resp, body = d.apply(configMapManifest("e2e-sa-second"))
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "Your login ended: the API server no longer accepts its token") {
		t.Fatalf("apply after the ServiceAccount was deleted = %d\n%s", resp.StatusCode, body)
	}
	if _, err := c.Client.CoreV1().ConfigMaps("default").Get(ctx, "e2e-sa-second", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the ConfigMap applied after the login ended: %v", err)
	}
	if resp, body := d.apply(configMapManifest("e2e-sa-second")); resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "Log in to make changes") {
		t.Errorf("the session lives on: apply = %d", resp.StatusCode)
	}
}

// TestDashboardLoginRedirectStaysOnSite: the login's next parameter never
// leads off-site, whatever a browser would strip from it.
func TestDashboardLoginRedirectStaysOnSite(t *testing.T) {
	c := SharedCluster(t)
	for _, next := range []string{"/\t/evil.example", "//evil.example", "/\\evil.example", "https://evil.example/", "/\n/evil.example"} {
		d := newDashClient(t, c)
		_, body := d.do(http.MethodGet, "/login?next="+url.QueryEscape(next), nil)
		if strings.Contains(body, "evil.example") {
			t.Errorf("the login form carries next %q", next)
		}
		resp, _ := d.do(http.MethodPost, "/login", url.Values{"_csrf": {d.csrf("/login")}, "next": {next}})
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "/" {
			t.Errorf("POST /login with next %q = %d %q", next, resp.StatusCode, loc)
		}
	}
}

// TestBrowserDashboardLoginLink: in chromium, the link logs in and the
// apply page then acts as the admin.
func TestBrowserDashboardLoginLink(t *testing.T) {
	c := SharedCluster(t)
	tab := webtest.Browser(t)
	loginAdmin(t, c, tab)
	webtest.Navigate(t, tab, c.WebURL+"/apply")
	webtest.WaitSelector(t, tab, webtest.TestID("apply-acting-as"))
	if acting := webtest.Eval[string](t, tab, `document.querySelector('[data-testid="apply-acting-as"]').textContent`); !strings.Contains(acting, "glassplane-admin") {
		t.Errorf("the apply page acts as %q", acting)
	}
}
