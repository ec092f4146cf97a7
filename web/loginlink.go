package web

import (
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sync"
)

// adminLink is the one-time login link (/login?once=<code>): opening it
// logs a browser in as the cluster admin (Config.LinkUser), once; a new
// code then replaces it and the new link is written to Config.LinkFile,
// so whoever can read the data directory can get another. The code is
// never logged.
type adminLink struct {
	base string // the dashboard's URL
	file string // where the current link is written; empty writes none

	mu   sync.Mutex // guards code
	code string
}

// newAdminLink makes the first link and writes it to file.
func newAdminLink(base, file string) (*adminLink, error) {
	l := &adminLink{base: base, file: file}
	if err := l.renew(); err != nil {
		return nil, err
	}
	return l, nil
}

// url is the current link. l.mu must be held.
func (l *adminLink) url() string {
	return l.base + "/login?once=" + url.QueryEscape(l.code)
}

// renew replaces the code and writes the new link. l.mu must be held (or
// l not yet shared).
func (l *adminLink) renew() error {
	code, err := randomHex(24)
	if err != nil {
		return fmt.Errorf("failed to make a dashboard login link: %w", err)
	}
	l.code = code
	if l.file == "" {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(l.file), ".dashboard-login-*")
	if err != nil {
		return fmt.Errorf("failed to write the dashboard login link: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(l.url() + "\n"); err != nil {
		tmp.Close()
		return fmt.Errorf("failed to write the dashboard login link to %q: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("failed to write the dashboard login link to %q: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), l.file); err != nil {
		return fmt.Errorf("failed to write the dashboard login link to %q: %w", l.file, err)
	}
	return nil
}

// consume reports whether code is the current link's, comparing in
// constant time; if so the link is used up and a new one made.
func (l *adminLink) consume(code string, log *slog.Logger) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.code == "" || subtle.ConstantTimeCompare([]byte(code), []byte(l.code)) != 1 {
		return false
	}
	if err := l.renew(); err != nil {
		// The used code must not stay valid: no link works until restart.
		l.code = ""
		log.Error("failed to make a new dashboard login link", "err", err)
	}
	return true
}

// current is the link to open now.
func (l *adminLink) current() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.url()
}

// LoginLink is the current one-time link that logs a browser in as the
// cluster admin, or "" when Config.LinkUser is empty. glassplane up prints
// it once; it is written to Config.LinkFile whenever it changes.
func (d *Dashboard) LoginLink() string {
	if d.link == nil {
		return ""
	}
	return d.link.current()
}

// linkHint tells where a new one-time link is.
func (d *Dashboard) linkHint() string {
	if d.link == nil || d.cfg.LinkFile == "" {
		return "Log in with an API token."
	}
	return "The current link is in " + d.cfg.LinkFile + "."
}
