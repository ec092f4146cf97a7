package kube

import (
	"cmp"
	"slices"
	"strings"
	"sync"

	"github.com/glassplane/glassplane/web/source"
)

// mirror is the objects of every resource the store's own watches
// follow, kept in memory as client-go's informers and kube-apiserver's
// watch cache keep them: each resource's watch starts from a list of it,
// and each change it sends is applied here before it is added to the
// backlog, under mu, so that a read of the mirror at the store's
// revision R and a watch from R served from the backlog neither miss nor
// repeat a change the store had seen. Get, List and Newest read the
// mirror when it holds every resource they concern, and the API
// otherwise.
//
// It holds every object's JSON once; the backlog's changes share those
// bytes (a value the mirror replaced stays in memory while the backlog
// keeps the change that carried it), and so do the KeyValues the reads
// return: their Values must not be modified.
type mirror struct {
	feed *feed

	mu sync.RWMutex // guards parts and their fields; held while a change goes to the backlog
	// parts holds each resource's part by its storage segment.
	parts map[string]*mirrored
}

// mirrored is one resource's part of the mirror.
type mirrored struct {
	res   *mapped
	state partState
	// objects holds the resource's objects by key while synced.
	objects map[string]source.KeyValue
	// changed is the revision of the newest change applied, or of the
	// list that filled the part: the part is the resource as of any
	// revision from changed to the store's.
	changed int64
}

// partState says whether a part answers reads.
type partState int

const (
	// unmirrored: being listed, or the store may list the resource but not
	// watch it; reads go to the API.
	unmirrored partState = iota
	// synced: the part holds the resource's objects.
	synced
	// unlisted: the store may not list the resource (or it is no longer
	// served). A read of it alone goes to the API (which says why); one of
	// many resources leaves it out, as the API path does.
	unlisted
)

func newMirror(f *feed) *mirror { return &mirror{feed: f, parts: map[string]*mirrored{}} }

// open starts a part for res, unmirrored, in place of the part its
// storage segment had.
func (m *mirror) open(res *mapped) *mirrored {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := &mirrored{res: res}
	m.parts[res.Storage] = p
	return p
}

// current reports whether p is still its resource's part; m.mu must be
// held.
func (m *mirror) current(p *mirrored) bool { return m.parts[p.res.Storage] == p }

// retain drops the parts of resources that res no longer maps to their
// storage segment (gone from discovery, or served at another version).
func (m *mirror) retain(res *resourceMap) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for storage, p := range m.parts {
		if now, ok := res.byStorage[storage]; !ok || *now != *p.res {
			delete(m.parts, storage)
		}
	}
}

// relisting marks p unmirrored while its resource is listed again; it
// keeps its objects for load to compare the list with.
func (m *mirror) relisting(p *mirrored) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p.state = unmirrored
}

// refused drops p's objects: the store may not list its resource (listed
// is false) or may list but not watch it.
func (m *mirror) refused(p *mirrored, listed bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p.objects, p.state = nil, unmirrored
	if !listed {
		p.state = unlisted
	}
}

// stop drops every part: with the store's watches stopped, reads go to
// the API.
func (m *mirror) stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.parts)
}

// record applies c, a change that p's watch sent, to p and hands it to
// the backlog.
func (m *mirror) record(p *mirrored, c change) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.current(p) && p.state == synced {
		switch c.Type {
		case source.EventDelete:
			delete(p.objects, c.Key)
		default:
			p.objects[c.Key] = source.KeyValue{Key: c.Key, Value: c.Value, ModRevision: c.modRevision}
		}
		p.changed = max(p.changed, c.Revision)
	}
	m.feed.add(c)
}

// progress records that the store's watches reached revision rev (a
// bookmark).
func (m *mirror) progress(rev int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.feed.progress(rev)
}

// load fills p with items, the objects a list of its resource read at
// revision rev, and marks it synced. With emit it hands the backlog how
// the objects differ from those p held (all of them when it held none),
// in key order, as changes at rev: a put of each object new or changed, a
// delete of each gone (with the value p held). It returns those changes.
func (m *mirror) load(p *mirrored, items []source.KeyValue, rev int64, emit bool) []change {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.current(p) {
		return nil
	}
	objects := make(map[string]source.KeyValue, len(items))
	var changes []change
	for _, kv := range items {
		objects[kv.Key] = kv
		if old, ok := p.objects[kv.Key]; emit && (!ok || old.ModRevision != kv.ModRevision) {
			changes = append(changes, change{
				Event:       source.Event{Type: source.EventPut, Key: kv.Key, Value: kv.Value, Revision: rev, Created: !ok},
				modRevision: kv.ModRevision,
			})
		}
	}
	if emit {
		for key, old := range p.objects {
			if _, ok := objects[key]; !ok {
				changes = append(changes, change{
					Event:       source.Event{Type: source.EventDelete, Key: key, Value: old.Value, Revision: rev},
					modRevision: rev,
				})
			}
		}
		slices.SortFunc(changes, func(a, b change) int { return strings.Compare(a.Key, b.Key) })
	}
	for _, c := range changes {
		m.feed.add(c)
	}
	m.feed.progress(rev)
	p.objects, p.state, p.changed = objects, synced, rev
	return changes
}

// readable returns the part to read of t's resource; ok is false when
// the read must go to the API. A part that is unlisted is returned
// (with ok) only when many resources are read (alone is false).
func (m *mirror) readable(t target, alone bool) (p *mirrored, ok bool) {
	p = m.parts[t.res.Storage]
	switch {
	case p == nil || *p.res != *t.res:
		return nil, false
	case p.state == synced:
		return p, true
	case p.state == unlisted && !alone:
		return p, true
	}
	return nil, false
}

// list answers a List of targets (the resources under prefix) from the
// mirror, in key order: now, at the store's revision, or at revision
// opts.Revision when no resource under prefix changed after it and the
// store has reached it. ok is false when it cannot.
func (m *mirror) list(targets []target, prefix string, opts source.ListOptions) (*source.ListResult, bool) {
	m.mu.RLock()
	out := &source.ListResult{Revision: m.feed.revision()}
	if out.Revision == 0 || opts.Revision > out.Revision {
		m.mu.RUnlock()
		return nil, false
	}
	if opts.Revision > 0 {
		out.Revision = opts.Revision
	}
	for _, t := range targets {
		p, ok := m.readable(t, len(targets) == 1)
		if !ok || (opts.Revision > 0 && p.changed > opts.Revision) {
			m.mu.RUnlock()
			return nil, false
		}
		for key, kv := range p.objects {
			if strings.HasPrefix(key, prefix) {
				out.Items = append(out.Items, kv)
			}
		}
	}
	m.mu.RUnlock()
	slices.SortFunc(out.Items, func(a, b source.KeyValue) int { return strings.Compare(a.Key, b.Key) })
	if opts.Limit > 0 && int64(len(out.Items)) > opts.Limit {
		out.Items = out.Items[:opts.Limit]
	}
	return out, true
}

// get reads key, an object of res, from the mirror: found says whether
// it is there; ok is false when the mirror does not hold res.
func (m *mirror) get(res *mapped, key string) (kv source.KeyValue, found, ok bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	p, ok := m.readable(target{res: res}, true)
	if !ok {
		return source.KeyValue{}, false, false
	}
	kv, found = p.objects[key]
	return kv, found, true
}

// newest returns, of the objects under prefix (of targets), the n with
// the newest ModRevision not after rev (0: the store's revision), newest
// first. An object changed after rev is left out: the mirror keeps only
// its present value. ok is false when the mirror does not hold every
// resource under prefix, or rev is newer than the store's.
func (m *mirror) newest(targets []target, prefix string, n int, rev int64) ([]source.KeyValue, bool) {
	if len(targets) == 0 {
		return nil, false
	}
	m.mu.RLock()
	now := m.feed.revision()
	if now == 0 || rev > now {
		m.mu.RUnlock()
		return nil, false
	}
	if rev == 0 {
		rev = now
	}
	var items []source.KeyValue
	for _, t := range targets {
		p, ok := m.readable(t, len(targets) == 1)
		if !ok {
			m.mu.RUnlock()
			return nil, false
		}
		for key, kv := range p.objects {
			if kv.ModRevision <= rev && strings.HasPrefix(key, prefix) {
				items = append(items, kv)
			}
		}
	}
	m.mu.RUnlock()
	slices.SortFunc(items, func(a, b source.KeyValue) int {
		return cmp.Or(cmp.Compare(b.ModRevision, a.ModRevision), strings.Compare(a.Key, b.Key))
	})
	return items[:min(max(n, 0), len(items))], true
}
