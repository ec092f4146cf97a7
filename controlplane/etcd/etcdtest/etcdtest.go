// Package etcdtest starts a real embedded etcd for tests, on free loopback
// ports in a temporary directory, and stops it when the test ends.
package etcdtest

import (
	"context"
	"fmt"
	"net"
	"testing"

	"github.com/glassplane/glassplane/controlplane/etcd"
)

// Start runs an embedded etcd member for the test's lifetime.
func Start(t testing.TB) *etcd.Server {
	t.Helper()
	srv, err := etcd.Start(context.Background(), etcd.Config{
		DataDir:   t.TempDir(),
		ClientURL: "http://" + FreeAddr(t),
		PeerURL:   "http://" + FreeAddr(t),
	})
	if err != nil {
		t.Fatalf("failed to start embedded etcd: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// FreeAddr returns a loopback host:port that was free a moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("failed to find a free port: %v", err)
	}
	defer l.Close()
	return fmt.Sprint(l.Addr())
}
