package tempo

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
)

const (
	// absentPoll is the pause after a failed watch for a missing tempo object.
	absentPoll = 5 * time.Second
	// retryDelay is the pause after a failed read or watch.
	retryDelay = time.Second
	// watchTimeout makes the server end a watch so the gate re-reads.
	watchTimeout = 5 * time.Minute
	// maxConflicts bounds the retries of one optimistic update.
	maxConflicts = 100
	// cleanupTimeout bounds removing a waiting key after the wait ended.
	cleanupTimeout = 5 * time.Second
)

// Gate paces one component's actions by the tempo object, which it watches
// with the component's own client.
type Gate struct {
	client    kubernetes.Interface
	component string
	log       *slog.Logger
	waits     atomic.Uint64

	mu sync.Mutex // guards cm and changed
	cm *corev1.ConfigMap
	// changed is closed (and replaced) whenever cm changes.
	changed chan struct{}
}

// NewGate returns a gate for component (shown in the tempo object as the
// one waiting, e.g. "scheduler" or "node/sim-1"). Run must be running for it
// to see the tempo; until then every action passes.
func NewGate(client kubernetes.Interface, component string, log *slog.Logger) *Gate {
	if log == nil {
		log = slog.Default()
	}
	return &Gate{client: client, component: component, log: log.With("tempo", component), changed: make(chan struct{})}
}

// Component is the name the gate shows for its waiting actions.
func (g *Gate) Component() string { return g.component }

// Run reads the tempo object and watches it by name until ctx ends; a
// missing object is watched for until it is created.
func (g *Gate) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		cm, err := g.client.CoreV1().ConfigMaps(Namespace).Get(ctx, Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			g.set(nil)
			// Watch from now on: the object's creation arrives as ADDED.
			if err := g.watch(ctx, ""); err != nil && ctx.Err() == nil {
				g.log.Debug("tempo watch ended", "err", err)
				sleep(ctx, absentPoll)
			}
			continue
		case err != nil:
			if ctx.Err() == nil {
				g.log.Debug("failed to read the tempo", "err", err)
			}
			sleep(ctx, retryDelay)
			continue
		}
		g.set(cm)
		if err := g.watch(ctx, cm.ResourceVersion); err != nil && ctx.Err() == nil {
			g.log.Debug("tempo watch ended", "err", err)
			sleep(ctx, retryDelay)
		}
	}
	return nil
}

// watch follows the object from resourceVersion rv until the watch ends.
// It watches the one name (GET .../configmaps/glassplane-tempo?watch=true),
// which RBAC can grant by resourceNames.
func (g *Gate) watch(ctx context.Context, rv string) error {
	timeout := int64(watchTimeout / time.Second)
	w, err := g.client.CoreV1().RESTClient().Get().
		Namespace(Namespace).Resource("configmaps").Name(Name).
		VersionedParams(&metav1.ListOptions{Watch: true, ResourceVersion: rv, TimeoutSeconds: &timeout}, scheme.ParameterCodec).
		Watch(ctx)
	if err != nil {
		return err
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				if cm, ok := ev.Object.(*corev1.ConfigMap); ok {
					g.set(cm)
				}
			case watch.Deleted:
				g.set(nil)
				return nil
			case watch.Error:
				return apierrors.FromObject(ev.Object)
			}
		}
	}
}

// set records cm unless the gate already holds a newer version of it.
func (g *Gate) set(cm *corev1.ConfigMap) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if cm != nil && g.cm != nil && newer(g.cm.ResourceVersion, cm.ResourceVersion) {
		return
	}
	g.cm = cm
	close(g.changed)
	g.changed = make(chan struct{})
}

// newer reports whether resourceVersion a is after b (both etcd revisions).
func newer(a, b string) bool {
	x, errA := strconv.ParseInt(a, 10, 64)
	y, errB := strconv.ParseInt(b, 10, 64)
	return errA == nil && errB == nil && x > y
}

func (g *Gate) snapshot() (*corev1.ConfigMap, <-chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cm, g.changed
}

// State is the tempo as the gate last saw it.
func (g *Gate) State() State {
	cm, _ := g.snapshot()
	return FromConfigMap(cm)
}

// Wait holds the action described by action ("schedule pod default/mypod")
// as the tempo says: not at all in realtime, the delay in slow mode, and in
// step mode until it claims a released step, listed as waiting meanwhile.
// A change of tempo applies to actions already waiting. It returns ctx's
// error if ctx ends first. An action the API will not let the gate record
// or claim passes, so a broken tempo never stops the cluster.
func (g *Gate) Wait(ctx context.Context, action string) error {
	desc := g.component + ": " + action
	key := ""
	defer func() {
		if key != "" {
			g.unmark(ctx, key)
		}
	}()
	var slowSince time.Time
	for {
		cm, changed := g.snapshot()
		s := FromConfigMap(cm)
		switch s.Mode {
		case Slow:
			if slowSince.IsZero() {
				slowSince = time.Now()
			}
			left := s.Delay - time.Since(slowSince)
			if left <= 0 {
				return nil
			}
			t := time.NewTimer(left)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-changed:
				t.Stop()
			case <-t.C:
				return nil
			}
			continue
		case Step:
			if key == "" {
				k := waitingKey(g.component, g.waits.Add(1), action)
				_, err := g.update(ctx, func(cm *corev1.ConfigMap) bool {
					cm.Data[k] = desc
					return true
				})
				if err != nil {
					return g.pass(ctx, "record", action, err)
				}
				key = k
				g.log.Debug("waiting for a step", "action", action)
				continue
			}
			if s.Free() {
				claimed, err := g.update(ctx, func(cm *corev1.ConfigMap) bool {
					cur := FromConfigMap(cm)
					if cur.Mode != Step || !cur.Free() {
						return false
					}
					cur.Taken++
					cur.LastStep = desc
					cur.Write(cm)
					delete(cm.Data, key)
					return true
				})
				if err != nil {
					return g.pass(ctx, "claim", action, err)
				}
				if claimed {
					key = ""
					g.log.Debug("took a step", "action", action)
					return nil
				}
				continue
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-changed:
			}
			continue
		default:
			return nil
		}
	}
}

// pass lets an action through after the gate failed to talk to the API,
// unless ctx ended.
func (g *Gate) pass(ctx context.Context, what, action string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	g.log.Warn("failed to "+what+" a step, letting the action through", "action", action, "err", err)
	return nil
}

// unmark removes a waiting key after its wait ended without a step.
func (g *Gate) unmark(ctx context.Context, key string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if _, err := g.update(ctx, func(cm *corev1.ConfigMap) bool {
		if _, ok := cm.Data[key]; !ok {
			return false
		}
		delete(cm.Data, key)
		return true
	}); err != nil {
		g.log.Debug("failed to remove a waiting action", "key", key, "err", err)
	}
}

// errNoTempo is returned by update when the object is gone.
var errNoTempo = errors.New("the tempo object does not exist")

// update applies mutate to the newest tempo object and writes it with the
// read resourceVersion as precondition, re-reading on conflict. It reports
// whether mutate asked for a write and the write succeeded.
func (g *Gate) update(ctx context.Context, mutate func(*corev1.ConfigMap) bool) (bool, error) {
	cm, _ := g.snapshot()
	for range maxConflicts {
		if cm == nil {
			cur, err := g.client.CoreV1().ConfigMaps(Namespace).Get(ctx, Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, errNoTempo
			}
			if err != nil {
				return false, err
			}
			cm = cur
		}
		next := cm.DeepCopy()
		if next.Data == nil {
			next.Data = map[string]string{}
		}
		if !mutate(next) {
			return false, nil
		}
		updated, err := g.client.CoreV1().ConfigMaps(Namespace).Update(ctx, next, metav1.UpdateOptions{FieldManager: "glassplane-tempo"})
		if apierrors.IsConflict(err) {
			cm = nil
			continue
		}
		if err != nil {
			return false, err
		}
		g.set(updated)
		return true, nil
	}
	return false, errors.New("too many conflicting updates of the tempo")
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
