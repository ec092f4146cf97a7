package framework

import (
	"context"
	"runtime"
	"sync/atomic"
)

// Parallelize calls work(i) for every i in [0, pieces), chunkSize pieces at
// a time, on the calling goroutine and on up to workers-1 helpers, and
// returns once every piece is done. Like workqueue.ParallelizeUntil it
// starts no new chunk once ctx is done.
//
// The caller works too, and waits only for chunks a helper has begun: a
// helper still queued behind the API server's goroutines when the caller
// runs out of chunks finds none left and leaves. ParallelizeUntil's caller
// waits for every helper to be scheduled, which on a busy machine costs a
// scheduling cycle more time than its filtering does. Helpers beyond
// GOMAXPROCS would only queue, so there are at most GOMAXPROCS-1.
func Parallelize(ctx context.Context, workers, pieces, chunkSize int, work func(i int)) {
	if pieces <= 0 {
		return
	}
	chunkSize = max(chunkSize, 1)
	chunks := (pieces + chunkSize - 1) / chunkSize
	helpers := min(workers, chunks, runtime.GOMAXPROCS(0)) - 1
	if helpers <= 0 {
		for c := 0; c < chunks && ctx.Err() == nil; c++ {
			for i := c * chunkSize; i < min((c+1)*chunkSize, pieces); i++ {
				work(i)
			}
		}
		return
	}
	var next, done atomic.Int64
	finished := make(chan struct{})
	run := func() {
		for {
			c := int(next.Add(1) - 1)
			if c >= chunks {
				return
			}
			if ctx.Err() == nil {
				for i := c * chunkSize; i < min((c+1)*chunkSize, pieces); i++ {
					work(i)
				}
			}
			if done.Add(1) == int64(chunks) {
				close(finished)
			}
		}
	}
	for range helpers {
		go run()
	}
	run()
	<-finished
}
