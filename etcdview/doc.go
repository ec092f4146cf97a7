// Package etcdview reads the etcd a Kubernetes API server stores in, read
// only, for people to look at: the keys under a prefix at a revision (page
// by page), one key's value at a revision, a key's history walked back
// through etcd's revisions, and values decoded for reading (JSON as it is,
// Kubernetes' protobuf envelope decoded with client-go's scheme to JSON, as
// auger does).
//
// Glassplane's API server serves it as the etcdkeys resource of
// glassplane.io/v1alpha1 (api/v1alpha1) to the users RBAC allows; it
// writes nothing and holds no state of its own.
package etcdview
