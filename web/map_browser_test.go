package web

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/web/webtest"
)

// TestBrowserMapEndpointsChain plays the endpoints chain to the cluster
// map in chromium: a pod turning Ready (the EndpointSlice controller's
// watch), the controller's EndpointSlice write and the node proxy's
// EndpointsProgrammed Event each become a step from the component that
// acted, narrated in English and in Korean.
func TestBrowserMapEndpointsChain(t *testing.T) {
	e := newEnv(t)
	ctx := webtest.Browser(t)
	e.put(t, "/registry/minions/vm", node("vm", corev1.ConditionTrue))
	web := pod("default", "web-1", "vm", corev1.PodRunning)
	e.put(t, "/registry/pods/default/web-1", web)

	webtest.Navigate(t, ctx, e.srv.URL+"/")
	webtest.WaitSelector(t, ctx, webtest.TestID("node-vm"))
	webtest.WaitLive(t, ctx)

	steps := `window.glassplane.steps.map(s => s.kind + " " + s.from + "→" + s.to)`
	waitStep := func(t *testing.T, want string) {
		t.Helper()
		webtest.WaitFor(t, ctx, steps+`.includes(`+webtest.JSString(want)+`)`)
	}
	narration := func() string {
		return webtest.Eval[string](t, ctx, `document.getElementById("narration-text").textContent`)
	}

	t.Run("a pod turns Ready", func(t *testing.T) {
		web.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		e.put(t, "/registry/pods/default/web-1", web)
		waitStep(t, "pod-ready apiserver→controller-manager")
	})
	t.Run("the EndpointSlice controller writes the slice", func(t *testing.T) {
		e.ring.Add(auditEvent("create", "endpointslices", "", "default", "web-abcde", "system:kube-controller-manager", time.Now(), nil))
		waitStep(t, "endpointslice controller-manager→apiserver")
	})
	t.Run("the node's proxy programs the endpoints", func(t *testing.T) {
		now := time.Now()
		e.put(t, "/registry/events/default/web.programmed", &corev1.Event{
			TypeMeta:       metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
			ObjectMeta:     metav1.ObjectMeta{Namespace: "default", Name: "web.programmed"},
			InvolvedObject: corev1.ObjectReference{Kind: "Service", APIVersion: "v1", Namespace: "default", Name: "web", UID: "uid-web"},
			Reason:         "EndpointsProgrammed", Message: "Programmed 1 ready endpoints for 10.96.12.3:80/TCP on node vm (nftables, 3ms)",
			Type: corev1.EventTypeNormal, Source: corev1.EventSource{Component: "glassplane-proxy", Host: "vm"},
			FirstTimestamp: metav1.NewTime(now), LastTimestamp: metav1.NewTime(now),
		})
		waitStep(t, "endpoints-programmed node:vm→apiserver")
		webtest.WaitFor(t, ctx, `document.getElementById("narration-text").dataset.kind === "endpoints-programmed"`)
		if got := narration(); !strings.Contains(got, "The service proxy on vm") || !strings.Contains(got, "default/web") || !strings.Contains(got, "Programmed 1 ready endpoints") {
			t.Errorf("English narration %q", got)
		}
		webtest.Eval[bool](t, ctx, `(document.querySelector('[data-testid="lang-ko"]').click(), true)`)
		webtest.WaitFor(t, ctx, `document.getElementById("narration-text").lang === "ko"`)
		if got := narration(); !strings.Contains(got, "vm 노드의 서비스 프록시가") || !strings.Contains(got, "다시 설정했습니다") {
			t.Errorf("Korean narration %q", got)
		}
		webtest.Eval[bool](t, ctx, `(document.querySelector('[data-testid="lang-en"]').click(), true)`)
	})
}
