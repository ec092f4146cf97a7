package explain

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
)

// A pod's decision record is the SchedulingDecision (glassplane.io/v1alpha1)
// of the pod's name in the pod's namespace, owned by the pod so that the
// garbage collector deletes it with the pod (Record and HistoryOf convert
// it). Until the scheduler writes an attempt, it holds the attempt
// compressed (EncodeHistory, DecodeHistory).
const (
	// SummaryAnnotation is the Scheduled or FailedScheduling Event's
	// annotation holding the JSON Summary of the attempt.
	SummaryAnnotation = "scheduler.glassplane.io/summary"
)

// Limits of a record.
const (
	// DefaultHistory is how many attempts a record keeps, newest last.
	DefaultHistory = 10
	// MaxRecordNodes is how many nodes of each kind an attempt of a record
	// lists at most: the best scored nodes (Scores, and the same nodes in
	// Filter, or the first feasible ones by name when none was scored),
	// and as many rejected nodes, taken in turn from each rejecting plugin
	// so that every reason shows (Cap). An attempt over 1,000 nodes lists
	// some 420 evaluated and scored, 280 KB of JSON for the API server and
	// every watch of the records to decode on each write; twenty rows of
	// each are some 15 KB, and as many as a reader of the matrix follows.
	MaxRecordNodes = 20
	// MaxRecordBytes bounds the JSON of a record's attempts, well below
	// the 1.5 MiB etcd takes in one request: older attempts are dropped
	// first, then the nodes of a single attempt still too big are cut
	// further (Cap).
	MaxRecordBytes = 512 * 1024
	// maxDecodedBytes bounds what DecodeHistory inflates, so that a hostile
	// blob cannot exhaust memory.
	maxDecodedBytes = 64 << 20
)

// History is the attempts the scheduler recorded for one pod, oldest first.
type History struct {
	// Pod is "namespace/name".
	Pod string `json:"pod"`
	// UID is the pod's uid: a record left from an earlier pod of the same
	// name does not count.
	UID string `json:"uid"`
	// Attempts are the recorded attempts, oldest first.
	Attempts []Decision `json:"attempts"`
	// Dropped counts older attempts left out to stay within the limits.
	Dropped int `json:"dropped,omitempty"`
}

// Cap returns h with its newest maxAttempts attempts at most
// (DefaultHistory when <= 0), each listing MaxRecordNodes scored and as
// many rejected nodes at most (trimNodes), then without the oldest until
// the attempts' JSON is at most MaxRecordBytes; a single attempt still too
// big keeps only as many nodes as fit, cut like Compact. Dropped counts
// the attempts that went.
func Cap(h History, maxAttempts int) History {
	if maxAttempts <= 0 {
		maxAttempts = DefaultHistory
	}
	if n := len(h.Attempts) - maxAttempts; n > 0 {
		h.Attempts = h.Attempts[n:]
		h.Dropped += n
	}
	h.Attempts = append([]Decision(nil), h.Attempts...)
	for i := range h.Attempts {
		h.Attempts[i] = trimNodes(h.Attempts[i], MaxRecordNodes)
	}
	sizes := make([]int, len(h.Attempts))
	total := 0
	raw := jsonBuffers.Get().(*[]byte)
	for i := range h.Attempts {
		*raw = appendDecision((*raw)[:0], &h.Attempts[i])
		sizes[i] = len(*raw) + 1
		total += sizes[i]
	}
	jsonBuffers.Put(raw)
	drop := 0
	for drop < len(sizes)-1 && total > MaxRecordBytes {
		total -= sizes[drop]
		drop++
	}
	h.Attempts = h.Attempts[drop:]
	h.Dropped += drop
	if total > MaxRecordBytes && len(h.Attempts) == 1 {
		h.Attempts[0], _ = cut(h.Attempts[0], max(len(h.Attempts[0].Filter), len(h.Attempts[0].Scores)), MaxRecordBytes)
	}
	return h
}

// trimNodes returns d listing at most n scored nodes, the best (with
// their Filter entries; without scores, the first n feasible nodes by
// name), and at most n rejected nodes, taken in turn from each rejecting
// plugin (by plugin, then by node name); the *Omitted fields count the
// others. A d within both bounds is returned as it is.
func trimNodes(d Decision, n int) Decision {
	rejected := 0
	for i := range d.Filter {
		if !d.Filter[i].Passed {
			rejected++
		}
	}
	if len(d.Scores) <= n && len(d.Filter)-rejected <= n && rejected <= n {
		return d
	}
	scores := smallest(d.Scores, n, func(a, b *NodeScore) bool {
		if a.Total != b.Total {
			return a.Total > b.Total
		}
		return a.Node < b.Node
	})
	rank := make(map[string]int, len(scores))
	for i, s := range scores {
		rank[s.Node] = i
	}
	var passed []NodeFilter
	byPlugin := map[string][]NodeFilter{}
	for _, f := range d.Filter {
		_, scored := rank[f.Node]
		switch {
		case !f.Passed:
			byPlugin[f.Plugin] = append(byPlugin[f.Plugin], f)
		case scored || len(scores) == 0:
			passed = append(passed, f)
		}
	}
	slices.SortFunc(passed, func(a, b NodeFilter) int {
		if len(scores) > 0 {
			return rank[a.Node] - rank[b.Node]
		}
		return strings.Compare(a.Node, b.Node)
	})
	filter := passed[:min(n, len(passed))]
	plugins := slices.Sorted(maps.Keys(byPlugin))
	for _, p := range plugins {
		slices.SortFunc(byPlugin[p], func(a, b NodeFilter) int { return strings.Compare(a.Node, b.Node) })
	}
	for taken, i := 0, 0; taken < n && taken < rejected; i++ {
		for _, p := range plugins {
			if i < len(byPlugin[p]) && taken < n {
				filter = append(filter, byPlugin[p][i])
				taken++
			}
		}
	}
	d.FilterOmitted += len(d.Filter) - len(filter)
	d.ScoresOmitted += len(d.Scores) - len(scores)
	d.Filter, d.Scores = filter, scores
	return d
}

// EncodeHistory returns h compressed: the gzip of its JSON in the
// columnar form of recordform.go, a few kilobytes for an attempt over 1,000
// nodes, which is how the scheduler holds the attempts it has yet to
// write. It does not cap h (see Cap).
func EncodeHistory(h History) ([]byte, error) {
	b, err := gzipJSON(&h)
	if err != nil {
		return nil, fmt.Errorf("failed to encode the scheduling attempts of %q: %w", h.Pod, err)
	}
	return b, nil
}

// gzipWriters reuses compressors: a new one allocates about a megabyte.
var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed)
	return zw
}}

// jsonBuffers reuses the uncompressed JSON of attempts, some hundreds of
// kilobytes at 1,000 nodes.
var jsonBuffers = sync.Pool{New: func() any { return new([]byte) }}

// gzipJSON returns h's record JSON (see appendRecord), compressed.
func gzipJSON(h *History) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(zw)
	zw.Reset(&buf)
	raw := jsonBuffers.Get().(*[]byte)
	defer jsonBuffers.Put(raw)
	*raw = append(appendRecord((*raw)[:0], h), '\n')
	if _, err := zw.Write(*raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ErrRecordTooLarge is returned by DecodeHistory for a blob that
// inflates beyond the decoder's bound.
var ErrRecordTooLarge = errors.New("scheduling attempts inflate beyond 64 MiB")

// DecodeHistory reads a History EncodeHistory compressed.
func DecodeHistory(b []byte) (History, error) {
	var h History
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return h, fmt.Errorf("failed to read compressed scheduling attempts: %w", err)
	}
	data, err := io.ReadAll(io.LimitReader(zr, maxDecodedBytes+1))
	if err != nil {
		return h, fmt.Errorf("failed to read compressed scheduling attempts: %w", err)
	}
	if len(data) > maxDecodedBytes {
		return h, ErrRecordTooLarge
	}
	if h, err = decodeRecord(data); err != nil {
		return h, fmt.Errorf("failed to decode compressed scheduling attempts: %w", err)
	}
	return h, nil
}

// Summary is the short form of one attempt attached to its Event.
type Summary struct {
	Attempt int `json:"attempt"`
	// Nodes is how many nodes the scheduler knew, Evaluated how many it
	// filtered, Feasible how many passed.
	Nodes     int `json:"nodes"`
	Evaluated int `json:"evaluated"`
	Feasible  int `json:"feasible"`
	// Node is the chosen node and Score its total, when one was chosen.
	Node  string `json:"node,omitempty"`
	Score int64  `json:"score,omitempty"`
	// Rejected counts the nodes each filter plugin removed.
	Rejected map[string]int `json:"rejected,omitempty"`
	// NominatedNode is where preemption made room.
	NominatedNode string `json:"nominatedNode,omitempty"`
}

// Summarize returns d's Summary.
func Summarize(d Decision) Summary {
	s := Summary{Attempt: d.Attempt, Nodes: d.Nodes, Evaluated: len(d.Filter) + d.FilterOmitted, Feasible: d.Feasible,
		Node: d.Node, NominatedNode: d.NominatedNode}
	for _, f := range d.Filter {
		if !f.Passed {
			if s.Rejected == nil {
				s.Rejected = map[string]int{}
			}
			s.Rejected[f.Plugin]++
		}
	}
	for _, ns := range d.Scores {
		if ns.Node == d.Node {
			s.Score = ns.Total
		}
	}
	return s
}

// SummaryJSON is the JSON of Summarize(d).
func SummaryJSON(d Decision) string {
	b, err := json.Marshal(Summarize(d))
	if err != nil {
		return ""
	}
	return string(b)
}
