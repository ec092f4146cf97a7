package runtime

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// DialPod connects to port on the pod's localhost, as kubelet's port
// forwarding does: the socket is made inside the pod's network namespace
// (or the host's for pods on the host network).
func (c *Containerd) DialPod(ctx context.Context, pod PodSpec, port int) (net.Conn, error) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	var d net.Dialer
	if c.hostNetwork(pod) {
		return d.DialContext(ctx, "tcp", addr)
	}
	var conn net.Conn
	err := inNetns(NetnsPath(pod.UID), func() error {
		var err error
		conn, err = d.DialContext(ctx, "tcp", addr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("failed to connect to localhost:%d inside namespace of pod %q: %w", port, pod.UID, err)
	}
	return conn, nil
}

// inNetns runs fn on an OS thread switched into the network namespace at
// path; sockets fn creates stay in that namespace. The thread is switched
// back, or, if that fails, never reused.
func inNetns(path string, fn func() error) error {
	target, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("failed to open network namespace %q: %w", path, err)
	}
	defer target.Close()
	enter := func() error {
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("failed to enter network namespace %q: %w", path, err)
		}
		return nil
	}
	return onSwitchedThread(path, enter, fn)
}
