package components

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// The metric chart's drawing area, in SVG units.
const (
	chartW     = 640
	chartH     = 200
	chartLeft  = 48
	chartRight = 16
	chartTop   = 12
	chartBot   = 28
)

// chartLayout is a MetricChart placed on the SVG: the polyline of its
// samples, the target's line, one dot per sample and one marker per
// rescale, and the axes' labels.
type chartLayout struct {
	Line    string
	TargetY int
	Dots    []chartDot
	Marks   []chartMark
	YMax    string
	XFrom   string
	XTo     string
}

type chartDot struct {
	X, Y  int
	Title string
}

type chartMark struct {
	X     int
	Label string
	Title string
}

// layoutChart places c's samples on a time axis from its first to its last
// sample or rescale, and on a value axis from 0 to a fifth above the
// larger of the target and the highest sample, as a stepped line (a
// sample's value holds until the next). Samples whose time does not parse
// are left out.
func layoutChart(c MetricChart) chartLayout {
	type at struct {
		t time.Time
		p ChartPoint
	}
	parse := func(ps []ChartPoint) []at {
		var out []at
		for _, p := range ps {
			if t, err := time.Parse(time.RFC3339Nano, p.Time); err == nil {
				out = append(out, at{t, p})
			}
		}
		return out
	}
	points, marks := parse(c.Points), parse(c.Rescales)
	var first, last time.Time
	for _, a := range append(append([]at(nil), points...), marks...) {
		if first.IsZero() || a.t.Before(first) {
			first = a.t
		}
		if a.t.After(last) {
			last = a.t
		}
	}
	top := c.Target
	for _, a := range points {
		top = math.Max(top, a.p.Value)
	}
	if top <= 0 {
		top = 1
	}
	top *= 1.2
	span := last.Sub(first)
	x := func(t time.Time) int {
		if span <= 0 {
			return chartW - chartRight
		}
		return chartLeft + int(float64(chartW-chartLeft-chartRight)*float64(t.Sub(first))/float64(span))
	}
	y := func(v float64) int {
		return chartH - chartBot - int(float64(chartH-chartTop-chartBot)*v/top)
	}
	l := chartLayout{TargetY: y(c.Target), YMax: formatValue(top, c.Unit)}
	if !first.IsZero() {
		l.XFrom, l.XTo = first.Local().Format("15:04:05"), last.Local().Format("15:04:05")
	}
	// The line steps: a value holds until the next sample replaces it.
	var line []string
	for i, a := range points {
		px, py := x(a.t), y(a.p.Value)
		if i > 0 {
			line = append(line, strconv.Itoa(px)+","+strconv.Itoa(y(points[i-1].p.Value)))
		}
		line = append(line, strconv.Itoa(px)+","+strconv.Itoa(py))
		l.Dots = append(l.Dots, chartDot{X: px, Y: py, Title: a.t.Local().Format("15:04:05") + ": " + formatValue(a.p.Value, c.Unit) +
			" (target " + formatValue(c.Target, c.Unit) + ", " + strconv.Itoa(int(a.p.Replicas)) + " replicas)"})
	}
	l.Line = strings.Join(line, " ")
	for _, a := range marks {
		l.Marks = append(l.Marks, chartMark{X: x(a.t), Label: "→" + strconv.Itoa(int(a.p.Value)), Title: a.t.Local().Format("15:04:05") + ": new size " + strconv.Itoa(int(a.p.Value))})
	}
	return l
}

// formatValue shows a metric value with its unit, rounded.
func formatValue(v float64, unit string) string {
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) + unit
}
