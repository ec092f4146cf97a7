package kube

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/web/source"
)

// ErrNotServed means the cluster does not serve a Glassplane API the
// caller asked for (auditevents, etcdkeys): it is not Glassplane, or an
// older one. The dashboard then uses what else it has (the audit webhook,
// a direct etcd, nothing).
var ErrNotServed = errors.New("the API server does not serve this resource")

// sourceError words an API error as source's errors, for errors.Is, and
// keeps the API's message: 404 is source.ErrNotFound, 410 (a compacted
// revision, an expired continue) source.ErrCompacted, kube-apiserver's
// "Too large resource version" source.ErrFutureRevision.
func sourceError(err error) error {
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%w: %w", source.ErrNotFound, err)
	case compacted(err):
		return fmt.Errorf("%w: %w", source.ErrCompacted, err)
	case tooLarge(err):
		return fmt.Errorf("%w: %w", source.ErrFutureRevision, err)
	}
	return err
}

// compacted reports whether err is the API's 410: the resource version
// asked for is older than the server keeps.
func compacted(err error) bool { return apierrors.IsResourceExpired(err) || apierrors.IsGone(err) }

// tooLarge reports whether err is the API's answer for a resource version
// newer than the server has reached (504 "Too large resource version").
func tooLarge(err error) bool {
	return apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) ||
		(apierrors.IsTimeout(err) && strings.Contains(err.Error(), "Too large resource version"))
}

// parseRevision reads a resourceVersion as the etcd revision it is on
// kube-apiserver and Glassplane (0 when empty).
func parseRevision(rv string) (int64, error) {
	if rv == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("resourceVersion %q is not an etcd revision", rv)
	}
	return n, nil
}
