package tempo

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

type gateKey struct{}

// WithGate returns ctx carrying g, for Wait to find.
func WithGate(ctx context.Context, g *Gate) context.Context {
	return context.WithValue(ctx, gateKey{}, g)
}

// FromContext returns the gate ctx carries, or nil.
func FromContext(ctx context.Context) *Gate {
	g, _ := ctx.Value(gateKey{}).(*Gate)
	return g
}

// Wait holds an action by the tempo of the gate in ctx (see Gate.Wait); it
// returns at once when ctx carries none.
func Wait(ctx context.Context, action string) error {
	if g := FromContext(ctx); g != nil {
		return g.Wait(ctx, action)
	}
	return nil
}

// Gated wraps a component's Run: it runs a gate for component with client
// beside it and hands run a context carrying that gate.
func Gated(client kubernetes.Interface, component string, run func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		g := NewGate(client, component, slog.Default())
		gctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = g.Run(gctx)
		}()
		defer func() {
			cancel()
			<-done
		}()
		return run(WithGate(ctx, g))
	}
}

// GateConfig returns a copy of cfg whose every write to the API waits by
// the tempo first, for components that act only by writing (the
// controllers). Events, Leases and the tempo object itself pass untouched.
// The gate runs with cfg's identity until ctx ends.
func GateConfig(ctx context.Context, cfg *rest.Config, component string) (*rest.Config, error) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to create the tempo client: %w", err)
	}
	g := NewGate(client, component, slog.Default())
	go func() { _ = g.Run(ctx) }()
	gated := rest.CopyConfig(cfg)
	gated.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &gatedTransport{next: rt, gate: g} })
	return gated, nil
}

// gatedTransport waits by the tempo before each write it sends.
type gatedTransport struct {
	next http.RoundTripper
	gate *Gate
}

func (t *gatedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if action, ok := WriteAction(req.Method, req.URL.Path); ok {
		if err := t.gate.Wait(req.Context(), action); err != nil {
			return nil, err
		}
	}
	return t.next.RoundTrip(req)
}

// WriteAction describes an API write for the tempo ("create pods in
// default", "update replicasets default/web status"); ok is false for reads
// and for the writes that are not classroom steps: Events, Leases and the
// tempo object.
func WriteAction(method, path string) (action string, ok bool) {
	verb := map[string]string{http.MethodPost: "create", http.MethodPut: "update", http.MethodPatch: "patch", http.MethodDelete: "delete"}[method]
	if verb == "" {
		return "", false
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return "", false
	}
	ns := ""
	if len(parts) >= 2 && parts[0] == "namespaces" && len(parts) > 2 {
		ns, parts = parts[1], parts[2:]
	}
	if len(parts) == 0 {
		return "", false
	}
	resource, name, sub := parts[0], "", ""
	if len(parts) > 1 {
		name = parts[1]
	}
	if len(parts) > 2 {
		sub = parts[2]
	}
	if resource == "events" || resource == "leases" || (resource == "configmaps" && ns == Namespace && name == Name) {
		return "", false
	}
	switch {
	case name == "" && ns != "":
		return fmt.Sprintf("%s %s in %s", verb, resource, ns), true
	case name == "":
		return fmt.Sprintf("%s %s", verb, resource), true
	}
	ref := name
	if ns != "" {
		ref = ns + "/" + name
	}
	if sub != "" {
		return fmt.Sprintf("%s %s %s %s", verb, resource, ref, sub), true
	}
	return fmt.Sprintf("%s %s %s", verb, resource, ref), true
}
