// Package v1alpha1 is Glassplane's own API group, glassplane.io/v1alpha1:
// what only Glassplane knows, served by its API server with RBAC like any
// other resource (issue 27), so the dashboard and any other client read it
// through the Kubernetes API instead of through the API server's memory or
// etcd.
//
// EtcdKey is one key of the etcd the API server stores objects in, read
// only: its revisions, and on get its value decoded (JSON objects as they
// are, Kubernetes protobuf values as JSON). Its name is the key encoded as
// unpadded base64url (EtcdKeyName), since keys contain slashes. Listing
// etcdkeys with a resourceVersion shows the keys as they were at that etcd
// revision; the history subresource walks one key back through etcd's
// revisions. By default only system:masters and the dashboard's own
// identity may read them: raw etcd shows every object whatever RBAC allows
// for it.
//
// AuditEvent is one audit.k8s.io/v1 Event the API server recorded, listed
// and watched from its ring of recent events (resourceVersion is the
// event's sequence number there), for the same users. AuditEvent and its
// list also have Kubernetes' protobuf form (audit_protobuf.go), which the
// dashboard's audit watch asks for.
//
// SchedulingDecision is the scheduler's explanation of one pod: its
// scheduling attempts, each node's filter result and each plugin's score.
// Unlike the two above it is an ordinary stored resource
// (/registry/glassplane.io/schedulingdecisions/<namespace>/<pod>), in the
// pod's namespace under the pod's name and owned by the pod. Glassplane's
// scheduler writes it; the view role (and so edit and admin) reads it, so
// whoever may look at a namespace's pods may also read why they went where
// they did.
//
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=io.glassplane.v1alpha1
// +k8s:deepcopy-gen=package
// +groupName=glassplane.io
package v1alpha1
