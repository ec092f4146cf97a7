// Package apiserver is Glassplane's Kubernetes REST API: discovery, the
// generic registry that serves every resource from one table of entries
// (get, list, watch, create, update, patch, delete, deletecollection and the
// status, binding, eviction, scale and pods/resize subresources; resize
// takes only the containers' cpu and memory, with upstream's
// ValidatePodResize), server-side tables for
// kubectl, the create-only access reviews (SelfSubjectAccessReview,
// SubjectAccessReview, LocalSubjectAccessReview, SelfSubjectRulesReview,
// SelfSubjectReview), impersonation headers, and an audit event for every
// request. It reads and writes objects only through controlplane/storage,
// authenticates and authorizes through apiserver/auth (with RBAC on, it keeps
// an in-memory cache of roles and bindings fed by the storage watch, and
// the Node authorizer's graph of which objects each node's pods use, and
// creates the bootstrap policy at start) and runs apiserver/admission before
// every write; a write through a scale subresource is admitted as its
// autoscaling/v1 Scale (write.go admitUpdate), the replicas a mutating
// webhook or policy leaves being what the object gets. The namespaces, ServiceAccounts and PriorityClasses admission
// looks up are kept in memory from the storage watch too, as
// kube-apiserver's admission informers are; a key this server has written
// more recently than its cache has seen is read from storage instead.
//
// API Priority and Fairness (flowcontrol.go) runs while RunFlowControl
// does: between impersonation and authorization each request but the
// long-running ones is classified by the cluster's FlowSchemas and
// dispatched by upstream's controller (k8s.io/apiserver's
// util/flowcontrol) when its priority level has a seat, or refused with
// 429 and Retry-After; RunFlowControl makes upstream's bootstrap
// FlowSchemas and PriorityLevelConfigurations that are missing. The seats
// are Config.MaxRequestsInflight + Config.MaxMutatingRequestsInflight
// (kube-apiserver's defaults, 400 + 200). FlowSchemas and
// PriorityLevelConfigurations are defaulted and validated as
// kube-apiserver does (flowcontrol_validation.go).
//
// glassplane.io/v1alpha1 etcdkeys (etcdkeys.go) is the etcd key explorer
// as a read-only API, the one place outside storage that reads etcd, through
// package etcdview: list at a revision (resourceVersion) with limit and
// continue, get one key (named by its base64url) with its value decoded,
// its history subresource, and a watch of every change under /registry/.
// glassplane.io/v1alpha1 auditevents (auditevents.go) lists and watches the
// audit ring's events, each an audit.k8s.io/v1 Event, resourceVersion being
// the ring's sequence number; the ring keeps each event's protobuf encoding,
// which a protobuf watch sends as it is (a JSON client's is decoded); a
// watch the ring skipped for falling behind sends what it missed from what
// the ring keeps, or ends with 410 Expired when the ring no longer keeps
// it. glassplane.io/v1alpha1 schedulingdecisions
// (scheduling_decisions.go), the scheduler's per-pod decision records, are
// an ordinary stored resource under the group's own etcd prefix
// (/registry/glassplane.io/schedulingdecisions/<namespace>/<pod>), named
// as pods are and validated with field paths. apiregistration.k8s.io/v1
// APIServices (apiservices.go) hold a local APIService per served group
// version, registered at bootstrap as kube-apiserver's autoregister does.
// The aggregation layer (aggregator.go, with Config.Aggregation and
// RunAggregator running) proxies the group versions of APIServices that
// name a Service to one of its ready endpoints (an ExternalName Service to
// its name), after authentication and authorization, with the front-proxy
// client certificate and the user in X-Remote-* headers, never the
// client's credentials; kube-aggregator's availability controller writes
// their Available condition; /apis lists their groups and aggregated
// discovery their resources as each server describes them (stale until
// fetched and while unavailable). Bootstrap publishes kube-system/extension-apiserver-authentication
// (client CA, request-header CA and header names) for those servers.
//
// POST serviceaccounts/<name>/token (serviceaccount_token.go) issues a
// token bound, by boundObjectRef, to a pod (with its node), a secret or a
// node, as kube-apiserver's TokenREST; authentication then checks that the
// bound objects still exist with their UIDs and adds kube-apiserver's user
// extras (credential-id, pod and node names and UIDs). A node may only ask
// for tokens bound to its own pods (NodeRestriction).
//
// POST pods/<name>/eviction follows kube-apiserver's EvictionREST: a pod
// that is pending, finished or already being deleted is deleted at once;
// otherwise the one PodDisruptionBudget selecting it must allow a
// disruption, which is taken from the budget's status (disruptionsAllowed
// less one, the pod in disruptedPods) with a compare-and-swap before the pod
// is marked DisruptionTarget and deleted; a budget that allows none answers
// 429 TooManyRequests with a DisruptionBudget cause.
//
// Bodies are JSON, YAML or Kubernetes' protobuf; answers are JSON, or
// protobuf when the client's Accept prefers it (watches then send
// length-prefixed metav1.WatchEvent frames). A watch event's object is
// decoded once, and each frame encoded once, for all its watchers through
// the storage event's memo (a protobuf frame in one buffer: the object is
// written in place and the WatchEvent's header in front of it); a watch flushes once it has caught up with the
// events waiting for it. JSON merge patches take apart only the parts of
// the object they reach, with jsonpatch.MergePatch's results. Every write
// (create, update, patch, the status and scale subresources) records its
// manager in metadata.managedFields, and PATCH with
// application/apply-patch+yaml is server-side apply, both through
// k8s.io/apimachinery's managedfields over structured-merge-diff
// (fieldmanager.go, apply.go): built-in kinds are typed by their OpenAPI
// definitions, a resource's TypeConverter (a CRD's schema) overrides that,
// and objects without either get the deduced, all-atomic schema. The OpenAPI
// documents are built on their first request, and Config.Profiling serves
// Go's profiles on /debug/pprof/. Writes (POST, PUT, PATCH, DELETE that are
// not upgrades to a stream) run on a pool of long-lived goroutines whose
// stacks have already grown (workers.go), or on their own when all are busy.
//
// Services get their cluster IPs and node ports as kube-apiserver v1.33+
// gives them (service_alloc.go): a cluster IP from Config's range is
// claimed by creating the networking.k8s.io/v1 IPAddress named by it (one
// that exists is taken: the create tries another), node ports are a bitmap
// in /registry/ranges/servicenodeports changed with compare-and-swap, and
// both are given back when the Service goes or its write fails. A dry run
// picks and checks them the same way and claims nothing. A repair
// (service_repair.go, on start and every three minutes, as kube-apiserver's
// repair controllers) gives a Service's address its missing IPAddress,
// deletes an IPAddress a minute old whose Service is gone (the pass after
// one that saw it younger runs when its minute is up), and rebuilds the
// port bitmap from the Services, freeing a leaked port on the third pass
// that finds it unused. Bootstrap
// creates the default ServiceCIDR and the kubernetes Service (the range's
// first address) with an Endpoints and EndpointSlice at
// Config.AdvertiseAddress; servicecidrs and ipaddresses are served read-only.
//
// CustomResourceDefinitions (apiextensions.k8s.io/v1) are an entry of the
// table, validated by apiextensions-apiserver's own rules (crd.go). Each
// served version of a CRD whose names are accepted becomes one more entry
// at run time (crd_registry.go, under its own lock, kept from the storage
// watch of CRDs): its objects are unstructured, decoded, defaulted, pruned,
// validated (schema, CEL, list types), printed and scaled by
// apiextensions-apiserver's packages (crd_custom.go), defaulted and pruned
// again after a mutating webhook or policy changed them, stored at
// /registry/<group>/<plural>/, and published in discovery and OpenAPI
// (crd_openapi.go) as they come. The same loop sets NamesAccepted and
// Established as upstream's naming controller, and for a CRD being deleted
// deletes its objects (marking those with finalizers deleting and waiting
// for them) before dropping the customresourcecleanup finalizer.
//
// /healthz, /livez and /readyz run kube-apiserver's checks (ping, log, etcd
// as a linearizable read bounded at two seconds and rate limited, the
// poststarthooks of Bootstrap, and on /readyz etcd-readiness, informer-sync
// and shutdown) with its ?verbose and ?exclude and one check by name at
// /<endpoint>/<check>; anyone may ask, as system:public-info-viewer allows.
package apiserver
