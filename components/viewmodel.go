package components

import "time"

// Page names the page a layout wraps; the browser script picks its behaviour
// from it.
type Page string

// Pages of the dashboard.
const (
	PageOverview Page = "overview"
	PageApply    Page = "apply"
	PageObject   Page = "object"
	PageEtcd     Page = "etcd"
	PageDemos    Page = "demos"
)

// Layout is what every page shares: the header and the stream position the
// page was rendered at, so its websocket resumes without a gap.
type Layout struct {
	Title string
	Page  Page
	// Mode is the node runtime: "containerd" or "simulated".
	Mode string
	// Revision is the etcd revision the page's data was read at.
	Revision int64
	// AuditSeq is the newest audit sequence number the page includes.
	AuditSeq int64
}

// Stage is one step of an API request's pipeline.
type Stage struct {
	// Name is authentication, authorization, admission or etcd.
	Name string
	// Label is the short chip text (authn, authz, admission, etcd).
	Label string
	// State is "ok", "failed" or "skipped".
	State string
	// Detail says, for the stage that stopped the request, why in a few
	// words ("not found", "already exists").
	Detail string
	// Start is when the request entered the stage, after it was received;
	// Timed is false when that is not known (a skipped stage).
	Start time.Duration
	Timed bool
	// Calls are the admission stage's webhook calls and policy
	// evaluations, in order; CallsNote says why they could not be read.
	Calls     []AdmissionCall
	CallsNote string
}

// Overview is the cluster at a glance.
type Overview struct {
	Nodes []NodeBox
	// Unscheduled holds pods with no node yet.
	Unscheduled []PodChip
	// Feed holds recent steps, newest first: by default only what people
	// and controllers do to objects.
	Feed []FeedItem
	// Background counts the recent background steps (leases, node
	// heartbeats, Event writes, permission checks) left out of the feed;
	// ShowBackground lists them in it instead.
	Background     int
	ShowBackground bool
	// Tempo is the classroom tempo control.
	Tempo Tempo
}

// Tempo is the classroom tempo (the ConfigMap kube-system/glassplane-tempo)
// and what the viewer may do with it.
type Tempo struct {
	// Mode is realtime, slow or step; Modes lists them all.
	Mode  string   `json:"mode"`
	Modes []string `json:"-"`
	// Delay is slow mode's wait before each action ("2s").
	Delay string `json:"delay"`
	// Released and Taken count the steps released and claimed.
	Released int64 `json:"released"`
	Taken    int64 `json:"taken"`
	// LastStep is the action that took the last step.
	LastStep string `json:"lastStep,omitempty"`
	// Waiting lists "component: action" for every action waiting for a step.
	Waiting []string `json:"waiting"`
	// CanChange is whether the viewer may update the tempo object.
	CanChange bool   `json:"-"`
	ActingAs  string `json:"-"`
	CSRFToken string `json:"-"`
}

// NodeBox is one node and the pods bound to it.
type NodeBox struct {
	Name string
	// Ready is the Ready condition's status: True, False or Unknown.
	Ready string
	Href  string
	Pods  []PodChip
}

// PodChip is one pod.
type PodChip struct {
	Namespace string
	Name      string
	Phase     string
	NodeName  string
	Href      string
	// Claims are the PersistentVolumeClaims the pod mounts.
	Claims []string
}

// FeedItem is one step in the overview's feed: an API request or a core Event.
type FeedItem struct {
	// Source is "audit" or "event".
	Source string
	// Time is RFC 3339 with milliseconds.
	Time      string
	Component string
	// Action is the verb of a request or the reason of an Event.
	Action string
	// Target is what it acted on ("pods/default/mypod").
	Target  string
	Href    string
	Message string
	Stages  []Stage
	Failed  bool
	// Background names the kind of background step this is, if it is one
	// (lease, heartbeat, event-write, check).
	Background string
}

// Apply is the paste-YAML form and the outcome of the last submission.
type Apply struct {
	CSRFToken string
	Manifest  string
	Examples  []Example
	Results   []ApplyResult
	// Error is a problem with the submission as a whole (unparsable YAML,
	// no API connection).
	Error string
	// Submitted is true after a POST.
	Submitted bool
	// DryRun is true when Results come from a server-side dry run; the
	// page then offers to apply for real.
	DryRun bool
	// Lines is the submitted manifest line by line, with the lines errors
	// point at marked; empty without field errors.
	Lines []ManifestLine
	// ActingAs names whom the API sees applying.
	ActingAs string
	// ServerSide is true when the manifest was sent as a server-side
	// apply patch, by FieldManager, with Force taking conflicting fields
	// from their managers.
	ServerSide   bool
	FieldManager string
	Force        bool
}

// Example is a manifest the form can be filled with.
type Example struct {
	Name  string
	Label string
	YAML  string
}

// ApplyResult is the outcome for one document.
type ApplyResult struct {
	// Ref reads like kubectl's: "pod/mypod".
	Ref string
	// Action is created, configured or unchanged; empty on error. After a
	// dry run it ends in " (server dry run)".
	Action string
	Error  string
	Href   string
	// Fields are the error's causes that name a field, with their lines.
	Fields []FieldError
	// Added is, after a dry run, what the API server would store that the
	// document did not say: defaults and admission's changes.
	Added []FieldChange
}

// FieldError is an API error about one field of a document.
type FieldError struct {
	// Path is the field path ("spec.containers[0].image").
	Path    string
	Message string
	// Line is the manifest line of the field (from 1), 0 if not found.
	Line int
}

// FieldChange is one field the API server set: Added (absent from the
// submitted document) or changed from Was.
type FieldChange struct {
	Path  string
	Value string
	Was   string
	Added bool
}

// ManifestLine is one line of the submitted manifest, marked when an error
// points at it.
type ManifestLine struct {
	N     int
	Text  string
	Error bool
}

// Object is one object with its timeline.
type Object struct {
	// CSRFToken signs the delete form; empty hides it (no API connection).
	CSRFToken string
	// DeleteError is the API's answer to a refused delete.
	DeleteError string
	Resource    string
	Namespace   string
	Name        string
	Kind        string
	UID         string
	Key         string
	Found       bool
	// ResourceVersion is the etcd ModRevision of the stored object.
	ResourceVersion int64
	// YAML is the object as stored, secrets masked.
	YAML     string
	Timeline []TimelineRow
	Decision *Decision
	// DecisionError says why a decision annotation could not be read.
	DecisionError string
	// Owners are the object's ownerReferences; Dependents the objects it
	// owns (and theirs), each with its own timeline.
	Owners     []ObjectLink
	Dependents []TimelineGroup
	// Past is set when the page shows an earlier object of the name (by
	// ?uid=), no longer stored; StoredUID is then the uid of the one
	// stored now, if any.
	Past      bool
	StoredUID string
	// Incarnations are the other objects of the same name the timeline
	// knows of (deleted and created again), oldest first.
	Incarnations []Incarnation
	// Service is what a Service's page shows beside the stored object,
	// read through the API as the page's user; nil for other kinds.
	Service *Service
	// PVC, CronJob and HPA are what the page of a PersistentVolumeClaim,
	// a CronJob or a HorizontalPodAutoscaler shows beside the stored
	// object, read through the API as the page's user; nil for other kinds.
	PVC     *PVC
	CronJob *CronJob
	HPA     *HPA
	// DataPathNote, when set, says that the cluster stores and serves
	// objects of this kind but nothing acts on them (Ingress,
	// NetworkPolicy); DataPathNoteKey is its i18n key.
	DataPathNote, DataPathNoteKey string
	// Claims link the PersistentVolumeClaims a pod mounts, or the one a
	// PersistentVolume is bound to; ClaimsError says why they could not
	// be read.
	Claims      []ObjectLink
	ClaimsError string
	// FieldOwners is the object's managedFields: who owns which field.
	FieldOwners []FieldOwner
}

// FieldOwner is one managedFields entry: a manager, how it wrote (Apply or
// Update, through a subresource or not), when, and the fields it owns.
type FieldOwner struct {
	Manager     string
	Operation   string
	Subresource string
	APIVersion  string
	Time        string
	Fields      []string
}

// Incarnation is another object of the same name, before or after the one
// a page shows.
type Incarnation struct {
	UID string
	// Created is when it was first seen (RFC 3339 with milliseconds).
	Created string
	Href    string
	// Earlier is set for one created before the one shown; Current for
	// the one stored now.
	Earlier bool
	Current bool
}

// ObjectLink names another object and its page.
type ObjectLink struct {
	Kind string
	Name string
	Href string
	// Controller marks the owner reference that controls the object.
	Controller bool
}

// TimelineGroup is one dependent's timeline.
type TimelineGroup struct {
	Object ObjectLink
	Rows   []TimelineRow
}

// TimelineRow is one step in an object's life: an audit event or a core Event.
type TimelineRow struct {
	// Source is "audit" or "event".
	Source string
	// Time is RFC 3339 with milliseconds; Relative is the offset from the
	// first row ("+12 ms").
	Time     string
	Relative string
	Actor    string
	// Action is the verb (with subresource) of a request, or an Event's reason.
	Action  string
	Message string
	Stages  []Stage
	// Code is the HTTP status of a request.
	Code   int
	Failed bool
	// Type is an Event's type (Normal, Warning).
	Type string
	// AuditHref links a request to the pipeline page; Revision and
	// RevisionHref to the etcd revision it wrote (with its diff).
	AuditHref    string
	Revision     string
	RevisionHref string
	// UID is the uid of the object the row names, "" when it names none.
	UID string
	// FoldKey groups repeated reads (user, verb, answer); Count is how
	// many the row stands for and LastTime when the last came.
	FoldKey  string
	Count    int
	LastTime string
}

// Decision is the scheduler's explanation of where a pod went.
type Decision struct {
	Attempt int64
	Time    string
	Node    string
	Message string
	Filter  []FilterRow
	// Plugins names the score columns, in order.
	Plugins []string
	Scores  []ScoreRow
}

// FilterRow is one node's filter outcome.
type FilterRow struct {
	Node   string
	Passed bool
	Plugin string
	Reason string
}

// ScoreRow is one node's scores, one cell per Decision.Plugins entry.
type ScoreRow struct {
	Node   string
	Cells  []ScoreCell
	Total  int64
	Chosen bool
}

// ScoreCell is one plugin's score for one node; Present is false when the
// plugin did not score this node.
type ScoreCell struct {
	Present    bool
	Raw        int64
	Normalized int64
	Weight     int64
	Weighted   int64
}

// Etcd is the key explorer.
type Etcd struct {
	// Unavailable, when set, says why the cluster's etcd cannot be shown
	// (and nothing else is).
	Unavailable string
	Total       int
	Groups      []KeyGroup
	// Focus is the namespace the tree opens on: that of the newest write
	// to a namespaced key outside the system's namespaces ("" for none).
	Focus    string
	Selected *EtcdValue
	// Missing is the key asked for when it does not exist.
	Missing string
	// Revision is etcd's newest revision; At the past revision shown (0:
	// now); AtError why the asked revision cannot be shown.
	Revision int64
	At       int64
	AtError  string
	// History lists the selected key's values, newest first; HistoryNote
	// says where the walk back ended (creation, compaction), HistoryNoteKey
	// is its i18n key and HistoryNoteRevision the revision it names.
	History             []EtcdVersion
	HistoryNote         string
	HistoryNoteKey      string
	HistoryNoteRevision int64
	Diff                *EtcdDiff
}

// EtcdVersion is one revision of the selected key.
type EtcdVersion struct {
	ModRevision int64
	Version     int64
	Href        string
	// DiffHref compares this revision with the one before it.
	DiffHref string
	Selected bool
}

// EtcdDiff is a line diff of two revisions' pretty JSON.
type EtcdDiff struct {
	From    int64
	To      int64
	Lines   []DiffLine
	Added   int
	Removed int
}

// DiffLine is one line of a diff; Op is " ", "+" or "-".
type DiffLine struct {
	Op   string
	Text string
}

// KeyGroup is one resource's keys, by namespace.
type KeyGroup struct {
	Resource   string
	Count      int
	Namespaces []KeyNamespace
	// Open is set for the groups the tree opens on: the focus namespace's
	// and the selected key's.
	Open bool
}

// KeyNamespace is one namespace's keys ("" for cluster-scoped objects).
type KeyNamespace struct {
	Namespace string
	Keys      []EtcdKey
	// Open is set for the focus namespace and the selected key's.
	Open bool
}

// EtcdKey is one key in the tree.
type EtcdKey struct {
	Key         string
	Name        string
	Href        string
	ModRevision int64
	Selected    bool
}

// EtcdValue is the selected key's value.
type EtcdValue struct {
	Key            string
	JSON           string
	CreateRevision int64
	ModRevision    int64
	ObjectHref     string
	// Version counts the key's writes since its creation; Current is false
	// for a past revision.
	Version int64
	Current bool
}

// MapBox is one component in the cluster map; ID names it for the browser
// script ("apiserver", "node:<name>", "containerd:<name>").
type MapBox struct {
	ID    string
	Label string
	Sub   string
	// LabelKey and SubKey are the i18n keys of Label and Sub ("" for a
	// component's own name, which stays as Kubernetes writes it).
	LabelKey string
	SubKey   string
	X        int
	Y        int
	W        int
	H        int
	// Hub marks the API server.
	Hub bool
}

// PageRequests is the request pipeline page.
const PageRequests Page = "requests"

// Requests is the audit stream as the pipeline page lists it.
type Requests struct {
	// Unavailable, when set, says why the dashboard has no requests to
	// show (the cluster sends it no audit events).
	Unavailable string
	Rows        []RequestRow
	// ShowReads includes get, list and watch; OnlyFailed keeps refused
	// requests; User keeps requests whose user contains it.
	ShowReads  bool
	OnlyFailed bool
	User       string
}

// RequestRow is one API request travelling through the pipeline.
type RequestRow struct {
	Seq           int64
	Time          string
	User          string
	Groups        string
	Authenticator string
	Verb          string
	// Action reads like "create pods/binding"; Target like "pods/default/x".
	Action      string
	Target      string
	Href        string
	Code        int
	Failed      bool
	FailedStage string
	Stages      []Stage
	// Decision is allow or forbid; Reason the RBAC rule that allowed the
	// request or why it was denied.
	Decision  string
	Reason    string
	Status    string
	Admission []AdmissionNote
	Key       string
	KeyHref   string
	Revision  int64
}

// AdmissionNote is what one admission plugin did to a request.
type AdmissionNote struct {
	Plugin string
	Result string
}

// PageLogin is the login form.
const PageLogin Page = "login"

// Login is the dashboard's token form.
type Login struct {
	CSRFToken string
	// Next is the dashboard path to return to.
	Next  string
	Error string
	// Remote is set when the dashboard listens beyond this machine, where
	// it also takes its own login token.
	Remote bool
}

// Pages listing Events and Nodes.
const (
	PageEvents Page = "events"
	PageNodes  Page = "nodes"
)

// Events is the events page.
type Events struct {
	Filter EventFilter
	Rows   []EventRow
}

// EventFilter narrows the events page; empty fields match everything.
type EventFilter struct {
	Type      string
	Reason    string
	Kind      string
	Namespace string
	// Text matches the message, object, source or reason.
	Text string
}

// EventRow is one core Event.
type EventRow struct {
	Time      string
	Type      string
	Reason    string
	Kind      string
	Namespace string
	Object    string
	Href      string
	Source    string
	Message   string
	Count     int32
}

// Nodes is the nodes page.
type Nodes struct {
	Filter NodeFilter
	Rows   []NodeRow
}

// NodeFilter narrows the nodes page: Ready is True, False or Unknown; Text
// matches the name, labels or taints.
type NodeFilter struct {
	Ready string
	Text  string
}

// NodeRow is one node.
type NodeRow struct {
	Name          string
	Href          string
	Ready         string
	Unschedulable bool
	CPU           string
	Memory        string
	Pods          int
	Runtime       string
	Taints        []string
	Labels        []string
}

// Demos lists the classroom demos and the recent runs.
type Demos struct {
	CSRFToken string
	// Lang is the narration language (en or ko).
	Lang     string
	ActingAs string
	// CanRun is false without an API connection.
	CanRun bool
	Demos  []DemoInfo
	Runs   []DemoRun
}

// DemoInfo is one demo.
type DemoInfo struct {
	Name  string
	Title string
	Steps int
	// Where says in which namespace the demo runs and what it removes.
	Where string
}

// DemoRun is one play of a demo and its narrated steps so far.
type DemoRun struct {
	ID    string     `json:"id"`
	Name  string     `json:"name"`
	By    string     `json:"by"`
	Done  bool       `json:"done"`
	Error string     `json:"error,omitempty"`
	Lines []DemoLine `json:"lines"`
}

// DemoLine is one step of a run: its narration, then its result or error.
type DemoLine struct {
	Step      int    `json:"step"`
	Total     int    `json:"total"`
	Narration string `json:"narration"`
	Result    string `json:"result,omitempty"`
	Error     string `json:"error,omitempty"`
}

// Service is a Service's page: the Service as the API serves it, its
// EndpointSlices, its DNS names and, per real node, the service proxy's
// rules. Each part the user may not read (or the API did not answer)
// carries the API's message instead.
type Service struct {
	// Error is why the Service itself could not be read.
	Error string
	Type  string
	// ClusterIPs are spec.clusterIPs ("None" for a headless Service).
	ClusterIPs            []string
	Headless              bool
	ExternalName          string
	SessionAffinity       string
	ExternalTrafficPolicy string
	InternalTrafficPolicy string
	Ports                 []ServicePort
	// Selector is spec.selector as key=value, sorted.
	Selector []string
	Slices   []EndpointSlice
	// SlicesError is why the EndpointSlices could not be listed.
	SlicesError string
	DNS         []DNSName
	// RealNodes is set when some node runs a real data path (containerd);
	// Rules then holds each such node's rules. NodesError is why the nodes
	// could not be listed.
	RealNodes  bool
	NodesError string
	Rules      []NodeRules
}

// ServicePort is one of spec.ports.
type ServicePort struct {
	Name       string
	Protocol   string
	Port       int32
	TargetPort string
	// NodePort is 0 when the Service has none.
	NodePort int32
}

// EndpointSlice is one EndpointSlice of a Service.
type EndpointSlice struct {
	Name        string
	Href        string
	AddressType string
	// Ports are the slice's ports as name:port/protocol.
	Ports     []string
	Endpoints []Endpoint
}

// Endpoint is one endpoint of a slice: its addresses, the pod behind it
// and its conditions ("true", "false" or "unknown" when unset).
type Endpoint struct {
	Addresses   []string
	Pod         string
	PodHref     string
	Node        string
	NodeHref    string
	Hostname    string
	Ready       string
	Serving     string
	Terminating string
}

// DNSName is a name cluster DNS answers for the Service.
type DNSName struct {
	Name string
	// Type is the record type: A, AAAA, SRV or CNAME.
	Type string
	// Answer is what the record holds, when the page knows it.
	Answer string
	// Note says which form it is ("short form, from the same namespace").
	Note    string
	NoteKey string
}

// NodeRules is the service proxy's rules for the Service on one node, or
// why they are not available.
type NodeRules struct {
	Node  string
	Href  string
	Rules string
	Error string
}
