package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// dashboardUser is a browser of the dashboard: a cookie jar, logged in as
// an API user or not at all (the dashboard's own identity).
type dashboardUser struct {
	c      *Cluster
	client *http.Client
}

func newDashboardUser(c *Cluster) *dashboardUser {
	jar, _ := cookiejar.New(nil)
	return &dashboardUser{c: c, client: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
}

var csrfInput = regexp.MustCompile(`name="_csrf" value="([^"]*)"`)

// get fetches a page and returns its status and body.
func (u *dashboardUser) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := u.client.Get(u.c.WebURL + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// post sends a form with the CSRF token of the page at from, from the
// dashboard's own origin.
func (u *dashboardUser) post(t *testing.T, from, path string, form url.Values) (int, string) {
	t.Helper()
	_, page := u.get(t, from)
	m := csrfInput.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("GET %s has no CSRF token", from)
	}
	form.Set("_csrf", html.UnescapeString(m[1]))
	req, _ := http.NewRequest(http.MethodPost, u.c.WebURL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", u.c.WebURL)
	resp, err := u.client.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// login logs in with an API token (POST /login).
func (u *dashboardUser) login(t *testing.T, token string) {
	t.Helper()
	code, body := u.post(t, "/login", "/login", url.Values{"token": {token}, "next": {"/requests"}})
	if code != http.StatusOK || !strings.Contains(body, `data-testid="requests"`) {
		t.Fatalf("login = %d:\n%s", code, tail(body, 2000))
	}
}

// stream reads the websocket for a while and returns every message.
func (u *dashboardUser) stream(t *testing.T, query string, d time.Duration) []map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	wsURL := "ws" + strings.TrimPrefix(u.c.WebURL, "http") + "/ws" + query
	conn, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPClient: u.client, HTTPHeader: http.Header{"Origin": {u.c.WebURL}}})
	if err != nil {
		t.Fatalf("dial %s: %v", wsURL, err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(64 << 20)
	var out []map[string]any
	for {
		_, b, err := conn.Read(ctx)
		if err != nil {
			return out
		}
		var frame []map[string]any
		if err := json.Unmarshal(b, &frame); err != nil {
			t.Fatalf("decode a frame: %v", err)
		}
		out = append(out, frame...)
	}
}

// textarea matches the apply form's manifest, which echoes what the user
// typed.
var textarea = regexp.MustCompile(`(?s)<textarea[^>]*>.*?</textarea>`)

// TestDashboardMasksSecrets applies a Secret with kubectl and looks for its
// value, plain and base64, on every dashboard page that could show it, in
// a dry run of it on the apply form and on the websocket: it is nowhere.
func TestDashboardMasksSecrets(t *testing.T) {
	c := SharedCluster(t)
	ns := "mask-" + randomHex(t, 4)
	plain, plain2 := "plain-"+randomHex(t, 12), "second-"+randomHex(t, 12)
	secrets := []string{plain, plain2, base64.StdEncoding.EncodeToString([]byte(plain)), base64.StdEncoding.EncodeToString([]byte(plain2))}
	c.MustKubectl(t, "", "create", "namespace", ns)
	before := resourceVersion(t, c, "namespace", "", ns)
	manifest := func(extra string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  namespace: %s\nstringData:\n  password: %s\n%s", ns, plain, extra)
	}
	c.MustKubectl(t, manifest(""), "apply", "-f", "-")
	rv1 := resourceVersion(t, c, "secret", ns, "creds")
	c.MustKubectl(t, manifest("data:\n  token: "+base64.StdEncoding.EncodeToString([]byte(plain2))+"\n"), "apply", "-f", "-")
	rv2 := resourceVersion(t, c, "secret", ns, "creds")
	if out := c.MustKubectl(t, "", "-n", ns, "get", "secret", "creds", "-o", "json"); !strings.Contains(out, plain) {
		t.Fatalf("kubectl apply kept no last-applied-configuration with the value:\n%s", out)
	}

	admin := newDashboardUser(c)
	admin.login(t, adminToken(t, c, ns))
	key := url.QueryEscape("/registry/secrets/" + ns + "/creds")
	pages := []string{
		"/",
		"/objects/secrets/" + ns + "/creds",
		"/objects/secrets/" + ns + "/creds?format=json",
		"/objects/secrets/" + ns + "/creds?format=yaml",
		"/etcd?key=" + key,
		"/etcd?key=" + key + "&rev=" + rv1,
		"/etcd?key=" + key + "&from=" + rv1 + "&to=" + rv2,
		"/etcd?at=" + rv1 + "&key=" + key,
		"/requests?reads=1",
		"/events",
	}
	for _, who := range []struct {
		name string
		u    *dashboardUser
	}{{"the dashboard's identity", newDashboardUser(c)}, {"an admin", admin}} {
		t.Run(who.name, func(t *testing.T) {
			for _, p := range pages {
				code, body := who.u.get(t, p)
				if code != http.StatusOK {
					t.Errorf("GET %s = %d", p, code)
				}
				assertNoSecret(t, "GET "+p, body, secrets)
				if strings.Contains(p, "creds") && !strings.Contains(body, "******") {
					t.Errorf("GET %s shows no masked value", p)
				}
			}
		})
	}
	t.Run("the apply form's dry run", func(t *testing.T) {
		code, body := admin.post(t, "/apply", "/apply", url.Values{"manifest": {manifest("")}, "action": {"dryrun"}})
		if code != http.StatusOK || !strings.Contains(body, `data-testid="apply-result"`) {
			t.Fatalf("dry run = %d:\n%s", code, tail(body, 2000))
		}
		shown := textarea.ReplaceAllString(body, "")
		assertNoSecret(t, "the dry run", shown, secrets)
		if !strings.Contains(shown, "******") {
			t.Errorf("the dry run shows no masked value:\n%s", tail(shown, 2000))
		}
	})
	t.Run("the websocket", func(t *testing.T) {
		msgs := admin.stream(t, "?since="+before+"&audit=0&types=watch,audit,etcd", 4*time.Second)
		b, _ := json.Marshal(msgs)
		if !strings.Contains(string(b), `"/registry/secrets/`+ns+`/creds"`) {
			t.Fatalf("the websocket replayed no change of the Secret (%d messages)", len(msgs))
		}
		assertNoSecret(t, "the websocket", string(b), secrets)
	})
}

// TestDashboardRBAC: what a logged-in user reads on the dashboard is what
// RBAC lets them read.
func TestDashboardRBAC(t *testing.T) {
	c := SharedCluster(t)
	suffix := randomHex(t, 4)
	nsA, nsB := "rbac-a-"+suffix, "rbac-b-"+suffix
	c.MustKubectl(t, "", "create", "namespace", nsA)
	before := resourceVersion(t, c, "namespace", "", nsA)
	c.MustKubectl(t, "", "create", "namespace", nsB)
	// Their pods can never be scheduled: the scheduler's retries would
	// fill the shared cluster's map with steps for the tests after this one.
	t.Cleanup(func() { c.Kubectl(t, "", "delete", "namespace", nsA, nsB, "--wait=false") })
	for _, ns := range []string{nsA, nsB} {
		c.MustKubectl(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: pod-%s
  namespace: %s
spec:
  nodeSelector:
    glassplane.io/e2e: nowhere
  containers:
  - name: c
    image: glassplane.local/hello:latest
`, ns, ns), "apply", "-f", "-")
	}
	c.MustKubectl(t, "", "-n", nsA, "create", "secret", "generic", "creds-"+suffix, "--from-literal=password=hunter2-"+suffix)
	c.MustKubectl(t, "", "-n", nsA, "create", "serviceaccount", "nobody")
	c.MustKubectl(t, "", "-n", nsA, "create", "serviceaccount", "viewer")
	c.MustKubectl(t, "", "-n", nsA, "create", "rolebinding", "viewer", "--clusterrole=view", "--serviceaccount="+nsA+":viewer")
	viewerUser := "system:serviceaccount:" + nsA + ":viewer"
	Eventually(t, 30*time.Second, "RBAC lets the viewer list pods", func() error {
		out, _ := c.Kubectl(t, "", "auth", "can-i", "list", "pods", "-n", nsA, "--as", viewerUser)
		if strings.TrimSpace(out) != "yes" {
			return fmt.Errorf("can-i: %q", out)
		}
		return nil
	})

	t.Run("a user without bindings", func(t *testing.T) {
		nobodyUser := "system:serviceaccount:" + nsA + ":nobody"
		u := newDashboardUser(c)
		u.login(t, strings.TrimSpace(c.MustKubectl(t, "", "-n", nsA, "create", "token", "nobody")))
		code, body := u.get(t, "/objects/pods/"+nsA+"/pod-"+nsA)
		want := fmt.Sprintf(`pods &#34;pod-%s&#34; is forbidden: User &#34;%s&#34; cannot get resource &#34;pods&#34; in API group &#34;&#34; in the namespace &#34;%s&#34;`, nsA, nobodyUser, nsA)
		if code != http.StatusForbidden || !strings.Contains(body, want) {
			t.Errorf("GET the pod = %d, want 403 with %s:\n%s", code, want, tail(body, 1500))
		}
		if code, body := u.get(t, "/etcd"); code != http.StatusForbidden || !strings.Contains(body, "etcdkeys.glassplane.io") {
			t.Errorf("GET /etcd = %d:\n%s", code, tail(body, 1500))
		}
		code, body = u.get(t, "/requests?reads=1")
		users := actors(body)
		if code != http.StatusOK || len(users) == 0 {
			t.Fatalf("GET /requests = %d with %d requests, want their own login's", code, len(users))
		}
		for _, a := range users {
			if a != nobodyUser {
				t.Errorf("/requests shows a request of %q", a)
			}
		}
		if _, body := u.get(t, "/"); strings.Contains(body, "pod-"+nsA) || strings.Contains(body, "pod-"+nsB) {
			t.Error("the overview shows pods the user may not list")
		}
		for _, m := range u.stream(t, "?since="+before+"&audit=0&types=watch,audit,etcd,event", 3*time.Second) {
			switch m["type"] {
			case "watch", "etcd", "event":
				t.Errorf("the websocket sent a %s message about %v", m["type"], m["key"])
			case "audit":
				if m["component"] != nobodyUser {
					t.Errorf("the websocket sent a request of %v", m["component"])
				}
			}
		}
	})

	t.Run("a user with view in one namespace", func(t *testing.T) {
		u := newDashboardUser(c)
		u.login(t, strings.TrimSpace(c.MustKubectl(t, "", "-n", nsA, "create", "token", "viewer")))
		if code, _ := u.get(t, "/objects/pods/"+nsA+"/pod-"+nsA); code != http.StatusOK {
			t.Errorf("GET the pod in %s = %d", nsA, code)
		}
		if code, _ := u.get(t, "/objects/pods/"+nsB+"/pod-"+nsB); code != http.StatusForbidden {
			t.Errorf("GET the pod in %s = %d, want 403", nsB, code)
		}
		_, body := u.get(t, "/")
		if !strings.Contains(body, `data-testid="pod-`+nsA+`-pod-`+nsA+`"`) || strings.Contains(body, "pod-"+nsB) {
			t.Errorf("the overview shows pod-%s: %v, pod-%s: %v; want only the first", nsA,
				strings.Contains(body, "pod-"+nsA), nsB, strings.Contains(body, "pod-"+nsB))
		}
		var sawA bool
		for _, m := range u.stream(t, "?since="+before+"&types=watch", 3*time.Second) {
			if m["type"] != "watch" {
				continue
			}
			if m["namespace"] != nsA {
				t.Errorf("the websocket sent a watch message about %v", m["key"])
			}
			sawA = sawA || m["name"] == "pod-"+nsA
		}
		if !sawA {
			t.Errorf("the websocket sent no watch message about pod-%s", nsA)
		}
		// view reads no Secrets, and raw etcd would show them all.
		if code, body := u.get(t, "/objects/secrets/"+nsA+"/creds-"+suffix); code != http.StatusForbidden || !strings.Contains(body, "cannot get resource &#34;secrets&#34;") {
			t.Errorf("GET a Secret in %s = %d, want 403 naming secrets:\n%s", nsA, code, tail(body, 1500))
		}
		if code, body := u.get(t, "/etcd"); code != http.StatusForbidden || !strings.Contains(body, "etcdkeys.glassplane.io") {
			t.Errorf("GET /etcd = %d, want 403 naming etcdkeys.glassplane.io:\n%s", code, tail(body, 1500))
		}
		// view may not create: the apply form shows the document's result,
		// the API's Forbidden.
		cm := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: viewer-write, namespace: %s}\ndata: {a: b}\n", nsA)
		code, body := u.post(t, "/apply", "/apply", url.Values{"manifest": {cm}, "action": {"apply"}})
		if !strings.Contains(body, `data-testid="apply-result-error">configmaps is forbidden: User &#34;`+viewerUser+`&#34; cannot create resource &#34;configmaps&#34;`) {
			t.Errorf("the viewer's apply = %d, want the API's Forbidden as its result:\n%s", code, tail(body, 1500))
		}
		if out, err := c.Kubectl(t, "", "-n", nsA, "get", "configmap", "viewer-write"); err == nil {
			t.Errorf("the viewer's apply created the ConfigMap:\n%s", out)
		}
	})
}

var actorSpan = regexp.MustCompile(`<span class="actor" title="[^"]*">([^<]*)</span>`)

// actors are the users of the requests on a /requests page.
func actors(body string) []string {
	var out []string
	for _, m := range actorSpan.FindAllStringSubmatch(body, -1) {
		out = append(out, html.UnescapeString(m[1]))
	}
	return out
}

// adminToken is a token of a new service account in ns bound to
// cluster-admin.
func adminToken(t *testing.T, c *Cluster, ns string) string {
	t.Helper()
	c.MustKubectl(t, "", "-n", ns, "create", "serviceaccount", "admin")
	c.MustKubectl(t, "", "create", "clusterrolebinding", "dashboard-admin-"+ns, "--clusterrole=cluster-admin", "--serviceaccount="+ns+":admin")
	t.Cleanup(func() { c.Kubectl(t, "", "delete", "clusterrolebinding", "dashboard-admin-"+ns) })
	user := "system:serviceaccount:" + ns + ":admin"
	Eventually(t, 30*time.Second, "RBAC lets the admin read etcd", func() error {
		out, _ := c.Kubectl(t, "", "auth", "can-i", "get", "etcdkeys.glassplane.io", "--as", user)
		if !strings.HasSuffix(strings.TrimSpace(out), "\nyes") && strings.TrimSpace(out) != "yes" {
			return fmt.Errorf("can-i: %q", out)
		}
		return nil
	})
	return strings.TrimSpace(c.MustKubectl(t, "", "-n", ns, "create", "token", "admin"))
}

// resourceVersion is an object's resourceVersion.
func resourceVersion(t *testing.T, c *Cluster, kind, ns, name string) string {
	t.Helper()
	args := []string{"get", kind, name, "-o", "jsonpath={.metadata.resourceVersion}"}
	if ns != "" {
		args = append(args, "-n", ns)
	}
	return strings.TrimSpace(c.MustKubectl(t, "", args...))
}

func assertNoSecret(t *testing.T, where, body string, secrets []string) {
	t.Helper()
	for _, s := range secrets {
		if i := strings.Index(body, s); i >= 0 {
			t.Errorf("%s shows the Secret's value %q: …%s…", where, s, body[max(0, i-200):min(len(body), i+100)])
		}
	}
}

func randomHex(t *testing.T, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
