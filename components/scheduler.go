package components

import (
	"strconv"
)

// PageScheduler is the scheduler's explanation of one pod.
const PageScheduler Page = "scheduler"

// SchedulerExplain is the view model of a pod's scheduling explanation: the
// attempts in its decision record and the nodes × plugins matrix of one.
type SchedulerExplain struct {
	Namespace, Name string
	// PodHref is the pod's object page; PodFound tells whether the pod is
	// stored, PodNode where it is bound.
	PodHref  string
	PodFound bool
	PodNode  string
	// Pending is set while the pod waits for a node: the page follows new
	// attempts.
	Pending bool
	// RecordName names the decision record, the SchedulingDecision of the
	// pod's name ("schedulingdecisions.glassplane.io/<pod>"), RecordHref
	// its object page and RecordCommand how kubectl shows it.
	RecordName, RecordHref, RecordCommand string
	// Error says why the record could not be read.
	Error string
	// NoRecord is set when the pod has no decision record: only
	// Glassplane's scheduler writes them, and it may not have tried yet.
	NoRecord bool
	// Events are the pod's Scheduled and FailedScheduling Events, oldest
	// first, shown when no attempt is recorded; EventsError says why they
	// could not be read.
	Events      []SchedulingEvent
	EventsError string
	Attempts    []AttemptLink
	// Dropped counts older attempts the record no longer holds.
	Dropped int
	// Chosen is the attempt shown, nil without attempts.
	Chosen *AttemptMatrix
}

// SchedulingEvent is one Scheduled or FailedScheduling Event about the
// pod.
type SchedulingEvent struct {
	Time    string
	Warning bool
	Reason  string
	// From is the component that reported it (default-scheduler).
	From    string
	Count   int
	Message string
	// Summary is what Glassplane's scheduler attached to the Event (its
	// counts of the attempt), nil from another scheduler.
	Summary *EventSummary
}

// EventSummary is an attempt's counts from its Event: the nodes the
// scheduler knew, filtered and found feasible, and the nodes each filter
// plugin rejected.
type EventSummary struct {
	Nodes, Evaluated, Feasible int
	Rejected                   []PluginCount
}

// PluginCount is how many nodes one plugin rejected.
type PluginCount struct {
	Plugin string
	Nodes  int
}

// AttemptLink is one attempt in the history list.
type AttemptLink struct {
	Attempt  int
	Time     string
	Node     string
	Message  string
	Href     string
	Selected bool
}

// AttemptMatrix is one attempt as a nodes × plugins matrix.
type AttemptMatrix struct {
	Attempt int
	Time    string
	Node    string
	Message string
	// Nodes is how many nodes the scheduler knew, Evaluated how many it
	// filtered (kube-scheduler stops once it found enough feasible ones),
	// Feasible how many passed every filter.
	Nodes, Evaluated, Feasible int
	NominatedNode              string
	Victims                    []string
	FilterPlugins              []string
	ScorePlugins               []ScorePluginHead
	Rows                       []MatrixRow
	// Omitted counts nodes the record cut.
	Omitted int
	// Live asks the page to play the attempt on load.
	Live bool
}

// NotEvaluated is how many nodes the attempt did not filter.
func (m AttemptMatrix) NotEvaluated() int { return max(0, m.Nodes-m.Evaluated) }

// ScorePluginHead is a score column: the plugin and its weight.
type ScorePluginHead struct {
	Name   string
	Weight int64
}

// MatrixRow is one node: a cell per filter plugin, a cell per score plugin
// and the sum.
type MatrixRow struct {
	Node   string
	Passed bool
	// RejectedAt is the index of the filter column that removed the node,
	// -1 when it passed.
	RejectedAt int
	RejectedBy string
	Reason     string
	Filter     []FilterCell
	Scores     []MatrixScore
	Scored     bool
	Total      int64
	Winner     bool
	Rank       int
}

// FilterCell is one filter plugin on one node: "pass", "fail" or "skip"
// (not run: an earlier plugin removed the node).
type FilterCell struct {
	State  string
	Reason string
}

// MatrixScore is one score plugin on one node.
type MatrixScore struct {
	Present                           bool
	Raw, Normalized, Weight, Weighted int64
}

func schedInt(n int) string { return strconv.Itoa(n) }

// EventCount is how many times the scheduling events happened: the page
// reloads when it changes.
func (v SchedulerExplain) EventCount() int {
	n := 0
	for _, e := range v.Events {
		n += max(1, e.Count)
	}
	return n
}

func schedInt64(n int64) string { return strconv.FormatInt(n, 10) }

// filterCol and scoreCol name the matrix columns the animation walks.
func filterCol(i int) string { return "f" + strconv.Itoa(i) }
func scoreCol(i int) string  { return "s" + strconv.Itoa(i) }

func filterCellText(state string) string {
	switch state {
	case "pass":
		return "✓"
	case "fail":
		return "✗"
	}
	return "·"
}

func schedBool(b bool) string { return strconv.FormatBool(b) }
