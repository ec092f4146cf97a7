package web

import (
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestTimelineFollowsOneObjectByUID: after mypod is deleted and created
// again, its page lists only the new pod's steps (the GET kubectl apply
// made before creating it included, the old pod's reads and deletes not),
// folds repeated reads into one row with a count, and links the earlier
// pod, whose own page (?uid=) lists its steps and links back.
func TestTimelineFollowsOneObjectByUID(t *testing.T) {
	e := newEnv(t)
	t0 := time.Now().Add(-time.Hour)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	add := func(s int, verb, sub, user, uid string, code int32) {
		ev := auditEvent(verb, "pods", sub, "default", "mypod", user, at(s), nil)
		ev.ObjectRef.UID = types.UID(uid)
		ev.ResponseStatus = &metav1.Status{Code: code}
		if code == 404 {
			ev.ResponseStatus.Reason = metav1.StatusReasonNotFound
		}
		e.ring.Add(ev)
	}
	const admin, kubelet = "glassplane-admin", "system:node:n1"
	add(0, "get", "", admin, "", 404)
	add(1, "create", "", admin, "uid-1", 201)
	add(2, "get", "", admin, "uid-1", 200)
	add(3, "get", "", admin, "uid-1", 200)
	add(4, "get", "", admin, "uid-1", 200)
	add(5, "delete", "", admin, "uid-1", 200)
	add(6, "delete", "", kubelet, "uid-1", 200)
	add(7, "get", "", admin, "", 404)
	add(8, "create", "", admin, "uid-2", 201)
	add(9, "get", "", admin, "uid-2", 200)
	add(10, "patch", "status", kubelet, "uid-2", 200)
	add(11, "get", "", admin, "uid-2", 200)
	add(12, "get", "", kubelet, "uid-2", 200)
	for i, uid := range []string{"uid-1", "uid-2"} {
		e.put(t, "/registry/events/default/mypod.started"+uid, &corev1.Event{
			TypeMeta:       metav1.TypeMeta{Kind: "Event", APIVersion: "v1"},
			ObjectMeta:     metav1.ObjectMeta{Name: "mypod.started" + uid, Namespace: "default"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "mypod", UID: types.UID(uid)},
			Reason:         "Started", Message: "started " + uid, Type: corev1.EventTypeNormal,
			EventTime: metav1.NewMicroTime(at(1 + 8*i).Add(500 * time.Millisecond)), Source: corev1.EventSource{Component: "kubelet"},
		})
	}
	e.put(t, "/registry/pods/default/mypod", &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "mypod", Namespace: "default", UID: "uid-2"},
	})

	rowsOf := func(doc *html.Node) []string {
		var out []string
		for _, r := range byTestID(doc, "timeline-row") {
			out = append(out, attr(r, "data-uid")+" "+strings.Join(strings.Fields(text(findAll(r, func(n *html.Node) bool { return attr(n, "class") == "action" })[0])), " ")+" "+text(findAll(r, func(n *html.Node) bool { return attr(n, "class") == "actor" })[0]))
		}
		return out
	}
	t.Run("the stored pod", func(t *testing.T) {
		doc, _ := e.get(t, "/objects/pods/default/mypod")
		want := []string{
			" get pods 404 glassplane-admin",
			"uid-2 create pods 201 glassplane-admin",
			"uid-2 get pods 200 ×2 glassplane-admin",
			"uid-2 Started kubelet",
			"uid-2 patch pods/status 200 system:node:n1",
			"uid-2 get pods 200 system:node:n1",
		}
		if got := rowsOf(doc); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("timeline:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		earlier := byTestID(doc, "earlier-incarnations")
		if len(earlier) != 1 || !strings.Contains(text(earlier[0]), "1 earlier pod named mypod") {
			t.Fatalf("earlier incarnations: %v", earlier)
		}
		if links := byTestID(earlier[0], "incarnation-link"); len(links) != 1 || attr(links[0], "href") != "/objects/pods/default/mypod?uid=uid-1" {
			t.Errorf("earlier links: %v", links)
		}
	})
	t.Run("the earlier pod", func(t *testing.T) {
		doc, _ := e.get(t, "/objects/pods/default/mypod?uid=uid-1")
		want := []string{
			" get pods 404 glassplane-admin",
			"uid-1 create pods 201 glassplane-admin",
			"uid-1 Started kubelet",
			"uid-1 get pods 200 ×3 glassplane-admin",
			"uid-1 delete pods 200 glassplane-admin",
			"uid-1 delete pods 200 system:node:n1",
		}
		if got := rowsOf(doc); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("timeline:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if len(byTestID(doc, "past-incarnation")) != 1 || len(byTestID(doc, "object-delete")) != 0 {
			t.Error("the earlier pod's page does not say it is an earlier one")
		}
		later := byTestID(doc, "later-incarnations")
		if len(later) != 1 || !strings.Contains(text(later[0]), "stored now") {
			t.Errorf("later incarnations: %v", later)
		}
	})
}

func TestFoldReads(t *testing.T) {
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	entry := func(s int, key string) timelineEntry {
		e := timelineEntry{at: at.Add(time.Duration(s) * time.Second)}
		e.row.FoldKey, e.row.Action = key, key
		return e
	}
	got := foldReads([]timelineEntry{entry(0, "a get"), entry(1, ""), entry(2, "a get"), entry(3, "b get"), entry(4, "a get")})
	var s []string
	for _, e := range got {
		s = append(s, e.row.Action+"×"+string(rune('0'+e.row.Count)))
	}
	if strings.Join(s, ",") != "a get×3,×0,b get×1" || got[0].row.LastTime != timestamp(at.Add(4*time.Second)) {
		t.Errorf("folded = %v, last %q", s, got[0].row.LastTime)
	}
}
