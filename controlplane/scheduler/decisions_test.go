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

	"github.com/glassplane/glassplane/controlplane/scheduler/explain"
)

// recordOf reads the pod's decision record from the fake API.
func recordOf(t *testing.T, s *Scheduler, name string) (*v1.ConfigMap, explain.History) {
	t.Helper()
	cm, err := s.client.CoreV1().ConfigMaps("default").Get(context.Background(), explain.RecordName(name), metav1.GetOptions{})
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
// node, has both attempts in its record, owned by the pod; the pod carries
// the compact decision naming the record, and each event a summary.
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
	if cm.Labels[explain.RecordLabel] != explain.RecordLabelValue {
		t.Errorf("labels %v", cm.Labels)
	}
	if len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].Kind != "Pod" || cm.OwnerReferences[0].UID != pod.UID {
		t.Errorf("ownerReferences %+v, want the pod", cm.OwnerReferences)
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

	var compact explain.Decision
	if err := json.Unmarshal([]byte(recorded.get()[0].Annotations[explain.DecisionAnnotation]), &compact); err != nil {
		t.Fatal(err)
	}
	if compact.Record != "mypod.decisions" || compact.Node != "big" {
		t.Errorf("pod annotation names record %q and node %q", compact.Record, compact.Node)
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
		if sum.Record != "mypod.decisions" || sum.Evaluated == 0 {
			t.Errorf("%s summary %+v", reason, sum)
		}
	}
}

// TestRecordLeavesForeignConfigMapAlone: a user's ConfigMap with the
// record's name is not overwritten.
func TestRecordLeavesForeignConfigMapAlone(t *testing.T) {
	foreign := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: explain.RecordName("mypod"), Namespace: "default"}, Data: map[string]string{"k": "v"}}
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
	cm, err := client.CoreV1().ConfigMaps("default").Get(context.Background(), foreign.Name, metav1.GetOptions{})
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
		cm := s.decisions.recordObject(&podRecord{namespace: "default", name: "mypod", uid: uid}, explain.RecordName("mypod"), data)
		cms := client.CoreV1().ConfigMaps("default")
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
