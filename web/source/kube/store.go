package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"golang.org/x/sync/errgroup"

	"github.com/glassplane/glassplane/web/source"
)

const (
	// DefaultDiscoveryInterval is how often the store reads discovery
	// again (it also does on a change to a CRD or an APIService, and on a
	// key of a resource it does not know).
	DefaultDiscoveryInterval = 30 * time.Second
	// DefaultBacklogSize is how many recent changes the store keeps for
	// Newest and for watches that resume from a recent revision.
	DefaultBacklogSize = 10000
	// RequestTimeout bounds each API request but watches.
	RequestTimeout = 60 * time.Second
	// PageSize is the limit of each page of a list.
	PageSize = 500

	// rediscoverAfter is the least time between two discoveries asked for
	// by a key of an unknown resource.
	rediscoverAfter = time.Second
	// quickRetry is how soon discovery is read again after a change to a
	// CRD or an APIService left the resources as they were (a new CRD
	// takes a moment to be served), at most quickRetries times in a row.
	quickRetry   = 200 * time.Millisecond
	quickRetries = 25
	// revisionCacheFor is how long Revision reuses a revision it listed.
	revisionCacheFor = time.Second
	// listWorkers bounds the lists a List of many resources runs at once.
	listWorkers = 8
	// listRestarts is how many times a list at the newest revision starts
	// over when its continue token expires.
	listRestarts = 2
	// defaultQPS and defaultBurst replace client-go's 5 and 10 when the
	// rest.Config sets no rate: the store opens a watch per resource.
	defaultQPS, defaultBurst = 100, 200
)

// Config is what a Store reads and how.
type Config struct {
	// REST is the API server and the identity the store reads as (the
	// dashboard's own). The store needs get, list and watch on what it
	// shows (it mirrors only what it may list and watch, and reads the
	// rest from the API each time), and list on CustomResourceDefinitions
	// to name the keys of custom resources exactly (without it, it guesses
	// from the group).
	REST *rest.Config
	// Logger receives discovery and watch trouble; nil discards it.
	Logger *slog.Logger
	// DiscoveryInterval is DefaultDiscoveryInterval when 0.
	DiscoveryInterval time.Duration
	// BacklogSize is DefaultBacklogSize when 0.
	BacklogSize int
}

// Store is a source.Store that reads the cluster through the Kubernetes
// API: discovery tells it the resources and, from them, the etcd keys
// kube-apiserver (and Glassplane) store their objects under; it lists and
// watches every resource (lists with the dynamic client, watches as raw
// JSON streams) into a mirror of their
// objects that Get, List and Newest read, and streams their changes. It
// needs Run to be running; until a resource is mirrored, reads of it go
// to the API.
type Store struct {
	cfg Config
	log *slog.Logger
	dyn dynamic.Interface
	// raw reads the resources' watch streams (rawwatch.go).
	raw   rest.Interface
	meta  metadata.Interface
	disco discovery.DiscoveryInterface
	feed  *feed
	// mirror holds the objects the feed's watches follow, for reads.
	mirror *mirror
	ready  chan struct{}
	// refresh asks Run to read discovery now.
	refresh chan struct{}
	// discoverMu lets one discovery run at a time.
	discoverMu sync.Mutex

	mu sync.Mutex // guards the fields below
	// res is the newest discovery's resources (nil before the first).
	res           *resourceMap
	discoveredAt  time.Time
	mergers       map[*merger]struct{}
	listedRev     int64
	listedRevAt   time.Time
	runCtx        context.Context
	compactedFrom int64
}

var _ source.Store = (*Store)(nil)

// New returns a store over cfg.REST; Run starts it.
func New(cfg Config) (*Store, error) {
	if cfg.REST == nil {
		return nil, errors.New("a kube store needs a rest.Config")
	}
	if cfg.DiscoveryInterval <= 0 {
		cfg.DiscoveryInterval = DefaultDiscoveryInterval
	}
	if cfg.BacklogSize <= 0 {
		cfg.BacklogSize = DefaultBacklogSize
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	rc := restConfig(cfg.REST)
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("failed to make a dynamic client for %s: %w", rc.Host, err)
	}
	wc := rest.CopyConfig(rc)
	wc.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	raw, err := rest.UnversionedRESTClientFor(wc)
	if err != nil {
		return nil, fmt.Errorf("failed to make a REST client for %s: %w", rc.Host, err)
	}
	meta, err := metadata.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("failed to make a metadata client for %s: %w", rc.Host, err)
	}
	// Discovery takes no context: a timeout bounds it instead.
	dc := rest.CopyConfig(rc)
	dc.Timeout = RequestTimeout
	disco, err := discovery.NewDiscoveryClientForConfig(dc)
	if err != nil {
		return nil, fmt.Errorf("failed to make a discovery client for %s: %w", rc.Host, err)
	}
	f := newFeed(cfg.BacklogSize)
	return &Store{
		cfg: cfg, log: log, dyn: dyn, raw: raw, meta: meta, disco: disco, feed: f, mirror: newMirror(f),
		ready: make(chan struct{}), refresh: make(chan struct{}, 1), mergers: map[*merger]struct{}{},
	}, nil
}

// restConfig copies cfg with a rate fit for a watch per resource when cfg
// sets none.
func restConfig(cfg *rest.Config) *rest.Config {
	rc := rest.CopyConfig(cfg)
	if rc.QPS == 0 && rc.RateLimiter == nil {
		rc.QPS, rc.Burst = defaultQPS, defaultBurst
	}
	return rc
}

// Run reads discovery, starts the list and watch of every resource that
// fill the mirror and feed the backlog and the store's watches, and reads
// discovery again every DiscoveryInterval, until ctx ends. It is called
// once.
func (s *Store) Run(ctx context.Context) error {
	s.mu.Lock()
	s.runCtx = ctx
	s.mu.Unlock()
	for attempt := 1; ; attempt++ {
		_, err := s.rediscover(ctx, true)
		if err == nil {
			break
		}
		s.log.Warn("waiting for the API server's discovery", "attempt", attempt, "err", err)
		if !sleep(ctx, backoff(attempt)) {
			return nil
		}
	}
	var rev int64
	for attempt := 1; ; attempt++ {
		var err error
		if rev, err = s.currentRevision(ctx); err == nil {
			break
		}
		s.log.Warn("waiting for the cluster's revision", "attempt", attempt, "err", err)
		if !sleep(ctx, backoff(attempt)) {
			return nil
		}
	}
	feedDone := s.startFeed(ctx, rev)
	close(s.ready)
	s.log.Info("kube store running", "revision", rev, "resources", len(s.resources().list))

	tick := time.NewTicker(s.cfg.DiscoveryInterval)
	defer tick.Stop()
	var retry <-chan time.Time
	retries := quickRetries
	for {
		select {
		case <-ctx.Done():
			<-feedDone
			return nil
		case <-tick.C:
		case <-s.refresh:
			retries = 0
		case <-retry:
		}
		retry = nil
		changed, err := s.rediscover(ctx, true)
		if err != nil {
			s.log.Warn("failed to read discovery again; keeping the resources known", "err", err)
			continue
		}
		if changed {
			retries = quickRetries
		} else if retries < quickRetries {
			retries++
			retry = time.After(quickRetry)
		}
	}
}

// Ready implements source.Store: it is closed once the first discovery
// answered and the store's watches started.
func (s *Store) Ready() <-chan struct{} { return s.ready }

// Revision implements source.Store: the newest revision the store's
// watches saw, or before they run the revision a list answers now.
func (s *Store) Revision() int64 {
	if rev := s.feed.revision(); rev > 0 {
		return rev
	}
	s.mu.Lock()
	rev, at := s.listedRev, s.listedRevAt
	s.mu.Unlock()
	if time.Since(at) < revisionCacheFor {
		return rev
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	now, err := s.currentRevision(ctx)
	if err != nil {
		s.log.Debug("failed to read the cluster's revision", "err", err)
		return rev
	}
	s.mu.Lock()
	s.listedRev, s.listedRevAt = now, time.Now()
	s.mu.Unlock()
	return now
}

// Get implements source.Store: it reads the object key stands for from
// the mirror when it holds the object's resource, else gets it from the
// API.
func (s *Store) Get(ctx context.Context, key string) (*source.KeyValue, error) {
	res, namespace, name, ok := s.resources().parseKey(key)
	if !ok {
		if changed, _ := s.rediscover(ctx, false); changed {
			res, namespace, name, ok = s.resources().parseKey(key)
		}
		if !ok {
			return nil, fmt.Errorf("%w: no served resource stores its objects under %q", source.ErrNotFound, key)
		}
	}
	if kv, found, mirrored := s.mirror.get(res, key); mirrored {
		if !found {
			return nil, fmt.Errorf("failed to get %q: %w", key, source.ErrNotFound)
		}
		return &kv, nil
	}
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	obj, err := s.dyn.Resource(res.GVR).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("failed to get %q: %w", key, sourceError(err))
	}
	kv, err := keyValue(res, obj)
	if err != nil {
		return nil, fmt.Errorf("failed to read %q: %w", key, err)
	}
	return kv, nil
}

// List implements source.Store: it reads the objects under prefix from
// the mirror when it holds every resource whose objects' keys may start
// with prefix, at the store's revision, or at opts.Revision when none of
// those resources changed after it and the store has reached it.
// Otherwise it lists them from the API (listAPI). A List of many
// resources leaves out those the store may not list.
func (s *Store) List(ctx context.Context, prefix string, opts source.ListOptions) (*source.ListResult, error) {
	targets := s.resources().under(prefix)
	if len(targets) == 0 {
		if changed, _ := s.rediscover(ctx, false); changed {
			targets = s.resources().under(prefix)
		}
	}
	if len(targets) > 0 {
		if out, ok := s.mirror.list(targets, prefix, opts); ok {
			return out, nil
		}
	}
	return s.listAPI(ctx, targets, prefix, opts)
}

// listAPI lists each of targets, the resources whose objects' keys may
// start with prefix (narrowed to the namespace prefix names), page by
// page, at opts.Revision (resourceVersionMatch=Exact) or now, and keeps
// the objects under prefix. It leaves out those the store may not read
// when there are many; the result's Revision is the newest of the lists'
// resourceVersions.
func (s *Store) listAPI(ctx context.Context, targets []target, prefix string, opts source.ListOptions) (*source.ListResult, error) {
	if opts.Revision > 0 {
		if err := s.notAfterNow(ctx, opts.Revision); err != nil {
			return nil, fmt.Errorf("failed to list %q: %w", prefix, err)
		}
	}
	out := &source.ListResult{Revision: opts.Revision}
	if len(targets) == 0 {
		if out.Revision == 0 {
			out.Revision = s.Revision()
		}
		return out, nil
	}
	lists := make([][]source.KeyValue, len(targets))
	revs := make([]int64, len(targets))
	run := func(ctx context.Context, i int) error {
		items, rev, err := s.listTarget(ctx, targets[i], prefix, opts.Revision)
		switch {
		case err == nil:
		case len(targets) > 1 && forbiddenOrGone(err):
			s.log.Debug("left a resource out of a list", "resource", targets[i].res.GVR, "err", err)
			return nil
		default:
			return fmt.Errorf("failed to list %s under %q: %w", targets[i].res.GVR.GroupResource(), prefix, sourceError(err))
		}
		lists[i], revs[i] = items, rev
		return nil
	}
	if opts.Limit > 0 {
		// Targets are in key order: stop once the cap is reached.
		n := 0
		for i := range targets {
			if err := run(ctx, i); err != nil {
				return nil, err
			}
			if n += len(lists[i]); int64(n) >= opts.Limit {
				break
			}
		}
	} else {
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(listWorkers)
		for i := range targets {
			g.Go(func() error { return run(gctx, i) })
		}
		if err := g.Wait(); err != nil {
			return nil, err
		}
	}
	for i := range targets {
		out.Items = append(out.Items, lists[i]...)
		if opts.Revision == 0 {
			out.Revision = max(out.Revision, revs[i])
		}
	}
	slices.SortFunc(out.Items, func(a, b source.KeyValue) int { return strings.Compare(a.Key, b.Key) })
	if opts.Limit > 0 && int64(len(out.Items)) > opts.Limit {
		out.Items = out.Items[:opts.Limit]
	}
	return out, nil
}

// listTarget lists one resource (in t's namespace, when set) page by page
// at revision rev (0: the newest), keeping the objects whose keys start
// with prefix. It returns them in key order with the list's
// resourceVersion.
func (s *Store) listTarget(ctx context.Context, t target, prefix string, rev int64) ([]source.KeyValue, int64, error) {
	ri := s.dyn.Resource(t.res.GVR).Namespace(t.namespace)
	for restart := 0; ; restart++ {
		opts := metav1.ListOptions{Limit: PageSize}
		if rev > 0 {
			opts.ResourceVersion = fmt.Sprint(rev)
			opts.ResourceVersionMatch = metav1.ResourceVersionMatchExact
		}
		var items []source.KeyValue
		var listRev int64
		var err error
		for {
			rctx, cancel := context.WithTimeout(ctx, RequestTimeout)
			list, lerr := ri.List(rctx, opts)
			cancel()
			if lerr != nil {
				err = lerr
				break
			}
			if listRev == 0 {
				if listRev, err = parseRevision(list.GetResourceVersion()); err != nil {
					return nil, 0, err
				}
			}
			for i := range list.Items {
				kv, kerr := keyValue(t.res, &list.Items[i])
				if kerr != nil {
					return nil, 0, kerr
				}
				if strings.HasPrefix(kv.Key, prefix) {
					items = append(items, *kv)
				}
			}
			if list.GetContinue() == "" {
				break
			}
			opts = metav1.ListOptions{Limit: PageSize, Continue: list.GetContinue()}
		}
		if err != nil {
			if opts.Continue != "" && rev == 0 && compacted(err) && restart < listRestarts {
				continue
			}
			return nil, 0, err
		}
		slices.SortFunc(items, func(a, b source.KeyValue) int { return strings.Compare(a.Key, b.Key) })
		return items, listRev, nil
	}
}

// Newest implements source.Store from the mirror when it holds every
// resource under prefix: of the objects there, the n last written at or
// before rev, where an object written again after rev is left out (the
// mirror keeps only its present value). Otherwise it answers from the
// backlog of recent changes, and ok is false when the backlog does not
// reach back far enough to tell.
func (s *Store) Newest(ctx context.Context, prefix string, n int, rev int64) ([]source.KeyValue, bool, error) {
	if items, ok := s.mirror.newest(s.resources().under(prefix), prefix, n, rev); ok {
		return items, true, nil
	}
	items, ok := s.feed.newest(prefix, n, rev)
	return items, ok, nil
}

// resources returns the newest discovery's resources (empty before the
// first).
func (s *Store) resources() *resourceMap {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.res == nil {
		return &resourceMap{}
	}
	return s.res
}

// rediscover reads discovery and hands the resources to the open
// watches. Unless force, it does nothing within
// rediscoverAfter of the last discovery. changed says whether the
// resources changed.
func (s *Store) rediscover(ctx context.Context, force bool) (changed bool, err error) {
	s.discoverMu.Lock()
	defer s.discoverMu.Unlock()
	s.mu.Lock()
	recent := time.Since(s.discoveredAt) < rediscoverAfter
	s.mu.Unlock()
	if !force && recent {
		return false, nil
	}
	m, failed, err := discover(ctx, s.disco, s.meta, s.dyn)
	if err != nil {
		return false, err
	}
	if len(failed) > 0 {
		s.log.Warn("discovery failed for some API groups; their objects are left out", "groups", failed)
	}
	s.mu.Lock()
	old := s.res
	changed = old == nil || !sameResources(old, m)
	if changed {
		s.res = m
	}
	s.discoveredAt = time.Now()
	mergers := make([]*merger, 0, len(s.mergers))
	for mg := range s.mergers {
		mergers = append(mergers, mg)
	}
	s.mu.Unlock()
	if changed {
		s.log.Debug("resources discovered", "count", len(m.list))
	}
	// Also when nothing changed: a watch that stopped (a resource that
	// could not be read for a while) starts again.
	for _, mg := range mergers {
		mg.sync(s.resources())
	}
	return changed, nil
}

// sameResources reports whether two discoveries mapped the same resources
// to the same keys.
func sameResources(a, b *resourceMap) bool {
	return slices.EqualFunc(a.list, b.list, func(x, y *mapped) bool { return *x == *y })
}

// currentRevision is the cluster's revision now: the resourceVersion of
// a one-item list of namespaces (of another resource when namespaces may
// not be listed).
func (s *Store) currentRevision(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	candidates := []schema.GroupVersionResource{{Version: "v1", Resource: "namespaces"}}
	for _, res := range s.resources().list {
		candidates = append(candidates, res.GVR)
	}
	var firstErr error
	for _, gvr := range candidates {
		list, err := s.dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
		if err == nil {
			return parseRevision(list.GetResourceVersion())
		}
		if firstErr == nil {
			firstErr = err
		}
		if !forbiddenOrGone(err) {
			break
		}
	}
	return 0, fmt.Errorf("failed to read the cluster's revision: %w", firstErr)
}

// checkRevision asks the API server whether it can read at revision rev:
// source.ErrCompacted when it no longer keeps it, source.ErrFutureRevision
// when it has not reached it.
func (s *Store) checkRevision(ctx context.Context, rev int64) error {
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	if err := s.notAfterNow(ctx, rev); err != nil {
		return err
	}
	opts := metav1.ListOptions{Limit: 1, ResourceVersion: fmt.Sprint(rev), ResourceVersionMatch: metav1.ResourceVersionMatchExact}
	_, err := s.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).List(ctx, opts)
	if err == nil || apierrors.IsForbidden(err) {
		return nil
	}
	return fmt.Errorf("failed to read at revision %d: %w", rev, sourceError(err))
}

// notAfterNow returns source.ErrFutureRevision when rev is newer than
// the cluster's revision now. The store asks before it reads at a
// revision: the API server's answer to a read from the future (504 with
// Retry-After) makes client-go retry it ten times, a second apart.
func (s *Store) notAfterNow(ctx context.Context, rev int64) error {
	if rev <= s.feed.revision() {
		return nil
	}
	now, err := s.currentRevision(ctx)
	if err != nil {
		return err
	}
	if rev > now {
		return fmt.Errorf("%w: revision %d, the cluster's is %d", source.ErrFutureRevision, rev, now)
	}
	return nil
}

// backoff is how long to wait before the attempt-th retry: from 250 ms,
// doubling, at most 30 s.
func backoff(attempt int) time.Duration {
	d := 250 * time.Millisecond << min(attempt-1, 7)
	return min(d, 30*time.Second)
}

// sleep waits d or until ctx ends; it reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
