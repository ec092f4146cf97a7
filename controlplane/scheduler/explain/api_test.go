package explain

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/glassplane/glassplane/api/v1alpha1"
)

// TestRecordRoundTripsThroughTheAPI: a History written as a
// SchedulingDecision, sent as JSON and read back is the History again
// (as its own JSON round trip has it: times to the second, invalid UTF-8
// replaced), for every sample shape.
func TestRecordRoundTripsThroughTheAPI(t *testing.T) {
	tests := map[string][]Decision{
		"no attempts":             nil,
		"1,000 nodes, two tries":  {fullDecision(1, 1000), fullDecision(2, 1000)},
		"a failure, then a bind":  {fullDecision(3, 4), fullDecision(4, 4)},
		"preemption and messages": sampleDecisions(),
	}
	for name, attempts := range tests {
		t.Run(name, func(t *testing.T) {
			for i := range attempts {
				attempts[i].Pod = "default/web"
			}
			h := History{Pod: "default/web", UID: "uid-web", Attempts: attempts, Dropped: 3}
			b, err := json.Marshal(Record("default", "web", "uid-web", h))
			if err != nil {
				t.Fatal(err)
			}
			var r v1alpha1.SchedulingDecision
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			got := HistoryOf(&r)
			want := History{Pod: h.Pod, UID: h.UID, Dropped: 3}
			for _, d := range attempts {
				want.Attempts = append(want.Attempts, viaJSON(t, d))
			}
			// A node's empty plugin list is left out of the API's JSON.
			for i := range want.Attempts {
				for j := range want.Attempts[i].Scores {
					if len(want.Attempts[i].Scores[j].Plugins) == 0 {
						want.Attempts[i].Scores[j].Plugins = nil
					}
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("the round trip changed the history:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

// TestRecordIsThePodsAndOwnedByIt: the record is named after the pod, in
// its namespace, owned by it (not as its controller, and not blocking its
// deletion), and its JSON names fields in lowerCamelCase.
func TestRecordIsThePodsAndOwnedByIt(t *testing.T) {
	d := fullDecision(1, 3)
	d.NominatedNode, d.Victims, d.PDBViolations = "node-0001", []string{"default/low"}, 1
	r := Record("shop", "web-0", "uid-1", History{Attempts: []Decision{d}, Dropped: 2})
	if r.Namespace != "shop" || r.Name != "web-0" || r.PodUID != "uid-1" || r.Kind != "SchedulingDecision" || r.APIVersion != "glassplane.io/v1alpha1" {
		t.Errorf("record %s %s/%s of pod %s", r.GroupVersionKind(), r.Namespace, r.Name, r.PodUID)
	}
	if len(r.OwnerReferences) != 1 {
		t.Fatalf("ownerReferences %+v", r.OwnerReferences)
	}
	if or := r.OwnerReferences[0]; or.APIVersion != "v1" || or.Kind != "Pod" || or.Name != "web-0" || or.UID != "uid-1" || or.Controller != nil || or.BlockOwnerDeletion != nil {
		t.Errorf("ownerReference %+v", or)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{`"podUID":"uid-1"`, `"droppedAttempts":2`, `"attempts":[{"attempt":1,`, `"filterPlugins":[`, `"filter":[{"node":"node-0000","passed":true}`,
		`"scores":[{"node":`, `"plugins":[{"plugin":"TaintToleration",`, `"nominatedNode":"node-0001"`, `"victims":["default/low"]`, `"pdbViolations":1`} {
		if !strings.Contains(string(b), field) {
			t.Errorf("the record's JSON lacks %s: %.400s", field, b)
		}
	}
	if strings.Contains(string(b), `"pod":`) {
		t.Errorf("an attempt repeats the pod: %.300s", b)
	}
}

// TestRecordOfCappedHistoryFitsEtcd: whatever the attempts, a capped
// record stays within what etcd takes in one request.
func TestRecordOfCappedHistoryFitsEtcd(t *testing.T) {
	for _, nodes := range []int{10, 420, 1000, 5000} {
		t.Run(fmt.Sprint(nodes, " nodes"), func(t *testing.T) {
			h := History{Pod: "default/p", UID: "u"}
			for i := range DefaultHistory {
				h.Attempts = append(h.Attempts, fullDecision(i+1, nodes))
			}
			n := recordBytes(t, Cap(h, 0))
			t.Logf("record of %d nodes: %d bytes", nodes, n)
			if n > MaxRecordBytes+1024 {
				t.Errorf("record of %d bytes, limit %d", n, MaxRecordBytes)
			}
		})
	}
}
