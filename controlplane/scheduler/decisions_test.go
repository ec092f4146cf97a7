package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/glassplane/glassplane/api/v1alpha1"
	"github.com/glassplane/glassplane/controlplane/scheduler/explain"
)

var decisionsResource = schema.GroupResource{Group: v1alpha1.GroupName, Resource: "schedulingdecisions"}

// fakeDecisions is an in-memory API of SchedulingDecisions, with the API
// server's create, update and resourceVersion semantics.
type fakeDecisions struct {
	mu      sync.Mutex // guards records, rv and writes
	records map[string]*v1alpha1.SchedulingDecision
	rv      int
	writes  int
}

var _ decisionClient = &fakeDecisions{}

func newFakeDecisions() *fakeDecisions {
	return &fakeDecisions{records: map[string]*v1alpha1.SchedulingDecision{}}
}

func (f *fakeDecisions) Get(_ context.Context, namespace, name string) (*v1alpha1.SchedulingDecision, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.records[namespace+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(decisionsResource, name)
	}
	return r.DeepCopy(), nil
}

func (f *fakeDecisions) Create(_ context.Context, r *v1alpha1.SchedulingDecision) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := r.Namespace + "/" + r.Name
	if _, ok := f.records[key]; ok {
		return apierrors.NewAlreadyExists(decisionsResource, r.Name)
	}
	if r.ResourceVersion != "" {
		return apierrors.NewBadRequest("resourceVersion should not be set on objects to be created")
	}
	f.store(key, r)
	return nil
}

func (f *fakeDecisions) Update(_ context.Context, r *v1alpha1.SchedulingDecision) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := r.Namespace + "/" + r.Name
	cur, ok := f.records[key]
	if !ok {
		return apierrors.NewNotFound(decisionsResource, r.Name)
	}
	if r.ResourceVersion != cur.ResourceVersion {
		return apierrors.NewConflict(decisionsResource, r.Name, fmt.Errorf("the object has been modified"))
	}
	f.store(key, r)
	return nil
}

func (f *fakeDecisions) store(key string, r *v1alpha1.SchedulingDecision) {
	f.rv++
	f.writes++
	c := r.DeepCopy()
	c.ResourceVersion = strconv.Itoa(f.rv)
	f.records[key] = c
}

// put stores r as another client would.
func (f *fakeDecisions) put(r *v1alpha1.SchedulingDecision) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.store(r.Namespace+"/"+r.Name, r)
	f.writes--
}

func (f *fakeDecisions) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.records)
}

// recordOf reads the pod's decision record from the fake API.
func recordOf(t *testing.T, s *Scheduler, name string) (*v1alpha1.SchedulingDecision, explain.History) {
	t.Helper()
	r, err := s.decisions.api.Get(context.Background(), "default", name)
	if err != nil {
		return nil, explain.History{}
	}
	return r, explain.HistoryOf(r)
}

// TestRecordKeepsEveryAttempt: a pod that does not fit, then fits on a new
// node, has both attempts in its record, the SchedulingDecision of its
// name in its namespace, owned by it; nothing else is written (no
// ConfigMap, nothing on the pod), and each event carries a summary.
func TestRecordKeepsEveryAttempt(t *testing.T) {
	pod := testPod("mypod", "1")
	client, recorded := newFakeClient(t, testNode("small", "500m"), pod)
	s := startScheduler(t, client)
	eventually(t, "the first attempt's record", func() bool { _, h := recordOf(t, s, "mypod"); return len(h.Attempts) == 1 })
	eventually(t, "the node watch", func() bool {
		for _, a := range client.Actions() {
			if a.GetVerb() == "watch" && a.GetResource().Resource == "nodes" {
				return true
			}
		}
		return false
	})
	if _, err := client.CoreV1().Nodes().Create(context.Background(), testNode("big", "4"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a binding to the new node", func() bool { return len(recorded.get()) == 1 })
	eventually(t, "the second attempt's record", func() bool {
		_, h := recordOf(t, s, "mypod")
		return len(h.Attempts) >= 2 && h.Attempts[len(h.Attempts)-1].Node == "big"
	})

	r, h := recordOf(t, s, "mypod")
	if r.Namespace != "default" || r.Name != "mypod" || r.PodUID != pod.UID {
		t.Errorf("record %s/%s of pod uid %q", r.Namespace, r.Name, r.PodUID)
	}
	if len(r.OwnerReferences) != 1 || r.OwnerReferences[0].Kind != "Pod" || r.OwnerReferences[0].UID != pod.UID {
		t.Errorf("ownerReferences %+v, want the pod", r.OwnerReferences)
	}
	for _, a := range client.Actions() {
		if a.GetResource().Resource == "configmaps" {
			t.Errorf("the scheduler touched ConfigMaps: %s", a.GetVerb())
		}
	}
	if h.UID != string(pod.UID) || h.Pod != "default/mypod" {
		t.Errorf("history of %q uid %q", h.Pod, h.UID)
	}
	first, last := h.Attempts[0], h.Attempts[len(h.Attempts)-1]
	if first.Node != "" || len(first.Filter) != 1 || first.Filter[0].Plugin != "NodeResourcesFit" || first.Filter[0].Reason != "Insufficient cpu" {
		t.Errorf("first attempt %+v, want small rejected by NodeResourcesFit", first)
	}
	if !strings.HasPrefix(first.Message, "0/1 nodes are available: 1 Insufficient cpu.") {
		t.Errorf("first attempt's message %q", first.Message)
	}
	if last.Attempt <= first.Attempt || last.Nodes != 2 || len(last.FilterPlugins) == 0 || last.FilterPlugins[0] != "NodeUnschedulable" {
		t.Errorf("last attempt %d over %d nodes, filter plugins %v", last.Attempt, last.Nodes, last.FilterPlugins)
	}
	if ds := s.Decisions("default", "mypod"); len(ds) != len(h.Attempts) {
		t.Errorf("Decisions has %d attempts, the record %d", len(ds), len(h.Attempts))
	}

	if p, _ := client.CoreV1().Pods("default").Get(context.Background(), "mypod", metav1.GetOptions{}); len(p.Annotations) != 0 {
		t.Errorf("pod annotations %v, want none", p.Annotations)
	}
	for _, reason := range []string{ReasonFailedScheduling, ReasonScheduled} {
		// Events are recorded asynchronously, by the broadcaster.
		var ev *v1.Event
		eventually(t, "a "+reason+" event", func() bool {
			ev = findEvent(client, reason)
			return ev != nil
		})
		var sum explain.Summary
		if err := json.Unmarshal([]byte(ev.Annotations[explain.SummaryAnnotation]), &sum); err != nil {
			t.Fatalf("%s event summary %q: %v", reason, ev.Annotations[explain.SummaryAnnotation], err)
		}
		if sum.Evaluated == 0 {
			t.Errorf("%s summary %+v", reason, sum)
		}
	}
}

// TestRecordOfAnEarlierPodIsReplaced: a record left by an earlier pod of
// the same name (not yet collected) becomes the new pod's, owned by it,
// with none of the earlier pod's attempts.
func TestRecordOfAnEarlierPodIsReplaced(t *testing.T) {
	client, recorded := newFakeClient(t, testNode("node-1", "2"), testPod("mypod", "100m"))
	decisions := newFakeDecisions()
	earlier := explain.History{Pod: "default/mypod", UID: "uid-earlier"}
	for a := range 4 {
		earlier.Attempts = append(earlier.Attempts, explain.Decision{Attempt: a + 1, Message: "earlier"})
	}
	decisions.put(explain.Record("default", "mypod", "uid-earlier", earlier))
	s := startSchedulerWith(t, client, decisions)
	eventually(t, "a binding", func() bool { return len(recorded.get()) == 1 })
	eventually(t, "the record to be the new pod's", func() bool { r, _ := recordOf(t, s, "mypod"); return r.PodUID == "uid-mypod" })
	r, h := recordOf(t, s, "mypod")
	if len(h.Attempts) != 1 || h.Attempts[0].Message == "earlier" || h.Dropped != 0 {
		t.Errorf("attempts %+v, dropped %d; want the new pod's one", h.Attempts, h.Dropped)
	}
	if len(r.OwnerReferences) != 1 || r.OwnerReferences[0].UID != "uid-mypod" {
		t.Errorf("ownerReferences %+v, want the new pod", r.OwnerReferences)
	}
}

// TestDecisionsCountsAnAttemptOnce: an attempt both in the record and still
// pending (its write landed between the two reads) is listed once, and a
// record left by an earlier pod of the same name is not the new pod's.
func TestDecisionsCountsAnAttemptOnce(t *testing.T) {
	pod := testPod("mypod", "1")
	client, _ := newFakeClient(t)
	s, err := New(Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, client)
	if err != nil {
		t.Fatal(err)
	}
	decisions := newFakeDecisions()
	s.decisions.api = decisions
	// Not running: what is recorded stays pending.
	s.decisions.record(pod, explain.Decision{Attempt: 1})
	s.decisions.record(pod, explain.Decision{Attempt: 2})
	write := func(uid types.UID, attempts ...int) {
		h := explain.History{Pod: "default/mypod", UID: string(uid)}
		for _, a := range attempts {
			h.Attempts = append(h.Attempts, explain.Decision{Attempt: a})
		}
		decisions.put(explain.Record("default", "mypod", uid, h))
	}
	attempts := func() (out []int) {
		for _, d := range s.Decisions("default", "mypod") {
			out = append(out, d.Attempt)
		}
		return out
	}
	if got := attempts(); fmt.Sprint(got) != "[1 2]" {
		t.Errorf("nothing written yet: attempts %v, want [1 2]", got)
	}
	write(pod.UID, 1)
	if got := attempts(); fmt.Sprint(got) != "[1 2]" {
		t.Errorf("attempt 1 written, both still pending: attempts %v, want [1 2]", got)
	}
	write("uid-of-an-earlier-mypod", 1, 2, 3, 4)
	if got := attempts(); fmt.Sprint(got) != "[1 2]" {
		t.Errorf("record of an earlier pod: attempts %v, want the new pod's [1 2]", got)
	}
}

// TestDeletedPodIsForgotten: the scheduler forgets a deleted pod and
// leaves its record to the garbage collector, which deletes it with its
// owner.
func TestDeletedPodIsForgotten(t *testing.T) {
	client, recorded := newFakeClient(t, testNode("node-1", "2"), testPod("mypod", "100m"))
	decisions := newFakeDecisions()
	s := startSchedulerWith(t, client, decisions)
	eventually(t, "a binding", func() bool { return len(recorded.get()) == 1 })
	eventually(t, "the record of mypod", func() bool { r, _ := recordOf(t, s, "mypod"); return r != nil })
	if err := client.CoreV1().Pods("default").Delete(context.Background(), "mypod", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the scheduler to forget mypod", func() bool {
		s.decisions.mu.Lock()
		defer s.decisions.mu.Unlock()
		return len(s.decisions.pods) == 0
	})
	if decisions.count() != 1 {
		t.Errorf("%d records; the scheduler deletes none", decisions.count())
	}
}

// TestNoRecordsWithoutTheAPIGroup: a client without a REST client (a fake
// clientset) keeps no records, and scheduling goes on.
func TestNoRecordsWithoutTheAPIGroup(t *testing.T) {
	if c := newDecisionClient(fake.NewClientset()); c != nil {
		t.Errorf("a fake clientset's decision client is %T", c)
	}
	client, recorded := newFakeClient(t, testNode("node-1", "2"), testPod("mypod", "100m"))
	s, err := New(Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, client)
	if err != nil {
		t.Fatal(err)
	}
	runScheduler(t, s)
	eventually(t, "a binding", func() bool { return len(recorded.get()) == 1 })
	if ds := s.Decisions("default", "mypod"); len(ds) != 0 {
		t.Errorf("decisions %+v without records", ds)
	}
}

// TestRESTDecisions: the REST decision client sends JSON to the
// resource's paths and reads the API's Status errors.
func TestRESTDecisions(t *testing.T) {
	var mu sync.Mutex
	var requests []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		requests = append(requests, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type")+" "+r.Header.Get("Accept")+" "+string(body))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/gone"):
			w.WriteHeader(http.StatusNotFound)
			json.NewEncoder(w).Encode(apierrors.NewNotFound(decisionsResource, "gone").ErrStatus)
		case r.Method == http.MethodPost && strings.Contains(string(body), `"name":"taken"`):
			w.WriteHeader(http.StatusConflict)
			json.NewEncoder(w).Encode(apierrors.NewAlreadyExists(decisionsResource, "taken").ErrStatus)
		case r.Method == http.MethodPut:
			w.WriteHeader(http.StatusConflict)
			json.NewEncoder(w).Encode(apierrors.NewConflict(decisionsResource, "web", fmt.Errorf("the object has been modified")).ErrStatus)
		default:
			w.Write([]byte(`{"apiVersion":"glassplane.io/v1alpha1","kind":"SchedulingDecision","metadata":{"namespace":"shop","name":"web","resourceVersion":"7"},"podUID":"u1","attempts":[{"attempt":1,"time":null,"nodes":1,"feasible":1,"node":"n1"}]}`))
		}
	}))
	t.Cleanup(srv.Close)
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{ContentType: "application/vnd.kubernetes.protobuf"}})
	if err != nil {
		t.Fatal(err)
	}
	c := newDecisionClient(cs)
	ctx := context.Background()
	r, err := c.Get(ctx, "shop", "web")
	if err != nil || r.PodUID != "u1" || r.ResourceVersion != "7" || len(r.Attempts) != 1 || r.Attempts[0].Node != "n1" {
		t.Errorf("Get = %+v, %v", r, err)
	}
	if _, err := c.Get(ctx, "shop", "gone"); !apierrors.IsNotFound(err) {
		t.Errorf("Get of a missing record: %v, want NotFound", err)
	}
	rec := explain.Record("shop", "web", "u1", explain.History{Attempts: []explain.Decision{{Attempt: 1, Node: "n1"}}})
	if err := c.Create(ctx, rec); err != nil {
		t.Errorf("Create: %v", err)
	}
	taken := rec.DeepCopy()
	taken.Name = "taken"
	if err := c.Create(ctx, taken); !apierrors.IsAlreadyExists(err) {
		t.Errorf("Create answered 409 AlreadyExists: %v", err)
	}
	if err := c.Update(ctx, rec); !apierrors.IsConflict(err) {
		t.Errorf("Update answered 409: %v, want Conflict", err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{
		"GET /apis/glassplane.io/v1alpha1/namespaces/shop/schedulingdecisions/web ",
		"GET /apis/glassplane.io/v1alpha1/namespaces/shop/schedulingdecisions/gone ",
		`POST /apis/glassplane.io/v1alpha1/namespaces/shop/schedulingdecisions application/json application/json {"kind":"SchedulingDecision","apiVersion":"glassplane.io/v1alpha1","metadata":{"name":"web","namespace":"shop","ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":"web","uid":"u1"}]}`,
		"POST /apis/glassplane.io/v1alpha1/namespaces/shop/schedulingdecisions application/json application/json {",
		"PUT /apis/glassplane.io/v1alpha1/namespaces/shop/schedulingdecisions/web application/json application/json {",
	}
	if len(requests) != len(want) {
		t.Fatalf("requests:\n%s", strings.Join(requests, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(requests[i], w) {
			t.Errorf("request %d:\n got %.300s\nwant %s...", i, requests[i], w)
		}
	}
}
