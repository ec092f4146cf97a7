package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/glassplane/glassplane/web/source"
)

const (
	// watchFailures is how many times in a row a resource's watch may
	// fail to open before a Watch served apart from the backlog ends (the
	// store's own watches keep trying).
	watchFailures = 5
	// shortWatch is how soon a watch that ends without an event counts as
	// a failure to open.
	shortWatch = time.Second
)

// watchTimeout is the least a resource's watch asks the server to run
// before it ends it; each asks for up to twice that, so that they do not
// all reopen at once. Tests shorten it.
var watchTimeout = 5 * time.Minute

// Watch implements source.Store. A watch from a revision the backlog
// covers (or from now) is served from it; an older one opens a watch per
// resource under prefix from that revision, after asking the API server
// whether it still keeps it. A resource discovered while a watch is open
// (a new CRD's) is listed, its objects sent as creations at the list's
// revision, then watched. Either ends when ctx ends, when a resource's
// watch fell behind the server's compaction, or when the caller reads too
// slowly for the backlog; the caller resumes from the newest revision it
// saw.
func (s *Store) Watch(ctx context.Context, prefix string, from int64) (<-chan source.Event, error) {
	select {
	case <-s.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	covered, _, newest := s.feed.covers(from)
	if from == 0 {
		from, covered = newest, true
	}
	if from > newest {
		// Newer than the store's watches saw: maybe newer than the server.
		if err := s.checkRevision(ctx, from); err != nil {
			return nil, err
		}
	}
	if covered {
		if ch, ok := s.feed.subscribe(ctx, prefix, from); ok {
			return ch, nil
		}
	}
	s.mu.Lock()
	compactedFrom, runCtx := s.compactedFrom, s.runCtx
	s.mu.Unlock()
	if from <= compactedFrom {
		return nil, fmt.Errorf("%w: a watch from revision %d was refused as too old", source.ErrCompacted, compactedFrom)
	}
	if err := s.checkRevision(ctx, from); err != nil {
		return nil, err
	}
	out := make(chan source.Event)
	mctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(runCtx, cancel)
	m := s.newMerger(mctx, cancel, prefix, from, false, func(ctx context.Context, _ *follower, c change) bool {
		if !strings.HasPrefix(c.Key, prefix) {
			return true
		}
		select {
		case out <- c.Event:
			return true
		case <-ctx.Done():
			return false
		}
	})
	go func() {
		m.wait()
		stop()
		close(out)
	}()
	return out, nil
}

// startFeed opens the store's own watch of every resource, each after a
// list of it at revision rev, feeding the mirror and the backlog, until
// ctx ends; the returned channel closes when it has.
func (s *Store) startFeed(ctx context.Context, rev int64) <-chan struct{} {
	s.feed.begin(rev)
	mctx, cancel := context.WithCancel(ctx)
	m := s.newMerger(mctx, cancel, source.Root, rev, true, func(_ context.Context, f *follower, c change) bool {
		s.mirror.record(f.part, c)
		s.notice(c)
		return true
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.wait()
		s.mirror.stop()
		s.feed.stop()
	}()
	return done
}

// notice asks Run to read discovery again when c is a change to a CRD or
// an APIService: the resources may have changed too.
func (s *Store) notice(c change) {
	if strings.HasPrefix(c.Key, source.Prefix(storageResources[crdResource.GroupResource()], "")) ||
		strings.HasPrefix(c.Key, source.Prefix(storageResources[apiServiceResource.GroupResource()], "")) {
		select {
		case s.refresh <- struct{}{}:
		default:
		}
	}
}

// merger runs one watch per resource under a prefix and delivers their
// changes, adding and removing resources as discovery finds them.
type merger struct {
	s      *Store
	prefix string
	// from is the revision the resources known at the start watch from;
	// those discovered later are listed first, then watched.
	from int64
	// feed is set for the store's own watches, which fill the mirror,
	// never give up, and list a resource again when its watch fell behind
	// compaction.
	feed    bool
	deliver func(context.Context, *follower, change) bool
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu sync.Mutex // guards the fields below
	// running holds the running followers by resource.
	running map[schema.GroupVersionResource]*follower
	closed  bool
}

// follower is one resource's watch within a merger.
type follower struct {
	t      target
	cancel context.CancelFunc
	// part is the resource's part of the mirror, for the feed's followers.
	part *mirrored
}

// newMerger starts watching the resources under prefix from revision
// from and registers for discovery's changes; it stops when ctx ends
// (cancel ends ctx).
func (s *Store) newMerger(ctx context.Context, cancel context.CancelFunc, prefix string, from int64, feed bool, deliver func(context.Context, *follower, change) bool) *merger {
	m := &merger{
		s: s, prefix: prefix, from: from, feed: feed, deliver: deliver, ctx: ctx, cancel: cancel,
		running: map[schema.GroupVersionResource]*follower{},
	}
	s.mu.Lock()
	s.mergers[m] = struct{}{}
	res := s.res
	s.mu.Unlock()
	if res != nil {
		m.start(res, true)
	}
	return m
}

// wait blocks until the merger's context ends and every follower is done,
// then unregisters it.
func (m *merger) wait() {
	<-m.ctx.Done()
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.wg.Wait()
	m.s.mu.Lock()
	delete(m.s.mergers, m)
	m.s.mu.Unlock()
}

// sync follows the resources of a new discovery: it stops the watches of
// resources no longer served (the feed's drops their parts of the
// mirror) and lists then watches the new ones.
func (m *merger) sync(res *resourceMap) { m.start(res, false) }

func (m *merger) start(res *resourceMap, initial bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	want := map[schema.GroupVersionResource]bool{}
	for _, t := range res.under(m.prefix) {
		want[t.res.GVR] = true
		if _, ok := m.running[t.res.GVR]; ok {
			continue
		}
		ctx, cancel := context.WithCancel(m.ctx)
		f := &follower{t: t, cancel: cancel}
		if m.feed {
			f.part = m.s.mirror.open(t.res)
		}
		m.running[t.res.GVR] = f
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			defer cancel()
			m.follow(ctx, f, initial)
			m.mu.Lock()
			if m.running[t.res.GVR] == f {
				delete(m.running, t.res.GVR)
			}
			m.mu.Unlock()
		}()
	}
	for gvr, f := range m.running {
		if !want[gvr] {
			f.cancel()
			delete(m.running, gvr)
		}
	}
	if m.feed {
		m.s.mirror.retain(res)
	}
}

// follow watches one resource. A follower of the feed first fills the
// resource's part of the mirror with a list (fill); another watches from
// the merger's revision when the resource was known at the start, else
// after a list whose objects it delivers as puts. A watch the server ends
// is reopened from the last revision seen; the feed's, when that fell
// behind compaction, after a list again.
func (m *merger) follow(ctx context.Context, f *follower, initial bool) {
	t, log := f.t, m.s.log.With("resource", f.t.res.GVR.String())
	rev := m.from
	var err error
	switch {
	case m.feed:
		rev, err = m.fill(ctx, f, initial)
	case !initial:
		rev, err = m.listAll(ctx, f)
	}
	if err != nil {
		m.ended(ctx, t, err)
		return
	}
	failures := 0
	for ctx.Err() == nil {
		began := time.Now()
		next, events, err := m.watchOnce(ctx, f, rev)
		rev = next
		switch {
		case ctx.Err() != nil:
			return
		case err == nil && (events > 0 || time.Since(began) > shortWatch):
			failures = 0
			continue
		case err == nil:
			err = errors.New("the watch ended at once")
		case compacted(err):
			if !m.feed {
				m.s.noteCompacted(rev)
				m.ended(ctx, t, err)
				return
			}
			// Changes were lost: list the resource again, as an
			// informer does, and hand the backlog what differs.
			log.Warn("a watch fell behind the API server's compaction; listing the resource again", "revision", rev)
			if rev, err = m.fill(ctx, f, false); err != nil {
				m.ended(ctx, t, err)
				return
			}
			continue
		case forbiddenOrGone(err):
			if m.feed {
				m.s.mirror.refused(f.part, true)
			}
			m.ended(ctx, t, err)
			return
		}
		failures++
		if !m.feed && failures >= watchFailures {
			m.ended(ctx, t, err)
			return
		}
		log.Debug("a watch failed; reopening", "revision", rev, "failures", failures, "err", err)
		if !sleep(ctx, backoff(failures)) {
			return
		}
	}
}

// ended handles a follower that stops on its own: a resource the store may
// not read or that is gone is left out (until discovery brings it again);
// any other error ends a merger that is not the feed.
func (m *merger) ended(ctx context.Context, t target, err error) {
	if ctx.Err() != nil {
		return
	}
	if forbiddenOrGone(err) {
		m.s.log.Debug("not watching a resource", "resource", t.res.GVR.String(), "err", err)
		return
	}
	m.s.log.Debug("a watch failed for good; the merged watch ends", "resource", t.res.GVR.String(), "err", err)
	if !m.feed {
		m.cancel()
	}
}

// listAll lists a newly discovered resource and delivers its objects as
// puts (with the list's revision, so that a watch resumed from a revision
// before it keeps them); it returns the list's revision.
func (m *merger) listAll(ctx context.Context, f *follower) (int64, error) {
	return m.retryList(ctx, f, func() (int64, error) {
		items, rev, err := m.s.listTarget(ctx, f.t, m.prefix, 0)
		if err != nil {
			return 0, err
		}
		for _, kv := range items {
			c := change{Event: source.Event{Type: source.EventPut, Key: kv.Key, Value: kv.Value, Revision: rev, Created: true}, modRevision: kv.ModRevision}
			if !m.deliver(ctx, f, c) {
				return 0, ctx.Err()
			}
		}
		return rev, nil
	})
}

// fill lists the resource of f, a follower of the feed, into its part of
// the mirror and returns the revision to watch from. atFrom lists it at
// the merger's revision, where the backlog starts: its objects are no
// change. Otherwise (a resource discovered later, a watch that fell
// behind compaction) it lists it now and hands the backlog how the list
// differs from what the part held, as changes at the list's revision:
// every object for a new resource; for one listed again, a put of each
// object that changed and a delete of each that went while the watch was
// behind (their intermediate values are lost, as an informer's are). An
// atFrom list whose revision was compacted already is listed now.
func (m *merger) fill(ctx context.Context, f *follower, atFrom bool) (int64, error) {
	m.s.mirror.relisting(f.part)
	rev, err := m.retryList(ctx, f, func() (int64, error) {
		var at int64
		if atFrom {
			at = m.from
		}
		items, rev, err := m.s.listTarget(ctx, f.t, m.prefix, at)
		if atFrom && compacted(err) {
			atFrom, at = false, 0
			items, rev, err = m.s.listTarget(ctx, f.t, m.prefix, 0)
		}
		if err != nil {
			return 0, err
		}
		if atFrom {
			rev = m.from
		}
		for _, c := range m.s.mirror.load(f.part, items, rev, !atFrom) {
			m.s.notice(c)
		}
		return rev, nil
	})
	if err != nil && forbiddenOrGone(err) {
		m.s.mirror.refused(f.part, false)
	}
	if err == nil {
		m.s.log.Debug("resource mirrored", "resource", f.t.res.GVR.String(), "revision", rev)
	}
	return rev, err
}

// retryList runs list until it succeeds, ctx ends, the resource may not
// be read or is gone, or, but for the feed, watchFailures attempts failed.
func (m *merger) retryList(ctx context.Context, f *follower, list func() (int64, error)) (int64, error) {
	for attempt := 1; ; attempt++ {
		rev, err := list()
		if err == nil {
			return rev, nil
		}
		if ctx.Err() != nil || forbiddenOrGone(err) || (!m.feed && attempt >= watchFailures) {
			return 0, err
		}
		m.s.log.Debug("failed to list a resource; retrying", "resource", f.t.res.GVR.String(), "err", err)
		if !sleep(ctx, backoff(attempt)) {
			return 0, ctx.Err()
		}
	}
}

// watchOnce runs one watch of t from revision rev until the server ends it
// or ctx ends. It returns the revision to resume from, how many changes it
// delivered and why it ended when it failed.
func (m *merger) watchOnce(ctx context.Context, f *follower, rev int64) (int64, int, error) {
	t := f.t
	timeout := int64((watchTimeout + rand.N(watchTimeout)) / time.Second)
	body, err := openRawWatch(ctx, m.s.raw, t, rev, timeout)
	if err != nil {
		return rev, 0, err
	}
	defer body.Close()
	d := newRawDecoder(body, t.res)
	n := 0
	for {
		typ, c, err := d.next()
		if ctx.Err() != nil {
			return rev, n, nil
		}
		if err == io.EOF {
			return rev, n, nil
		}
		if err != nil {
			return rev, n, err
		}
		if typ == watch.Bookmark {
			if c.modRevision > 0 {
				rev = c.modRevision
				if m.feed {
					m.s.mirror.progress(rev)
				}
			}
			continue
		}
		if !m.deliver(ctx, f, c) {
			return rev, n, nil
		}
		rev = max(rev, c.modRevision)
		n++
	}
}

// noteCompacted records that a watch from revision rev was refused as too
// old, so that a Watch from it or before fails at once with
// source.ErrCompacted rather than opening and ending again.
func (s *Store) noteCompacted(rev int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.compactedFrom = max(s.compactedFrom, rev)
}
