package auth

import "context"

// Well-known groups, as in Kubernetes.
const (
	GroupAuthenticated = "system:authenticated"
	GroupMasters       = "system:masters"
)

// User is an authenticated identity.
type User struct {
	Name   string
	UID    string
	Groups []string
	// Extra holds further attributes, as Kubernetes' user.Info does (keys
	// lower-case, such as those set by Impersonate-Extra-* headers).
	Extra map[string][]string
	// Authenticator names how the user was authenticated, such as "x509".
	Authenticator string
}

type userKey struct{}

// WithUser returns a copy of ctx carrying u.
func WithUser(ctx context.Context, u *User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFrom returns the user in ctx, if any.
func UserFrom(ctx context.Context) (*User, bool) {
	u, ok := ctx.Value(userKey{}).(*User)
	return u, ok && u != nil
}
