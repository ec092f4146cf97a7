package e2e

import (
	"testing"
	"time"
)

// TestGCSpan reads the render benchmark's garbage collections from
// gctrace lines (as Go 1.26 prints them) among other log lines.
func TestGCSpan(t *testing.T) {
	log := `time=2026-12-06T10:15:00.636Z level=INFO msg="node agent ready" component=node node=sim-40
gc 22 @8.484s 7%: 7.7+647+0.038 ms clock, 15+103/404/0+0.076 ms cpu, 375->411->218 MB, 429 MB goal, 8 MB stacks, 0 MB globals, 2 P
gc 23 @10.333s 8%: 2.9+581+0.058 ms clock, 5.8+88/395/0.5+0.11 ms cpu, 392->436->230 MB, 446 MB goal, 8 MB stacks, 0 MB globals, 2 P
`
	st := gcSpan(log)
	if st.cycles != 2 || st.liveMB != 230 {
		t.Errorf("cycles %d, live %d MB; want 2 and 230", st.cycles, st.liveMB)
	}
	if want := 1228 * time.Millisecond; st.markWall != want {
		t.Errorf("marking %v, want %v", st.markWall, want)
	}
	// 15+103+404+0+0.076 and 5.8+88+395+0.5+0.11 ms.
	if want := time.Duration(1011.486 * float64(time.Millisecond)); st.cpu < want-time.Microsecond || st.cpu > want+time.Microsecond {
		t.Errorf("CPU %v, want %v", st.cpu, want)
	}
	if st := gcSpan("no collections here\n"); st.cycles != 0 {
		t.Errorf("read %d collections from a log without any", st.cycles)
	}
}
