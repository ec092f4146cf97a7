package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

const (
	// DefaultRequestTimeout bounds every etcd request the store makes.
	DefaultRequestTimeout = 10 * time.Second
	// DefaultHistory is how many recent events the store keeps in memory so
	// that watchers resuming from a recent resourceVersion are served without
	// a new etcd watch.
	DefaultHistory = 2048
	// DefaultWatcherBuffer is how many events may wait for one slow watcher
	// before it is closed; a closed watcher resumes from its last revision.
	DefaultWatcherBuffer = 1024
	// DefaultCompactionInterval is how often old revisions are compacted, as
	// kube-apiserver does (every 5 minutes, keeping the last interval's history).
	DefaultCompactionInterval = 5 * time.Minute
	// maxUpdateRetries bounds GuaranteedUpdate's compare-and-swap loop.
	maxUpdateRetries = 16
	// futureRevisionWait is how long a watch from a revision the feed has not
	// seen yet waits for it, as kube-apiserver's watch cache does.
	futureRevisionWait = 3 * time.Second
)

var (
	// ErrNotFound means the key does not exist.
	ErrNotFound = errors.New("key not found")
	// ErrKeyExists means Create found the key already present.
	ErrKeyExists = errors.New("key already exists")
	// ErrConflict means the key's ModRevision was not the expected one.
	ErrConflict = errors.New("the object has been modified")
	// ErrCompacted means the requested revision is older than etcd keeps.
	ErrCompacted = errors.New("required revision has been compacted")
	// ErrFutureRevision means the requested revision is newer than the store.
	ErrFutureRevision = errors.New("requested revision is newer than the current revision")
)

// KeyValue is one key with its value and etcd revisions.
type KeyValue struct {
	Key            string
	Value          []byte
	CreateRevision int64
	// ModRevision is the revision of the last write; it is the object's
	// resourceVersion.
	ModRevision int64
	// Memo is, on a value from Recent that changed among the last
	// memoWindow changes and memoMaxAge, the memo of the event that wrote it: what its watchers
	// derived from the value (the decoded object) is there to share.
	// Nil otherwise.
	Memo *Memo
}

// EventType says what happened to a key.
type EventType string

const (
	// EventPut is a create or update.
	EventPut EventType = "PUT"
	// EventDelete is a deletion.
	EventDelete EventType = "DELETE"
)

// Event is one change to one key, as etcd reported it.
type Event struct {
	Type EventType
	Key  string
	// Value is the new value; for a delete, it is the value just deleted.
	Value []byte
	// PrevValue is the value before this change (nil for a create).
	PrevValue []byte
	// Revision is the etcd revision of the change; PrevRevision that of
	// PrevValue.
	Revision, PrevRevision int64
	// Created is true when a put made the key exist.
	Created bool
	// Memo is shared by every watcher handed this event by the fan-out, so
	// that what they derive from it (the decoded object, an encoded watch
	// frame) is computed once however many watch the prefix, as
	// kube-apiserver's watch cache shares one cachingObject. Nil on events
	// replayed from history or read straight from etcd.
	Memo *Memo
	// PrevMemo is the Memo of the event that wrote PrevValue, while the
	// store keeps it (see memoWindow): what was derived from
	// the previous value then is not derived again. Nil otherwise.
	PrevMemo *Memo
}

// Memo holds values derived from one Event, each computed once.
type Memo struct {
	mu   sync.Mutex
	vals map[any]any
}

// Do returns the value stored under key, computing it with f the first time.
// Concurrent callers with the same key wait for the one computing it. The
// value is shared: callers must not modify it. A nil Memo just calls f.
func (m *Memo) Do(key any, f func() any) any {
	if m == nil {
		return f()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.vals[key]; ok {
		return v
	}
	v := f()
	if m.vals == nil {
		m.vals = make(map[any]any, 2)
	}
	m.vals[key] = v
	return v
}

// Config tunes the store.
type Config struct {
	// Prefix is the part of the key space the store's one watch covers;
	// empty means Root.
	Prefix string
	// History is the number of recent events kept for resuming watchers
	// (at least History, at most twice as many).
	History int
	// WatcherBuffer is how many events may wait for one watcher beyond its
	// small channel; they are held only while it lags.
	WatcherBuffer int
	// CompactionInterval; zero means DefaultCompactionInterval, negative
	// disables compaction.
	CompactionInterval time.Duration
	// SerializableReads reads from the member the client talks to without
	// a quorum round. It is only right for a single-member cluster (the
	// embedded one), where the member applies a write before acknowledging
	// it, so a serializable read already sees every acknowledged write; a
	// read older than a change the feed has already delivered is done
	// again with a quorum round (see read).
	SerializableReads bool
	// Watch, when set, opens the store's one etcd watch instead of the
	// client: a watch on prefix from revision rev with each event's
	// previous value, as clientv3's Watch with WithPrefix, WithRev and
	// WithPrevKV delivers it. The embedded member's watch reads its own
	// store (etcd.Server.DirectWatch).
	Watch WatchFunc
	// TTLs gives the keys under each prefix a time to live: every write of
	// one attaches it to an etcd lease, and etcd deletes it (a DELETE on
	// the watch) when the lease expires, as kube-apiserver's --event-ttl
	// does for Events. Leases are shared by the keys written within a
	// minute of each other, so a key lives its time to live and up to a
	// minute more. The prefixes must not overlap.
	TTLs   map[string]time.Duration
	Logger *slog.Logger
}

// WatchFunc opens an etcd watch on the keys under prefix from revision
// rev, with previous values; the channel closes when ctx ends.
type WatchFunc func(ctx context.Context, prefix string, rev int64) clientv3.WatchChan

// Store reads and writes objects in etcd and fans one etcd watch out to many
// watchers. Create it with New and start its watch with Run.
type Store struct {
	client *clientv3.Client
	cfg    Config
	log    *slog.Logger
	ready  chan struct{}
	leases *leases

	mu sync.Mutex // guards the fields below
	// rev is the newest revision the feed has seen (events or progress).
	rev int64
	// history holds the last cfg.History to 2×cfg.History events in
	// revision order.
	history []Event
	// historyFrom is the revision after which history is complete.
	historyFrom int64
	watchers    map[*watcher]struct{}
	// groups routes the feed: the watchers by prefix, and within a prefix
	// the indexed ones by index value, so that an event costs a look at
	// each distinct prefix, not at each watcher (a thousand node agents
	// watch pods under one prefix, each for its own node).
	groups map[string]*watcherGroup
	// latest is the newest value the feed delivered of each key changed in
	// the last 2×cfg.History events, and latestOrder those changes in
	// revision order, for evicting (see Recent).
	latest      map[string]KeyValue
	latestOrder []keyRevision
	// memoOrder[memoHead:] are the changes whose latest entry may still
	// hold its event's Memo, oldest first (see releaseMemos).
	memoOrder []memoed
	memoHead  int
	// indexers are the index functions of key prefixes (SetIndexer).
	indexers map[string]IndexFunc
	// revChanged is closed and replaced whenever rev grows.
	revChanged chan struct{}
}

// IndexFunc returns an event's index values: that of the value after the
// change and that of the value before it ("" for none).
type IndexFunc func(ev Event) (cur, prev string)

// SetIndexer sets the index function of the events under prefix, which
// WatchIndexed narrows watches by, as kube-apiserver's watch cache indexes
// pod watchers by spec.nodeName so that a node's watch is not woken for
// every other node's pods.
func (s *Store) SetIndexer(prefix string, f IndexFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.indexers == nil {
		s.indexers = map[string]IndexFunc{}
	}
	s.indexers[prefix] = f
}

// New returns a store over client. Run must be running for Watch to deliver.
func New(client *clientv3.Client, cfg Config) *Store {
	if cfg.Prefix == "" {
		cfg.Prefix = Root
	}
	if cfg.History <= 0 {
		cfg.History = DefaultHistory
	}
	if cfg.WatcherBuffer <= 0 {
		cfg.WatcherBuffer = DefaultWatcherBuffer
	}
	if cfg.CompactionInterval == 0 {
		cfg.CompactionInterval = DefaultCompactionInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Store{
		client:     client,
		cfg:        cfg,
		log:        cfg.Logger,
		ready:      make(chan struct{}),
		leases:     newLeases(client, cfg.TTLs),
		watchers:   make(map[*watcher]struct{}),
		groups:     make(map[string]*watcherGroup),
		latest:     make(map[string]KeyValue),
		revChanged: make(chan struct{}),
	}
}

// Recent returns the newest value of key the store's watch has delivered,
// if the key changed recently (within the last 2×History events) and was
// not deleted since. The watch may lag behind a write that just returned,
// so the value may be stale: it is a guess for a compare-and-swap update
// (as kube-apiserver's GuaranteedUpdate starts from its watch cache's
// copy), which must read the key again when the swap fails, when the guess
// made the update a no-op, or when the guess refused the update.
func (s *Store) Recent(key string) (*KeyValue, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	kv, ok := s.latest[key]
	if !ok {
		return nil, false
	}
	return &kv, true
}

// keyRevision is a change of key at rev.
type keyRevision struct {
	key string
	rev int64
}

// A change's Memo stays in latest while it is among the newest memoWindow
// changes and younger than memoMaxAge: long enough for the next change of
// a key written in quick succession (a pod bound, then its status posted),
// short enough that decoded objects and encoded frames do not pile up, on
// a busy cluster or (by age) on an idle one.
const (
	memoWindow = 512
	memoMaxAge = 2 * time.Second
)

// memoed is a change whose latest entry was given its event's Memo.
type memoed struct {
	key string
	rev int64
	at  time.Time
}

// releaseMemos lets go of the Memos of the changes beyond the newest
// memoWindow or older than memoMaxAge at now. Callers hold s.mu.
func (s *Store) releaseMemos(now time.Time) {
	for s.memoHead < len(s.memoOrder) {
		old := s.memoOrder[s.memoHead]
		if len(s.memoOrder)-s.memoHead <= memoWindow && now.Sub(old.at) <= memoMaxAge {
			break
		}
		if cur, ok := s.latest[old.key]; ok && cur.ModRevision == old.rev {
			cur.Memo = nil
			s.latest[old.key] = cur
		}
		s.memoOrder[s.memoHead] = memoed{}
		s.memoHead++
	}
	if s.memoHead > memoWindow {
		n := copy(s.memoOrder, s.memoOrder[s.memoHead:])
		clear(s.memoOrder[n:])
		s.memoOrder, s.memoHead = s.memoOrder[:n], 0
	}
}

// noteLatest records ev, delivered at now, in latest, evicting the oldest
// changes beyond 2×History. It first gives ev the Memo of the change that
// wrote its previous value, when latest still holds it. Callers hold s.mu.
func (s *Store) noteLatest(ev *Event, createRev int64, now time.Time) {
	s.releaseMemos(now)
	if prev, ok := s.latest[ev.Key]; ok && ev.PrevValue != nil && prev.ModRevision == ev.PrevRevision {
		ev.PrevMemo = prev.Memo
	}
	if ev.Type == EventDelete {
		delete(s.latest, ev.Key)
		return
	}
	s.latest[ev.Key] = KeyValue{Key: ev.Key, Value: ev.Value, CreateRevision: createRev, ModRevision: ev.Revision, Memo: ev.Memo}
	s.memoOrder = append(s.memoOrder, memoed{ev.Key, ev.Revision, now})
	s.releaseMemos(now)
	s.latestOrder = append(s.latestOrder, keyRevision{ev.Key, ev.Revision})
	if len(s.latestOrder) > 4*s.cfg.History {
		over := len(s.latestOrder) - 2*s.cfg.History
		for _, old := range s.latestOrder[:over] {
			if cur, ok := s.latest[old.key]; ok && cur.ModRevision == old.rev {
				delete(s.latest, old.key)
			}
		}
		n := copy(s.latestOrder, s.latestOrder[over:])
		clear(s.latestOrder[n:])
		s.latestOrder = s.latestOrder[:n]
	}
}

// Ready is closed once the store's watch is established.
func (s *Store) Ready() <-chan struct{} { return s.ready }

// Client returns the etcd client (for the key explorer's raw reads).
func (s *Store) Client() *clientv3.Client { return s.client }

// Revision returns the newest revision the store has observed.
func (s *Store) Revision() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rev
}

// Create writes key only if it does not exist. It returns the written
// KeyValue or ErrKeyExists.
func (s *Store) Create(ctx context.Context, key string, value []byte) (*KeyValue, error) {
	ctx, cancel := context.WithTimeout(ctx, DefaultRequestTimeout)
	defer cancel()
	opts, err := s.leases.putOptions(ctx, key)
	if err != nil {
		return nil, err
	}
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(value), opts...)).
		Commit()
	if err != nil {
		return nil, fmt.Errorf("failed to create %q: %w", key, err)
	}
	if !resp.Succeeded {
		return nil, ErrKeyExists
	}
	rev := resp.Header.Revision
	return &KeyValue{Key: key, Value: value, CreateRevision: rev, ModRevision: rev}, nil
}

// read runs a range read: serializable when Config.SerializableReads is
// set, but never older than what the feed has handed to watchers. etcd
// gives a write's events to its watchers (the feed) before the write's
// revision becomes readable on its member, so a client that reads at once
// on a watch event (the garbage collector looking up an owner it just saw
// deleted, the CRD loop reading a CRD it just saw created) could read the
// state before the event. A serializable read older than the feed's
// revision is done again linearizably, which waits for the write to apply.
func (s *Store) read(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	if !s.cfg.SerializableReads {
		return s.client.Get(ctx, key, opts...)
	}
	seen := s.Revision()
	resp, err := s.client.Get(ctx, key, append([]clientv3.OpOption{clientv3.WithSerializable()}, opts...)...)
	if err != nil || resp.Header.Revision >= seen {
		return resp, err
	}
	return s.client.Get(ctx, key, opts...)
}

// Get reads one key, or returns ErrNotFound.
func (s *Store) Get(ctx context.Context, key string) (*KeyValue, error) {
	ctx, cancel := context.WithTimeout(ctx, DefaultRequestTimeout)
	defer cancel()
	resp, err := s.read(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("failed to get %q: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, ErrNotFound
	}
	kv := resp.Kvs[0]
	return &KeyValue{Key: key, Value: kv.Value, CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision}, nil
}

// ListOptions narrows a List.
type ListOptions struct {
	// Revision reads the keys as of that revision (0: the newest).
	Revision int64
	// Limit caps the number of items (0: no cap).
	Limit int64
	// StartKey continues a paginated list at this key (inclusive).
	StartKey string
}

// ListResult is one page of a List.
type ListResult struct {
	Items []KeyValue
	// Revision is the etcd revision the page was read at.
	Revision int64
	// More is true when keys remain after the page.
	More bool
	// Remaining counts the keys after the page.
	Remaining int64
}

// List reads the keys under prefix in key order.
func (s *Store) List(ctx context.Context, prefix string, opts ListOptions) (*ListResult, error) {
	ctx, cancel := context.WithTimeout(ctx, DefaultRequestTimeout)
	defer cancel()
	start := prefix
	if opts.StartKey != "" {
		if !strings.HasPrefix(opts.StartKey, prefix) {
			return nil, fmt.Errorf("continue key %q is outside %q", opts.StartKey, prefix)
		}
		start = opts.StartKey
	}
	ops := []clientv3.OpOption{clientv3.WithRange(clientv3.GetPrefixRangeEnd(prefix))}
	if opts.Revision > 0 {
		ops = append(ops, clientv3.WithRev(opts.Revision))
	}
	if opts.Limit > 0 {
		ops = append(ops, clientv3.WithLimit(opts.Limit))
	}
	resp, err := s.read(ctx, start, ops...)
	if err != nil {
		if errors.Is(err, rpctypes.ErrCompacted) {
			return nil, ErrCompacted
		}
		if errors.Is(err, rpctypes.ErrFutureRev) {
			return nil, ErrFutureRevision
		}
		return nil, fmt.Errorf("failed to list %q: %w", prefix, err)
	}
	res := &ListResult{Revision: resp.Header.Revision, More: resp.More}
	if opts.Revision > 0 {
		res.Revision = opts.Revision
	}
	res.Items = make([]KeyValue, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		res.Items = append(res.Items, KeyValue{Key: string(kv.Key), Value: kv.Value, CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision})
	}
	if resp.More {
		res.Remaining = resp.Count - int64(len(resp.Kvs))
	}
	return res, nil
}

// Update writes key only if its ModRevision is expectedRevision. It returns
// ErrNotFound when the key is gone and ErrConflict when it changed.
func (s *Store) Update(ctx context.Context, key string, value []byte, expectedRevision int64) (*KeyValue, error) {
	ctx, cancel := context.WithTimeout(ctx, DefaultRequestTimeout)
	defer cancel()
	// A key with a time to live gets it anew on every write, as Events
	// do in kube-apiserver.
	opts, err := s.leases.putOptions(ctx, key)
	if err != nil {
		return nil, err
	}
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", expectedRevision)).
		Then(clientv3.OpPut(key, string(value), opts...)).
		Else(clientv3.OpGet(key, clientv3.WithKeysOnly())).
		Commit()
	if err != nil {
		return nil, fmt.Errorf("failed to update %q: %w", key, err)
	}
	if !resp.Succeeded {
		if len(resp.Responses) == 0 || len(resp.Responses[0].GetResponseRange().Kvs) == 0 {
			return nil, ErrNotFound
		}
		return nil, ErrConflict
	}
	return &KeyValue{Key: key, Value: value, ModRevision: resp.Header.Revision}, nil
}

// GuaranteedUpdate reads key, lets tryUpdate compute the new value from the
// current one, and writes it with compare-and-swap, retrying when another
// writer got there first. tryUpdate's error stops the loop and is returned
// as is. A nil value from tryUpdate means "no change" and nothing is written.
func (s *Store) GuaranteedUpdate(ctx context.Context, key string, tryUpdate func(current *KeyValue) ([]byte, error)) (*KeyValue, error) {
	for range maxUpdateRetries {
		cur, err := s.Get(ctx, key)
		if err != nil {
			return nil, err
		}
		next, err := tryUpdate(cur)
		if err != nil {
			return nil, err
		}
		if next == nil {
			return cur, nil
		}
		kv, err := s.Update(ctx, key, next, cur.ModRevision)
		if errors.Is(err, ErrConflict) {
			continue
		}
		return kv, err
	}
	return nil, fmt.Errorf("failed to update %q: %w after %d attempts", key, ErrConflict, maxUpdateRetries)
}

// Delete removes key if its ModRevision is expectedRevision (0: any). It
// returns the deleted KeyValue and the revision of the deletion.
func (s *Store) Delete(ctx context.Context, key string, expectedRevision int64) (*KeyValue, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, DefaultRequestTimeout)
	defer cancel()
	cmp := clientv3.Compare(clientv3.CreateRevision(key), ">", 0)
	if expectedRevision > 0 {
		cmp = clientv3.Compare(clientv3.ModRevision(key), "=", expectedRevision)
	}
	resp, err := s.client.Txn(ctx).
		If(cmp).
		Then(clientv3.OpDelete(key, clientv3.WithPrevKV())).
		Else(clientv3.OpGet(key, clientv3.WithKeysOnly())).
		Commit()
	if err != nil {
		return nil, 0, fmt.Errorf("failed to delete %q: %w", key, err)
	}
	if !resp.Succeeded {
		if len(resp.Responses) == 0 || len(resp.Responses[0].GetResponseRange().Kvs) == 0 {
			return nil, 0, ErrNotFound
		}
		return nil, 0, ErrConflict
	}
	del := resp.Responses[0].GetResponseDeleteRange()
	if del == nil || len(del.PrevKvs) == 0 {
		return nil, 0, ErrNotFound
	}
	kv := del.PrevKvs[0]
	return &KeyValue{Key: key, Value: kv.Value, CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision}, resp.Header.Revision, nil
}

// Compact discards etcd history before rev.
func (s *Store) Compact(ctx context.Context, rev int64) error {
	ctx, cancel := context.WithTimeout(ctx, DefaultRequestTimeout)
	defer cancel()
	if _, err := s.client.Compact(ctx, rev); err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		return fmt.Errorf("failed to compact at revision %d: %w", rev, err)
	}
	s.forgetHistory(rev)
	return nil
}

// forgetHistory drops the in-memory events at or before a compacted
// revision, so that a watch from before it fails with ErrCompacted as it
// would against etcd.
func (s *Store) forgetHistory(rev int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rev <= s.historyFrom {
		return
	}
	i := 0
	for i < len(s.history) && s.history[i].Revision <= rev {
		i++
	}
	s.history = append(s.history[:0:0], s.history[i:]...)
	s.historyFrom = rev
}
