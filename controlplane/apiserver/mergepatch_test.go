package apiserver

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
)

var mergePatchCases = []struct{ doc, patch string }{
	{`{"a":1,"b":{"c":2,"d":[1,2]}}`, `{"b":{"c":null,"d":[3],"e":{"f":null,"g":1}}}`},
	{`{"metadata":{"uid":"u","labels":{"x":"1"}},"status":{"phase":"Pending","conditions":[{"type":"A"}]}}`, `{"metadata":{"uid":"u"},"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True","reason":null}],"podIP":"10.0.0.1"}}`},
	{`{"a":{"b":1}}`, `{"a":[{"x":null},null]}`},
	{`{"a":"s"}`, `{"a":{"b":null,"c":[{"d":null}]}}`},
	{`{"a":null}`, `{"a":{"b":null,"c":1}}`},
	{`{"n":1}`, `{"n":12345678901234567890123,"m":1.5e300}`},
	{`{"a":1}`, `[1,2]`},
	{`{"a":1}`, `"x"`},
	{`{"a":1}`, `null`},
	{`{"a":1}`, `{}`},
	{`[1]`, `{"a":1}`},
	{`{"a":1,"a":2}`, `{"a":{"b":1},"a":null}`},
}

// sameJSON reports whether a and b hold the same JSON value.
func sameJSON(a, b []byte) bool {
	decode := func(b []byte) (any, error) {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var v any
		err := d.Decode(&v)
		return v, err
	}
	va, errA := decode(a)
	vb, errB := decode(b)
	return errA == nil && errB == nil && reflect.DeepEqual(va, vb)
}

func checkMergePatch(t *testing.T, doc, patch []byte) {
	t.Helper()
	want, wantErr := jsonpatch.MergePatch(doc, patch)
	got, err := mergePatch(doc, patch)
	switch {
	case (err != nil) != (wantErr != nil):
		t.Fatalf("MergePatch(%s, %s): error %v, jsonpatch's %v", doc, patch, err, wantErr)
	case err != nil:
		if err.Error() != wantErr.Error() {
			t.Fatalf("MergePatch(%s, %s): error %q, jsonpatch's %q", doc, patch, err, wantErr)
		}
	case !sameJSON(got, want):
		t.Fatalf("MergePatch(%s, %s) = %s, jsonpatch gives %s", doc, patch, got, want)
	}
}

func TestMergePatchMatchesJSONPatch(t *testing.T) {
	for _, c := range mergePatchCases {
		checkMergePatch(t, []byte(c.doc), []byte(c.patch))
	}
}

// FuzzMergePatch checks mergePatch against jsonpatch.MergePatch on any
// valid JSON document and patch.
func FuzzMergePatch(f *testing.F) {
	for _, c := range mergePatchCases {
		f.Add([]byte(c.doc), []byte(c.patch))
	}
	f.Fuzz(func(t *testing.T, doc, patch []byte) {
		if !json.Valid(doc) || !json.Valid(patch) {
			return
		}
		checkMergePatch(t, doc, patch)
	})
}

// BenchmarkMergePatchPodStatus compares mergePatch with jsonpatch.MergePatch
// on what the node agent sends: a pod's whole status.
func BenchmarkMergePatchPodStatus(b *testing.B) {
	pod := []byte(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p-0001","namespace":"bench","uid":"1234","resourceVersion":"42","creationTimestamp":"2026-12-01T20:00:00Z","labels":{"app":"bench"}},"spec":{"volumes":[{"name":"kube-api-access-abcde","projected":{"sources":[{"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}},{"configMap":{"name":"kube-root-ca.crt","items":[{"key":"ca.crt","path":"ca.crt"}]}}],"defaultMode":420}}],"containers":[{"name":"c","image":"busybox","resources":{"requests":{"cpu":"10m"}},"volumeMounts":[{"name":"kube-api-access-abcde","readOnly":true,"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}],"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"default","serviceAccount":"default","nodeName":"sim-1","securityContext":{},"schedulerName":"default-scheduler","tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300},{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}],"priority":0,"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority"},"status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-12-01T20:00:00Z"}],"qosClass":"Burstable"}}`)
	patch := []byte(`{"metadata":{"uid":"1234"},"status":{"phase":"Running","conditions":[{"type":"PodReadyToStartContainers","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-12-01T20:00:01Z"},{"type":"Initialized","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-12-01T20:00:01Z"},{"type":"Ready","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-12-01T20:00:01Z"},{"type":"ContainersReady","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-12-01T20:00:01Z"},{"type":"PodScheduled","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-12-01T20:00:00Z"}],"hostIP":"10.0.0.1","hostIPs":[{"ip":"10.0.0.1"}],"podIP":"10.1.0.5","podIPs":[{"ip":"10.1.0.5"}],"startTime":"2026-12-01T20:00:01Z","containerStatuses":[{"name":"c","state":{"running":{"startedAt":"2026-12-01T20:00:01Z"}},"lastState":{},"ready":true,"restartCount":0,"image":"busybox","imageID":"sim://busybox","containerID":"sim://abc","started":true}],"qosClass":"Burstable"}}`)
	b.Run("mergePatch", func(b *testing.B) {
		for b.Loop() {
			if _, err := mergePatch(pod, patch); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jsonpatch", func(b *testing.B) {
		for b.Loop() {
			if _, err := jsonpatch.MergePatch(pod, patch); err != nil {
				b.Fatal(err)
			}
		}
	})
}
