package auth

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
)

// Well-known users and groups of anonymous requests, as in Kubernetes.
const (
	UserAnonymous        = "system:anonymous"
	GroupUnauthenticated = "system:unauthenticated"
)

// errInvalidToken is what a bearer token nobody recognised fails with; it
// is logged at debug only and never sent to the client.
var errInvalidToken = errors.New("invalid bearer token")

// TokenAuthenticator finds the user behind a bearer token. It returns
// ErrNoIdentity for a token it does not know (so another authenticator may
// try), and another error for a token it knows to be invalid (a forged,
// expired or revoked ServiceAccount token).
type TokenAuthenticator interface {
	AuthenticateToken(ctx context.Context, token string) (*User, error)
}

// BearerToken authenticates the "Authorization: Bearer <token>" header with
// each token authenticator in turn, as Kubernetes' bearertoken and token
// union authenticators do.
type BearerToken struct {
	Tokens []TokenAuthenticator
}

// Authenticate implements Authenticator. A request without a bearer token
// gets ErrNoIdentity; a bearer token no authenticator accepts is an error.
func (a *BearerToken) Authenticate(r *http.Request) (*User, error) {
	header := strings.TrimSpace(r.Header.Get("Authorization"))
	if header == "" {
		return nil, ErrNoIdentity
	}
	parts := strings.SplitN(header, " ", 3)
	if len(parts) < 2 || !strings.EqualFold(parts[0], "bearer") || parts[1] == "" {
		return nil, ErrNoIdentity
	}
	var errs []error
	for _, t := range a.Tokens {
		u, err := t.AuthenticateToken(r.Context(), parts[1])
		if err == nil {
			return withAuthenticated(u), nil
		}
		if !errors.Is(err, ErrNoIdentity) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return nil, errInvalidToken
}

// Union tries each authenticator in order and returns the first user found.
// When none finds one it returns the errors of those that saw invalid
// credentials, or ErrNoIdentity when none saw any credentials at all.
type Union []Authenticator

// Authenticate implements Authenticator.
func (u Union) Authenticate(r *http.Request) (*User, error) {
	var errs []error
	for _, a := range u {
		user, err := a.Authenticate(r)
		if err == nil {
			return user, nil
		}
		if !errors.Is(err, ErrNoIdentity) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return nil, ErrNoIdentity
}

// WithAnonymous makes requests that carry no credentials at all the user
// system:anonymous in group system:unauthenticated, as kube-apiserver's
// --anonymous-auth does. Requests with invalid credentials still fail.
func WithAnonymous(a Authenticator) Authenticator {
	return AuthenticatorFunc(func(r *http.Request) (*User, error) {
		u, err := a.Authenticate(r)
		if errors.Is(err, ErrNoIdentity) {
			return &User{Name: UserAnonymous, Groups: []string{GroupUnauthenticated}, Authenticator: "anonymous"}, nil
		}
		return u, err
	})
}

// withAuthenticated adds system:authenticated to u's groups.
func withAuthenticated(u *User) *User {
	if !slices.Contains(u.Groups, GroupAuthenticated) {
		u.Groups = append(slices.Clone(u.Groups), GroupAuthenticated)
	}
	return u
}
