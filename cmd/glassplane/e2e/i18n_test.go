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

	"github.com/glassplane/glassplane/web/webtest"
)

// untranslatedJS lists the visible elements carrying data-i18n whose text
// is still their English.
const untranslatedJS = `[...document.querySelectorAll("[data-i18n]")].filter((n) =>
  n.dataset.i18n && n.getClientRects().length > 0 && n.dataset.i18nEn !== undefined &&
  n.textContent.trim().replace(/\s+/g, " ") === n.dataset.i18nEn).map((n) => n.dataset.i18n + ": " + n.dataset.i18nEn)`

// notKoreanJS lists, of the selectors given, those that match nothing and
// the elements whose text has no Hangul.
const notKoreanJS = `((sels) => {
  const out = [];
  for (const s of sels) {
    const found = [...document.querySelectorAll(s)];
    if (found.length === 0) out.push(s + ": nothing");
    for (const n of found) if (!/[\uac00-\ud7a3]/.test(n.textContent)) out.push(s + ": " + n.textContent.trim());
  }
  return out;
})`

// TestBrowserKorean chooses 한국어 in the header and visits every page: the
// choice stays from page to page, every element with an i18n key is no
// longer in English, each page's headers, buttons and notes are Korean,
// Kubernetes' own words (kinds, names) are not, and nothing overflows.
// Back in English, the texts and the elements inside them return.
func TestBrowserKorean(t *testing.T) {
	c := SharedCluster(t)
	ctx := context.Background()
	ns := "i18n-test"
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hangul", Namespace: ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "glassplane.local/hello:latest"}}},
	}
	if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		p, err := c.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.NodeName != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the pod was not scheduled")
		}
	}
	tab := webtest.Browser(t)
	out := webtest.OutputDir(t)
	loginAdmin(t, c, tab)

	webtest.Navigate(t, tab, c.WebURL+"/requests")
	click(t, tab, "lang-ko")
	webtest.WaitFor(t, tab, `document.querySelector('[data-testid="nav-overview"]').textContent === "개요"`)
	defer webtest.Eval[bool](t, tab, `localStorage.setItem("glassplane.lang", "en") || true`)

	podPath := "/objects/pods/" + ns + "/" + pod.Name
	pages := []struct {
		path string
		// korean are selectors whose every element reads Korean.
		korean []string
		// english are selectors whose text stays as Kubernetes writes it.
		english map[string]string
	}{
		{"/", []string{"nav a[data-i18n]", "#feed-background .feed-background-text", "#feed-background .feed-background-toggle", "[data-testid=tempo-heading]", "[data-testid=map-box-user] .box-label"},
			map[string]string{"[data-testid=map-box-apiserver] .box-label": "kube-apiserver"}},
		{podPath, []string{".timeline thead th[data-i18n]", "[data-testid=object-delete]", "[data-testid=object-scheduler-link]", ".meta dt[data-i18n]", ".decision thead th[data-i18n]"},
			map[string]string{"h1 .kind": "Pod"}},
		{"/scheduler/" + ns + "/" + pod.Name, []string{"[data-testid=sched-play]", "[data-testid=sched-step]", "[data-testid=sched-all]", "[data-testid=sched-summary] span[data-i18n]", ".sched-matrix thead th[data-i18n]"}, nil},
		{"/requests?reads=1", []string{".filters label span", ".filters button", ".requests .lead", ".pstage-name"}, nil},
		{"/events", []string{"[data-testid=events] thead th", ".filters label span", ".filters button"}, nil},
		{"/nodes", []string{"[data-testid=nodes-table] thead th[data-i18n]", ".filters label span", ".filters button"}, nil},
		{"/etcd", []string{"[data-testid=etcd-total]", ".at-revision label", ".at-revision button", "#key-filter-none", ".etcd-value .empty"}, nil},
		{"/etcd?key=" + "/registry/pods/" + ns + "/" + pod.Name, []string{".etcd-value .meta dt[data-i18n]", ".history h3 span[data-i18n]", "[data-testid=etcd-diff-link]"},
			map[string]string{"[data-testid=etcd-value-key]": "/registry/pods/" + ns + "/" + pod.Name}},
		{"/apply", []string{".apply .lead", "[data-testid=apply-acting-as]", "[data-testid=apply-dryrun]", "[data-testid=apply-submit]", ".examples span"}, nil},
		{"/demos", []string{".demos .lead", "[data-testid=demo-run-pod-lifecycle]", "[data-testid=demo-pod-lifecycle] td[data-i18n]"}, nil},
		{"/login", []string{".login .lead", "[data-testid=login-submit]"}, nil},
		{"/no/such/page", []string{"[data-testid=error-title]", "[data-testid=error-message]", "[data-testid=error-home]"}, nil},
	}
	for _, p := range pages {
		t.Run(strings.TrimPrefix(p.path, "/"), func(t *testing.T) {
			webtest.Navigate(t, tab, c.WebURL+p.path)
			webtest.WaitSelector(t, tab, "main.main > *")
			webtest.WaitFor(t, tab, `document.documentElement.lang === "ko" && document.querySelector('[data-testid="lang-ko"]').getAttribute("aria-pressed") === "true"`)
			if p.path == "/demos" {
				// The demos speak the chosen language too: the page asks for it.
				webtest.WaitFor(t, tab, `location.search === "?lang=ko" && document.documentElement.lang === "ko"`)
			}
			if left := webtest.Eval[[]string](t, tab, untranslatedJS); len(left) > 0 {
				t.Errorf("still in English: %q", left)
			}
			sels := make([]string, len(p.korean))
			for i, s := range p.korean {
				sels[i] = webtest.JSString(s)
			}
			if bad := webtest.Eval[[]string](t, tab, notKoreanJS+"(["+strings.Join(sels, ",")+"])"); len(bad) > 0 {
				t.Errorf("not Korean: %q", bad)
			}
			for sel, want := range p.english {
				if got := webtest.Eval[string](t, tab, `document.querySelector(`+webtest.JSString(sel)+`).textContent.trim()`); got != want {
					t.Errorf("%s = %q, want Kubernetes' %q", sel, got, want)
				}
			}
			if over := webtest.Eval[[]string](t, tab, overflowJS); len(over) > 0 {
				t.Errorf("overflows: %q", over)
			}
			webtest.Screenshot(t, tab, filepath.Join(out, fmt.Sprintf("korean-%s.png", strings.NewReplacer("/", "_", "?", "_", "=", "_").Replace(strings.Trim(p.path, "/")))))
		})
	}

	t.Run("the connection state and the etcd filter's empty state", func(t *testing.T) {
		webtest.Navigate(t, tab, c.WebURL+"/etcd")
		webtest.WaitLive(t, tab)
		if got := webtest.Eval[string](t, tab, `document.getElementById("conn").textContent`); got != "실시간 연결됨" {
			t.Errorf("connection state = %q", got)
		}
		webtest.Eval[bool](t, tab, `(() => { const f = document.getElementById("key-filter"); f.value = "no-such-key-anywhere"; f.dispatchEvent(new Event("input")); return true; })()`)
		if got := webtest.Eval[string](t, tab, `document.getElementById("key-filter-none").textContent`); got != "일치하는 키가 없습니다." {
			t.Errorf("no match = %q", got)
		}
	})

	t.Run("English again, with the elements inside the texts", func(t *testing.T) {
		webtest.Navigate(t, tab, c.WebURL+"/apply")
		webtest.WaitFor(t, tab, `document.documentElement.lang === "ko"`)
		click(t, tab, "lang-en")
		webtest.WaitFor(t, tab, `document.querySelector('[data-testid="nav-overview"]').textContent === "Overview"`)
		if got := webtest.Eval[string](t, tab, `document.querySelector(".apply .lead").textContent.trim().replace(/\s+/g, " ")`); !strings.HasPrefix(got, "The manifest goes to the API server like kubectl apply -f") {
			t.Errorf("lead = %q", got)
		}
		if n := webtest.Eval[int](t, tab, `document.querySelectorAll(".apply .lead code").length`); n != 3 {
			t.Errorf("the lead has %d code elements, want 3", n)
		}
		if left := webtest.Eval[[]string](t, tab, `[...document.querySelectorAll("[data-i18n]")].filter((n) => /[\uac00-\ud7a3]/.test(n.textContent)).map((n) => n.dataset.i18n)`); len(left) > 0 {
			t.Errorf("still Korean: %q", left)
		}
	})
}
