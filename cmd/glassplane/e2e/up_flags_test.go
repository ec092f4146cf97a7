package e2e

import (
	"os/exec"
	"strings"
	"testing"
)

// TestUpRefusesBadSeats checks that `glassplane up` refuses, before it
// starts anything, seat counts that cannot work: a negative bound on the
// simulated nodes' writes, negative API Priority and Fairness seats, and
// seats that add up to none.
func TestUpRefusesBadSeats(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--simulated-writes-inflight", "-1"}, "--simulated-writes-inflight must not be negative, got -1"},
		{[]string{"--max-requests-inflight", "-5"}, "--max-requests-inflight and --max-mutating-requests-inflight must not be negative, got -5 and 200"},
		{[]string{"--max-requests-inflight", "0", "--max-mutating-requests-inflight", "0"}, "must add up to something positive"},
	} {
		args := append([]string{"up", "--data-dir", t.TempDir(), "--node-runtime", "none", "--web-listen", ""}, tc.args...)
		out, err := exec.Command(binary, args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("glassplane %s: %v, want an error saying %q\n%s", strings.Join(args, " "), err, tc.want, out)
		}
	}
}
