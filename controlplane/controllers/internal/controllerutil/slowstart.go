package controllerutil

import "sync"

// SlowStartInitialBatchSize is the first creation batch of SlowStartBatch.
const SlowStartInitialBatchSize = 1

// SlowStartBatch calls fn count times in batches that start at initial and
// double after each fully successful batch, as Kubernetes' slowStartBatch;
// it stops at the first failing batch and returns how many calls
// succeeded, so a controller that cannot create pods (a quota, a
// terminating namespace) fails after one request, not hundreds.
func SlowStartBatch(count, initial int, fn func() error) (int, error) {
	remaining := count
	successes := 0
	for batch := min(remaining, initial); batch > 0; batch = min(2*batch, remaining) {
		errCh := make(chan error, batch)
		var wg sync.WaitGroup
		for range batch {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := fn(); err != nil {
					errCh <- err
				}
			}()
		}
		wg.Wait()
		close(errCh)
		successes += batch - len(errCh)
		if len(errCh) > 0 {
			return successes, <-errCh
		}
		remaining -= batch
	}
	return successes, nil
}
