package web

import (
	"strings"
	"testing"
	"time"

	"github.com/glassplane/glassplane/api/v1alpha1"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func owned(kind, apiVersion, name, uid string, owner metav1.Object, ownerKind string) map[string]any {
	meta := map[string]any{"name": name, "namespace": "default", "uid": uid}
	if owner != nil {
		meta["ownerReferences"] = []map[string]any{{"apiVersion": "apps/v1", "kind": ownerKind, "name": owner.GetName(), "uid": string(owner.GetUID()), "controller": true}}
	}
	return map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": meta}
}

func TestOwnersAndDependents(t *testing.T) {
	e := newEnv(t)
	dep := &metav1.ObjectMeta{Name: "hello", UID: types.UID("uid-dep")}
	rs := &metav1.ObjectMeta{Name: "hello-abc", UID: types.UID("uid-rs")}
	e.put(t, "/registry/deployments/default/hello", owned("Deployment", "apps/v1", "hello", "uid-dep", nil, ""))
	e.put(t, "/registry/replicasets/default/hello-abc", owned("ReplicaSet", "apps/v1", "hello-abc", "uid-rs", dep, "Deployment"))
	p := pod("default", "hello-abc-x", "node1", corev1.PodRunning)
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID}}
	e.put(t, "/registry/pods/default/hello-abc-x", p)
	e.put(t, "/registry/pods/default/other", pod("default", "other", "node1", corev1.PodRunning))
	e.put(t, "/registry/events/default/x.1", coreEvent("x.1", p, "Started", "kubelet", "Started container c", time.Now()))
	e.ring.Add(auditEvent("create", "pods", "", "default", "hello-abc-x", "system:kube-controller-manager", time.Now(), map[string]string{
		v1alpha1.AnnotationEtcdKey: "/registry/pods/default/hello-abc-x", v1alpha1.AnnotationEtcdRevision: "7",
	}))

	t.Run("a deployment groups its replicasets' and pods' steps", func(t *testing.T) {
		doc, _ := e.get(t, "/objects/deployments/default/hello")
		var got []string
		for _, g := range byTestID(doc, "dependent-timeline") {
			got = append(got, attr(g, "data-kind")+"/"+attr(g, "data-name")+":"+itoa(int64(len(byTestID(g, "timeline-row")))))
		}
		if strings.Join(got, " ") != "ReplicaSet/hello-abc:0 Pod/hello-abc-x:2" {
			t.Errorf("dependent timelines = %v", got)
		}
	})
	t.Run("a pod links its owner, its audit event and etcd revision", func(t *testing.T) {
		doc, _ := e.get(t, "/objects/pods/default/hello-abc-x")
		links := byTestID(doc, "owner-link")
		if len(links) != 1 || attr(links[0], "href") != "/objects/replicasets/default/hello-abc" {
			t.Fatalf("owner links = %d", len(links))
		}
		if l := byTestID(doc, "row-etcd-link"); len(l) != 1 || attr(l[0], "href") != "/etcd?key=%2Fregistry%2Fpods%2Fdefault%2Fhello-abc-x&rev=7" {
			t.Errorf("etcd links = %d", len(l))
		}
		if l := byTestID(doc, "row-audit-link"); len(l) != 1 || !strings.HasPrefix(attr(l[0], "href"), "/requests?reads=1#req-") {
			t.Errorf("audit links = %d", len(l))
		}
	})
}
