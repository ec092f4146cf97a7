package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SchedulingDecision is how Glassplane's scheduler placed one pod: the
// attempts it made, each with every evaluated node's filter result and
// every scored node's per-plugin scores. It lives in the pod's namespace
// under the pod's name, with an ownerReference to the pod, so the garbage
// collector deletes it with the pod. Only Glassplane's scheduler writes
// them: under kube-scheduler a pod has none, and its Scheduled and
// FailedScheduling Events are the whole explanation.
type SchedulingDecision struct {
	metav1.TypeMeta `json:",inline"`
	// metadata.name and metadata.namespace are the pod's.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// PodUID is the uid of the pod the attempts were made for: a record
	// left by an earlier pod of the same name is not the current pod's.
	PodUID types.UID `json:"podUID"`
	// Attempts are the recorded attempts, oldest first: the newest ten by
	// default, fewer when they would make the object too large.
	// +optional
	Attempts []SchedulingAttempt `json:"attempts,omitempty"`
	// DroppedAttempts counts the older attempts left out.
	// +optional
	DroppedAttempts int32 `json:"droppedAttempts,omitempty"`
}

// SchedulingAttempt is one scheduling cycle of the pod, as the scheduler
// saw it.
type SchedulingAttempt struct {
	// Attempt counts the pod's scheduling attempts, from 1.
	Attempt int32 `json:"attempt"`
	// Time is when the attempt started.
	Time metav1.Time `json:"time"`
	// Node is the chosen node; empty when the attempt failed.
	// +optional
	Node string `json:"node,omitempty"`
	// Nodes is how many nodes the scheduler knew.
	Nodes int32 `json:"nodes"`
	// Feasible is how many evaluated nodes passed every filter.
	Feasible int32 `json:"feasible"`
	// FilterPlugins are the profile's Filter plugins in the order they ran
	// on each node; a node one of them rejected was not checked by the
	// later ones.
	// +optional
	FilterPlugins []string `json:"filterPlugins,omitempty"`
	// Filter holds the evaluated nodes' results. Like kube-scheduler, the
	// scheduler stops filtering once it has found enough feasible nodes
	// (percentageOfNodesToScore), so in a large cluster not every node is
	// evaluated; and to keep the object small, an attempt over many nodes
	// lists only the scored nodes of Scores (or the first feasible ones)
	// and twenty rejected nodes, taken in turn from each rejecting plugin.
	// +optional
	Filter []NodeFilterResult `json:"filter,omitempty"`
	// FilterOmitted counts the evaluated nodes left out of Filter.
	// +optional
	FilterOmitted int32 `json:"filterOmitted,omitempty"`
	// Scores holds the scored nodes, best first: the best twenty of an
	// attempt over many nodes. It is empty when the scheduler did not need
	// to score (one feasible node or none).
	// +optional
	Scores []NodeScore `json:"scores,omitempty"`
	// ScoresOmitted counts the scored nodes left out of Scores.
	// +optional
	ScoresOmitted int32 `json:"scoresOmitted,omitempty"`
	// NominatedNode is where preemption made room for the pod after this
	// failed attempt.
	// +optional
	NominatedNode string `json:"nominatedNode,omitempty"`
	// Victims are the pods ("namespace/name") preemption evicted on the
	// nominated node.
	// +optional
	Victims []string `json:"victims,omitempty"`
	// PDBViolations counts the victims whose eviction violated a
	// PodDisruptionBudget (preemption treats budgets as best effort).
	// +optional
	PDBViolations int32 `json:"pdbViolations,omitempty"`
	// Message is the attempt's Event message: "Successfully assigned ..."
	// or the FailedScheduling text.
	// +optional
	Message string `json:"message,omitempty"`
}

// NodeFilterResult is the filter outcome on one node: passed, or the
// first plugin that rejected it and why.
type NodeFilterResult struct {
	// Node is the node's name.
	Node string `json:"node"`
	// Passed is true when every filter plugin let the node through.
	Passed bool `json:"passed"`
	// Plugin is the filter plugin that rejected the node.
	// +optional
	Plugin string `json:"plugin,omitempty"`
	// Reason is the plugin's reason, as kube-scheduler words it
	// ("Insufficient cpu").
	// +optional
	Reason string `json:"reason,omitempty"`
}

// NodeScore is one node's score: every score plugin's part and their sum.
type NodeScore struct {
	// Node is the node's name.
	Node string `json:"node"`
	// Plugins are the score plugins' parts, in the profile's order.
	// +optional
	Plugins []PluginScore `json:"plugins,omitempty"`
	// Total is the sum of the weighted scores: the highest wins.
	Total int64 `json:"total"`
}

// PluginScore is one score plugin's part of a node's score.
type PluginScore struct {
	// Plugin is the score plugin's name.
	Plugin string `json:"plugin"`
	// Raw is the plugin's score before normalization.
	Raw int64 `json:"raw"`
	// Normalized is the score normalized to 0..100 across the nodes.
	Normalized int64 `json:"normalized"`
	// Weight is the plugin's weight in the profile.
	Weight int64 `json:"weight"`
	// Weighted is normalized × weight, the part that counts towards the
	// total.
	Weighted int64 `json:"weighted"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SchedulingDecisionList is a list of SchedulingDecisions.
type SchedulingDecisionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SchedulingDecision `json:"items"`
}
