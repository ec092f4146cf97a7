package storage

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

const (
	// leaseReuse is the longest a lease is handed out to new keys after it
	// was granted, and leaseReusePercent the part of the time to live it
	// may be at most; a lease is granted for the time to live plus that, so
	// a key lives at least its time to live and at most that much longer.
	// These are kube-apiserver's defaults for Events.
	leaseReuse        = 60 * time.Second
	leaseReusePercent = 5
	// leaseMaxKeys is how many keys one lease holds at most: expiring a
	// lease deletes its keys in one etcd apply.
	leaseMaxKeys = 1000
)

// leases attaches keys with a time to live to shared etcd leases, as
// kube-apiserver's lease manager does for Events: one lease grant a minute,
// not one per write.
type leases struct {
	client *clientv3.Client
	// ttls are the configured prefixes and their times to live.
	ttls []prefixTTL

	mu sync.Mutex // guards the lease in use
	// id, expires and keys are the lease keys are attached to now (0: none
	// yet), when etcd expires it and how many keys it was handed to.
	id      clientv3.LeaseID
	ttl     time.Duration
	expires time.Time
	keys    int
}

type prefixTTL struct {
	prefix string
	ttl    time.Duration
}

func newLeases(client *clientv3.Client, ttls map[string]time.Duration) *leases {
	l := &leases{client: client}
	for prefix, ttl := range ttls {
		if ttl > 0 {
			l.ttls = append(l.ttls, prefixTTL{prefix, ttl})
		}
	}
	return l
}

// putOptions returns the options a write of key needs: a lease when the
// key's prefix has a time to live, none otherwise.
func (l *leases) putOptions(ctx context.Context, key string) ([]clientv3.OpOption, error) {
	for _, p := range l.ttls {
		if strings.HasPrefix(key, p.prefix) {
			id, err := l.lease(ctx, p.ttl, time.Now())
			if err != nil {
				return nil, fmt.Errorf("failed to grant a lease for %q: %w", key, err)
			}
			return []clientv3.OpOption{clientv3.WithLease(id)}, nil
		}
	}
	return nil, nil
}

// lease returns a lease that expires between ttl and ttl plus the reuse
// time from now: the one in use if it does, else a new one.
func (l *leases) lease(ctx context.Context, ttl time.Duration, now time.Time) (clientv3.LeaseID, error) {
	reuse := min(leaseReuse, ttl*leaseReusePercent/100)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.keys++
	if l.id != 0 && l.ttl == ttl && now.Add(ttl).Before(l.expires) && l.keys <= leaseMaxKeys {
		return l.id, nil
	}
	life := ttl + reuse
	resp, err := l.client.Grant(ctx, int64((life+time.Second-1)/time.Second))
	if err != nil {
		return 0, err
	}
	l.id, l.ttl, l.expires, l.keys = resp.ID, ttl, now.Add(life), 1
	return l.id, nil
}
