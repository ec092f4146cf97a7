package explain

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// The compressed form (EncodeHistory) holds attempts in a columnar form: a
// Decision at 1,000 nodes written field by field is some 200 KB of JSON,
// nine tenths of it the same plugin names and weights repeated in every
// node's scores, and the scheduler may hold thousands of attempts waiting
// to be written. In it, an attempt that fits the form keeps its head and
// tail fields as in Decision's JSON and replaces "filter" and "scores"
// with
//
//	"evaluated":    the filtered nodes' names, in Filter's order;
//	"rejected":     [{"i": index into evaluated, "plugin", "reason"}, ...]
//	                for the nodes that did not pass;
//	"scorePlugins": [{"plugin", "weight"}, ...], the score plugins in the
//	                order every node's scores list them;
//	"scoreRows":    one [index into evaluated, total, raw, normalized,
//	                raw, normalized, ...] per node in Scores' order, one
//	                raw and normalized pair per score plugin (the weighted
//	                score is normalized × weight).
//
// An attempt that does not fit (scores of a node not among the evaluated,
// plugins that differ from node to node, a weighted score that is not
// normalized × weight) is written as Decision's JSON; DecodeHistory reads
// both, and refuses a "version" newer than its own.
const recordVersion = 2

// appendRecord writes h in the columnar form.
func appendRecord(b []byte, h *History) []byte {
	b = append(b, `{"version":`...)
	b = strconv.AppendInt(b, recordVersion, 10)
	b = append(b, `,"pod":`...)
	b = appendString(b, h.Pod)
	b = append(b, `,"uid":`...)
	b = appendString(b, h.UID)
	b = append(b, `,"attempts":[`...)
	var index map[string]int
	for i := range h.Attempts {
		if i > 0 {
			b = append(b, ',')
		}
		b, index = appendRecordDecision(b, &h.Attempts[i], index)
	}
	b = append(b, ']')
	if h.Dropped != 0 {
		b = append(b, `,"dropped":`...)
		b = strconv.AppendInt(b, int64(h.Dropped), 10)
	}
	return append(b, '}')
}

// appendRecordDecision writes d in the columnar form when it fits, else as
// Decision's JSON. index is a scratch map, returned for reuse.
func appendRecordDecision(b []byte, d *Decision, index map[string]int) ([]byte, map[string]int) {
	if !fitsColumns(d) {
		return appendDecision(b, d), index
	}
	if index == nil {
		index = make(map[string]int, len(d.Filter))
	}
	clear(index)
	for i := range d.Filter {
		index[d.Filter[i].Node] = i
	}
	for i := range d.Scores {
		if _, ok := index[d.Scores[i].Node]; !ok {
			return appendDecision(b, d), index
		}
	}
	if len(index) != len(d.Filter) {
		// A node filtered twice: its index would be ambiguous.
		return appendDecision(b, d), index
	}

	b = appendDecisionHead(b, d)
	if len(d.Filter) > 0 {
		b = append(b, `,"evaluated":[`...)
		for i := range d.Filter {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, d.Filter[i].Node)
		}
		b = append(b, ']')
		first := true
		for i := range d.Filter {
			f := &d.Filter[i]
			if f.Passed {
				continue
			}
			if first {
				b = append(b, `,"rejected":[`...)
				first = false
			} else {
				b = append(b, ',')
			}
			b = append(b, `{"i":`...)
			b = strconv.AppendInt(b, int64(i), 10)
			b = appendRejection(b, f)
			b = append(b, '}')
		}
		if !first {
			b = append(b, ']')
		}
	}
	if d.FilterOmitted != 0 {
		b = append(b, `,"filterOmitted":`...)
		b = strconv.AppendInt(b, int64(d.FilterOmitted), 10)
	}
	if len(d.Scores) > 0 {
		b = append(b, `,"scorePlugins":[`...)
		for j, p := range d.Scores[0].Plugins {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"plugin":`...)
			b = appendString(b, p.Plugin)
			b = append(b, `,"weight":`...)
			b = strconv.AppendInt(b, p.Weight, 10)
			b = append(b, '}')
		}
		b = append(b, `],"scoreRows":[`...)
		for i := range d.Scores {
			s := &d.Scores[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '[')
			b = strconv.AppendInt(b, int64(index[s.Node]), 10)
			b = append(b, ',')
			b = strconv.AppendInt(b, s.Total, 10)
			for j := range s.Plugins {
				b = append(b, ',')
				b = strconv.AppendInt(b, s.Plugins[j].Raw, 10)
				b = append(b, ',')
				b = strconv.AppendInt(b, s.Plugins[j].Normalized, 10)
			}
			b = append(b, ']')
		}
		b = append(b, ']')
	}
	return appendDecisionTail(b, d), index
}

// fitsColumns says whether every node's scores list the same plugins with
// the same weights, in the same order, each weighted score being
// normalized × weight.
func fitsColumns(d *Decision) bool {
	if len(d.Scores) == 0 {
		return true
	}
	first := d.Scores[0].Plugins
	if first == nil {
		return false
	}
	for i := range d.Scores {
		ps := d.Scores[i].Plugins
		if len(ps) != len(first) || ps == nil {
			return false
		}
		for j := range ps {
			if ps[j].Plugin != first[j].Plugin || ps[j].Weight != first[j].Weight || ps[j].Weighted != ps[j].Normalized*ps[j].Weight {
				return false
			}
		}
	}
	return true
}

// wireHistory is the columnar form's JSON.
type wireHistory struct {
	Version  int            `json:"version"`
	Pod      string         `json:"pod"`
	UID      string         `json:"uid"`
	Attempts []wireDecision `json:"attempts"`
	Dropped  int            `json:"dropped"`
}

// wireDecision is one attempt in the columnar form: Decision's fields,
// and the columnar ones.
type wireDecision struct {
	Decision
	Evaluated    []string        `json:"evaluated"`
	Rejected     []wireRejection `json:"rejected"`
	ScorePlugins []wirePlugin    `json:"scorePlugins"`
	ScoreRows    [][]int64       `json:"scoreRows"`
}

type wireRejection struct {
	I      int    `json:"i"`
	Plugin string `json:"plugin"`
	Reason string `json:"reason"`
}

type wirePlugin struct {
	Plugin string `json:"plugin"`
	Weight int64  `json:"weight"`
}

// decodeRecord reads the columnar form's JSON.
func decodeRecord(data []byte) (History, error) {
	var w wireHistory
	if err := json.Unmarshal(data, &w); err != nil {
		return History{}, err
	}
	if w.Version > recordVersion {
		return History{}, fmt.Errorf("record version %d is newer than this scheduler's %d", w.Version, recordVersion)
	}
	h := History{Pod: w.Pod, UID: w.UID, Dropped: w.Dropped}
	if w.Attempts != nil {
		h.Attempts = make([]Decision, len(w.Attempts))
	}
	for i := range w.Attempts {
		d, err := w.Attempts[i].decision()
		if err != nil {
			return History{}, fmt.Errorf("attempt %d: %w", i, err)
		}
		h.Attempts[i] = d
	}
	return h, nil
}

// decision expands the columnar fields, if any, into Filter and Scores.
func (w *wireDecision) decision() (Decision, error) {
	d := w.Decision
	if w.Evaluated != nil {
		if d.Filter != nil {
			return d, fmt.Errorf("both filter and evaluated")
		}
		d.Filter = make([]NodeFilter, len(w.Evaluated))
		for i, n := range w.Evaluated {
			d.Filter[i] = NodeFilter{Node: n, Passed: true}
		}
		for _, r := range w.Rejected {
			if r.I < 0 || r.I >= len(d.Filter) || !d.Filter[r.I].Passed {
				return d, fmt.Errorf("rejected node index %d of %d evaluated is out of range or repeated", r.I, len(d.Filter))
			}
			d.Filter[r.I] = NodeFilter{Node: d.Filter[r.I].Node, Plugin: r.Plugin, Reason: r.Reason}
		}
	} else if len(w.Rejected) > 0 {
		return d, fmt.Errorf("rejected without evaluated")
	}
	if w.ScoreRows != nil {
		if d.Scores != nil {
			return d, fmt.Errorf("both scores and scoreRows")
		}
		width := 2 + 2*len(w.ScorePlugins)
		d.Scores = make([]NodeScore, len(w.ScoreRows))
		cells := make([]PluginScore, len(w.ScoreRows)*len(w.ScorePlugins))
		for i, row := range w.ScoreRows {
			if len(row) != width {
				return d, fmt.Errorf("score row %d has %d numbers, want %d", i, len(row), width)
			}
			if row[0] < 0 || row[0] >= int64(len(d.Filter)) {
				return d, fmt.Errorf("score row %d names node index %d of %d evaluated", i, row[0], len(d.Filter))
			}
			ps := cells[i*len(w.ScorePlugins) : (i+1)*len(w.ScorePlugins) : (i+1)*len(w.ScorePlugins)]
			for j, p := range w.ScorePlugins {
				raw, norm := row[2+2*j], row[3+2*j]
				ps[j] = PluginScore{Plugin: p.Plugin, Raw: raw, Normalized: norm, Weight: p.Weight, Weighted: norm * p.Weight}
			}
			d.Scores[i] = NodeScore{Node: d.Filter[row[0]].Node, Plugins: ps, Total: row[1]}
		}
	}
	return d, nil
}
