package web

import (
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/html"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/components"
	"github.com/glassplane/glassplane/web/webtest"
)

func TestOrderPods(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want string
	}{
		{"ordinals as numbers", []string{"default/db-10", "default/db-2", "default/db-0", "default/db-1"}, "db-0 db-1 db-2 db-10"},
		{"by namespace first", []string{"b/db-0", "a/db-1", "a/db-0"}, "a/db-0 a/db-1 b/db-0"},
		{"sets apart, then other pods by name", []string{"default/web-7d9c-xk2p", "default/web-1", "default/db-1", "default/db-0", "default/web-0"},
			"db-0 db-1 web-0 web-1 web-7d9c-xk2p"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var pods []components.PodChip
			for _, s := range tt.in {
				ns, name, _ := strings.Cut(s, "/")
				pods = append(pods, components.PodChip{Namespace: ns, Name: name})
			}
			orderPods(pods)
			var got []string
			multi := strings.Contains(tt.want, "/")
			for _, p := range pods {
				if multi {
					got = append(got, p.Namespace+"/"+p.Name)
				} else {
					got = append(got, p.Name)
				}
			}
			if strings.Join(got, " ") != tt.want {
				t.Errorf("order %v, want %s", got, tt.want)
			}
		})
	}
}

// statefulPod is pod <set>-<ordinal> of a StatefulSet, mounting its claim
// data-<set>-<ordinal>.
func statefulPod(set string, ordinal int, node string) *corev1.Pod {
	name := set + "-" + strconv.Itoa(ordinal)
	p := pod("default", name, node, corev1.PodRunning)
	p.Labels = map[string]string{appsv1.PodIndexLabel: strconv.Itoa(ordinal)}
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: set, UID: "uid-" + "set", Controller: new(true)}}
	p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-" + name}}}}
	return p
}

// TestMapStatefulSetPodsInOrderWithClaims: the overview lists a
// StatefulSet's pods in ordinal order with the claim each mounts, on the
// node's chips and the map's dots, and in chromium a pod arriving later
// takes its ordinal's place and shows its claim.
func TestMapStatefulSetPodsInOrderWithClaims(t *testing.T) {
	e := newEnv(t)
	e.put(t, "/registry/minions/vm", node("vm", corev1.ConditionTrue))
	for _, i := range []int{2, 0, 1} {
		p := statefulPod("db", i, "vm")
		e.put(t, "/registry/pods/default/"+p.Name, p)
	}
	p10 := pod("default", "db-10", "vm", corev1.PodRunning)
	p10.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-db-10"}}}}
	e.put(t, "/registry/pods/default/db-10", p10)
	doc, _ := e.get(t, "/")
	var chips, claims []string
	for _, n := range findAll(doc, func(n *html.Node) bool { return attr(n, "class") == "pod" && attr(n, "data-node") == "vm" }) {
		chips = append(chips, attr(n, "data-name"))
		claims = append(claims, textOf(one(n, "pod-claims")))
	}
	if strings.Join(chips, " ") != "db-0 db-1 db-2 db-10" || strings.Join(claims, " ") != "data-db-0 data-db-1 data-db-2 data-db-10" {
		t.Errorf("chips %v with claims %v", chips, claims)
	}
	var dots []string
	for _, n := range findAll(doc, func(n *html.Node) bool { return attr(n, "class") == "map-pod" }) {
		dots = append(dots, attr(n, "data-name")+"="+attr(n, "data-claims"))
	}
	if strings.Join(dots, " ") != "db-0=data-db-0 db-1=data-db-1 db-2=data-db-2 db-10=data-db-10" {
		t.Errorf("map dots %v", dots)
	}

	ctx := webtest.Browser(t)
	webtest.Navigate(t, ctx, e.srv.URL+"/")
	webtest.WaitSelector(t, ctx, webtest.TestID("node-vm"))
	webtest.WaitLive(t, ctx)
	p3 := statefulPod("db", 3, "vm")
	e.put(t, "/registry/pods/default/db-3", p3)
	order := `[...document.querySelectorAll('[data-pods-of="vm"] .pod')].map(c => c.dataset.name + "=" + (c.querySelector(".pod-claims")?.textContent || "")).join(" ")`
	webtest.WaitFor(t, ctx, order+` === "db-0=data-db-0 db-1=data-db-1 db-2=data-db-2 db-3=data-db-3 db-10=data-db-10"`)
	webtest.WaitFor(t, ctx, `document.querySelector('[data-testid="map-pod-default-db-3"]')?.dataset.claims === "data-db-3"`)
	if title := webtest.Eval[string](t, ctx, `document.querySelector('[data-testid="map-pod-default-db-3"] title').textContent`); !strings.Contains(title, "PersistentVolumeClaim data-db-3") {
		t.Errorf("the dot's title %q", title)
	}
}
