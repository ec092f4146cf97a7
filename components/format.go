package components

import (
	"net/url"
	"strconv"
	"strings"
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

// modeKey is the runtime badge's i18n key.
func modeKey(mode string) string {
	switch mode {
	case "":
		return "top.mode.unknown"
	case "simulated":
		return "top.mode.simulated"
	}
	return "top.mode.runtime"
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

// Cluster map geometry, shared with static/js/map.js (keep them equal).
const (
	// MapHeight is the SVG's height in user units.
	MapHeight = 500
	// MapNodeY is the top of the node row; MapNodeW and MapNodeH the size
	// of one node, MapNodeGap the space between nodes.
	MapNodeY   = 272
	MapNodeW   = 220
	MapNodeH   = 212
	MapNodeGap = 24
	// mapMinWidth is the width that fits the control plane.
	mapMinWidth = 1000
	// mapPodsPerRow is how many pod dots fit one row of a node.
	mapPodsPerRow = 10
	// mapMinScale is the smallest scale, in percent, the map is drawn at.
	mapMinScale = 75
)

// MapWidth is the SVG's width for n nodes.
func MapWidth(n int) int {
	return max(mapMinWidth, 20+n*(MapNodeW+MapNodeGap))
}

// MapDisplayWidth is the width, in CSS pixels, the map is drawn at for n
// nodes: its width at mapMinScale. The page's CSS widens it to its panel,
// so a map of a few nodes fills the panel; a map of many scrolls sideways
// at a readable size instead of shrinking to a strip (a hundred nodes at
// the panel's width would be a strip 20 px high, and every change of a pod
// dot would repaint and raster all of it).
func MapDisplayWidth(n int) int {
	return MapWidth(n) * mapMinScale / 100
}

// MapNodeX is the left edge of node slot i.
func MapNodeX(i int) int { return 20 + i*(MapNodeW+MapNodeGap) }

// MapPodX is the centre of pod dot j in node slot i.
func MapPodX(i, j int) int { return MapNodeX(i) + 20 + (j%mapPodsPerRow)*20 }

// MapPodY is the centre of pod dot j.
func MapPodY(j int) int { return MapNodeY + 152 + (j/mapPodsPerRow)*20 }

// stageTitles name the pipeline stages for people.
var stageTitles = map[string]string{
	"authentication": "authentication",
	"authorization":  "authorization (RBAC)",
	"decoding":       "decoding",
	"admission":      "admission (validation)",
	"etcd":           "storage (etcd)",
}

// stageStart is when a request entered a stage, for people ("+0.39 ms"),
// or "" when that is not known.
func stageStart(s Stage) string {
	if !s.Timed {
		return ""
	}
	return "+" + strconv.FormatFloat(float64(s.Start.Microseconds())/1000, 'f', 2, 64) + " ms"
}

// stageChipTitle is a stage chip's tooltip: the stage, how it went and,
// when known, when the request entered it.
func stageChipTitle(s Stage) string {
	t := s.Name + ": " + s.State
	if start := stageStart(s); start != "" {
		t += ", entered " + start[1:] + " after the request arrived"
	}
	return t
}

func stageTitle(name string) string {
	if t, ok := stageTitles[name]; ok {
		return t
	}
	return name
}

// stageDetail says what a stage found for one request; the stage that
// stopped it says why, in a few words.
func stageDetail(r RequestRow, stage string) string {
	if r.FailedStage == stage {
		for _, s := range r.Stages {
			if s.Name == stage && s.Detail != "" {
				return s.Detail
			}
		}
		return "refused"
	}
	switch stage {
	case "authentication":
		if r.Authenticator != "" {
			return r.Authenticator
		}
		return "ok"
	case "authorization":
		if r.Decision != "" {
			return r.Decision
		}
	case "admission":
		if n := len(r.Admission); n > 0 {
			return strconv.Itoa(n) + " plugin notes"
		}
	case "etcd":
		if r.Revision > 0 {
			return "rev " + strconv.FormatInt(r.Revision, 10)
		}
	}
	return ""
}

// atValue is where the revision slider starts: the revision shown.
func atValue(e Etcd) int64 {
	if e.At > 0 {
		return e.At
	}
	return e.Revision
}

// diffClass styles a diff line by its op.
func diffClass(op string) string {
	switch op {
	case "+":
		return "dl-add"
	case "-":
		return "dl-del"
	}
	return "dl-same"
}

// objectPath is the dashboard path of an object's page.
func objectPath(o Object) string {
	if o.Namespace == "" {
		return "/objects/" + url.PathEscape(o.Resource) + "/" + url.PathEscape(o.Name)
	}
	return "/objects/" + url.PathEscape(o.Resource) + "/" + url.PathEscape(o.Namespace) + "/" + url.PathEscape(o.Name)
}

// incarnationsOf are the incarnations created before the one shown
// (earlier) or after it.
func incarnationsOf(all []Incarnation, earlier bool) []Incarnation {
	var out []Incarnation
	for _, inc := range all {
		if inc.Earlier == earlier {
			out = append(out, inc)
		}
	}
	return out
}

// incarnationCount reads like "2 earlier pods named mypod:".
func incarnationCount(n int, when string, o Object) string {
	return strconv.Itoa(n) + " " + when + " " + incarnationWhat(n, o) + " named " + o.Name + ":"
}

// incarnationWhat names n objects of o's kind: "pod", "pods".
func incarnationWhat(n int, o Object) string {
	if n == 1 {
		if o.Kind == "" {
			return "object"
		}
		return strings.ToLower(o.Kind)
	}
	if o.Resource == "" {
		return "objects"
	}
	return o.Resource
}
