package node

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/go-logr/logr"
)

// TestStoppedQuiet: the lease controller's errors are errors while the
// agent runs, and debug lines once its stop cut a renewal short.
func TestStoppedQuiet(t *testing.T) {
	var out bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	log := logr.FromSlogHandler(stoppedQuiet{ctx, slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo})})
	log.Error(errors.New("the API refused it"), "Failed to update lease")
	if !strings.Contains(out.String(), "level=ERROR") {
		t.Errorf("while running: logged %q, want an error", out.String())
	}
	out.Reset()
	cancel()
	log.Error(context.Canceled, "Failed to update lease")
	if out.Len() != 0 {
		t.Errorf("after the stop: logged %q at info level, want nothing (debug)", out.String())
	}
}
