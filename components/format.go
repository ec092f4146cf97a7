package components

import (
	"strconv"
	"time"
)

// modeText is the header's runtime badge.
func modeText(mode string) string {
	switch mode {
	case "":
		return "runtime: unknown"
	case "simulated":
		return "runtime: simulated nodes"
	}
	return "runtime: " + mode
}

// readyText reads a node's Ready condition status.
func readyText(status string) string {
	switch status {
	case "True":
		return "Ready"
	case "False":
		return "NotReady"
	}
	return "Unknown"
}

// sourceLabel names where a timeline row comes from.
func sourceLabel(source string) string {
	if source == "audit" {
		return "API request"
	}
	return "Event"
}

// clock shows the time of day with milliseconds from an RFC 3339 timestamp.
func clock(ts string) string {
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return ts
	}
	return t.Local().Format("15:04:05.000")
}

// scoreTitle explains one score cell.
func scoreTitle(c ScoreCell) string {
	if !c.Present {
		return "not scored"
	}
	return "raw " + strconv.FormatInt(c.Raw, 10) + ", normalized " + strconv.FormatInt(c.Normalized, 10) +
		", weight " + strconv.FormatInt(c.Weight, 10)
}
