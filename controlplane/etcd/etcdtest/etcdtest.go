// Package etcdtest starts a real embedded etcd for tests, on free loopback
// ports in a temporary directory, and stops it when the test ends. The member
// serves TLS with client certificates as in production (its CA and the
// admin's certificate are in Server.AdminTLS); tests use its in-process
// client.
package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/glassplane/glassplane/controlplane/etcd"
)

// Start runs an embedded etcd member for the test's lifetime.
func Start(t testing.TB) *etcd.Server {
	t.Helper()
	srv, err := StartOnFreePorts(context.Background(), etcd.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// StartOnFreePorts runs etcd.Start with cfg on free loopback ports (its
// ClientURL and PeerURL are replaced). A port found free can be taken by
// another test process before etcd binds it; then it tries again, on other
// ports and in a fresh directory under cfg.DataDir, up to five times.
func StartOnFreePorts(ctx context.Context, cfg etcd.Config) (*etcd.Server, error) {
	base := cfg.DataDir
	for attempt := 1; ; attempt++ {
		client, err := freeAddr()
		if err != nil {
			return nil, err
		}
		peer, err := freeAddr()
		if err != nil {
			return nil, err
		}
		cfg.ClientURL, cfg.PeerURL = "https://"+client, "https://"+peer
		cfg.DataDir = filepath.Join(base, "etcd-"+strconv.Itoa(attempt))
		srv, err := etcd.Start(ctx, cfg)
		if err == nil || attempt == 5 || !errors.Is(err, syscall.EADDRINUSE) {
			return srv, err
		}
	}
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("failed to find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}
