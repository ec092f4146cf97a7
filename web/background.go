package web

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// Kinds of background step: what the cluster does to keep itself going
// rather than what people and controllers do to objects. The overview
// folds them into one quiet line unless asked to show them.
const (
	// backgroundLease is a Lease renewal (node heartbeats, leader election).
	backgroundLease = "lease"
	// backgroundHeartbeat is a node's status update.
	backgroundHeartbeat = "heartbeat"
	// backgroundEventWrite is the write of a core Event, which the feed
	// shows as the Event itself.
	backgroundEventWrite = "event-write"
	// backgroundCheck is a permission or identity check (a
	// SubjectAccessReview, a SelfSubjectReview, a TokenReview) or anything
	// the dashboard's own identity asks.
	backgroundCheck = "check"
)

// reviewResources are the APIs that answer a question and store nothing.
var reviewResources = map[string]bool{
	"subjectaccessreviews": true, "selfsubjectaccessreviews": true, "localsubjectaccessreviews": true,
	"selfsubjectrulesreviews": true, "selfsubjectreviews": true, "tokenreviews": true,
}

// backgroundOf says which kind of background step an API request is, or ""
// for a step of the story: a person's or a controller's request about an
// object.
func backgroundOf(ev *auditv1.Event) string {
	// What the dashboard asks as itself is its own check; what it sends
	// impersonating a logged-in user (an apply, a delete) is that user's.
	if isDashboardRequest(ev) {
		return backgroundCheck
	}
	resource, sub, _, _ := auditRef(ev)
	switch {
	case reviewResources[resource]:
		return backgroundCheck
	case resource == "leases":
		return backgroundLease
	case resource == "nodes" && sub == "status":
		return backgroundHeartbeat
	case resource == "events" && sub == "":
		return backgroundEventWrite
	}
	return ""
}

// eventBackground says which kind of background step a core Event is: those
// about Leases (leader election) are; the rest tell the story.
func eventBackground(e *corev1.Event) string {
	if e.InvolvedObject.Kind == "Lease" {
		return backgroundLease
	}
	return ""
}

// UserAgent is the User-Agent of every request a dashboard sends (its
// sources should send it too): what the dashboard asks as itself is told
// from what a person using the same kubeconfig does by it.
const UserAgent = "glassplane-dashboard"

// isDashboardRequest reports whether ev is a request the dashboard sent as
// itself: as Glassplane's system:glassplane-dashboard, or with its
// User-Agent whatever user its kubeconfig names.
func isDashboardRequest(ev *auditv1.Event) bool {
	return ev.ImpersonatedUser == nil && (ev.User.Username == dashboardUser || strings.HasPrefix(ev.UserAgent, UserAgent))
}
