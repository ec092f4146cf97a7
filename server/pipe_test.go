package server

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

func TestPipeListenerConnectsDialerAndAcceptor(t *testing.T) {
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 6443}
	l := newPipeListener(addr)
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			t.Error(err)
		}
		accepted <- c
	}()
	client, err := l.DialContext(context.Background(), "tcp", "ignored:1")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server := <-accepted
	defer server.Close()
	go func() { _, _ = client.Write([]byte("hello")) }()
	buf := make([]byte, 5)
	if _, err := io.ReadFull(server, buf); err != nil || string(buf) != "hello" {
		t.Fatalf("read %q, %v", buf, err)
	}
	if server.LocalAddr() != addr || l.Addr() != addr {
		t.Errorf("listener and connection addresses %v, %v; want %v", l.Addr(), server.LocalAddr(), addr)
	}
	if got := server.RemoteAddr().String(); got != "127.0.0.1:0" {
		t.Errorf("peer address %q, want the loopback address", got)
	}
}

func TestPipeListenerClosed(t *testing.T) {
	l := newPipeListener(&net.TCPAddr{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := l.DialContext(ctx, "tcp", ""); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("dial with nobody accepting: %v, want the context's deadline", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("accept after close: %v, want net.ErrClosed", err)
	}
	if _, err := l.DialContext(context.Background(), "tcp", ""); !errors.Is(err, errPipeClosed) {
		t.Errorf("dial after close: %v, want errPipeClosed", err)
	}
}
