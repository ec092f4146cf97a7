// Package web is Glassplane's dashboard: the Echo handlers for the cluster
// map (home, with the classroom tempo panel), the apply form (a server-side
// dry run showing what admission and defaulting add, then apply, or a
// server-side apply by a named field manager whose conflicts show the
// API's 409; field errors pointed at their manifest line), an object's
// timeline (with its
// owners and its dependents' steps), a pod's scheduling explanation (its
// decision record: every attempt, and a nodes × plugins matrix of filter
// results and scores), a Service's own part of its page (service.go: the
// Service, its EndpointSlices with each endpoint's pod, node and
// conditions, its cluster DNS names, and on each containerd node the
// service proxy's rules from GET nodes/<node>/proxy/glassplane/proxy-rules;
// simulated nodes have no data path), a PersistentVolumeClaim's,
// CronJob's and HorizontalPodAutoscaler's own parts (parts.go: claim →
// volume → node directory and the pods using it; schedule, next runs and
// past Jobs; metrics against targets with a chart over the HPA's
// revisions, conditions and each rescale with its reason), the CRD pages
// and the list of any resource as the API prints it (crd.go), the request
// pipeline (with each admission webhook call and policy from the audit
// annotation admission.glassplane.io/dynamic, admissioncalls.go), the
// Events and
// Nodes lists, the etcd explorer (key history through revisions, diffs, the
// cluster at a past revision), the classroom demos (package demo), login,
// and the websocket hub that streams changes to open pages (each page gets
// only the message types, and objects of the kinds, it asks for, without
// the parts it leaves out (audit messages' request details; background
// steps, counted instead), batched into at most one frame per 50 ms). It is a client of the Kubernetes API
// like the scheduler and the controllers, and imports nothing of the API
// server, its storage or etcd (a test checks): it reads cluster state
// through the interfaces of package web/source, which web/source/kube
// implements over any cluster's API. Config.Store is the cluster's
// objects by their etcd keys (List, Get, Watch, Newest for the
// overview's recent Events), read through the API with the dashboard's
// identity; Config.Etcd the etcd explorer's raw keys and their history
// (Glassplane's etcdkeys.glassplane.io API, or etcd read directly by
// `glassplane dashboard --etcd-endpoints`; without it the explorer says
// so once); Config.Audit the audit.k8s.io/v1 events it was given
// (watched from auditevents.glassplane.io, or received as an API server's
// audit webhook). `glassplane up` and `glassplane dashboard` wire the same
// sources (cmd/glassplane/dashboard.go). The Service part is read through
// the API with a client acting as the page's user (Dashboard.clientFor),
// as are the claim, CronJob and HPA parts, the CRD pages and the resource
// lists, so RBAC decides each of its reads and a refused one shows the
// API's message. Which resource a kind is and where its objects are stored
// (custom resources at /registry/<group>/<plural>/) come from discovery and
// the CRDs, watched through the API as the dashboard (kinds.go). What it shows a logged-in user is
// filtered by what RBAC allows that user, asked by SubjectAccessReview and
// kept for a few seconds (access.go): an object page needs get on the
// object, lists and the websocket's watch and event messages list on their
// resource in their namespace, the etcd explorer and etcd messages get on
// etcdkeys.glassplane.io (cluster-scoped; system:masters has it), and
// other users' requests list on events.audit.k8s.io (cluster-scoped),
// everyone seeing their own. The dashboard's own identity (no user logged
// in) reads everything. A Secret's values are masked
// wherever they would show, kubectl's last-applied-configuration included.
// It writes only through the real
// API server as a client (apply, an object page's Delete, tempo, demos), so
// every change it makes is authenticated, authorized, admitted and audited
// like kubectl's.
//
// It answers only requests whose Host names an address it listens on
// (hosts.go; no DNS rebinding) and refuses changes sent from another
// origin. Without a login it only shows the cluster: its own identity,
// system:glassplane-dashboard, may read, ask SubjectAccessReviews and
// impersonate, never write. Every change (writers.go) is made as a
// logged-in user, who logs in with any bearer token the API server accepts
// (a --token-auth-file token, `kubectl create token`; the dashboard asks
// the API server whose it is with a SelfSubjectReview sent with the token
// alone, through Config.AnonymousRESTConfig, and asks again with
// that token every minute and before each change, ending the session when
// it is refused) or by the one-time link glassplane up prints, which logs
// in as the cluster admin once (loginlink.go). The dashboard's login token
// (a dashboard beyond loopback) only lets the browser look. Sessions are
// kept server-side, and a user's writes carry the dashboard's own
// credentials plus Impersonate-User and Impersonate-Group, so RBAC decides
// them as for that user and a Forbidden Status is shown as the API wrote
// it. The tempo (package controlplane/tempo, the ConfigMap
// kube-system/glassplane-tempo) is changed the same way: only users RBAC
// lets update that object may. Pages are rendered by package components;
// browser scripts and styles come from package static.
package web
