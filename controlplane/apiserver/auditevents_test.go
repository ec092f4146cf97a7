package apiserver_test

import (
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"

	"github.com/glassplane/glassplane/api/v1alpha1"
	"github.com/glassplane/glassplane/controlplane/apiserver"
	"github.com/glassplane/glassplane/controlplane/apiserver/audit"
)

// TestAuditEvents lists the audit events through the API, in the
// audit.k8s.io/v1 shape, and watches from the list's resourceVersion to
// see the next request's events.
func TestAuditEvents(t *testing.T) {
	env := shared
	ns := env.namespace(t)
	ctx := ctxT(t)
	cms := env.client.CoreV1().ConfigMaps(ns)
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "audited"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	base := "/apis/glassplane.io/v1alpha1/auditevents"
	resp, body := env.do(t, http.MethodGet, base, "", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("list: %d %s", resp.StatusCode, body)
	}
	var list v1alpha1.AuditEventList
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatal(err)
	}
	var found *v1alpha1.AuditEvent
	for i := range list.Items {
		e := &list.Items[i]
		if e.Event.Verb == "create" && e.Event.ObjectRef != nil && e.Event.ObjectRef.Namespace == ns && e.Event.ObjectRef.Name == "audited" {
			found = e
		}
	}
	if found == nil {
		t.Fatalf("no create of %s/audited among %d events", ns, len(list.Items))
	}
	if found.Event.APIVersion != "audit.k8s.io/v1" || found.Event.Kind != "Event" || found.Event.ResponseStatus == nil || found.Event.ResponseStatus.Code != 201 ||
		found.Name != string(found.Event.AuditID)+"."+string(found.Event.Stage) || found.ResourceVersion == "" {
		t.Errorf("the create's event = %+v", found)
	}

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, env.url+base+"?watch=1&resourceVersion="+list.ResourceVersion, nil)
	if err != nil {
		t.Fatal(err)
	}
	wresp, err := env.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer wresp.Body.Close()
	if _, err := cms.Get(ctx, "audited", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	listSeq, err := strconv.ParseInt(list.ResourceVersion, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(wresp.Body)
	for {
		var ev struct {
			Type   string
			Object v1alpha1.AuditEvent
		}
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("watch: %v", err)
		}
		if seq, _ := strconv.ParseInt(ev.Object.ResourceVersion, 10, 64); seq <= listSeq {
			t.Fatalf("the watch from %s sent event %s", list.ResourceVersion, ev.Object.ResourceVersion)
		}
		if r := ev.Object.Event.ObjectRef; ev.Object.Event.Verb == "get" && r != nil && r.Name == "audited" && r.Namespace == ns {
			break
		}
	}

	// The same watch in Kubernetes' protobuf, as the dashboard asks for it:
	// length-prefixed WatchEvent frames whose objects decode as AuditEvents.
	req, err = http.NewRequestWithContext(ctx, http.MethodGet, env.url+base+"?watch=1&resourceVersion="+list.ResourceVersion, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/vnd.kubernetes.protobuf, application/json")
	presp, err := env.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer presp.Body.Close()
	if ct := presp.Header.Get("Content-Type"); ct != "application/vnd.kubernetes.protobuf;stream=watch" {
		t.Fatalf("the protobuf watch answered %q", ct)
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	pb := protobuf.NewSerializer(scheme, scheme)
	for seen := false; !seen; {
		var size [4]byte
		if _, err := io.ReadFull(presp.Body, size[:]); err != nil {
			t.Fatalf("protobuf watch: %v", err)
		}
		frame := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(presp.Body, frame); err != nil {
			t.Fatalf("protobuf watch: %v", err)
		}
		var we metav1.WatchEvent
		if err := we.Unmarshal(frame); err != nil {
			t.Fatalf("a watch frame: %v", err)
		}
		obj, _, err := pb.Decode(we.Object.Raw, nil, &v1alpha1.AuditEvent{})
		if err != nil {
			t.Fatalf("a %s event's object: %v", we.Type, err)
		}
		ae := obj.(*v1alpha1.AuditEvent)
		if seq, _ := strconv.ParseInt(ae.ResourceVersion, 10, 64); we.Type != "ADDED" || seq <= listSeq {
			t.Fatalf("the protobuf watch from %s sent %s %s", list.ResourceVersion, we.Type, ae.ResourceVersion)
		}
		r := ae.Event.ObjectRef
		seen = ae.Event.Verb == "get" && r != nil && r.Name == "audited" && r.Namespace == ns
		if seen && (ae.Event.APIVersion != "audit.k8s.io/v1" || ae.Name != string(ae.Event.AuditID)+"."+string(ae.Event.Stage) || ae.Event.User.Username == "") {
			t.Errorf("the get's event from the protobuf watch = %+v", ae)
		}
	}

	for path, want := range map[string]int{
		base + "?watch=1&resourceVersion=999999999": http.StatusGatewayTimeout,
		base + "/some-name":                         http.StatusMethodNotAllowed,
		base + "?resourceVersion=abc":               http.StatusBadRequest,
	} {
		if resp, body := env.do(t, http.MethodGet, path, "", nil); resp.StatusCode != want {
			t.Errorf("GET %s = %d, want %d: %s", path, resp.StatusCode, want, body)
		}
	}
}

// A watch from a sequence number the ring no longer keeps is 410 Expired,
// as a watch from a compacted etcd revision is; the ring keeps each event
// encoded, and a list decodes the ones it still has.
func TestAuditEventsExpired(t *testing.T) {
	env := newEnvWith(t, func(cfg *apiserver.Config) { cfg.Audit = audit.NewRing(8) })
	base := "/apis/glassplane.io/v1alpha1/auditevents"
	for range 10 {
		env.do(t, http.MethodGet, "/api/v1/namespaces/default", "", nil)
	}
	resp, body := env.do(t, http.MethodGet, base+"?watch=1&resourceVersion=1", "", nil)
	if resp.StatusCode != http.StatusGone || !strings.Contains(body, "too old resource version") {
		t.Errorf("a watch from sequence 1 = %d %s, want 410 too old resource version", resp.StatusCode, body)
	}
	resp, body = env.do(t, http.MethodGet, base, "", nil)
	var list v1alpha1.AuditEventList
	if err := json.Unmarshal([]byte(body), &list); resp.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("list: %d %v %s", resp.StatusCode, err, body)
	}
	if len(list.Items) != 8 {
		t.Fatalf("the list kept %d events, want the ring's 8", len(list.Items))
	}
	first, _ := strconv.ParseInt(list.Items[0].ResourceVersion, 10, 64)
	last, _ := strconv.ParseInt(list.Items[7].ResourceVersion, 10, 64)
	if first <= 1 || last != first+7 || list.Items[7].Event.Verb == "" || list.Items[7].Event.User.Username == "" {
		t.Errorf("the list's events run from %d to %d (last %+v), want the 8 newest, oldest first, decoded", first, last, list.Items[7].Event)
	}
}
