// Package storesource reads what the dashboard shows straight from an
// in-process storage.Store and audit ring: the dashboard's sources for
// tests of package web that need no API server, and nothing else. The
// dashboard itself reads the cluster through the Kubernetes API
// (web/source/kube); this package must not be wired into a server.
package storesource

import (
	"context"
	"errors"

	"github.com/glassplane/glassplane/controlplane/apiserver/audit"
	"github.com/glassplane/glassplane/controlplane/storage"
	"github.com/glassplane/glassplane/etcdview"
	"github.com/glassplane/glassplane/web/source"
)

// Store is a storage.Store as a source.Store.
type Store struct{ S *storage.Store }

var _ source.Store = Store{}

// Ready implements source.Store.
func (s Store) Ready() <-chan struct{} { return s.S.Ready() }

// Revision implements source.Store.
func (s Store) Revision() int64 { return s.S.Revision() }

// Get implements source.Store.
func (s Store) Get(ctx context.Context, key string) (*source.KeyValue, error) {
	kv, err := s.S.Get(ctx, key)
	if err != nil {
		return nil, convertError(err)
	}
	return &source.KeyValue{Key: kv.Key, Value: kv.Value, CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision}, nil
}

// List implements source.Store.
func (s Store) List(ctx context.Context, prefix string, opts source.ListOptions) (*source.ListResult, error) {
	l, err := s.S.List(ctx, prefix, storage.ListOptions{Revision: opts.Revision, Limit: opts.Limit})
	if err != nil {
		return nil, convertError(err)
	}
	return &source.ListResult{Items: keyValues(l.Items), Revision: l.Revision}, nil
}

// Newest implements source.Store.
func (s Store) Newest(ctx context.Context, prefix string, n int, rev int64) ([]source.KeyValue, bool, error) {
	items, ok, err := s.S.Newest(ctx, prefix, n, rev)
	if err != nil {
		return nil, false, convertError(err)
	}
	return keyValues(items), ok, nil
}

// Watch implements source.Store.
func (s Store) Watch(ctx context.Context, prefix string, from int64) (<-chan source.Event, error) {
	in, err := s.S.Watch(ctx, prefix, from)
	if err != nil {
		return nil, convertError(err)
	}
	out := make(chan source.Event, 64)
	go func() {
		defer close(out)
		for ev := range in {
			select {
			case out <- source.Event{Type: source.EventType(ev.Type), Key: ev.Key, Value: ev.Value, Revision: ev.Revision, Created: ev.Created}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

func keyValues(in []storage.KeyValue) []source.KeyValue {
	out := make([]source.KeyValue, len(in))
	for i, kv := range in {
		out[i] = source.KeyValue{Key: kv.Key, Value: kv.Value, CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision}
	}
	return out
}

func convertError(err error) error {
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return errors.Join(source.ErrNotFound, err)
	case errors.Is(err, storage.ErrCompacted):
		return errors.Join(source.ErrCompacted, err)
	case errors.Is(err, storage.ErrFutureRevision):
		return errors.Join(source.ErrFutureRevision, err)
	}
	return err
}

// Etcd reads the store's etcd directly as a source.Etcd.
type Etcd struct{ R *etcdview.Reader }

// NewEtcd returns the explorer's view of s's etcd.
func NewEtcd(s *storage.Store) Etcd { return Etcd{R: etcdview.New(s.Client())} }

// Keys implements source.Etcd.
func (e Etcd) Keys(ctx context.Context, prefix string, rev int64) (*source.ListResult, error) {
	page, err := e.R.List(ctx, prefix, "", rev, 0)
	if err != nil {
		return nil, etcdError(err)
	}
	out := &source.ListResult{Revision: page.Revision}
	for _, k := range page.Keys {
		out.Items = append(out.Items, source.KeyValue{Key: k.Key, CreateRevision: k.CreateRevision, ModRevision: k.ModRevision})
	}
	return out, nil
}

// History implements source.Etcd.
func (e Etcd) History(ctx context.Context, key string, at int64, n int) ([]source.KeyVersion, source.HistoryEnd, error) {
	keys, end, err := e.R.History(ctx, key, at)
	if err != nil {
		return nil, source.HistoryEnd{}, etcdError(err)
	}
	out := make([]source.KeyVersion, 0, len(keys))
	for _, k := range keys {
		if len(out) == n {
			return out, source.HistoryEnd{Truncated: true}, nil
		}
		v := source.KeyVersion{ModRevision: k.ModRevision, CreateRevision: k.CreateRevision, Version: k.Version}
		if k.Value != nil {
			v.Value = source.ValueBytes(k.Value)
		}
		out = append(out, v)
	}
	return out, source.HistoryEnd{CreatedAt: end.CreatedAt, CompactedAt: end.CompactedAt, Truncated: end.Truncated}, nil
}

func etcdError(err error) error {
	switch {
	case errors.Is(err, etcdview.ErrNotFound):
		return errors.Join(source.ErrNotFound, err)
	case errors.Is(err, etcdview.ErrCompacted):
		return errors.Join(source.ErrCompacted, err)
	case errors.Is(err, etcdview.ErrFutureRevision):
		return errors.Join(source.ErrFutureRevision, err)
	}
	return err
}

// FeedAudit copies ring's events, those it keeps now and every new one,
// into log as audit.k8s.io/v1 Events until ctx ends.
func FeedAudit(ctx context.Context, ring *audit.Ring, log *source.AuditLog) {
	sub := ring.Subscribe(ctx)
	last := int64(0)
	add := func(rec audit.EncodedRecord) {
		if rec.Seq <= last {
			return
		}
		last = rec.Seq
		if ev, err := rec.Event.Decode(); err == nil {
			log.Add(ev)
		}
	}
	for _, rec := range ring.SinceEncoded(0) {
		add(rec)
	}
	for rec := range sub {
		if rec.Seq > last+1 {
			for _, missed := range ring.SinceEncoded(last) {
				if missed.Seq < rec.Seq {
					add(missed)
				}
			}
		}
		add(rec)
	}
}
