package explain

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Limits of the compact form (Compact): what the dashboard's pod page
// shows.
const (
	// MaxCompactNodes is how many nodes the compact form lists at most
	// in Filter and in Scores.
	MaxCompactNodes = 5
	// MaxCompactBytes bounds the compact JSON.
	MaxCompactBytes = 32 * 1024
)

// Decision is one scheduling attempt of one pod, as the scheduler saw it.
type Decision struct {
	// Attempt counts the pod's scheduling attempts, from 1.
	Attempt int `json:"attempt"`
	// Time is when the attempt started.
	Time metav1.Time `json:"time"`
	// Pod is "namespace/name".
	Pod string `json:"pod"`
	// Node is the chosen node; empty if the attempt failed.
	Node string `json:"node,omitempty"`
	// Nodes is how many nodes the scheduler knew in this attempt.
	Nodes int `json:"nodes"`
	// Feasible is how many evaluated nodes passed every filter.
	Feasible int `json:"feasible"`
	// FilterPlugins are the profile's Filter plugins in the order they ran
	// on each node; a node rejected by one was not checked by the later.
	FilterPlugins []string `json:"filterPlugins,omitempty"`
	// Filter holds one entry per evaluated node.
	Filter []NodeFilter `json:"filter,omitempty"`
	// FilterOmitted counts Filter entries left out of a compact form.
	FilterOmitted int `json:"filterOmitted,omitempty"`
	// Scores holds one entry per scored node, best first. It is empty when
	// the scheduler did not need to score (one feasible node or none).
	Scores []NodeScore `json:"scores,omitempty"`
	// ScoresOmitted counts Scores entries left out of a compact form.
	ScoresOmitted int `json:"scoresOmitted,omitempty"`
	// NominatedNode is where preemption made room for the pod after this
	// failed attempt; Victims are the pods it evicted there.
	NominatedNode string   `json:"nominatedNode,omitempty"`
	Victims       []string `json:"victims,omitempty"`
	// PDBViolations counts the Victims whose eviction violated a
	// PodDisruptionBudget: preemption prefers nodes with fewer, but treats
	// budgets as best effort.
	PDBViolations int `json:"pdbViolations,omitempty"`
	// Message is the event message: "Successfully assigned ..." or the
	// FailedScheduling text.
	Message string `json:"message,omitempty"`
}

// NodeFilter is the filter outcome on one node: passed, or the first plugin
// that rejected it and why.
type NodeFilter struct {
	Node   string `json:"node"`
	Passed bool   `json:"passed"`
	Plugin string `json:"plugin,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// NodeScore is one node's score: every plugin's part and their sum.
type NodeScore struct {
	Node    string        `json:"node"`
	Plugins []PluginScore `json:"plugins"`
	Total   int64         `json:"total"`
}

// PluginScore is one plugin's part of a node's score: the raw score, the
// score after normalization (0..100), the plugin's weight and their product
// (zeros are left out of the JSON).
type PluginScore struct {
	Plugin     string `json:"plugin"`
	Raw        int64  `json:"raw,omitempty"`
	Normalized int64  `json:"normalized,omitempty"`
	Weight     int64  `json:"weight"`
	Weighted   int64  `json:"weighted,omitempty"`
}

// Compact returns the JSON of d cut down to a short form: Scores best
// first and Filter with passed nodes first (in score order), then rejected
// nodes by name, each capped at MaxCompactNodes and halved further until
// the JSON is at most MaxCompactBytes; the *Omitted fields count what
// was cut.
func Compact(d Decision) ([]byte, error) {
	_, b := cut(d, MaxCompactNodes, MaxCompactBytes)
	return b, nil
}

// cut returns d with Scores best first and Filter with passed nodes first
// (in score order), then rejected nodes by name, each capped at limit
// nodes and halved further until d's JSON is at most maxBytes, and that
// JSON; the *Omitted fields count what was cut. With no node left, a
// message longer than half of maxBytes is cut too.
func cut(d Decision, limit, maxBytes int) (Decision, []byte) {
	// Only the head of each list is kept, so only the head is sorted: a
	// decision at 1,000 nodes lists hundreds.
	scores := smallest(d.Scores, limit, func(a, b *NodeScore) bool {
		if a.Total != b.Total {
			return a.Total > b.Total
		}
		return a.Node < b.Node
	})
	// Passed nodes come in score order; only the best limit can be among
	// the first limit entries.
	rank := make(map[string]int, len(scores))
	for i, s := range scores {
		rank[s.Node] = i
	}
	filter := smallest(d.Filter, limit, func(a, b *NodeFilter) bool {
		if a.Passed != b.Passed {
			return a.Passed
		}
		if a.Passed {
			ra, oka := rank[a.Node]
			rb, okb := rank[b.Node]
			if oka != okb {
				return oka
			}
			if ra != rb {
				return ra < rb
			}
		}
		return a.Node < b.Node
	})

	for ; ; limit /= 2 {
		c := d
		c.Filter, c.FilterOmitted = capList(filter, limit), d.FilterOmitted+max(0, len(d.Filter)-min(limit, len(filter)))
		c.Scores, c.ScoresOmitted = capList(scores, limit), d.ScoresOmitted+max(0, len(d.Scores)-min(limit, len(scores)))
		if limit == 0 && len(c.Message) > maxBytes/2 {
			c.Message = c.Message[:maxBytes/2] + " ..."
		}
		b := appendDecision(nil, &c)
		if len(b) <= maxBytes || limit == 0 {
			return c, b
		}
	}
}

func capList[T any](s []T, n int) []T {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// smallest returns the n least elements of s by less, in order, equal ones
// in their order in s (a stable sort's first n), without sorting the rest.
func smallest[T any](s []T, n int, less func(a, b *T) bool) []T {
	if n <= 0 || len(s) == 0 {
		return nil
	}
	out := make([]T, 0, min(n, len(s)))
	for i := range s {
		x := &s[i]
		if len(out) < n {
			out = append(out, *x)
		} else if !less(x, &out[n-1]) {
			continue
		}
		// The last slot is x's (just appended, or the largest dropped).
		j := len(out) - 1
		for j > 0 && less(x, &out[j-1]) {
			out[j] = out[j-1]
			j--
		}
		out[j] = *x
	}
	return out
}
