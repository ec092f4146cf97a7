package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// watcher is one subscriber of the store's feed.
type watcher struct {
	prefix string
	// index, when set, is the prefix of the indexer (SetIndexer) whose
	// value must be value before or after an event for the watcher to get
	// it; prefix is under it.
	index string
	value string
	ch    chan Event
	// closed is set under Store.mu once the watcher is closed (its channel
	// closes then, or once its drain goroutine stops).
	closed bool
	// overflow holds, oldest first, the events that found ch full, while
	// draining: a drain goroutine takes them in batches and moves them into
	// ch, and every later event queues behind them. inFlight counts the
	// events of its current batch not yet in ch. limit is how many may wait
	// (overflow and inFlight) before the watcher counts as too slow and is
	// closed.
	overflow []Event
	draining bool
	inFlight atomic.Int64
	limit    int
	// quit tells the drain goroutine that the watcher was closed.
	quit chan struct{}
}

// watcherChanSize is the channel between the fan-out and one watcher; the
// events that do not fit wait in the watcher's overflow. An idle watcher
// (a node agent's, a tempo gate's) thus holds a few events' worth of
// memory, not Config.WatcherBuffer's.
const watcherChanSize = 16

func newWatcher(prefix string, limit int) *watcher {
	return &watcher{prefix: prefix, ch: make(chan Event, watcherChanSize), limit: limit, quit: make(chan struct{})}
}

// watcherGroup is the watchers of one prefix: those that get every event
// under it, and the indexed ones by index and value.
type watcherGroup struct {
	prefix  string
	all     map[*watcher]struct{}
	indexed map[string]map[string]map[*watcher]struct{} // index → value → watchers
	size    int
}

// addWatcher registers w with the feed; s.mu must be held.
func (s *Store) addWatcher(w *watcher) {
	s.watchers[w] = struct{}{}
	g := s.groups[w.prefix]
	if g == nil {
		g = &watcherGroup{prefix: w.prefix, all: map[*watcher]struct{}{}}
		s.groups[w.prefix] = g
	}
	g.size++
	if w.index == "" {
		g.all[w] = struct{}{}
		return
	}
	if g.indexed == nil {
		g.indexed = map[string]map[string]map[*watcher]struct{}{}
	}
	byValue := g.indexed[w.index]
	if byValue == nil {
		byValue = map[string]map[*watcher]struct{}{}
		g.indexed[w.index] = byValue
	}
	set := byValue[w.value]
	if set == nil {
		set = map[*watcher]struct{}{}
		byValue[w.value] = set
	}
	set[w] = struct{}{}
}

// removeWatcher unregisters w; s.mu must be held.
func (s *Store) removeWatcher(w *watcher) {
	if _, ok := s.watchers[w]; !ok {
		return
	}
	delete(s.watchers, w)
	g := s.groups[w.prefix]
	if g == nil {
		return
	}
	if w.index == "" {
		delete(g.all, w)
	} else if byValue := g.indexed[w.index]; byValue != nil {
		if set := byValue[w.value]; set != nil {
			delete(set, w)
			if len(set) == 0 {
				delete(byValue, w.value)
			}
		}
		if len(byValue) == 0 {
			delete(g.indexed, w.index)
		}
	}
	if g.size--; g.size == 0 {
		delete(s.groups, w.prefix)
	}
}

// Run opens the store's single etcd watch and fans its events out until ctx
// ends. It also compacts old revisions every CompactionInterval. Ready is
// closed once the watch is open.
func (s *Store) Run(ctx context.Context) error {
	rev, err := s.currentRevision(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.rev = rev
	s.historyFrom = rev
	s.mu.Unlock()
	close(s.ready)
	s.log.Debug("storage watch open", "prefix", s.cfg.Prefix, "revision", rev)

	if s.cfg.CompactionInterval > 0 {
		go s.compactLoop(ctx)
	}
	defer s.closeAll()
	for ctx.Err() == nil {
		from := s.Revision() + 1
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		var wch clientv3.WatchChan
		if s.cfg.Watch != nil {
			wch = s.cfg.Watch(wctx, s.cfg.Prefix, from)
		} else {
			wch = s.client.Watch(wctx, s.cfg.Prefix, clientv3.WithPrefix(), clientv3.WithRev(from), clientv3.WithPrevKV(), clientv3.WithProgressNotify())
		}
		err := s.feed(wch)
		cancel()
		if ctx.Err() != nil {
			break
		}
		if errors.Is(err, rpctypes.ErrCompacted) {
			// The feed fell behind compaction: events were lost, so every
			// watcher must relist. Restart from the current revision.
			s.log.Warn("storage watch fell behind compaction; closing watchers", "from", from)
			rev, rerr := s.currentRevision(ctx)
			if rerr != nil {
				return rerr
			}
			s.resetHistory(rev)
			continue
		}
		s.log.Warn("storage watch ended; reopening", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	return nil
}

func (s *Store) currentRevision(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, DefaultRequestTimeout)
	defer cancel()
	resp, err := s.client.Get(ctx, s.cfg.Prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("failed to read the current etcd revision: %w", err)
	}
	return resp.Header.Revision, nil
}

// feed delivers one etcd watch's responses until it ends.
func (s *Store) feed(wch clientv3.WatchChan) error {
	for resp := range wch {
		if err := resp.Err(); err != nil {
			return err
		}
		events := make([]Event, 0, len(resp.Events))
		for _, ev := range resp.Events {
			e := convert(ev)
			e.Memo = &Memo{}
			events = append(events, e)
		}
		now := time.Now()
		s.mu.Lock()
		for i, ev := range resp.Events {
			s.noteLatest(&events[i], ev.Kv.CreateRevision, now)
		}
		s.mu.Unlock()
		s.publish(events, readUpTo(resp))
	}
	return errors.New("etcd watch channel closed")
}

// readUpTo is the revision up to which the feed has seen every change once
// it has resp. etcd catches a watcher that fell behind up in batches of at
// most 1,000 revisions, each with the store's current revision in its
// header, so a response's events, not its header, say how far the feed has
// read; only a response without events (a progress notification, which
// etcd sends to a caught-up watcher only) vouches for its header. As
// kube-apiserver's watch cache: it takes a header's revision from progress
// notifications only.
func readUpTo(resp clientv3.WatchResponse) int64 {
	if n := len(resp.Events); n > 0 {
		return resp.Events[n-1].Kv.ModRevision
	}
	return resp.Header.Revision
}

func convert(ev *clientv3.Event) Event {
	e := Event{Key: string(ev.Kv.Key), Revision: ev.Kv.ModRevision}
	if ev.PrevKv != nil {
		e.PrevValue, e.PrevRevision = ev.PrevKv.Value, ev.PrevKv.ModRevision
	}
	if ev.Type == mvccpb.DELETE {
		e.Type = EventDelete
		e.Value = e.PrevValue
	} else {
		e.Type = EventPut
		e.Value = ev.Kv.Value
		e.Created = ev.Kv.CreateRevision == ev.Kv.ModRevision
	}
	return e
}

// publish appends events to the history and hands them to every matching
// watcher, and notes that the feed has seen every change up to readTo. A
// watcher whose queue is full is closed: it resumes from the last revision
// it saw, as a Kubernetes client does after its watch ends.
func (s *Store) publish(events []Event, readTo int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ev := range events {
		// The history keeps the raw event only: a memo's decoded objects
		// would stay alive as long as the ring holds them.
		raw := ev
		raw.Memo, raw.PrevMemo = nil, nil
		s.history = append(s.history, raw)
		if ev.Memo == nil {
			ev.Memo = &Memo{}
		}
		var indexed map[string][2]string // index values by indexer
		for _, g := range s.groups {
			if !strings.HasPrefix(ev.Key, g.prefix) {
				continue
			}
			for w := range g.all {
				s.send(w, ev)
			}
			for index, byValue := range g.indexed {
				vals, ok := indexed[index]
				if !ok {
					cur, prev := s.indexers[index](ev)
					vals = [2]string{cur, prev}
					if indexed == nil {
						indexed = map[string][2]string{}
					}
					indexed[index] = vals
				}
				for w := range byValue[vals[0]] {
					s.send(w, ev)
				}
				if vals[1] != vals[0] {
					for w := range byValue[vals[1]] {
						s.send(w, ev)
					}
				}
			}
		}
	}
	// The ring may hold up to twice History events; trimming back to
	// History then costs one copy per History events, not one per event.
	if len(s.history) > 2*s.cfg.History {
		over := len(s.history) - s.cfg.History
		s.historyFrom = s.history[over-1].Revision
		n := copy(s.history, s.history[over:])
		clear(s.history[n:])
		s.history = s.history[:n]
	}
	if readTo > s.rev {
		s.rev = readTo
		close(s.revChanged)
		s.revChanged = make(chan struct{})
	}
}

// send hands ev to w: into its channel, or, when that is full or events
// already wait, into its overflow, closing w when more than its limit
// wait; s.mu must be held. (Closing removes w from the maps being ranged
// over, which Go allows.)
func (s *Store) send(w *watcher, ev Event) {
	if w.closed {
		return
	}
	if !w.draining {
		select {
		case w.ch <- ev:
			return
		default:
		}
		w.draining = true
		go s.drain(w)
	}
	if len(w.overflow)+int(w.inFlight.Load()) >= w.limit {
		s.closeWatcher(w)
		return
	}
	w.overflow = append(w.overflow, ev)
}

// drain moves w's overflow into its channel, in order, until none is left
// or w is closed; it then closes the channel itself, being its only sender.
func (s *Store) drain(w *watcher) {
	for {
		s.mu.Lock()
		if w.closed {
			s.mu.Unlock()
			close(w.ch)
			return
		}
		batch := w.overflow
		w.overflow = nil
		if len(batch) == 0 {
			w.draining = false
			s.mu.Unlock()
			return
		}
		w.inFlight.Store(int64(len(batch)))
		s.mu.Unlock()
		for _, ev := range batch {
			select {
			case w.ch <- ev:
				w.inFlight.Add(-1)
			case <-w.quit:
				close(w.ch)
				return
			}
		}
	}
}

// waitForRevision waits until the feed has seen rev, for at most
// futureRevisionWait: a client that lists and then watches from the list's
// revision may be a little ahead of the feed.
func (s *Store) waitForRevision(ctx context.Context, rev int64) error {
	deadline := time.NewTimer(futureRevisionWait)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		cur, changed := s.rev, s.revChanged
		s.mu.Unlock()
		if cur >= rev {
			return nil
		}
		select {
		case <-changed:
		case <-deadline.C:
			return ErrFutureRevision
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// closeWatcher closes w; s.mu must be held.
func (s *Store) closeWatcher(w *watcher) {
	if w.closed {
		return
	}
	w.closed = true
	w.overflow = nil
	if w.draining {
		close(w.quit) // the drain goroutine closes w.ch
	} else {
		close(w.ch)
	}
	s.removeWatcher(w)
}

func (s *Store) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.watchers {
		s.closeWatcher(w)
	}
}

func (s *Store) resetHistory(rev int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.watchers {
		s.closeWatcher(w)
	}
	s.history = nil
	s.historyFrom = rev
	s.rev = rev
	clear(s.latest)
	s.latestOrder = nil
	s.memoOrder, s.memoHead = nil, 0
}

// Watch streams the changes under prefix with a revision greater than
// fromRevision (0: from now). The channel closes when ctx ends, when the
// watcher falls too far behind, or when the store stops; the caller resumes
// from the last revision it received. A fromRevision older than etcd keeps
// returns ErrCompacted; one newer than the store has seen, ErrFutureRevision.
func (s *Store) Watch(ctx context.Context, prefix string, fromRevision int64) (<-chan Event, error) {
	return s.watch(ctx, prefix, fromRevision, "", "")
}

// WatchIndexed is Watch for a watcher that only needs the events under
// index (a prefix given to SetIndexer) whose index value is value before or
// after the change. The events it is spared are those a selector on the
// same value would drop; events replayed from history are not narrowed.
// Without an indexer for index it is Watch.
func (s *Store) WatchIndexed(ctx context.Context, prefix string, fromRevision int64, index, value string) (<-chan Event, error) {
	return s.watch(ctx, prefix, fromRevision, index, value)
}

func (s *Store) watch(ctx context.Context, prefix string, fromRevision int64, index, value string) (<-chan Event, error) {
	select {
	case <-s.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if err := s.waitForRevision(ctx, fromRevision); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if fromRevision == 0 || fromRevision >= s.historyFrom {
		var backlog []Event
		if fromRevision > 0 {
			for _, ev := range s.history {
				if ev.Revision > fromRevision && strings.HasPrefix(ev.Key, prefix) {
					backlog = append(backlog, ev)
				}
			}
		}
		// The backlog may wait in full, and WatcherBuffer more behind it.
		w := newWatcher(prefix, len(backlog)+s.cfg.WatcherBuffer)
		if _, ok := s.indexers[index]; ok && strings.HasPrefix(prefix, index) {
			w.index, w.value = index, value
		}
		for _, ev := range backlog {
			s.send(w, ev)
		}
		s.addWatcher(w)
		s.mu.Unlock()
		go func() {
			<-ctx.Done()
			s.mu.Lock()
			s.closeWatcher(w)
			s.mu.Unlock()
		}()
		return w.ch, nil
	}
	s.mu.Unlock()
	return s.watchFromEtcd(ctx, prefix, fromRevision)
}

// watchFromEtcd serves a watcher whose start point is older than the
// in-memory history straight from etcd's own history.
func (s *Store) watchFromEtcd(ctx context.Context, prefix string, fromRevision int64) (<-chan Event, error) {
	// A read at the start revision tells whether etcd still has it.
	gctx, cancel := context.WithTimeout(ctx, DefaultRequestTimeout)
	_, err := s.client.Get(gctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(fromRevision), clientv3.WithLimit(1), clientv3.WithKeysOnly())
	cancel()
	if errors.Is(err, rpctypes.ErrCompacted) {
		return nil, ErrCompacted
	}
	if err != nil {
		return nil, fmt.Errorf("failed to watch %q from revision %d: %w", prefix, fromRevision, err)
	}
	out := make(chan Event, s.cfg.WatcherBuffer)
	wch := s.client.Watch(clientv3.WithRequireLeader(ctx), prefix, clientv3.WithPrefix(), clientv3.WithRev(fromRevision+1), clientv3.WithPrevKV())
	go func() {
		defer close(out)
		for resp := range wch {
			if resp.Err() != nil {
				return
			}
			for _, ev := range resp.Events {
				select {
				case out <- convert(ev):
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out, nil
}

// compactLoop keeps at least CompactionInterval of history, as
// kube-apiserver's compactor does, and no more than a step beyond it: every
// step (a tenth of the interval) it notes the revision, and compacts to
// the newest revision noted at least an interval ago. kube-apiserver
// compacts once an interval to the revision of the interval before, so a
// revision can live for up to two intervals there; here it goes within
// one interval and a step (a list's continue token expires as the
// conformance spec that waits two intervals for it expects, whenever the
// spec starts).
func (s *Store) compactLoop(ctx context.Context) {
	step := max(s.cfg.CompactionInterval/10, time.Second)
	t := time.NewTicker(step)
	defer t.Stop()
	type mark struct {
		at  time.Time
		rev int64
	}
	var marks []mark
	var compacted int64
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			marks = append(marks, mark{now, s.Revision()})
			target := int64(0)
			for len(marks) > 0 && now.Sub(marks[0].at) >= s.cfg.CompactionInterval {
				target = marks[0].rev
				marks = marks[1:]
			}
			if target <= compacted {
				continue
			}
			if err := s.Compact(ctx, target); err != nil {
				s.log.Warn("compaction failed", "revision", target, "err", err)
				continue
			}
			compacted = target
			s.log.Debug("compacted etcd", "revision", target)
		}
	}
}

// Newest returns the keys under prefix most recently written as of
// revision rev (0: the newest the feed has seen), newest first, at most n
// of them: what a List sorted by ModRevision would begin with, read from
// the watch's history instead of every key under the prefix (a busy
// cluster keeps an hour of Events). ok is false when the history does not
// reach back far enough to know, fewer than n of the keys having changed
// since it starts; the caller lists then. Items carry Key, Value and
// ModRevision.
func (s *Store) Newest(ctx context.Context, prefix string, n int, rev int64) (items []KeyValue, ok bool, err error) {
	if rev > 0 {
		if err := s.waitForRevision(ctx, rev); err != nil {
			return nil, false, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	for i := len(s.history) - 1; i >= 0 && len(items) < n; i-- {
		ev := &s.history[i]
		if rev > 0 && ev.Revision > rev || !strings.HasPrefix(ev.Key, prefix) || seen[ev.Key] {
			continue
		}
		// A key's newest change decides: a deleted key is not listed.
		seen[ev.Key] = true
		if ev.Type == EventPut {
			items = append(items, KeyValue{Key: ev.Key, Value: ev.Value, ModRevision: ev.Revision})
		}
	}
	return items, len(items) == n, nil
}
