package apiserver

import (
	"testing"
	"time"
)

// TestNextRepair: the repair loop runs a whole interval after a pass that
// left no orphan, a moment after an orphan's grace ends when that comes
// sooner, and never busy-loops on a grace already over.
func TestNextRepair(t *testing.T) {
	now := time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		due  time.Time
		want time.Duration
	}{
		{"no orphan", time.Time{}, serviceRepairInterval},
		{"orphan due in 40s", now.Add(40 * time.Second), 41 * time.Second},
		{"orphan due after the interval", now.Add(serviceRepairInterval + time.Minute), serviceRepairInterval},
		{"orphan already due", now.Add(-time.Minute), time.Second},
	} {
		if got := nextRepair(serviceRepair{OrphanDue: tc.due}, now); got != tc.want {
			t.Errorf("%s: next repair in %v, want %v", tc.name, got, tc.want)
		}
	}
}
