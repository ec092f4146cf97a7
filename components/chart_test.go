package components

import "testing"

// TestLayoutChart places samples on the axes: oldest left, newest right,
// a higher value higher up, the line stepping between samples, the target
// at its value and a rescale at its time.
func TestLayoutChart(t *testing.T) {
	l := layoutChart(MetricChart{Target: 50, Unit: "%",
		Points:   []ChartPoint{{Time: "2026-12-04T10:00:00Z", Value: 10}, {Time: "2026-12-04T10:01:00Z", Value: 100}, {Time: "not a time", Value: 5}},
		Rescales: []ChartPoint{{Time: "2026-12-04T10:00:30Z", Value: 4}}})
	if len(l.Dots) != 2 {
		t.Fatalf("%d dots, want 2 (a sample without a time is left out)", len(l.Dots))
	}
	first, last := l.Dots[0], l.Dots[1]
	if first.X != chartLeft || last.X != chartW-chartRight || last.Y >= first.Y {
		t.Errorf("dots %+v %+v", first, last)
	}
	if l.TargetY <= last.Y || l.TargetY >= first.Y {
		t.Errorf("the target at y %d is not between 10%% (y %d) and 100%% (y %d)", l.TargetY, first.Y, last.Y)
	}
	if want := "48,159 624,159 624,39"; l.Line != want {
		t.Errorf("line %q, want %q", l.Line, want)
	}
	if len(l.Marks) != 1 || l.Marks[0].X != (chartLeft+chartW-chartRight)/2 || l.Marks[0].Label != "→4" {
		t.Errorf("marks %+v", l.Marks)
	}
	if l.YMax != "120%" {
		t.Errorf("y axis up to %q, want 120%%", l.YMax)
	}
}
