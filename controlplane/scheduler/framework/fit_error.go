package framework

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// NoNodeAvailableMsg starts every FitError message.
const NoNodeAvailableMsg = "0/%v nodes are available"

// Diagnosis records why a pod fit no node.
type Diagnosis struct {
	// NodeToStatus is the rejecting status of every node that was evaluated.
	NodeToStatus map[string]*Status
	// PreFilterMsg is set when a PreFilter plugin rejected the pod outright.
	PreFilterMsg string
	// PostFilterMsg is what the PostFilter step (preemption) said.
	PostFilterMsg string
}

// FitError is the error of a cycle in which the pod fit no node.
type FitError struct {
	Pod         *v1.Pod
	NumAllNodes int
	Diagnosis   Diagnosis
}

// Error renders the message kube-scheduler puts in FailedScheduling events:
// "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated
// taint(s). preemption: ...". Each distinct reason is counted over the nodes
// and the "<count> <reason>" strings are sorted as strings.
func (f *FitError) Error() string {
	msg := fmt.Sprintf(NoNodeAvailableMsg+":", f.NumAllNodes)
	if f.Diagnosis.PreFilterMsg != "" {
		msg = appendSentence(msg, f.Diagnosis.PreFilterMsg)
	} else if hist := ReasonHistogram(f.Diagnosis.NodeToStatus); hist != "" {
		msg = appendSentence(msg, hist)
	}
	if f.Diagnosis.PostFilterMsg != "" {
		msg = appendSentence(msg, f.Diagnosis.PostFilterMsg)
	}
	return msg
}

// ReasonHistogram counts each reason over the statuses and joins the sorted
// "<count> <reason>" strings with ", ".
func ReasonHistogram(statuses map[string]*Status) string {
	counts := map[string]int{}
	for _, s := range statuses {
		for _, r := range s.Reasons() {
			counts[r]++
		}
	}
	parts := make([]string, 0, len(counts))
	for r, n := range counts {
		parts = append(parts, fmt.Sprintf("%d %s", n, r))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// appendSentence appends " <s>." to msg, without doubling a period s
// already ends with.
func appendSentence(msg, s string) string {
	return msg + " " + strings.TrimSuffix(s, ".") + "."
}
