package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/components"
)

// recheckEvery is how long the API server's acceptance of a session's
// token is trusted before a request asks again; writes always ask.
const recheckEvery = time.Minute

const (
	// msgLogInToChange answers a write without a login.
	msgLogInToChange = "Log in to make changes: without a login this dashboard only shows the cluster. " +
		"Log in with an API token, or open the one-time link glassplane up printed."
	// msgLoginEnded answers a request whose session's token the API server
	// refused.
	msgLoginEnded = "Your login ended: the API server no longer accepts its token. Log in again."
)

// errLoginEnded means the API server no longer accepts a session's token,
// or names another user for it.
var errLoginEnded = errors.New(msgLoginEnded)

// sessionOf returns the request's live session and its key.
func (d *Dashboard) sessionOf(r *http.Request) (string, session, bool) {
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return "", session{}, false
	}
	v, ok := d.sessions.get(ck.Value)
	return ck.Value, v, ok
}

// recheck asks the API server whether it still accepts the token of
// session key, and as the same user (a SelfSubjectReview sent with that
// token, as at login: the review's body holds no token, so no audit record
// carries it). It returns errLoginEnded, after ending the session, when the
// API server refuses the token or names another user; any other error
// (the API server did not answer) leaves the session for a retry.
func (d *Dashboard) recheck(ctx context.Context, key string, v session) error {
	now := time.Now()
	id, err := d.reviewToken(ctx, v.token)
	if err == nil && id.User != v.id.User {
		err = fmt.Errorf("%w (it now names user %q)", errLoginEnded, id.User)
	}
	if apierrors.IsUnauthorized(err) {
		err = errLoginEnded
	}
	if errors.Is(err, errLoginEnded) {
		d.sessions.remove(key)
		d.log.Info("dashboard login ended: the API server no longer accepts its token", "user", v.id.User)
		return errLoginEnded
	}
	if err != nil {
		return fmt.Errorf("failed to ask the API server whether it still accepts the login's token: %w", err)
	}
	d.sessions.accepted(key, now)
	return nil
}

// refuser answers a write the dashboard will not make, with an HTTP status
// and a message for the user.
type refuser func(c *echo.Context, status int, msg string) error

// requireWriter lets a write through only for a logged-in user (an API
// token or the one-time link), after asking the API server again whether it
// still accepts a token login. Otherwise refuse answers: 403 without a
// login, 401 when the login ended, 503 when the API server could not be
// asked (the session stays for a retry).
func (d *Dashboard) requireWriter(refuse refuser) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c *echo.Context) error {
			r := c.Request()
			key, v, ok := d.sessionOf(r)
			if !ok {
				return refuse(c, http.StatusForbidden, msgLogInToChange)
			}
			if v.token != "" {
				err := d.recheck(r.Context(), key, v)
				if errors.Is(err, errLoginEnded) {
					d.endSession(c, key)
					return refuse(c, http.StatusUnauthorized, msgLoginEnded)
				}
				if err != nil {
					d.log.Warn("refused a dashboard write: its login could not be checked", "user", v.id.User, "err", err)
					return refuse(c, http.StatusServiceUnavailable, "Nothing was changed: "+err.Error()+". Try again.")
				}
			}
			return next(c)
		}
	}
}

// refuseJSON answers a script's write as a metav1.Status.
func refuseJSON(c *echo.Context, status int, msg string) error {
	reason := metav1.StatusReasonForbidden
	switch status {
	case http.StatusUnauthorized:
		reason = metav1.StatusReasonUnauthorized
	case http.StatusServiceUnavailable:
		reason = metav1.StatusReasonServiceUnavailable
	}
	return c.JSON(status, metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Message: msg, Reason: reason, Code: int32(status),
	})
}

// refuseWithLogin answers a form's write with the login form, which says
// why and returns to the page the form was on.
func (d *Dashboard) refuseWithLogin(c *echo.Context, status int, msg string) error {
	next := safeNext(strings.TrimSuffix(c.Request().URL.Path, "/delete"))
	vm := components.Login{CSRFToken: csrfToken(c), Next: next, Error: msg}
	return d.renderLogin(c, status, vm)
}

// refuseApply answers the apply form's write on the apply page, keeping
// the manifest.
func (d *Dashboard) refuseApply(c *echo.Context, status int, msg string) error {
	vm := components.Apply{
		CSRFToken: csrfToken(c), Examples: examples, Manifest: c.FormValue("manifest"), Submitted: true,
		ActingAs: d.actingAs(c.Request()), Error: msg,
	}
	return d.renderApply(c, status, vm)
}
