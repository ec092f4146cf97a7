package proxy

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/knftables"
)

// Defaults for Config.
const (
	// DefaultTable is the nftables table (family ip) the proxy owns.
	DefaultTable = "glassplane-proxy"
	// DefaultMinSyncInterval is the least time between two syncs; changes
	// arriving meanwhile are written together by the next.
	DefaultMinSyncInterval = 100 * time.Millisecond
	// DefaultOwnerCheckInterval is how often the proxy checks that no
	// other proxy on the host (another cluster's) rewrote its table.
	DefaultOwnerCheckInterval = 5 * time.Second
	// DefaultSyncPeriod is how often the table is rewritten whole even
	// without a change, repairing drift (kube-proxy's nftables mode: an
	// hour).
	DefaultSyncPeriod = time.Hour
	// User is the proxy's identity, kube-proxy's; the bootstrap policy
	// binds it to the system:node-proxier ClusterRole.
	User = "system:kube-proxy"
	// Component is the Events' source and reportingComponent.
	Component = "glassplane-proxy"
	// ReasonEndpointsProgrammed is the Event reason recorded on a Service
	// when the endpoints programmed for one of its ports change.
	ReasonEndpointsProgrammed = "EndpointsProgrammed"
)

// routeLocalnet is the sysctl that lets the kernel route packets to and
// from 127.0.0.0/8 over other interfaces (kube-proxy's iptables mode sets
// it for NodePorts on 127.0.0.1).
const routeLocalnet = "/proc/sys/net/ipv4/conf/all/route_localnet"

// Config is what the proxy of one node programs.
type Config struct {
	// NodeName is this node's name: endpoints whose nodeName it is are
	// local (for the Local traffic policies) and Events carry it as host.
	NodeName string
	// PodCIDR is the node's pod network: traffic to a ClusterIP from
	// elsewhere is masqueraded. Empty masquerades no ClusterIP traffic.
	PodCIDR string
	// Table is the nftables table in family ip (DefaultTable).
	Table string
	// MinSyncInterval is DefaultMinSyncInterval when zero.
	MinSyncInterval time.Duration
	// SyncPeriod is DefaultSyncPeriod when zero.
	SyncPeriod time.Duration
	// OwnerCheckInterval is DefaultOwnerCheckInterval when zero.
	OwnerCheckInterval time.Duration
	// Logger receives the proxy's logs (slog.Default() when nil).
	Logger *slog.Logger
}

// Proxy programs the node's kernel from Services and EndpointSlices.
// Create it with New and start it with Run.
type Proxy struct {
	cfg    Config
	client kubernetes.Interface
	nft    knftables.Interface
	log    *slog.Logger
	// setSysctl writes a sysctl file (os.WriteFile; a no-op in unit tests).
	setSysctl func(path, value string) error
	// owner is this proxy's random mark in the table's owner set.
	owner string

	services corelisters.ServiceLister
	slices   discoverylisters.EndpointSliceLister
	recorder record.EventRecorder
	wake     chan struct{}
	// lastWrite is the sync loop's own: what each Service port was last
	// programmed with.
	lastWrite map[string]programmed

	mu sync.Mutex // guards written
	// written is the table as last written; nil when the next sync must
	// rewrite it whole. Only the sync loop changes it.
	written *tableState
}

// New checks that nftables works (nft is installed and may change the
// kernel's tables) and returns the proxy.
func New(cfg Config, client kubernetes.Interface) (*Proxy, error) {
	if cfg.Table == "" {
		cfg.Table = DefaultTable
	}
	nft, err := knftables.New(knftables.IPv4Family, cfg.Table)
	if err != nil {
		return nil, fmt.Errorf("failed to use nftables for the service proxy: %w", err)
	}
	p := newProxy(cfg, client, nft)
	p.setSysctl = func(path, value string) error { return os.WriteFile(path, []byte(value), 0o644) }
	return p, nil
}

func newProxy(cfg Config, client kubernetes.Interface, nft knftables.Interface) *Proxy {
	if cfg.Table == "" {
		cfg.Table = DefaultTable
	}
	if cfg.MinSyncInterval == 0 {
		cfg.MinSyncInterval = DefaultMinSyncInterval
	}
	if cfg.SyncPeriod == 0 {
		cfg.SyncPeriod = DefaultSyncPeriod
	}
	if cfg.OwnerCheckInterval == 0 {
		cfg.OwnerCheckInterval = DefaultOwnerCheckInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Proxy{
		cfg: cfg, client: client, nft: nft, log: cfg.Logger.With("component", "proxy"),
		setSysctl: func(string, string) error { return nil },
		owner:     fmt.Sprint(rand.Uint32()),
		wake:      make(chan struct{}, 1),
		lastWrite: map[string]programmed{},
	}
}

// Run watches Services and EndpointSlices and keeps the table in step
// until ctx ends. Its first sync replaces whatever the table held.
func (p *Proxy) Run(ctx context.Context) error {
	if err := p.setSysctl(routeLocalnet, "1"); err != nil {
		return fmt.Errorf("failed to set %s: %w", routeLocalnet, err)
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	sink := broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: p.client.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	defer sink.Stop()
	p.recorder = broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: Component, Host: p.cfg.NodeName})

	factory := informers.NewSharedInformerFactory(p.client, 0)
	svcInformer := factory.Core().V1().Services()
	sliceInformer := factory.Discovery().V1().EndpointSlices()
	p.services, p.slices = svcInformer.Lister(), sliceInformer.Lister()
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { p.requestSync() },
		UpdateFunc: func(any, any) { p.requestSync() },
		DeleteFunc: func(any) { p.requestSync() },
	}
	for _, inf := range []cache.SharedIndexInformer{svcInformer.Informer(), sliceInformer.Informer()} {
		if _, err := inf.AddEventHandler(handler); err != nil {
			return fmt.Errorf("failed to watch for the service proxy: %w", err)
		}
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	p.log.Info("waiting for service and endpointslice caches to sync", "table", "ip "+p.cfg.Table)
	if !cache.WaitForCacheSync(ctx.Done(), svcInformer.Informer().HasSynced, sliceInformer.Informer().HasSynced) {
		return fmt.Errorf("failed to sync the service proxy's caches: %w", ctx.Err())
	}
	p.requestSync()
	p.loop(ctx)
	return nil
}

// requestSync asks the loop for a sync; requests made before it starts
// are one.
func (p *Proxy) requestSync() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// loop syncs on request, at most once per MinSyncInterval, rewrites the
// table whole every SyncPeriod, and retries a failed sync (whole) after a
// second.
func (p *Proxy) loop(ctx context.Context) {
	period := time.NewTimer(p.cfg.SyncPeriod)
	defer period.Stop()
	check := time.NewTicker(p.cfg.OwnerCheckInterval)
	defer check.Stop()
	var last time.Time
	for {
		full := false
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
		case <-period.C:
			full = true
		case <-check.C:
			if p.ownsTable(ctx) {
				continue
			}
			p.log.Info("another proxy rewrote the table, writing it whole", "table", p.cfg.Table)
			full = true
		}
		if wait := p.cfg.MinSyncInterval - time.Since(last); wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		// Requests that came while waiting are part of this sync.
		select {
		case <-p.wake:
		default:
		}
		last = time.Now()
		if err := p.sync(ctx, full); err != nil {
			if ctx.Err() != nil {
				return
			}
			p.log.Warn("service proxy sync failed, retrying", "err", err)
			time.AfterFunc(time.Second, p.requestSync)
		}
		if full {
			period.Reset(p.cfg.SyncPeriod)
		}
	}
}

// ownsTable reports whether the table's owner mark is still this
// proxy's (one nft list of a one-element set).
func (p *Proxy) ownsTable(ctx context.Context) bool {
	elems, err := p.nft.ListElements(ctx, "set", ownerSet)
	return err == nil && len(elems) == 1 && len(elems[0].Key) == 1 && elems[0].Key[0] == p.owner
}

// sync writes the table from the caches (whole with full) and records an
// Event for each Service port whose programmed endpoints changed.
func (p *Proxy) sync(ctx context.Context, full bool) error {
	start := time.Now()
	services, err := p.services.List(labels.Everything())
	if err != nil {
		return err
	}
	slices, err := p.slices.List(labels.Everything())
	if err != nil {
		return err
	}
	rs := buildRuleset(servicePorts(services, slices), p.cfg.NodeName, p.cfg.PodCIDR)
	if err := p.apply(ctx, rs, full); err != nil {
		return err
	}
	took := time.Since(start)
	p.log.Debug("service proxy synced", "full", full, "servicePorts", len(rs.programmed), "rules", len(rs.rules), "took", took)
	p.recordChanges(rs.programmed, took)
	return nil
}

// tableState is what the proxy last wrote to its table, to write only
// the difference next time.
type tableState struct {
	chains   map[string]*knftables.Chain
	rules    map[string][]string          // chain → its rules
	elements map[string]map[string]string // map → key → value
	sets     map[string]*knftables.Set
}

func stateOf(rs *ruleset) *tableState {
	st := &tableState{chains: map[string]*knftables.Chain{}, rules: map[string][]string{}, elements: map[string]map[string]string{}, sets: map[string]*knftables.Set{}}
	for _, c := range rs.chains {
		st.chains[c.Name] = c
	}
	for _, r := range rs.rules {
		st.rules[r.Chain] = append(st.rules[r.Chain], r.Rule)
	}
	for _, m := range rs.maps {
		st.elements[m.Name] = map[string]string{}
	}
	for _, e := range rs.elements {
		st.elements[e.Map][strings.Join(e.Key, " . ")] = strings.Join(e.Value, " . ")
	}
	for _, s := range rs.sets {
		st.sets[s.Name] = s
	}
	return st
}

// apply writes rs to the table in one transaction. The first time (and
// with full) it deletes and recreates the table, so nothing else stays in
// it (a deleted Service's chains, rules added by hand); after that it
// writes only what differs from what it wrote last, as kube-proxy's
// partial syncs: a change to one Service touches that Service's chains
// and map elements, so the time of a sync does not grow with the number
// of Services.
func (p *Proxy) apply(ctx context.Context, rs *ruleset, full bool) error {
	want := stateOf(rs)
	p.mu.Lock()
	old := p.written
	p.written = nil
	p.mu.Unlock()
	if !full && old != nil {
		tx := p.nft.NewTransaction()
		p.writeDifference(tx, rs, old, want)
		if tx.NumOperations() == 0 {
			p.setWritten(want)
			return nil
		}
		// The owner element is ours only while no other proxy rewrote the
		// table (another cluster's on this host): then the difference from
		// what this one wrote means nothing, the transaction fails on the
		// missing element, and the table is written whole.
		owner := &knftables.Element{Set: ownerSet, Key: []string{p.owner}}
		tx.Delete(owner)
		tx.Add(owner)
		err := p.nft.Run(ctx, tx)
		if err == nil {
			p.setWritten(want)
			return nil
		}
		p.log.Info("writing the whole table: writing the difference failed", "table", p.cfg.Table, "err", err)
	}
	tx := p.nft.NewTransaction()
	tx.Add(&knftables.Table{})
	tx.Delete(&knftables.Table{})
	tx.Add(&knftables.Table{})
	for _, c := range rs.chains {
		tx.Add(c)
	}
	for _, m := range rs.maps {
		tx.Add(m)
	}
	tx.Add(&knftables.Set{Name: ownerSet, Type: "mark"})
	tx.Add(&knftables.Element{Set: ownerSet, Key: []string{p.owner}})
	for _, s := range rs.sets {
		tx.Add(s)
	}
	for _, r := range rs.rules {
		tx.Add(r)
	}
	for _, e := range rs.elements {
		tx.Add(e)
	}
	if err := p.nft.Run(ctx, tx); err != nil {
		return fmt.Errorf("failed to write table %s: %w", p.cfg.Table, err)
	}
	p.setWritten(want)
	return nil
}

func (p *Proxy) setWritten(st *tableState) {
	p.mu.Lock()
	p.written = st
	p.mu.Unlock()
}

// writeDifference adds to tx what turns the table from old into want, in
// an order the kernel accepts: new sets and chains first, stale map
// elements out, changed chains rewritten, new elements in, then stale
// chains emptied and deleted, and stale sets deleted.
func (p *Proxy) writeDifference(tx *knftables.Transaction, rs *ruleset, old, want *tableState) {
	for _, s := range rs.sets {
		if old.sets[s.Name] == nil {
			tx.Add(s)
		}
	}
	for _, c := range rs.chains {
		if old.chains[c.Name] == nil {
			tx.Add(c)
		}
	}
	for _, m := range rs.maps {
		for key, value := range old.elements[m.Name] {
			if v, ok := want.elements[m.Name][key]; !ok || v != value {
				tx.Delete(&knftables.Element{Map: m.Name, Key: strings.Split(key, " . ")})
			}
		}
	}
	for _, c := range rs.chains {
		rules := want.rules[c.Name]
		if old.chains[c.Name] != nil {
			if slices.Equal(old.rules[c.Name], rules) {
				continue
			}
			tx.Flush(&knftables.Chain{Name: c.Name})
		}
		for _, r := range rules {
			tx.Add(&knftables.Rule{Chain: c.Name, Rule: r})
		}
	}
	for _, e := range rs.elements {
		key := strings.Join(e.Key, " . ")
		if v, ok := old.elements[e.Map][key]; !ok || v != strings.Join(e.Value, " . ") {
			tx.Add(e)
		}
	}
	for name := range old.chains {
		if want.chains[name] == nil {
			tx.Flush(&knftables.Chain{Name: name})
		}
	}
	for name := range old.chains {
		if want.chains[name] == nil {
			tx.Delete(&knftables.Chain{Name: name})
		}
	}
	for name := range old.sets {
		if want.sets[name] == nil {
			tx.Delete(&knftables.Set{Name: name})
		}
	}
}

// recordChanges records EndpointsProgrammed on each Service whose port's
// programmed endpoints differ from the last successful sync's.
func (p *Proxy) recordChanges(now map[string]programmed, took time.Duration) {
	for key, pr := range now {
		before, seen := p.lastWrite[key]
		if seen && before.terminating == pr.terminating && slices.Equal(before.endpoints, pr.endpoints) {
			continue
		}
		if p.recorder == nil {
			continue
		}
		sp := pr.servicePort
		kind := "ready"
		if pr.terminating {
			kind = "terminating"
		}
		ref := &corev1.ObjectReference{Kind: "Service", APIVersion: "v1", Namespace: sp.Namespace, Name: sp.Name}
		if svc, err := p.services.Services(sp.Namespace).Get(sp.Name); err == nil {
			ref.UID, ref.ResourceVersion = svc.UID, svc.ResourceVersion
		}
		p.recorder.Eventf(ref, corev1.EventTypeNormal, ReasonEndpointsProgrammed,
			"Programmed %d %s endpoints for %s:%d/%s on node %s (nftables, %s)",
			len(pr.endpoints), kind, sp.ClusterIP, sp.Port, sp.Protocol, p.cfg.NodeName, took.Round(100*time.Microsecond))
	}
	p.lastWrite = now
}

// DeleteTable removes the proxy's table (DefaultTable when table is
// empty) from the kernel, for `glassplane down --purge`. A table that is
// not there is not an error; it reports whether one was removed.
func DeleteTable(ctx context.Context, table string) (bool, error) {
	if table == "" {
		table = DefaultTable
	}
	nft, err := knftables.New(knftables.IPv4Family, table)
	if err != nil {
		return false, fmt.Errorf("failed to use nftables: %w", err)
	}
	tx := nft.NewTransaction()
	tx.Delete(&knftables.Table{})
	if err := nft.Run(ctx, tx); err != nil {
		if knftables.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("failed to delete table ip %s: %w", table, err)
	}
	return true, nil
}
