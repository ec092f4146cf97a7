package demo

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestReplyRecorderRecordsEachReplyOnce feeds the service-dns demo's
// recorder the client's probes as readProbes gives them, twice over (the
// demo reads the whole log at each poll): each probe that got a reply
// becomes one ServiceReached Event on the client about the replica that
// answered, a probe without a reply none, and the run's cleanup deletes
// them.
func TestReplyRecorderRecordsEachReplyOnce(t *testing.T) {
	ctx := context.Background()
	const ns = "glassplane-demo-service-dns"
	const fqdn = "hello." + ns + ".svc.cluster.local"
	client := apiLikeClient()
	env := &Env{Client: client, Namespace: ns, lang: "en"}
	clientPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "client", Namespace: ns, UID: "uid-client"}}
	r := newReplyRecorder(clientPod, fqdn, map[string]types.UID{"hello-1": "uid-hello-1", "hello-2": "uid-hello-2"})
	probes := []probe{
		{n: 1, lookup: "10.96.0.20", replica: ""},
		{n: 2, lookup: "10.96.0.20", replica: "hello-2"},
		{n: 3, lookup: "", replica: "hello-1"},
	}
	for range 2 {
		for _, p := range probes {
			if err := r.record(ctx, env, p); err != nil {
				t.Fatalf("record probe %d: %v", p.n, err)
			}
		}
	}

	list, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]corev1.Event{}
	for _, e := range list.Items {
		got[e.Name] = e
	}
	if len(list.Items) != 2 {
		t.Fatalf("%d events (%v), want one per probe with a reply: client.probe-2 and client.probe-3", len(list.Items), got)
	}
	tests := []struct {
		name, replica, message string
	}{
		{"client.probe-2", "hello-2", "nslookup " + fqdn + " → 10.96.0.20; wget http://" + fqdn + "/ → answered by hello-2"},
		{"client.probe-3", "hello-1", "nslookup " + fqdn + " → ?; wget http://" + fqdn + "/ → answered by hello-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, ok := got[tt.name]
			if !ok {
				t.Fatalf("no event %s", tt.name)
			}
			if e.Reason != ReasonServiceReached || e.Type != corev1.EventTypeNormal {
				t.Errorf("reason %q, type %q", e.Reason, e.Type)
			}
			if io := e.InvolvedObject; io.Kind != "Pod" || io.Namespace != ns || io.Name != "client" || io.UID != "uid-client" {
				t.Errorf("involvedObject %+v, want the client pod", io)
			}
			if rel := e.Related; rel == nil || rel.Kind != "Pod" || rel.Namespace != ns || rel.Name != tt.replica || rel.UID != types.UID("uid-"+tt.replica) {
				t.Errorf("related %+v, want pod %s", rel, tt.replica)
			}
			if e.Message != tt.message {
				t.Errorf("message %q, want %q", e.Message, tt.message)
			}
			if e.Labels[demoLabel] != "service-dns" {
				t.Errorf("labels %v, want the demo's", e.Labels)
			}
			if e.Source.Component != EventSource || e.ReportingController != EventSource {
				t.Errorf("source %q, reportingComponent %q, want %q", e.Source.Component, e.ReportingController, EventSource)
			}
		})
	}

	if err := env.deleteCreated(ctx); err != nil {
		t.Fatal(err)
	}
	if list, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 0 {
		t.Errorf("after the cleanup: %d events, %v", len(list.Items), err)
	}
}
