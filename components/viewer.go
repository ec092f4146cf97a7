package components

import (
	"context"
	"strings"
)

// Viewer is who the dashboard acts as for a page's request. The header
// shows it, with a logout button, when the dashboard requires a login.
type Viewer struct {
	// User is the API user name the dashboard's writes are made as.
	User string
	// Groups are the user's groups, empty when unknown (the dashboard's
	// own identity).
	Groups []string
	// CSRFToken signs the logout form.
	CSRFToken string
}

// Describe is the header's tooltip: the user and its groups.
func (v Viewer) Describe() string {
	if len(v.Groups) == 0 {
		return "acting as " + v.User
	}
	return "acting as " + v.User + "\ngroups: " + strings.Join(v.Groups, ", ")
}

type viewerKey struct{}

// WithViewer returns ctx carrying v, for PageView to show in the header.
func WithViewer(ctx context.Context, v Viewer) context.Context {
	return context.WithValue(ctx, viewerKey{}, v)
}

// viewerOf returns the viewer ctx carries, if any.
func viewerOf(ctx context.Context) (Viewer, bool) {
	v, ok := ctx.Value(viewerKey{}).(Viewer)
	return v, ok
}
