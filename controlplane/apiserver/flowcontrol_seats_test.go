package apiserver

import "testing"

// TestConcurrencyLimit: the seats are the two flags' sum, as
// kube-apiserver's, with its defaults only when neither is set.
func TestConcurrencyLimit(t *testing.T) {
	for _, c := range []struct{ readOnly, mutating, want int }{
		{0, 0, DefaultMaxRequestsInflight + DefaultMaxMutatingRequestsInflight},
		{400, 200, 600},
		{0, 200, 200},
		{8, 0, 8},
		{3, 5, 8},
	} {
		cfg := Config{MaxRequestsInflight: c.readOnly, MaxMutatingRequestsInflight: c.mutating}
		if got := cfg.concurrencyLimit(); got != c.want {
			t.Errorf("--max-requests-inflight %d --max-mutating-requests-inflight %d: %d seats, want %d", c.readOnly, c.mutating, got, c.want)
		}
	}
}
