package main

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestWriteClass(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		bounded      bool
		class        int
	}{
		{http.MethodPatch, "/api/v1/namespaces/default/pods/web/status", true, 0},
		{http.MethodDelete, "/api/v1/namespaces/default/pods/web", true, 0},
		{http.MethodPost, "/api/v1/namespaces/default/events", true, 1},
		{http.MethodPatch, "/api/v1/namespaces/default/events/web.1873", true, 1},
		{http.MethodPost, "/apis/events.k8s.io/v1/namespaces/default/events", true, 1},
		{http.MethodGet, "/api/v1/pods", false, 0},
		{http.MethodPatch, "/api/v1/nodes/sim-1/status", false, 0},
		{http.MethodPost, "/api/v1/nodes", false, 0},
		{http.MethodPut, "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/sim-1", false, 0},
	} {
		r, err := http.NewRequest(tc.method, "https://127.0.0.1:6443"+tc.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if class, bounded := writeClass(r); bounded != tc.bounded || class != tc.class {
			t.Errorf("%s %s: class %d bounded %v, want class %d bounded %v", tc.method, tc.path, class, bounded, tc.class, tc.bounded)
		}
	}
}

// TestSimulatedWriteLimit checks, over a stand-in transport, that a write
// waits while the limit's seats are held, that reads and heartbeats go
// around it, that a waiting write gives up with its context, and that a
// freed seat goes to a waiting status write before an Event that waited
// longer.
func TestSimulatedWriteLimit(t *testing.T) {
	release := make(chan struct{})
	started := make(chan string, 10)
	next := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		started <- r.Method + " " + r.URL.Path
		if strings.HasSuffix(r.URL.Path, "/hold") {
			<-release
		}
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
	})
	limit := newSimulatedWriteLimit(1)
	rt := limit.wrap(next)
	do := func(ctx context.Context, method, path string) error {
		r, err := http.NewRequestWithContext(ctx, method, "https://api"+path, nil)
		if err != nil {
			return err
		}
		_, err = rt.RoundTrip(r)
		return err
	}
	seen := func(want string) {
		t.Helper()
		select {
		case got := <-started:
			if got != want {
				t.Fatalf("the transport got %q, want %q", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%q never reached the transport", want)
		}
	}

	held := make(chan error, 1)
	go func() { held <- do(context.Background(), http.MethodPatch, "/api/v1/namespaces/a/pods/p/hold") }()
	seen("PATCH /api/v1/namespaces/a/pods/p/hold")

	waiting := make(chan error, 1)
	go func() { waiting <- do(context.Background(), http.MethodPost, "/api/v1/namespaces/a/events") }()
	// Reads and heartbeats pass while the one seat is held.
	if err := do(context.Background(), http.MethodGet, "/api/v1/pods"); err != nil {
		t.Fatal(err)
	}
	seen("GET /api/v1/pods")
	if err := do(context.Background(), http.MethodPut, "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/sim-1"); err != nil {
		t.Fatal(err)
	}
	seen("PUT /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/sim-1")
	select {
	case got := <-started:
		t.Fatalf("%q reached the transport while the only seat was held", got)
	default:
	}

	// A write that waits gives up with its context.
	ctx, cancel := context.WithCancel(context.Background())
	cancelled := make(chan error, 1)
	go func() { cancelled <- do(ctx, http.MethodDelete, "/api/v1/namespaces/a/pods/q") }()
	cancel()
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled waiting write returned %v, want context.Canceled", err)
	}

	// A status write that comes after the Event goes first.
	status := make(chan error, 1)
	go func() { status <- do(context.Background(), http.MethodPatch, "/api/v1/namespaces/a/pods/p/status") }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		limit.mu.Lock()
		statusWaits, eventWaits := len(limit.waiting[0]), len(limit.waiting[1])
		limit.mu.Unlock()
		if statusWaits == 1 && eventWaits == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting: %d status writes and %d Events, want 1 and 1", statusWaits, eventWaits)
		}
	}

	close(release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	seen("PATCH /api/v1/namespaces/a/pods/p/status")
	seen("POST /api/v1/namespaces/a/events")
	for _, ch := range []chan error{status, waiting} {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
}
