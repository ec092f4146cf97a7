package framework

import (
	"context"
	"sync/atomic"
	"testing"
)

func TestParallelizeDoesEveryPieceOnce(t *testing.T) {
	for _, tc := range []struct{ workers, pieces, chunk int }{
		{16, 1000, 31}, {16, 1000, 1000}, {1, 77, 5}, {2, 3, 1}, {16, 7, 0}, {4, 0, 8},
	} {
		counts := make([]atomic.Int32, tc.pieces)
		Parallelize(context.Background(), tc.workers, tc.pieces, tc.chunk, func(i int) { counts[i].Add(1) })
		// Parallelize returns only once every piece is done.
		for i := range counts {
			if n := counts[i].Load(); n != 1 {
				t.Fatalf("workers %d, pieces %d, chunk %d: piece %d ran %d times", tc.workers, tc.pieces, tc.chunk, i, n)
			}
		}
	}
}

func TestParallelizeStartsNoChunkOnceCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ran atomic.Int32
	// Chunks of 10 pieces; the 25th piece cancels: its chunk finishes,
	// chunks running on other workers finish, and no chunk starts after.
	Parallelize(ctx, 16, 1000, 10, func(i int) {
		if ran.Add(1) == 25 {
			cancel()
		}
	})
	if n := ran.Load(); n < 25 || n > 25+10*16 {
		t.Fatalf("%d pieces ran after a cancel at the 25th (chunks of 10, at most 16 workers)", n)
	}
}
