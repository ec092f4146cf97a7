package kube

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/glassplane/glassplane/api/v1alpha1"
	"github.com/glassplane/glassplane/web/source"
)

// TestWatchAudit copies the API server's audit events of a request into
// the dashboard's log, with the etcd key the request wrote.
func TestWatchAudit(t *testing.T) {
	c := startCluster(t)
	disco, err := discovery.NewDiscoveryClientForConfig(c.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := AuditEventsServed(disco); err != nil || !ok {
		t.Fatalf("AuditEventsServed = %v, %v; want true", ok, err)
	}
	log := source.NewAuditLog(0)
	ctx, cancel := context.WithCancel(c.ctx)
	done := make(chan error, 1)
	go func() { done <- WatchAudit(ctx, c.cfg, log, nil) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("WatchAudit: %v", err)
		}
	}()

	c.namespace(t, "audited")
	rev := c.configMap(t, "audited", "cm", "one")
	created := func(ev *auditv1.Event) bool {
		return ev.Verb == "create" && ev.Stage == auditv1.StageResponseComplete && ev.ObjectRef != nil &&
			ev.ObjectRef.Resource == "configmaps" && ev.ObjectRef.Name == "cm"
	}
	waitFor(t, ctx, "the configmap's create in the audit log", func() bool { return len(log.Find(created)) > 0 })
	ev := log.Find(created)[0].Event
	if got := ev.Annotations[v1alpha1.AnnotationEtcdKey]; got != "/registry/configmaps/audited/cm" {
		t.Errorf("etcd key annotation = %q", got)
	}
	if got := ev.Annotations[v1alpha1.AnnotationEtcdRevision]; got != fmt.Sprint(rev) {
		t.Errorf("etcd revision annotation = %q, want %d", got, rev)
	}
	// The namespace was created before the configmap: its event came
	// first, and each event came once.
	nsEvents := log.Find(func(ev *auditv1.Event) bool {
		return ev.Verb == "create" && ev.Stage == auditv1.StageResponseComplete && ev.ObjectRef != nil && ev.ObjectRef.Resource == "namespaces" && ev.ObjectRef.Name == "audited"
	})
	if len(nsEvents) != 1 || nsEvents[0].Seq > log.Find(created)[0].Seq {
		t.Errorf("the namespace's create: %d events", len(nsEvents))
	}
}

// TestWatchAuditNotServed: a server without Glassplane's API group (here
// a fake answering 404 to everything, as kube-apiserver does for an
// unknown group) makes WatchAudit say so at once.
func TestWatchAuditNotServed(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := WatchAudit(ctx, &rest.Config{Host: srv.URL}, source.NewAuditLog(0), nil)
	if !errors.Is(err, ErrNotServed) {
		t.Errorf("WatchAudit against a server without auditevents: %v, want ErrNotServed", err)
	}
	e, err := NewEtcdAPI(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Keys(ctx, source.Root, 0)
	if !errors.Is(err, ErrNotServed) {
		t.Errorf("EtcdAPI.Keys against a server without etcdkeys: %v, want ErrNotServed", err)
	}
}
