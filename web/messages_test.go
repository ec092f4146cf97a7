package web

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/glassplane/glassplane/web/source"
)

func TestStorageMessages(t *testing.T) {
	now := time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)
	put := func(key, value string) source.Event {
		return source.Event{Type: source.EventPut, Key: key, Value: []byte(value), Revision: 7}
	}
	tests := []struct {
		name string
		ev   source.Event
		// want is the second message's fields; wantType "" means the change
		// yields only its etcd message.
		wantType, kind, phase, node, ready, component string
		// object is a substring the message's object must hold; "-" means
		// the message carries no object.
		object string
	}{{
		name: "pod on a node",
		ev: put("/registry/pods/default/web", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"default","uid":"u1",
			"managedFields":[{"manager":"kubectl","time":"2026-12-02T06:00:00Z"},{"manager":"kubelet","time":"2026-12-02T06:00:01Z"}]},
			"spec":{"nodeName":"vm","containers":[{"name":"c","image":"busybox"}]},"status":{"phase":"Running"}}`),
		wantType: MessageWatch, kind: "Pod", phase: "Running", node: "vm", component: "kubelet", object: `"nodeName":"vm"`,
	}, {
		name:     "new pod has no phase yet",
		ev:       put("/registry/pods/default/new", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"new","namespace":"default"},"spec":{}}`),
		wantType: MessageWatch, kind: "Pod", phase: "Pending", object: `"name":"new"`,
	}, {
		name:     "pod being deleted",
		ev:       put("/registry/pods/default/old", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"old","namespace":"default","deletionTimestamp":"2026-12-02T06:00:00Z"},"spec":{"nodeName":"vm"},"status":{"phase":"Running"}}`),
		wantType: MessageWatch, kind: "Pod", phase: "Terminating", node: "vm", object: `"old"`,
	}, {
		name: "ready pod",
		ev: put("/registry/pods/default/web", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"default"},
			"spec":{"nodeName":"vm"},"status":{"phase":"Running","conditions":[{"type":"ContainersReady","status":"False"},{"type":"Ready","status":"True"}]}}`),
		wantType: MessageWatch, kind: "Pod", phase: "Running", node: "vm", ready: "True", object: `"Ready"`,
	}, {
		name:     "node ready",
		ev:       put("/registry/minions/vm", `{"apiVersion":"v1","kind":"Node","metadata":{"name":"vm"},"status":{"conditions":[{"type":"MemoryPressure","status":"False"},{"type":"Ready","status":"True"}]}}`),
		wantType: MessageWatch, kind: "Node", ready: "True", object: `"Ready"`,
	}, {
		name:     "node without conditions",
		ev:       put("/registry/minions/new", `{"apiVersion":"v1","kind":"Node","metadata":{"name":"new"}}`),
		wantType: MessageWatch, kind: "Node", ready: "Unknown", object: `"new"`,
	}, {
		name:     "secret data masked",
		ev:       put("/registry/secrets/default/s", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"default"},"data":{"password":"aHVudGVyMg=="}}`),
		wantType: MessageWatch, kind: "Secret", object: maskedSecret,
	}, {
		name: "fields of another shape keep the head and the object",
		ev: put("/registry/example.com/widgets/default/w", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"default"},
			"spec":"compact","status":{"conditions":"none"}}`),
		wantType: MessageWatch, kind: "Widget", object: `"compact"`,
	}, {
		name:     "not JSON",
		ev:       put("/registry/configmaps/default/broken", `{"apiVersion":`),
		wantType: MessageWatch, object: "-",
	}, {
		name:     "core event",
		ev:       put("/registry/events/default/web.1", `{"apiVersion":"v1","kind":"Event","metadata":{"name":"web.1","namespace":"default"},"involvedObject":{"kind":"Pod","namespace":"default","name":"web"},"reason":"Started","message":"Started container c","source":{"component":"kubelet"},"type":"Normal"}`),
		wantType: MessageEvent, kind: "Pod", component: "kubelet", object: "-",
	}, {
		name: "deleted core event",
		ev:   source.Event{Type: source.EventDelete, Key: "/registry/events/default/web.1", Value: []byte(`{"apiVersion":"v1","kind":"Event","metadata":{"name":"web.1","namespace":"default"}}`), Revision: 7},
	}, {
		name: "outside the registry",
		ev:   put("/other/key", `{}`),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs := storageMessages(tt.ev, now)
			if len(msgs) == 0 || msgs[0].Type != MessageEtcd || msgs[0].Key != tt.ev.Key || msgs[0].Revision != 7 {
				t.Fatalf("the first message is not the etcd change: %+v", msgs)
			}
			if tt.wantType == "" {
				if len(msgs) != 1 {
					t.Fatalf("got %d messages, want only the etcd one: %+v", len(msgs), msgs)
				}
				return
			}
			if len(msgs) != 2 {
				t.Fatalf("got %d messages, want 2: %+v", len(msgs), msgs)
			}
			m := msgs[1]
			if m.Type != tt.wantType || m.Kind != tt.kind || m.Phase != tt.phase || m.NodeName != tt.node || m.Ready != tt.ready || m.Component != tt.component {
				t.Errorf("got type %q kind %q phase %q node %q ready %q component %q, want %q %q %q %q %q %q",
					m.Type, m.Kind, m.Phase, m.NodeName, m.Ready, m.Component, tt.wantType, tt.kind, tt.phase, tt.node, tt.ready, tt.component)
			}
			switch {
			case tt.object == "-" && m.Object != nil:
				t.Errorf("the message carries an object: %s", m.Object)
			case tt.object != "-" && !strings.Contains(string(m.Object), tt.object):
				t.Errorf("the object %s does not hold %q", m.Object, tt.object)
			}
			if strings.Contains(string(m.Object), "aHVudGVyMg==") {
				t.Errorf("the secret's data reached the message: %s", m.Object)
			}
		})
	}
}

// BenchmarkStorageMessages turns a running pod's change, as a node agent
// writes it, into its messages: what the dashboard's hub does for every
// storage change while a page watches.
func BenchmarkStorageMessages(b *testing.B) {
	ev := source.Event{Type: source.EventPut, Key: "/registry/pods/default/web-7d4b9c8f5-x2k8q", Revision: 7, Value: []byte(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web-7d4b9c8f5-x2k8q","generateName":"web-7d4b9c8f5-","namespace":"default","uid":"0b1c6a2e-5d7f-4c1e-9a51-6f0e2d3c4b5a","resourceVersion":"1234","creationTimestamp":"2026-12-02T06:00:00Z","labels":{"app":"web","pod-template-hash":"7d4b9c8f5"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-7d4b9c8f5","uid":"a1b2c3d4-e5f6-4a5b-8c9d-0e1f2a3b4c5d","controller":true,"blockOwnerDeletion":true}],"managedFields":[{"manager":"kube-controller-manager","operation":"Update","apiVersion":"v1","time":"2026-12-02T06:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{},"f:name":{}}}}}},{"manager":"kubelet","operation":"Update","apiVersion":"v1","time":"2026-12-02T06:00:02Z","fieldsType":"FieldsV1","fieldsV1":{"f:status":{"f:conditions":{},"f:containerStatuses":{},"f:phase":{},"f:podIP":{}}},"subresource":"status"}]},"spec":{"volumes":[{"name":"kube-api-access-abcde","projected":{"sources":[{"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}}],"defaultMode":420}}],"containers":[{"name":"web","image":"glassplane.local/hello:latest","resources":{"requests":{"cpu":"10m","memory":"16Mi"}},"volumeMounts":[{"name":"kube-api-access-abcde","readOnly":true,"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}],"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"default","nodeName":"sim-1","securityContext":{},"schedulerName":"default-scheduler","tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}],"priority":0,"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority"},"status":{"phase":"Running","conditions":[{"type":"PodReadyToStartContainers","status":"True","lastTransitionTime":"2026-12-02T06:00:01Z"},{"type":"Initialized","status":"True","lastTransitionTime":"2026-12-02T06:00:00Z"},{"type":"Ready","status":"True","lastTransitionTime":"2026-12-02T06:00:02Z"},{"type":"ContainersReady","status":"True","lastTransitionTime":"2026-12-02T06:00:02Z"},{"type":"PodScheduled","status":"True","lastTransitionTime":"2026-12-02T06:00:00Z"}],"hostIP":"10.0.0.1","podIP":"10.88.0.5","podIPs":[{"ip":"10.88.0.5"}],"startTime":"2026-12-02T06:00:00Z","containerStatuses":[{"name":"web","state":{"running":{"startedAt":"2026-12-02T06:00:02Z"}},"lastState":{},"ready":true,"restartCount":0,"image":"glassplane.local/hello:latest","imageID":"sha256:0123","containerID":"containerd://abc","started":true}],"qosClass":"Burstable"}}`)}
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		if msgs := storageMessages(ev, now); len(msgs) != 2 || msgs[1].Phase != "Running" {
			b.Fatalf("unexpected messages: %+v", msgs)
		}
	}
}

// TestEventMessageRelated: a core Event's related object reaches the
// browser (the map draws a ServiceReached connection to it); an Event
// without one sends none.
func TestEventMessageRelated(t *testing.T) {
	now := time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)
	ev := source.Event{Type: source.EventPut, Key: "/registry/events/default/client.probe-1", Revision: 9, Value: []byte(`{"apiVersion":"v1","kind":"Event",
		"metadata":{"name":"client.probe-1","namespace":"default"},"involvedObject":{"kind":"Pod","namespace":"default","name":"client"},
		"related":{"kind":"Pod","apiVersion":"v1","namespace":"default","name":"hello-2","uid":"u2"},
		"reason":"ServiceReached","message":"m","source":{"component":"glassplane-demo"},"type":"Normal"}`)}
	msgs := storageMessages(ev, now)
	if len(msgs) != 2 || msgs[1].Related == nil || *msgs[1].Related != (RelatedRef{Kind: "Pod", Namespace: "default", Name: "hello-2", UID: "u2"}) {
		t.Fatalf("the Event's message does not carry its related pod: %+v", msgs)
	}
	ev.Value = []byte(`{"apiVersion":"v1","kind":"Event","metadata":{"name":"web.1","namespace":"default"},"involvedObject":{"kind":"Pod","namespace":"default","name":"web"},"reason":"Started","type":"Normal"}`)
	if msgs := storageMessages(ev, now); len(msgs) != 2 || msgs[1].Related != nil {
		t.Fatalf("an Event without a related object sent one: %+v", msgs)
	}
}

// TestDecodeObjectAsEncodingJSON: the one-pass decoder gives what
// encoding/json gives, for the dashboard's summaries and core Events,
// including names in another case, duplicate names, invalid UTF-8 and
// fields of another shape (which fall back to encoding/json).
func TestDecodeObjectAsEncodingJSON(t *testing.T) {
	event := `{"kind":"Event","apiVersion":"v1","metadata":{"name":"web.1","namespace":"default","uid":"u","resourceVersion":"9","creationTimestamp":"2026-12-02T06:00:00Z",
		"managedFields":[{"manager":"kubelet","operation":"Update","apiVersion":"v1","time":"2026-12-02T06:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:count":{}}}]},
		"involvedObject":{"kind":"Pod","namespace":"default","name":"web","uid":"p","apiVersion":"v1","resourceVersion":"8","fieldPath":"spec.containers{c}"},
		"reason":"Started","message":"Started container c","source":{"component":"kubelet","host":"sim-1"},
		"firstTimestamp":"2026-12-02T06:00:00Z","lastTimestamp":"2026-12-02T06:00:05Z","count":3,"type":"Normal",
		"eventTime":"2026-12-02T06:00:00.123456Z","series":{"count":2,"lastObservedTime":"2026-12-02T06:00:05.000001Z"},
		"related":{"kind":"Node","name":"sim-1"},"reportingComponent":"kubelet","reportingInstance":"sim-1"}`
	pod := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"default","uid":"u1","deletionTimestamp":"2026-12-02T06:00:00Z",
		"managedFields":[{"manager":"kubectl","time":"2026-12-02T06:00:00Z"},{"manager":"kubelet"}]},
		"spec":{"nodeName":"vm","volumes":[{"name":"v","persistentVolumeClaim":{"claimName":"data"}}]},
		"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}`
	for _, tc := range []struct{ name, value string }{
		{"event", event},
		{"pod", pod},
		{"names in another case", strings.NewReplacer(`"nodeName"`, `"NodeName"`, `"phase"`, `"Phase"`).Replace(pod)},
		{"duplicate names", strings.Replace(pod, `"phase":"Running"`, `"phase":"Pending","phase":"Running"`, 1)},
		{"invalid UTF-8", strings.Replace(pod, `"vm"`, "\"v\xffm\"", 1)},
		{"fields of another shape", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":"compact","status":{"conditions":"none","phase":"Up"}}`},
		{"null fields", `{"apiVersion":"v1","kind":"Pod","metadata":null,"spec":{"nodeName":null,"volumes":null},"status":null}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var gotSum, wantSum objectSummary
			gotErr, wantErr := decodeObject([]byte(tc.value), &gotSum), json.Unmarshal([]byte(tc.value), &wantSum)
			if (gotErr == nil) != (wantErr == nil) {
				t.Fatalf("summary: error %v, encoding/json's %v", gotErr, wantErr)
			}
			if diff := cmp.Diff(wantSum, gotSum); diff != "" {
				t.Errorf("summary (-encoding/json +decodeObject):\n%s", diff)
			}
			var gotEvent, wantEvent corev1.Event
			gotErr, wantErr = decodeObject([]byte(tc.value), &gotEvent), json.Unmarshal([]byte(tc.value), &wantEvent)
			if (gotErr == nil) != (wantErr == nil) {
				t.Fatalf("event: error %v, encoding/json's %v", gotErr, wantErr)
			}
			if diff := cmp.Diff(wantEvent, gotEvent); diff != "" {
				t.Errorf("event (-encoding/json +decodeObject):\n%s", diff)
			}
		})
	}
}
