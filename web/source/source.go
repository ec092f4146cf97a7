package source

import (
	"context"
	"errors"

	"github.com/glassplane/glassplane/api/v1alpha1"
)

// Root is the prefix every key of the cluster's objects starts with, as
// kube-apiserver stores them.
const Root = "/registry/"

// Errors a Store returns, for errors.Is.
var (
	// ErrNotFound: no such key (object).
	ErrNotFound = errors.New("not found")
	// ErrCompacted: the revision asked for is no longer kept.
	ErrCompacted = errors.New("the revision has been compacted")
	// ErrFutureRevision: the revision asked for is newer than the store's.
	ErrFutureRevision = errors.New("the revision is newer than the store's")
)

// KeyValue is one object under its etcd key.
type KeyValue struct {
	Key string
	// Value is the object as JSON (its stored form when it is JSON).
	Value []byte
	// CreateRevision is the revision that created the key, where known.
	CreateRevision int64
	// ModRevision is the revision of the last write: the object's
	// resourceVersion.
	ModRevision int64
}

// EventType says what happened to a key.
type EventType string

const (
	// EventPut is a create or update.
	EventPut EventType = "PUT"
	// EventDelete is a deletion.
	EventDelete EventType = "DELETE"
)

// Event is one change to one key.
type Event struct {
	Type EventType
	Key  string
	// Value is the new value; for a delete, the value just deleted.
	Value []byte
	// Revision is the change's revision (the resourceVersion it wrote).
	Revision int64
	// Created is true when a put made the key exist.
	Created bool
}

// ListOptions select a page of a List.
type ListOptions struct {
	// Revision reads the keys as of that revision (0: the newest). A Store
	// that only knows the present answers ErrCompacted for an older one.
	Revision int64
	// Limit caps the number of items (0: no cap).
	Limit int64
}

// ListResult is one List's answer.
type ListResult struct {
	Items []KeyValue
	// Revision is the revision the list was read at.
	Revision int64
}

// Store is the cluster's objects as the dashboard reads them: by the key
// the API server stores each under, with the revision of its last write.
type Store interface {
	// Ready is closed once the store answers.
	Ready() <-chan struct{}
	// Revision is the newest revision the store knows of.
	Revision() int64
	// Get reads one key now.
	Get(ctx context.Context, key string) (*KeyValue, error)
	// List reads the keys under prefix, in key order.
	List(ctx context.Context, prefix string, opts ListOptions) (*ListResult, error)
	// Newest returns the n most recently changed keys under prefix as of
	// rev (0: now), newest first, when the store can tell without a List;
	// ok is false when it cannot.
	Newest(ctx context.Context, prefix string, n int, rev int64) (items []KeyValue, ok bool, err error)
	// Watch streams the changes under prefix after revision from (0: from
	// now). ErrCompacted: from is older than the store keeps;
	// ErrFutureRevision: newer than it knows. The channel closes when ctx
	// ends or the watch fails; the caller reopens it from the newest
	// revision it saw.
	Watch(ctx context.Context, prefix string, from int64) (<-chan Event, error)
}

// KeyVersion is one value a key had.
type KeyVersion struct {
	ModRevision    int64
	CreateRevision int64
	// Version counts the writes since the key was created (1 = created).
	Version int64
	Value   []byte
}

// HistoryEnd says why a walk back through a key's values stopped.
type HistoryEnd struct {
	// CreatedAt is the revision that created the key when the walk reached it.
	CreatedAt int64
	// CompactedAt is the revision etcd no longer keeps, when the walk hit it.
	CompactedAt int64
	// Truncated is true when the walk stopped at its length.
	Truncated bool
}

// Etcd is the etcd key explorer's read-only view of the raw keys: every
// key at a revision, and a key's values back through the revisions. It is
// served by Glassplane's etcdkeys.glassplane.io API, or read from a
// cluster's etcd directly; a cluster whose etcd the dashboard cannot read
// has none.
type Etcd interface {
	// Keys lists the keys under prefix as of rev (0: now), with their
	// revisions and without their values (History reads those).
	Keys(ctx context.Context, prefix string, rev int64) (*ListResult, error)
	// History walks key's values back from revision at (0: now), newest
	// first, at most n of them. ErrNotFound: the key did not exist at at.
	History(ctx context.Context, key string, at int64, n int) ([]KeyVersion, HistoryEnd, error)
}

// Key returns the key of an object: its storage resource (the resource's
// part of the key: "pods", "minions" for nodes, "example.com/widgets" for a
// custom resource), namespace (empty when cluster-scoped) and name.
func Key(resource, namespace, name string) string {
	if namespace == "" {
		return Root + resource + "/" + name
	}
	return Root + resource + "/" + namespace + "/" + name
}

// Prefix returns the prefix of every object of a storage resource, narrowed
// to a namespace when namespace is not empty. It ends in "/" so that "pods"
// does not match "podtemplates".
func Prefix(resource, namespace string) string {
	if namespace == "" {
		return Root + resource + "/"
	}
	return Root + resource + "/" + namespace + "/"
}

// ValueBytes is what the explorer shows of a value etcdview decoded: the
// object as JSON, text as it is, anything else as the stored bytes.
func ValueBytes(v *v1alpha1.EtcdValue) []byte {
	switch {
	case v == nil:
		return nil
	case v.Object != nil:
		return v.Object.Raw
	case v.Text != "":
		return []byte(v.Text)
	}
	return v.Raw
}
