package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/glassplane/glassplane/controlplane/apiserver/auth/rbac"
	"github.com/glassplane/glassplane/controlplane/scheduler/explain"
)

// TestRecordsGoWhereTheSchedulerMayWrite: the records' namespace is the
// one the API server creates and lets the scheduler write in.
func TestRecordsGoWhereTheSchedulerMayWrite(t *testing.T) {
	if explain.RecordNamespace != rbac.NamespaceGlassplaneSystem || rbac.Roles()[0].Namespace != explain.RecordNamespace {
		t.Errorf("records go to %q; the API server bootstraps %q", explain.RecordNamespace, rbac.NamespaceGlassplaneSystem)
	}
}

// recordOf reads the pod's decision record from the fake API.
func recordOf(t *testing.T, s *Scheduler, name string) (*v1.ConfigMap, explain.History) {
	t.Helper()
	cm, err := s.client.CoreV1().ConfigMaps(explain.RecordNamespace).Get(context.Background(), explain.RecordName("default", name), metav1.GetOptions{})
	if err != nil {
		return nil, explain.History{}
	}
	h, err := explain.DecodeHistory(cm.BinaryData[explain.RecordKey])
	if err != nil {
		t.Fatalf("record of %s: %v", name, err)
	}
	return cm, h
}

// TestRecordKeepsEveryAttempt: a pod that does not fit, then fits on a new
// node, has both attempts in its record in glassplane-system, labelled with
// the pod; nothing lands in the pod's namespace or on the pod, and each
// event carries a summary naming the record.
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

	cm, h := recordOf(t, s, "mypod")
	wantLabels := map[string]string{explain.RecordLabel: explain.RecordLabelValue, explain.PodNamespaceLabel: "default", explain.PodNameLabel: "mypod", explain.PodUIDLabel: string(pod.UID)}
	if fmt.Sprint(cm.Labels) != fmt.Sprint(wantLabels) || cm.Annotations[explain.PodAnnotation] != "default/mypod" {
		t.Errorf("labels %v, annotations %v", cm.Labels, cm.Annotations)
	}
	if cm.Name != "default.mypod" || len(cm.OwnerReferences) != 0 {
		t.Errorf("record %q with ownerReferences %+v, want default.mypod and none (they cannot cross namespaces)", cm.Name, cm.OwnerReferences)
	}
	if user, _ := client.CoreV1().ConfigMaps("default").List(context.Background(), metav1.ListOptions{}); len(user.Items) != 0 {
		t.Errorf("ConfigMaps in the pod's namespace: %d, want none", len(user.Items))
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
		if sum.Record != "default.mypod" || sum.Evaluated == 0 {
			t.Errorf("%s summary %+v", reason, sum)
		}
	}
}

// TestRecordLeavesForeignConfigMapAlone: a user's ConfigMap with the
// record's name is not overwritten.
func TestRecordLeavesForeignConfigMapAlone(t *testing.T) {
	foreign := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: explain.RecordName("default", "mypod"), Namespace: explain.RecordNamespace}, Data: map[string]string{"k": "v"}}
	client, recorded := newFakeClient(t, testNode("node-1", "2"), testPod("mypod", "100m"), foreign)
	startScheduler(t, client)
	eventually(t, "a binding", func() bool { return len(recorded.get()) == 1 })
	eventually(t, "the scheduler's look at the ConfigMap", func() bool {
		for _, a := range client.Actions() {
			if a.GetVerb() == "get" && a.GetResource().Resource == "configmaps" {
				return true
			}
		}
		return false
	})
	cm, err := client.CoreV1().ConfigMaps(explain.RecordNamespace).Get(context.Background(), foreign.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["k"] != "v" || len(cm.BinaryData) != 0 || len(cm.Labels) != 0 {
		t.Errorf("the user's ConfigMap changed: %+v", cm)
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
	// Not running: what is recorded stays pending.
	s.decisions.record(pod, explain.Decision{Attempt: 1})
	s.decisions.record(pod, explain.Decision{Attempt: 2})
	write := func(uid types.UID, attempts ...int) {
		h := explain.History{Pod: "default/mypod", UID: string(uid)}
		for _, a := range attempts {
			h.Attempts = append(h.Attempts, explain.Decision{Attempt: a})
		}
		data, _, err := explain.EncodeHistory(h, 0)
		if err != nil {
			t.Fatal(err)
		}
		cm := s.decisions.recordObject(&podRecord{namespace: "default", name: "mypod", uid: uid}, explain.RecordName("default", "mypod"), data)
		cms := client.CoreV1().ConfigMaps(explain.RecordNamespace)
		cms.Delete(context.Background(), cm.Name, metav1.DeleteOptions{})
		if _, err := cms.Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
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

// TestRecordGoesWithItsPod: deleting a pod deletes its record; a record of
// a pod deleted while no scheduler ran goes when the next one starts, and a
// live pod's record and a ConfigMap that is no record stay.
func TestRecordGoesWithItsPod(t *testing.T) {
	record := func(namespace, name string, uid types.UID) *v1.ConfigMap {
		data, _, err := explain.EncodeHistory(explain.History{Pod: namespace + "/" + name, UID: string(uid), Attempts: []explain.Decision{{Attempt: 1}}}, 0)
		if err != nil {
			t.Fatal(err)
		}
		rec := &podRecord{namespace: namespace, name: name, uid: uid}
		return (&decisionStore{}).recordObject(rec, explain.RecordName(namespace, name), data)
	}
	live := testPod("live", "100m")
	live.Spec.NodeName = "node-1"
	orphan := record("default", "gone", "uid-gone")
	earlier := record("default", "live", "uid-of-an-earlier-live")
	earlier.Name = "default.live-earlier" // as if named before a rename: only its labels count
	foreign := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: explain.RecordNamespace}}
	client, recorded := newFakeClient(t, testNode("node-1", "2"), live, testPod("mypod", "100m"), orphan, earlier, foreign, record("default", "live", live.UID))
	s := startScheduler(t, client)
	cms := client.CoreV1().ConfigMaps(explain.RecordNamespace)
	exists := func(name string) bool {
		_, err := cms.Get(context.Background(), name, metav1.GetOptions{})
		return err == nil
	}
	eventually(t, "the sweep of records whose pod is gone", func() bool { return !exists(orphan.Name) && !exists(earlier.Name) })
	if !exists("default.live") || !exists(foreign.Name) {
		t.Error("the sweep deleted the live pod's record or a ConfigMap that is no record")
	}

	eventually(t, "a binding", func() bool { return len(recorded.get()) == 1 })
	eventually(t, "the record of mypod", func() bool { return exists("default.mypod") })
	if err := client.CoreV1().Pods("default").Delete(context.Background(), "mypod", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the record of the deleted pod to go", func() bool { return !exists("default.mypod") })
	if ds := s.Decisions("default", "mypod"); len(ds) != 0 {
		t.Errorf("Decisions of the deleted pod = %+v", ds)
	}
	if !exists("default.live") {
		t.Error("deleting mypod deleted another pod's record")
	}
}
