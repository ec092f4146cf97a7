package etcd_test

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"

	"github.com/glassplane/glassplane/controlplane/etcd"
)

// A client port already taken fails the start with an error that says so
// (EADDRINUSE, which etcdtest tries again on), and leaves no member running.
func TestStartOnATakenPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	peer, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	peerAddr := peer.Addr().String()
	peer.Close()
	srv, err := etcd.Start(context.Background(), etcd.Config{
		DataDir:   t.TempDir(),
		ClientURL: "https://" + l.Addr().String(),
		PeerURL:   "https://" + peerAddr,
	})
	if err == nil {
		srv.Close()
		t.Fatal("etcd started on a taken client port")
	}
	if !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("error = %v, want one wrapping EADDRINUSE", err)
	}
}
