package etcdview

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/glassplane/glassplane/api/v1alpha1"
)

const (
	// RequestTimeout bounds each etcd read.
	RequestTimeout = 10 * time.Second
	// HistoryLength bounds how many values of one key History walks.
	HistoryLength = 50
)

var (
	// ErrNotFound means the key did not exist at the revision asked.
	ErrNotFound = errors.New("etcd key not found")
	// ErrCompacted means etcd no longer keeps the revision asked.
	ErrCompacted = errors.New("the revision has been compacted")
	// ErrFutureRevision means the revision asked is newer than etcd's.
	ErrFutureRevision = errors.New("the revision is newer than etcd's")
)

// Reader reads one etcd, read only.
type Reader struct {
	kv clientv3.KV
}

// New returns a Reader over kv (a *clientv3.Client or its KV).
func New(kv clientv3.KV) *Reader { return &Reader{kv: kv} }

// Page is a page of keys under a prefix at one revision.
type Page struct {
	// Revision is the etcd revision the page was read at.
	Revision int64
	Keys     []v1alpha1.EtcdKey
	// Next is the key the next page starts at; empty on the last page.
	Next string
}

// List reads up to limit keys (all when limit is 0) under prefix, from
// start (a key under prefix; "" for the first), at revision rev (0: now).
// Values are left out; Size says how long each is.
func (r *Reader) List(ctx context.Context, prefix, start string, rev, limit int64) (*Page, error) {
	from := prefix
	if start != "" {
		from = start
	}
	opts := []clientv3.OpOption{clientv3.WithRange(clientv3.GetPrefixRangeEnd(prefix))}
	if rev > 0 {
		opts = append(opts, clientv3.WithRev(rev))
	}
	if limit > 0 {
		opts = append(opts, clientv3.WithLimit(limit+1))
	}
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	resp, err := r.kv.Get(ctx, from, opts...)
	if err != nil {
		return nil, readError(err, rev)
	}
	page := &Page{Revision: resp.Header.Revision}
	if rev > 0 {
		page.Revision = rev
	}
	kvs := resp.Kvs
	if limit > 0 && int64(len(kvs)) > limit {
		page.Next = string(kvs[limit].Key)
		kvs = kvs[:limit]
	}
	for _, kv := range kvs {
		k := keyOf(string(kv.Key), kv.CreateRevision, kv.ModRevision, kv.Version, int64(len(kv.Value)))
		page.Keys = append(page.Keys, k)
	}
	return page, nil
}

// Get reads key at revision rev (0: now), with its value decoded.
func (r *Reader) Get(ctx context.Context, key string, rev int64) (*v1alpha1.EtcdKey, error) {
	var opts []clientv3.OpOption
	if rev > 0 {
		opts = append(opts, clientv3.WithRev(rev))
	}
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	resp, err := r.kv.Get(ctx, key, opts...)
	if err != nil {
		return nil, readError(err, rev)
	}
	if len(resp.Kvs) == 0 {
		return nil, ErrNotFound
	}
	kv := resp.Kvs[0]
	k := keyOf(key, kv.CreateRevision, kv.ModRevision, kv.Version, int64(len(kv.Value)))
	k.Value = Decode(kv.Value)
	return &k, nil
}

// History walks key's values back through etcd's revisions, newest first,
// from the value it had at revision at (0: now): each value's ModRevision
// minus one reads the value before it, until the key's creation, a
// compacted revision or HistoryLength values. It returns ErrNotFound when
// the key did not exist at the starting revision.
func (r *Reader) History(ctx context.Context, key string, at int64) ([]v1alpha1.EtcdKey, v1alpha1.EtcdHistoryEnd, error) {
	var out []v1alpha1.EtcdKey
	var end v1alpha1.EtcdHistoryEnd
	rev := at
	for len(out) < HistoryLength {
		k, err := r.Get(ctx, key, rev)
		switch {
		case errors.Is(err, ErrCompacted) && len(out) > 0:
			end.CompactedAt = rev
			return out, end, nil
		case errors.Is(err, ErrNotFound) && len(out) > 0:
			return out, end, nil
		case err != nil:
			return nil, end, err
		}
		out = append(out, *k)
		if k.Version == 1 || k.ModRevision == k.CreateRevision {
			end.CreatedAt = k.CreateRevision
			return out, end, nil
		}
		rev = k.ModRevision - 1
	}
	end.Truncated = true
	return out, end, nil
}

func keyOf(key string, create, mod, version, size int64) v1alpha1.EtcdKey {
	k := v1alpha1.EtcdKey{Key: key, CreateRevision: create, ModRevision: mod, Version: version, Size: size}
	k.Name = v1alpha1.EtcdKeyName(key)
	k.ResourceVersion = fmt.Sprint(mod)
	return k
}

// readError names etcd's refusals of a revision.
func readError(err error, rev int64) error {
	switch {
	case errors.Is(err, rpctypes.ErrCompacted):
		return fmt.Errorf("%w: etcd no longer keeps revision %d", ErrCompacted, rev)
	case errors.Is(err, rpctypes.ErrFutureRev):
		return fmt.Errorf("%w: revision %d", ErrFutureRevision, rev)
	}
	return fmt.Errorf("failed to read etcd: %w", err)
}

// protobufPrefix starts every value of Kubernetes' protobuf storage
// encoding (k8s.io/apimachinery runtime/serializer/protobuf).
var protobufPrefix = []byte("k8s\x00")

// decoder reads Kubernetes' protobuf envelope into the kinds client-go
// knows.
var decoder = protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)

// Decode reads a stored value for people: a JSON object as it is, a
// Kubernetes protobuf value as JSON (with apiVersion and kind), text as
// text, anything else as raw bytes.
func Decode(value []byte) *v1alpha1.EtcdValue {
	switch {
	case bytes.HasPrefix(value, protobufPrefix):
		v := &v1alpha1.EtcdValue{Encoding: "protobuf"}
		obj, gvk, err := decoder.Decode(value, nil, nil)
		if err == nil {
			obj.GetObjectKind().SetGroupVersionKind(*gvk)
			var b []byte
			if b, err = json.Marshal(obj); err == nil {
				v.Object = &runtime.RawExtension{Raw: b}
				return v
			}
		}
		v.Error = err.Error()
		v.Raw = value
		return v
	case json.Valid(value) && bytes.HasPrefix(bytes.TrimSpace(value), []byte("{")):
		return &v1alpha1.EtcdValue{Encoding: "json", Object: &runtime.RawExtension{Raw: bytes.Clone(value)}}
	case utf8.Valid(value):
		return &v1alpha1.EtcdValue{Encoding: "text", Text: string(value)}
	}
	return &v1alpha1.EtcdValue{Encoding: "binary", Raw: bytes.Clone(value)}
}
