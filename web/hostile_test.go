package web

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/glassplane/glassplane/api/v1alpha1"

	"golang.org/x/net/html"
	corev1 "k8s.io/api/core/v1"
)

// TestHostileNamesStayText puts markup in names, labels and annotations and
// checks that no page turns it into elements.
func TestHostileNamesStayText(t *testing.T) {
	e := newEnv(t)
	n := node(hostileName, corev1.ConditionTrue)
	n.Labels = map[string]string{"evil": hostileName}
	e.put(t, "/registry/minions/"+hostileName, n)
	p := pod("default", hostileName, hostileName, corev1.PodRunning)
	p.Labels = map[string]string{"app": hostileName}
	p.Annotations = map[string]string{hostileName: hostileName}
	e.put(t, "/registry/pods/default/"+hostileName, p)
	e.put(t, "/registry/pods/default/"+hostileName, p)
	e.put(t, "/registry/events/default/x.1", coreEvent("x.1", p, hostileName, hostileName, hostileName, time.Now()))
	ev := auditEvent("create", "pods", "", "default", hostileName, hostileName, time.Now(), map[string]string{
		v1alpha1.AnnotationEtcdKey: "/registry/pods/default/" + hostileName, v1alpha1.AnnotationEtcdRevision: "2",
		v1alpha1.AnnotationReason: hostileName, v1alpha1.AnnotationAdmissionPrefix + hostileName: hostileName,
	})
	ev.User.Groups = []string{hostileName}
	e.ring.Add(ev)

	key := url.QueryEscape("/registry/pods/default/" + hostileName)
	pages := []string{
		"/",
		"/requests",
		"/requests?reads=1&user=" + url.QueryEscape(hostileName),
		"/etcd",
		"/etcd?key=" + key,
		"/etcd?key=" + key + "&at=2",
		"/objects/pods/default/" + url.PathEscape(hostileName),
		"/objects/nodes/" + url.PathEscape(hostileName),
		"/apply",
		"/events",
		"/events?q=" + url.QueryEscape(hostileName),
		"/nodes",
		"/nodes?q=" + url.QueryEscape(hostileName),
		"/login?next=" + url.QueryEscape("/"+hostileName),
	}
	for _, path := range pages {
		t.Run(path, func(t *testing.T) {
			doc, raw := e.get(t, path)
			if imgs := findAll(doc, func(n *html.Node) bool { return n.Data == "img" }); len(imgs) != 0 {
				t.Errorf("found %d <img> elements", len(imgs))
			}
			if strings.Contains(raw, hostileName) {
				t.Error("the raw HTML contains the unescaped name")
			}
		})
	}
}
