package apiserver

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/controlplane/apiserver/audit"
	"github.com/glassplane/glassplane/controlplane/apiserver/auth"
)

// TestAuthorizerChainAnswersOnceReady: with the RBAC cache filled, the
// chain decides even for a request whose context has ended (a stopping
// server's last requests were refused at random, as 500s); before it is
// filled, such a request gets its context's error, not a decision.
func TestAuthorizerChainAnswersOnceReady(t *testing.T) {
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	user := &auth.User{Name: "alice", Groups: []string{auth.GroupAuthenticated}}
	attrs := auth.Attributes{User: user, Verb: "get", ResourceRequest: true, APIVersion: "v1", Resource: "pods", Namespace: "default"}

	ready := make(chan struct{})
	c := &authorizerChain{ready: ready, node: auth.AlwaysAllowAuthenticated{}, rbac: auth.AlwaysAllowAuthenticated{}}
	if d, _, err := c.Authorize(ended, attrs); d == auth.DecisionAllow || !errors.Is(err, context.Canceled) {
		t.Errorf("before the cache is ready: decision %v, err %v; want no decision and context.Canceled", d, err)
	}
	close(ready)
	for range 100 {
		if d, _, err := c.Authorize(ended, attrs); d != auth.DecisionAllow || err != nil {
			t.Fatalf("with the cache ready: decision %v, err %v; want Allow", d, err)
		}
	}
}

// TestCanceledRequestIsATimeoutNotAnInternalError: a request whose context
// ended is answered as kube-apiserver's finisher answers it (504 Timeout),
// not as the server's failure.
func TestCanceledRequestIsATimeoutNotAnInternalError(t *testing.T) {
	st := toStatus(errors.Join(errors.New("failed to wait for the RBAC cache"), context.Canceled))
	if st.Code != http.StatusGatewayTimeout || st.Reason != metav1.StatusReasonTimeout {
		t.Errorf("status = %d %s, want 504 Timeout", st.Code, st.Reason)
	}
	if want := "Timeout: request did not complete within requested timeout - context canceled"; st.Message != want {
		t.Errorf("message = %q, want %q", st.Message, want)
	}
	if st := toStatus(apierrors.NewInternalError(errors.New("boom"))); st.Code != http.StatusInternalServerError {
		t.Errorf("an internal error's status = %d, want 500", st.Code)
	}
}

// TestTooLargeResourceVersionIsNotAnError: a 504 for a resource version ahead of
// etcd's (which client-go asks for and retries) is the client's to wait
// out, logged below ERROR; a 500, or a request that ran out of time in the
// server, is the server's failure, logged as one.
func TestTooLargeResourceVersionIsNotAnError(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
		want slog.Level
	}{
		{tooLargeResourceVersion(12, 10), http.StatusGatewayTimeout, slog.LevelInfo},
		{apierrors.NewInternalError(errors.New("boom")), http.StatusInternalServerError, slog.LevelError},
		{context.DeadlineExceeded, http.StatusGatewayTimeout, slog.LevelError},
	} {
		var logged bytes.Buffer
		s := &Server{log: slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug})), audit: audit.NewRing(16)}
		rec := httptest.NewRecorder()
		q := s.newRequest(rec, httptest.NewRequest(http.MethodGet, "/api/v1/pods?resourceVersion=12", nil))
		q.info = &RequestInfo{Verb: "list"}
		q.fail("", tc.err)
		if rec.Code != tc.code {
			t.Errorf("%v: answered %d, want %d", tc.err, rec.Code, tc.code)
		}
		if want := "level=" + tc.want.String(); !strings.Contains(logged.String(), want) {
			t.Errorf("%v: logged %q, want a line at %s", tc.err, logged.String(), tc.want)
		}
	}
}
