package auth

import "context"

// Decision is an authorizer's answer.
type Decision int

// Decisions, as in k8s.io/apiserver's authorizer package.
const (
	DecisionDeny Decision = iota
	DecisionAllow
	DecisionNoOpinion
)

// String returns the word recorded in audit annotations.
func (d Decision) String() string {
	switch d {
	case DecisionAllow:
		return "allow"
	case DecisionDeny:
		return "forbid"
	default:
		return "no-opinion"
	}
}

// Attributes describe a request for authorization, as Kubernetes'
// authorizer.Attributes do.
type Attributes struct {
	User            *User
	Verb            string
	ResourceRequest bool
	// Path is the URL path of a non-resource request.
	Path        string
	APIGroup    string
	APIVersion  string
	Namespace   string
	Resource    string
	Subresource string
	Name        string
}

// Authorizer decides whether a request may proceed. The reason is recorded
// in the audit event (authorization.k8s.io/reason) and, on denial, returned
// to the client.
type Authorizer interface {
	Authorize(ctx context.Context, a Attributes) (Decision, string, error)
}

// AlwaysAllowAuthenticated allows every request of an authenticated user.
type AlwaysAllowAuthenticated struct{}

// Authorize implements Authorizer.
func (AlwaysAllowAuthenticated) Authorize(_ context.Context, a Attributes) (Decision, string, error) {
	if a.User == nil {
		return DecisionNoOpinion, "", nil
	}
	return DecisionAllow, "AlwaysAllow for authenticated users", nil
}
