package controllerutil

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/time/rate"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// MaxRetryDelay caps the per-key backoff. Kubernetes' controllers allow
// 1000s; here an API server briefly overloaded on a small machine must not
// park a key for minutes after a few failed syncs.
const MaxRetryDelay = 30 * time.Second

// NewQueue returns a named rate-limited workqueue of object keys: per-key
// exponential backoff from 5ms to MaxRetryDelay, and an overall 10 qps
// bucket with a burst of 100, as Kubernetes' default controller limiter.
func NewQueue(name string) workqueue.TypedRateLimitingInterface[string] {
	limiter := workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, MaxRetryDelay),
		&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
	return workqueue.NewTypedRateLimitingQueueWithConfig(limiter, workqueue.TypedRateLimitingQueueConfig[string]{Name: name})
}

// RunWorkers runs workers goroutines that take keys off q and pass them to
// syncFn until ctx ends, then shuts q down and waits for them. A key whose
// sync fails is retried with backoff; one that succeeds is forgotten.
func RunWorkers(ctx context.Context, log *slog.Logger, q workqueue.TypedRateLimitingInterface[string], workers int, syncFn func(context.Context, string) error) {
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for processNext(ctx, log, q, syncFn) {
			}
		}()
	}
	<-ctx.Done()
	q.ShutDown()
	wg.Wait()
}

func processNext(ctx context.Context, log *slog.Logger, q workqueue.TypedRateLimitingInterface[string], syncFn func(context.Context, string) error) bool {
	key, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(key)
	start := time.Now()
	err := syncFn(ctx, key)
	if err == nil {
		q.Forget(key)
		log.Debug("synced", "key", key, "took", time.Since(start))
		return true
	}
	if ctx.Err() != nil {
		return true
	}
	log.Info("sync failed, retrying", "key", key, "err", err)
	q.AddRateLimited(key)
	return true
}

// KeyFunc returns obj's namespace/name key, unwrapping tombstones.
func KeyFunc(obj any) (string, error) {
	return toolscache.DeletionHandlingMetaNamespaceKeyFunc(obj)
}
