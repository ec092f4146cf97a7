package web

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/glassplane/glassplane/web/source"
)

// stoppingStore is a source.Store whose Watch is refused as the stop that
// ends it reaches the API: the caller's context ends with the refusal.
type stoppingStore struct {
	source.Store
	cancel context.CancelFunc
	calls  int
}

func (s *stoppingStore) Watch(ctx context.Context, prefix string, from int64) (<-chan source.Event, error) {
	s.calls++
	s.cancel()
	return nil, errors.New("Timeout: request did not complete within requested timeout - context canceled")
}

// TestHubWatchStopsQuietly: a stopping dashboard whose storage watch the
// stopping API refuses neither warns nor retries (glassplane up's stop
// logged "failed to open the dashboard's storage watch; retrying").
func TestHubWatchStopsQuietly(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := &stoppingStore{cancel: cancel}
	var logged bytes.Buffer
	h := newHub(store, nil, slog.New(slog.NewTextHandler(&logged, nil)))
	if ch := h.watch(ctx); ch != nil {
		t.Error("watch returned a channel after its context ended")
	}
	if store.calls != 1 {
		t.Errorf("%d watch attempts, want 1", store.calls)
	}
	if strings.Contains(logged.String(), "level=WARN") {
		t.Errorf("logged a warning while stopping: %s", logged.String())
	}
}
