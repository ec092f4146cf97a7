package kube

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/glassplane/glassplane/api/v1alpha1"
	"github.com/glassplane/glassplane/web/source"
)

// WatchAudit copies the audit events Glassplane's API server keeps
// (auditevents.glassplane.io/v1alpha1), those kept now and each new one,
// into log until ctx ends, as cfg's identity. A watch that ends resumes
// after the last event copied; when the server no longer keeps that one
// (410), it lists again and copies what it still has after it, so the log
// misses what the server dropped in between.
//
// It returns an error wrapping ErrNotServed when the server does not
// serve auditevents (it is not Glassplane: use the audit webhook), and
// the API's error when it refuses the dashboard's identity; other
// failures are retried.
func WatchAudit(ctx context.Context, cfg *rest.Config, log *source.AuditLog, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	// Every request the server sees is one event here: Kubernetes'
	// protobuf costs a fraction of JSON to encode and decode.
	client, err := glassplaneClientFor(cfg, runtime.ContentTypeProtobuf+","+runtime.ContentTypeJSON)
	if err != nil {
		return err
	}
	var last int64
	listed := false
	failures := 0
	for ctx.Err() == nil {
		if !listed {
			rev, err := listAudit(ctx, client, last, log)
			switch {
			case err == nil:
				last, listed, failures = max(last, rev), true, 0
			case apierrors.IsNotFound(err):
				return fmt.Errorf("failed to list audit events: %w: %w", ErrNotServed, err)
			case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
				return fmt.Errorf("failed to list audit events: %w", err)
			default:
				failures++
				logger.Warn("failed to list audit events; retrying", "failures", failures, "err", err)
				sleep(ctx, backoff(failures))
				continue
			}
		}
		began := time.Now()
		next, err := watchAudit(ctx, client, last, log)
		last = next
		switch {
		case ctx.Err() != nil:
		case err == nil && time.Since(began) > shortWatch:
			failures = 0
		case err != nil && compacted(err):
			logger.Warn("the audit watch fell behind the server's ring; listing again", "after", last)
			listed = false
		default:
			failures++
			logger.Debug("the audit watch ended; reopening", "after", last, "failures", failures, "err", err)
			sleep(ctx, backoff(failures))
		}
	}
	return nil
}

// listAudit adds to log the kept events after sequence number after and
// returns the list's resourceVersion.
func listAudit(ctx context.Context, client *rest.RESTClient, after int64, log *source.AuditLog) (int64, error) {
	var list v1alpha1.AuditEventList
	if err := client.Get().Resource("auditevents").Timeout(RequestTimeout).Do(ctx).Into(&list); err != nil {
		return 0, err
	}
	for i := range list.Items {
		if seq, err := parseRevision(list.Items[i].ResourceVersion); err == nil && seq > after {
			log.Add(&list.Items[i].Event)
		}
	}
	return parseRevision(list.ResourceVersion)
}

// watchAudit adds to log the events after sequence number after as the
// server sends them, until it ends the watch or ctx ends; it returns the
// last sequence number added.
func watchAudit(ctx context.Context, client *rest.RESTClient, after int64, log *source.AuditLog) (int64, error) {
	timeout := int64(watchTimeout / time.Second)
	w, err := client.Get().Resource("auditevents").
		Param("watch", "true").Param("resourceVersion", fmt.Sprint(after)).Param("timeoutSeconds", fmt.Sprint(timeout)).
		Watch(ctx)
	if err != nil {
		return after, err
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		switch ev.Type {
		case watch.Error:
			return after, apierrors.FromObject(ev.Object)
		case watch.Added, watch.Modified:
			ae, ok := ev.Object.(*v1alpha1.AuditEvent)
			if !ok {
				return after, fmt.Errorf("the audit watch sent a %T", ev.Object)
			}
			seq, err := parseRevision(ae.ResourceVersion)
			if err != nil {
				return after, fmt.Errorf("failed to read audit event %s: %w", ae.Name, err)
			}
			if seq > after {
				log.Add(&ae.Event)
				after = seq
			}
		}
	}
	return after, nil
}
