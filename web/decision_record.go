package web

import (
	"context"
	"errors"
	"fmt"

	"github.com/glassplane/glassplane/web/source"

	"github.com/glassplane/glassplane/components"
	"github.com/glassplane/glassplane/controlplane/scheduler/explain"
)

// boundDecision reads the attempt that bound pod namespace/name (of uid)
// from its decision record in explain.RecordNamespace, in the compact form
// the pod page shows; nil when the pod has no record or was not bound by
// a recorded attempt.
func (d *Dashboard) boundDecision(ctx context.Context, namespace, name, uid string) (*components.Decision, error) {
	kv, err := d.cfg.Store.Get(ctx, source.Key("configmaps", explain.RecordNamespace, explain.RecordName(namespace, name)))
	if errors.Is(err, source.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	h, err := readHistory(kv.Value)
	if err != nil {
		return nil, err
	}
	if h.UID != uid {
		// An earlier pod's of the same name, not yet deleted.
		return nil, nil
	}
	for i := len(h.Attempts) - 1; i >= 0; i-- {
		if h.Attempts[i].Node == "" {
			continue
		}
		b, err := explain.Compact(h.Attempts[i])
		if err != nil {
			return nil, fmt.Errorf("failed to shorten attempt %d: %w", h.Attempts[i].Attempt, err)
		}
		return decisionView(string(b))
	}
	return nil, nil
}
