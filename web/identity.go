package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/labstack/echo/v5"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const (
	// sessionCookie names the server-side session of a user who logged in
	// with an API token.
	sessionCookie = "glassplane_session"
	// sessionTTL bounds a session; the user logs in again after it.
	sessionTTL = 12 * time.Hour
	// maxSessions bounds the sessions kept; the oldest go first.
	maxSessions = 10000
)

// identity is the API user a dashboard request acts as.
type identity struct {
	User   string
	Groups []string
}

// session is a logged-in user.
type session struct {
	id      identity
	expires time.Time
	// token is the bearer token the user logged in with, kept only here in
	// memory so that the API server can be asked again whether it still
	// accepts it; empty for a login by one-time link.
	token string
	// checked is when the API server last accepted token.
	checked time.Time
}

// sessions keeps the logged-in users by a random session id.
type sessions struct {
	mu sync.Mutex // guards m
	m  map[string]session
}

func newSessions() *sessions { return &sessions{m: map[string]session{}} }

// add starts a session for id, logged in with token (empty for a one-time
// link), and returns its cookie value.
func (s *sessions) add(id identity, token string) (string, error) {
	key, err := randomHex(32)
	if err != nil {
		return "", fmt.Errorf("failed to make a session id: %w", err)
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range s.m {
		if now.After(v.expires) {
			delete(s.m, k)
		}
	}
	if len(s.m) >= maxSessions {
		oldest, at := "", time.Time{}
		for k, v := range s.m {
			if oldest == "" || v.expires.Before(at) {
				oldest, at = k, v.expires
			}
		}
		delete(s.m, oldest)
	}
	s.m[key] = session{id: id, expires: now.Add(sessionTTL), token: token, checked: now}
	return key, nil
}

// get returns a live session.
func (s *sessions) get(key string) (session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[key]
	if !ok || time.Now().After(v.expires) {
		return session{}, false
	}
	return v, true
}

// accepted records that the API server accepted the session's token at at.
func (s *sessions) accepted(key string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.m[key]; ok {
		v.checked = at
		s.m[key] = v
	}
}

func (s *sessions) remove(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
}

// randomHex returns n random bytes, hex-encoded.
func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// userOf returns the API user a request acts as, or nil for the dashboard's
// own identity (no user logged in with an API token).
func (d *Dashboard) userOf(r *http.Request) *identity {
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil
	}
	v, ok := d.sessions.get(ck.Value)
	if !ok {
		return nil
	}
	return &v.id
}

// actingAs names who a request's writes are made as.
func (d *Dashboard) actingAs(r *http.Request) string {
	if u := d.userOf(r); u != nil {
		return u.User
	}
	return "dashboard (" + dashboardUser + ")"
}

// dashboardUser is the dashboard's own identity at the API server.
const dashboardUser = "system:glassplane-dashboard"

// restConfigFor returns the dashboard's API config acting as u: the
// dashboard's own credentials with Impersonate-User and Impersonate-Group,
// so the API server's RBAC decides as for u. nil u is the dashboard itself.
func (d *Dashboard) restConfigFor(u *identity) *rest.Config {
	cfg := rest.CopyConfig(d.cfg.RESTConfig)
	if cfg.UserAgent == "" {
		cfg.UserAgent = fieldManager
	}
	if u != nil {
		cfg.Impersonate = rest.ImpersonationConfig{UserName: u.User, Groups: slices.Clone(u.Groups)}
	}
	return cfg
}

// kubeClient is a typed client acting as the request's user.
func (d *Dashboard) kubeClient(c *echo.Context) (kubernetes.Interface, error) {
	return d.clientFor(c.Request())
}

// clientFor is a typed client acting as r's user.
func (d *Dashboard) clientFor(r *http.Request) (kubernetes.Interface, error) {
	if d.cfg.RESTConfig == nil {
		return nil, errNoAPI
	}
	return kubernetes.NewForConfig(d.restConfigFor(d.userOf(r)))
}

// dynamicFor is a dynamic client acting as u.
func (d *Dashboard) dynamicFor(u identity) (dynamic.Interface, error) {
	return dynamic.NewForConfig(d.restConfigFor(&u))
}

// reviewToken asks the API server who a bearer token belongs to (a
// SelfSubjectReview sent with that token alone).
func (d *Dashboard) reviewToken(ctx context.Context, token string) (identity, error) {
	if d.cfg.RESTConfig == nil {
		return identity{}, errNoAPI
	}
	var cfg *rest.Config
	if d.cfg.AnonymousRESTConfig != nil {
		cfg = rest.CopyConfig(d.cfg.AnonymousRESTConfig)
	} else {
		cfg = rest.AnonymousClientConfig(d.cfg.RESTConfig)
	}
	cfg.UserAgent = d.cfg.RESTConfig.UserAgent
	cfg.BearerToken = token
	cfg.Timeout = 10 * time.Second
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return identity{}, err
	}
	r, err := client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return identity{}, err
	}
	ui := r.Status.UserInfo
	if ui.Username == "" {
		return identity{}, fmt.Errorf("the API server named no user for the token")
	}
	return identity{User: ui.Username, Groups: ui.Groups}, nil
}
