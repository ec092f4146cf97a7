package web

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/glassplane/glassplane/api/v1alpha1"
	"github.com/glassplane/glassplane/web/source"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/glassplane/glassplane/components"
)

// Message types on the websocket.
const (
	// MessageHello opens every stream with the revision and audit sequence
	// the live part starts after.
	MessageHello = "hello"
	// MessageWatch is a change to an object (any kind but core Events).
	MessageWatch = "watch"
	// MessageEvent is a core Event written by a component.
	MessageEvent = "event"
	// MessageAudit is an API request that passed through the pipeline.
	MessageAudit = "audit"
	// MessageEtcd is a change to an etcd key, for the key explorer.
	MessageEtcd = "etcd"
	// MessageResync tells the page that changes were lost (its revision is
	// too old, or it fell behind) and it must reload its data.
	MessageResync = "resync"
	// MessageBackground counts the background steps (audit and event
	// messages with a Background) left out of a frame for a page that
	// asked for them counted (without=background), with the newest audit
	// sequence number of the audit steps and the newest revision of the
	// storage ones (an audit step's revision is not where the page's
	// storage stream resumes).
	MessageBackground = "background"
)

// Message is one websocket message. Every message about an object carries its
// uid, kind, namespace, name, revision, the component that acted and a
// timestamp, so the browser can build each object's timeline.
type Message struct {
	Type string `json:"type"`
	// EventType is ADDED, MODIFIED or DELETED for watch messages, PUT or
	// DELETE for etcd messages, Normal or Warning for core Events.
	EventType string `json:"eventType,omitempty"`
	// Key is the etcd key written (watch, event, etcd, audit).
	Key string `json:"key,omitempty"`
	// Revision is the etcd revision of the change; ResourceVersion is the
	// same number as Kubernetes clients see it.
	Revision        int64  `json:"revision,omitempty"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// Seq is the audit sequence number (audit and hello messages).
	Seq int64 `json:"seq,omitempty"`
	// UID, Kind, Resource, Namespace and Name identify the object; for a
	// core Event, the object it is about (its involvedObject).
	UID         string `json:"uid,omitempty"`
	APIVersion  string `json:"apiVersion,omitempty"`
	Kind        string `json:"kind,omitempty"`
	Resource    string `json:"resource,omitempty"`
	Subresource string `json:"subresource,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Name        string `json:"name,omitempty"`
	// Href is the dashboard page of the object.
	Href string `json:"href,omitempty"`
	// Related is a core Event's related object (the pod that answered a
	// ServiceReached Event, say), when it has one.
	Related *RelatedRef `json:"related,omitempty"`
	// Component is who acted: the audit user, the Event's source, or the
	// last field manager of a changed object.
	Component string `json:"component,omitempty"`
	// Timestamp is RFC 3339 with milliseconds.
	Timestamp string `json:"timestamp,omitempty"`
	// Verb and Action describe a request ("create", "create pods/binding");
	// Action is the reason of a core Event.
	Verb    string       `json:"verb,omitempty"`
	Action  string       `json:"action,omitempty"`
	Message string       `json:"message,omitempty"`
	Code    int          `json:"code,omitempty"`
	Failed  bool         `json:"failed,omitempty"`
	Stages  []StageState `json:"stages,omitempty"`
	// Phase, NodeName and Ready (its Ready condition, empty when it has
	// none) summarise a pod; Ready a node. On a core Event, NodeName is
	// the host whose component reported it (source.host).
	Phase    string `json:"phase,omitempty"`
	NodeName string `json:"nodeName,omitempty"`
	Ready    string `json:"ready,omitempty"`
	// Claims are the PersistentVolumeClaims a pod mounts.
	Claims []string `json:"claims,omitempty"`
	// Created is true when an etcd put made the key exist.
	Created bool `json:"created,omitempty"`
	// Object is the object as stored (secrets masked), on watch messages.
	Object json.RawMessage `json:"object,omitempty"`
	// Reason says why a resync is needed.
	Reason string `json:"reason,omitempty"`
	// Request details an audit message's pipeline.
	Request *RequestInfo `json:"request,omitempty"`
	// Background names the kind of background step an audit or event
	// message is (lease, heartbeat, event-write, check: backgroundOf), empty
	// for a step of the story.
	Background string `json:"background,omitempty"`
	// Count is how many background steps a background message stands for.
	Count int `json:"count,omitempty"`

	// scope is who may read the message; it is not sent.
	scope readScope
}

// StageState is one pipeline stage of a request on the wire.
type StageState struct {
	Name  string `json:"name"`
	Label string `json:"label"`
	State string `json:"state"`
	// Detail says why the stage stopped the request ("not found").
	Detail string `json:"detail,omitempty"`
	// StartUs is when the request entered the stage, in microseconds after
	// it was received (the message's timestamp); absent when not known.
	StartUs *int64 `json:"startUs,omitempty"`
}

func stagesJSON(stages []components.Stage) []StageState {
	if len(stages) == 0 {
		return nil
	}
	out := make([]StageState, len(stages))
	for i, s := range stages {
		out[i] = StageState{Name: s.Name, Label: s.Label, State: s.State, Detail: s.Detail}
		if s.Timed {
			out[i].StartUs = new(s.Start.Microseconds())
		}
	}
	return out
}

// storageMessages turns one etcd change into its messages: always an etcd
// message, plus a watch message for an object or an event message for a new
// or updated core Event.
func storageMessages(ev source.Event, now time.Time) []Message {
	ts := timestamp(now)
	msgs := []Message{{
		Type: MessageEtcd, EventType: string(ev.Type), Key: ev.Key, Revision: ev.Revision,
		ResourceVersion: strconv.FormatInt(ev.Revision, 10), Created: ev.Created, Timestamp: ts,
		scope: readScope{kind: scopeEtcd},
	}}
	ref, ok := parseKey(ev.Key)
	if !ok {
		return msgs
	}
	if ref.StorageResource == "events" {
		// One decode gives the Event and its head.
		var e corev1.Event
		if err := decodeObject(ev.Value, &e); err == nil && e.Kind == "Event" {
			if e.Name != "" {
				ref.Name, ref.Namespace = e.Name, e.Namespace
			}
			msgs[0].Kind, msgs[0].Namespace, msgs[0].Name = e.Kind, ref.Namespace, ref.Name
			if ev.Type == source.EventDelete {
				return msgs
			}
			return append(msgs, eventMessage(&e, ev.Key, ev.Revision))
		}
	}
	// One decode reads the head and the few fields a summary shows. A field
	// of another shape than the summary's (a custom resource's spec that is
	// a string) is skipped and the rest still decoded; the value is valid
	// JSON unless the decoder found a syntax error.
	var sum objectSummary
	valid := true
	if err := decodeObject(ev.Value, &sum); err != nil {
		var typeErr *json.UnmarshalTypeError
		valid = errors.As(err, &typeErr)
	}
	meta := &sum.Metadata
	if meta.Name != "" {
		ref.Name, ref.Namespace = meta.Name, meta.Namespace
	}
	msgs[0].Kind, msgs[0].Namespace, msgs[0].Name = sum.Kind, ref.Namespace, ref.Name
	resource := apiResource(ref.StorageResource)
	w := Message{
		Type: MessageWatch, EventType: watchType(ev), Key: ev.Key, Revision: ev.Revision,
		ResourceVersion: strconv.FormatInt(ev.Revision, 10),
		UID:             string(meta.UID), APIVersion: sum.APIVersion, Kind: sum.Kind,
		Resource: resource, Namespace: ref.Namespace, Name: ref.Name,
		Href:      objectHref(hrefResource(ref.StorageResource), ref.Namespace, ref.Name),
		Component: lastManager(meta.ManagedFields), Timestamp: ts,
		scope: readScope{kind: scopeObject, group: groupOf(sum.APIVersion), resource: resource, namespace: ref.Namespace},
	}
	if valid {
		w.Object = json.RawMessage(ev.Value)
		if sum.Kind == "Secret" {
			w.Object = maskSecrets(ev.Value)
		}
	}
	switch sum.Kind {
	case "Pod":
		w.Phase, w.NodeName, w.Claims = summaryPhase(&sum), sum.Spec.NodeName, summaryClaims(&sum)
		if hasCondition(&sum, string(corev1.PodReady)) {
			w.Ready = summaryReady(&sum)
		}
	case "Node":
		w.Ready = summaryReady(&sum)
	}
	return append(msgs, w)
}

// decodeObject decodes a watched object's JSON into v in one pass, with
// go-json-experiment's decoder (the one encoding/json/v2 comes from), as
// leniently as encoding/json: names in any case, duplicate names, invalid
// UTF-8. encoding/json reads the value twice, once to check it and once to
// decode it, and that was most of the dashboard's JSON work per change. On
// any error v is decoded again with encoding/json, whose error and whose
// handling of a field of another shape (decoding the rest) the callers
// keep.
func decodeObject[T any](data []byte, v *T) error {
	if jsonv2.Unmarshal(data, v, lenientJSON) == nil {
		return nil
	}
	var zero T
	*v = zero
	return json.Unmarshal(data, v)
}

var lenientJSON = jsonv2.JoinOptions(jsonv2.MatchCaseInsensitiveNames(true), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))

// objectSummary is an object's head and the fields of its spec and status
// the dashboard's summaries show: a pod's node and phase, a node's Ready
// condition.
type objectSummary struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        summaryMeta `json:"metadata"`
	Spec            struct {
		NodeName string          `json:"nodeName"`
		Volumes  []summaryVolume `json:"volumes"`
	} `json:"spec"`
	Status struct {
		Phase      string `json:"phase"`
		Conditions []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
		} `json:"conditions"`
	} `json:"status"`
}

// summaryMeta is the part of an object's metadata a summary reads: of the
// managed fields, only who wrote when (decoding each entry's field set
// would cost more than the rest of the object).
type summaryMeta struct {
	Name              string       `json:"name"`
	Namespace         string       `json:"namespace"`
	UID               types.UID    `json:"uid"`
	DeletionTimestamp *metav1.Time `json:"deletionTimestamp"`
	ManagedFields     []managedBy  `json:"managedFields"`
}

// managedBy is who wrote a managed fields entry, and when.
type managedBy struct {
	Manager string       `json:"manager"`
	Time    *metav1.Time `json:"time"`
}

// summaryPhase is a pod's phase as the dashboard shows it: Terminating
// once it is being deleted, Pending when no phase is set yet.
func summaryPhase(s *objectSummary) string {
	if s.Metadata.DeletionTimestamp != nil {
		return "Terminating"
	}
	if s.Status.Phase == "" {
		return string(corev1.PodPending)
	}
	return s.Status.Phase
}

// summaryReady is the status of a node's or pod's Ready condition (Unknown
// when it has none), from its summary.
func summaryReady(s *objectSummary) string {
	for _, c := range s.Status.Conditions {
		if c.Type == string(corev1.NodeReady) {
			return c.Status
		}
	}
	return string(corev1.ConditionUnknown)
}

// hasCondition tells whether the summary's status has a condition of type t.
func hasCondition(s *objectSummary, t string) bool {
	for _, c := range s.Status.Conditions {
		if c.Type == t {
			return true
		}
	}
	return false
}

func watchType(ev source.Event) string {
	switch {
	case ev.Type == source.EventDelete:
		return "DELETED"
	case ev.Created:
		return "ADDED"
	}
	return "MODIFIED"
}

// eventMessage describes a core Event by the object it is about.
func eventMessage(e *corev1.Event, key string, rev int64) Message {
	io := e.InvolvedObject
	resource := resourceOfKind(io.Kind)
	m := Message{
		Type: MessageEvent, EventType: e.Type, Key: key, Revision: rev,
		ResourceVersion: strconv.FormatInt(rev, 10),
		UID:             string(io.UID), APIVersion: io.APIVersion, Kind: io.Kind, Resource: resource,
		Namespace: io.Namespace, Name: io.Name,
		Component: eventComponent(e), Timestamp: timestamp(eventTime(e)),
		Action: e.Reason, Message: e.Message, Background: eventBackground(e),
		NodeName: e.Source.Host,
		scope:    readScope{kind: scopeObject, resource: "events", namespace: e.Namespace},
	}
	if resource != "" {
		m.Href = objectHref(resource, io.Namespace, io.Name)
	}
	if r := e.Related; r != nil && r.Name != "" {
		m.Related = &RelatedRef{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, UID: string(r.UID)}
	}
	return m
}

// RelatedRef names a core Event's related object on the wire.
type RelatedRef struct {
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	UID       string `json:"uid,omitempty"`
}

// auditRecordMessage describes one API request.
// actorOf is who a request acted as: the impersonated user when there is
// one (the dashboard's writes for a logged-in user are that user's), else
// the authenticated user.
func actorOf(ev *auditv1.Event) string {
	if ev.ImpersonatedUser != nil && ev.ImpersonatedUser.Username != "" {
		return ev.ImpersonatedUser.Username
	}
	return ev.User.Username
}

func auditRecordMessage(rec source.AuditRecord) Message {
	ev := rec.Event
	resource, sub, ns, name := auditRef(ev)
	m := Message{
		Type: MessageAudit, Seq: rec.Seq, Verb: ev.Verb, Action: auditAction(ev),
		Resource: resource, Subresource: sub, Namespace: ns, Name: name,
		Component: actorOf(ev), Timestamp: timestamp(ev.RequestReceivedTimestamp.Time),
		Message: auditMessage(ev), Code: auditCode(ev), Failed: auditFailed(ev),
		Stages:     stagesJSON(stagesOf(ev)),
		Key:        ev.Annotations[v1alpha1.AnnotationEtcdKey],
		Request:    requestInfo(ev),
		Background: backgroundOf(ev),
		scope:      readScope{kind: scopeAudit, user: actorOf(ev)},
	}
	if ev.ObjectRef != nil {
		m.UID, m.APIVersion = string(ev.ObjectRef.UID), ev.ObjectRef.APIVersion
	}
	if r, err := strconv.ParseInt(ev.Annotations[v1alpha1.AnnotationEtcdRevision], 10, 64); err == nil {
		m.Revision, m.ResourceVersion = r, strconv.FormatInt(r, 10)
	}
	if resource != "" && name != "" {
		m.Href = objectHref(resource, ns, name)
	}
	return m
}

// kindResources maps the kinds the dashboard links to their API resources.
var kindResources = map[string]string{
	"Pod": "pods", "Node": "nodes", "Namespace": "namespaces", "Service": "services",
	"Endpoints": "endpoints", "Deployment": "deployments", "ReplicaSet": "replicasets",
	"ServiceAccount": "serviceaccounts", "ConfigMap": "configmaps", "Secret": "secrets",
	"Lease": "leases", "DaemonSet": "daemonsets", "StatefulSet": "statefulsets", "Job": "jobs",
}

// resourceOfKind returns the API resource of a kind, lower-case plural for
// kinds it does not know.
func resourceOfKind(kind string) string {
	if kind == "" {
		return ""
	}
	if k, ok := kinds.byKind(kind); ok {
		return k.Resource
	}
	if r, ok := kindResources[kind]; ok {
		return r
	}
	return strings.ToLower(kind) + "s"
}

// kindOfResource is the inverse of resourceOfKind for known kinds.
func kindOfResource(resource string) string {
	if k, ok := kinds.byResource(resource); ok {
		return k.Kind
	}
	for k, r := range kindResources {
		if r == resource {
			return k
		}
	}
	return ""
}

// nodeReady is the status of the node's Ready condition.
func nodeReady(n *corev1.Node) string {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return string(c.Status)
		}
	}
	return string(corev1.ConditionUnknown)
}
