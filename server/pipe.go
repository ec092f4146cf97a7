package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
)

// pipeListener is a net.Listener whose connections are made in the same
// process by DialContext: the two ends of a Unix socket pair, with no
// address to reach from outside. The API serves it beside its TCP
// listener, with the same TLS, so the control plane's own clients
// (scheduler, controllers, node agents, dashboard) go through the same
// handshake, client certificate and HTTP/2 as any client, without the TCP
// stack of the loopback device. (An unbuffered net.Pipe was tried first:
// without the kernel's socket buffers a thousand node agents' connections
// stalled one another under load.)
type pipeListener struct {
	addr   net.Addr
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newPipeListener(addr net.Addr) *pipeListener {
	return &pipeListener{addr: addr, conns: make(chan net.Conn), closed: make(chan struct{})}
}

// Accept implements net.Listener.
func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener; connections already made stay open.
func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

// Addr implements net.Listener: the TCP listener's address, which the
// connections stand in for.
func (l *pipeListener) Addr() net.Addr { return l.addr }

// errPipeClosed is a dial after the listener closed.
var errPipeClosed = errors.New("the API server's in-process listener is closed")

// DialContext connects to the listener; network and address are ignored
// (a client's dialer is replaced by it for the API's URL).
func (l *pipeListener) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server, err := socketPair()
	if err != nil {
		return nil, err
	}
	select {
	case l.conns <- pipeConn{server, l.addr}:
		return pipeConn{client, l.addr}, nil
	case <-l.closed:
		err = errPipeClosed
	case <-ctx.Done():
		err = ctx.Err()
	}
	client.Close()
	server.Close()
	return nil, err
}

// pipeConn is one end of an in-process connection; both ends report the
// loopback address of the TCP listener as theirs and their peer's.
type pipeConn struct {
	net.Conn
	addr net.Addr
}

func (c pipeConn) LocalAddr() net.Addr  { return c.addr }
func (c pipeConn) RemoteAddr() net.Addr { return loopbackPeer }

var loopbackPeer = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}

// socketPair returns the two ends of a connected Unix stream socket pair.
func socketPair() (net.Conn, net.Conn, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to create a socket pair: %w", err)
	}
	var conns [2]net.Conn
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "api-pipe")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			if i == 1 {
				conns[0].Close()
			} else {
				syscall.Close(fds[1])
			}
			return nil, nil, fmt.Errorf("failed to open a socket pair: %w", err)
		}
		conns[i] = c
	}
	return conns[0], conns[1], nil
}
