package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/glassplane/glassplane/web/webtest"
)

// dashboardProcess is one running `glassplane dashboard`.
type dashboardProcess struct {
	URL       string
	LoginLink string
	cmd       *exec.Cmd
	done      chan struct{}
	stdout    *lockedBuffer
	log       *lockedBuffer
}

// startDashboard runs `glassplane dashboard` with args and --web-listen on a
// free loopback port, waits for the login link it prints, and stops it
// (SIGTERM, then SIGKILL after 10 s) when the test ends.
func startDashboard(t *testing.T, args ...string) *dashboardProcess {
	t.Helper()
	web := freeAddr()
	d := &dashboardProcess{URL: "http://" + web, done: make(chan struct{}), stdout: &lockedBuffer{}, log: &lockedBuffer{}}
	d.cmd = exec.Command(binary, append([]string{"dashboard", "--web-listen", web}, args...)...)
	d.cmd.Stdout = &teeWriter{d.stdout, d.log}
	d.cmd.Stderr = d.log
	if err := d.cmd.Start(); err != nil {
		t.Fatalf("failed to start %s dashboard: %v", binary, err)
	}
	go func() { d.cmd.Wait(); close(d.done) }()
	t.Cleanup(func() {
		d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.done:
		case <-time.After(10 * time.Second):
			d.cmd.Process.Kill()
			<-d.done
		}
		if t.Failed() {
			t.Logf("--- glassplane dashboard log tail ---\n%s", tail(d.log.String(), 60))
		}
	})
	Eventually(t, time.Minute, "glassplane dashboard prints its login link", func() error {
		select {
		case <-d.done:
			t.Fatalf("glassplane dashboard exited:\n%s", tail(d.log.String(), 30))
		default:
		}
		for _, line := range lines(d.stdout.String(), "Dashboard:") {
			if link, ok := strings.CutPrefix(line, "Dashboard:"); ok {
				d.LoginLink = strings.TrimSpace(link)
				return nil
			}
		}
		return fmt.Errorf("stdout so far: %q", d.stdout.String())
	})
	return d
}

// teeWriter writes to both of its buffers.
type teeWriter struct{ a, b *lockedBuffer }

func (w *teeWriter) Write(p []byte) (int, error) {
	w.a.Write(p)
	return w.b.Write(p)
}

// pageServed fails the test when the tab's page was not answered 200 or
// shows the dashboard's error page.
func pageServed(t *testing.T, tab context.Context, what string) {
	t.Helper()
	status := webtest.Eval[int](t, tab, `performance.getEntriesByType("navigation")[0].responseStatus`)
	if status != 200 {
		t.Fatalf("%s answered %d: %s", what, status, webtest.Eval[string](t, tab, `document.body.innerText.slice(0, 500)`))
	}
	if webtest.Eval[bool](t, tab, `document.querySelector('[data-testid="error-page"]') !== null`) {
		t.Fatalf("%s shows the error page: %s", what, webtest.Eval[string](t, tab, `document.querySelector('[data-testid="error-page"]').innerText`))
	}
}

// TestUpstreamDashboard runs `glassplane dashboard` against upstream
// kube-apiserver v1.37.2, as a client of its API, with etcd read directly
// and kube-apiserver's audit webhook posting to the dashboard: a pod created
// with kubectl appears on the overview without a reload (waiting for a
// node: upstream has none), its page lists the create by upstream-admin
// from the webhook, the etcd explorer shows its protobuf value decoded to
// the pod's JSON, and the request pipeline lists the create.
func TestUpstreamDashboard(t *testing.T) {
	started := time.Now()
	webhook := freeAddr()
	u := startUpstreamAuditingTo(t, "http://"+webhook)
	t.Logf("kube-apiserver ready after %s", time.Since(started).Round(time.Millisecond))
	d := startDashboard(t,
		"--kubeconfig", u.Kubeconfig,
		"--etcd-endpoints", u.EtcdURL,
		"--audit-webhook-listen", webhook,
		"--admin-user", "upstream-admin",
		"--admin-groups", "system:masters,system:authenticated",
	)
	if notes := lines(d.stdout.String(), "Note:"); len(notes) > 0 {
		t.Errorf("the dashboard says the cluster lacks something it was given: %q", notes)
	}
	tab := webtest.Browser(t)
	out := webtest.OutputDir(t)

	webtest.Navigate(t, tab, d.LoginLink)
	webtest.WaitFor(t, tab, `!location.pathname.startsWith("/login") && document.querySelector('[data-testid="viewer"]')?.textContent === "upstream-admin"`)
	webtest.Navigate(t, tab, d.URL+"/")
	pageServed(t, tab, "the overview")
	webtest.WaitLive(t, tab)
	// A marker that a reload would wipe.
	webtest.Eval[bool](t, tab, `window.__noReload = true`)

	const name = "upstream-dash"
	cmd := exec.Command(kubectlPath(t), "apply", "-f", "-")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+u.Kubeconfig)
	cmd.Stdin = strings.NewReader(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %[1]s, namespace: default, labels: {app: %[1]s}}
spec:
  containers: [{name: web, image: busybox}]
`, name))
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "pod/"+name+" created") {
		t.Fatalf("kubectl apply against kube-apiserver: %v\n%s", err, out)
	}

	// No node exists: the pod waits for one, on the overview never reloaded.
	webtest.WaitSelector(t, tab, fmt.Sprintf(`[data-testid="unscheduled"] [data-testid="pod-default-%s"]`, name))
	if !webtest.Eval[bool](t, tab, `window.__noReload === true`) {
		t.Fatal("the overview reloaded instead of updating live")
	}
	webtest.Screenshot(t, tab, filepath.Join(out, "upstream-overview.png"))

	// The pod's timeline has its create, received from kube-apiserver's
	// audit webhook.
	webtest.Navigate(t, tab, d.URL+"/objects/pods/default/"+name)
	pageServed(t, tab, "the pod's page")
	webtest.WaitSelector(t, tab, webtest.TestID("timeline"))
	webtest.WaitFor(t, tab, `[...document.querySelectorAll('[data-testid="timeline-row"][data-source="audit"]')].some(r =>
		r.querySelector(".actor")?.textContent === "upstream-admin" && r.querySelector(".action")?.textContent.includes("create"))`)
	webtest.Screenshot(t, tab, filepath.Join(out, "upstream-timeline.png"))

	// The etcd explorer reads the key from etcd and decodes Kubernetes'
	// protobuf to the pod's JSON.
	webtest.Navigate(t, tab, d.URL+"/etcd?key=/registry/pods/default/"+name)
	pageServed(t, tab, "the etcd explorer")
	webtest.WaitSelector(t, tab, webtest.TestID("etcd-json"))
	value := webtest.Eval[string](t, tab, `document.querySelector('[data-testid="etcd-json"]').textContent`)
	for _, want := range []string{`"kind": "Pod"`, `"name": "` + name + `"`, `"app": "` + name + `"`, `"image": "busybox"`} {
		if !strings.Contains(value, want) {
			t.Errorf("the etcd value has no %s:\n%s", want, value)
		}
	}
	webtest.Screenshot(t, tab, filepath.Join(out, "upstream-etcd.png"))

	// The request pipeline lists the create. Only upstream-admin's: the page
	// keeps the newest requests received, and kube-apiserver redelivers the
	// batches of its own startup it sent before the dashboard listened.
	webtest.Navigate(t, tab, d.URL+"/requests?user=upstream-admin")
	pageServed(t, tab, "the request pipeline")
	webtest.WaitFor(t, tab, fmt.Sprintf(`[...document.querySelectorAll('[data-testid="request"][data-verb="create"]')].some(r =>
		r.querySelector(".actor")?.textContent === "upstream-admin" && r.querySelector(".target")?.textContent.includes(%s))`, webtest.JSString(name)))
	webtest.Screenshot(t, tab, filepath.Join(out, "upstream-requests.png"))

	if panics := lines(d.log.String(), "panic"); len(panics) > 0 {
		t.Errorf("the dashboard logged a panic: %q", panics)
	}
	t.Logf("TestUpstreamDashboard took %s", time.Since(started).Round(time.Millisecond))
}
