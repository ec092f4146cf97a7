package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/containerd/containerd/v2/client"
)

// Timeouts of a ManagedContainerd.
const (
	// ManagedStartTimeout bounds how long containerd may take to answer.
	ManagedStartTimeout = 30 * time.Second
	// ManagedStopTimeout is how long containerd gets after SIGTERM.
	ManagedStopTimeout = 10 * time.Second
)

// ManagedContainerd is a containerd daemon run as a child process with its
// own root, state and socket under a data directory.
type ManagedContainerd struct {
	dir     string
	address string
	cmd     *exec.Cmd
	done    chan struct{}
	// waitErr is set before done is closed.
	waitErr error
}

// CanRunContainerd reports whether this host can run a managed containerd:
// the containerd, containerd-shim-runc-v2 and runc binaries on PATH and
// root privileges. If not, why says what is missing.
func CanRunContainerd() (ok bool, why string) {
	for _, bin := range []string{"containerd", "containerd-shim-runc-v2", "runc"} {
		if _, err := exec.LookPath(bin); err != nil {
			return false, fmt.Sprintf("%s not found on PATH", bin)
		}
	}
	if os.Geteuid() != 0 {
		return false, "containerd needs root privileges"
	}
	return true, ""
}

// managedConfig is containerd 1.6's config.toml (version 2) for a daemon
// that keeps everything under dir and runs no CRI plugin.
func managedConfig(dir string) string {
	return fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.grpc.v1.cri"]

[grpc]
  address = %q

[ttrpc]
  address = %q
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), filepath.Join(dir, "containerd.sock"), filepath.Join(dir, "containerd.sock.ttrpc"))
}

// StartManagedContainerd starts the host's containerd with a generated
// config under <dataDir>/containerd and returns once it answers on its
// socket. The daemon is stopped when ctx ends (or by Stop); its output goes
// to <dataDir>/containerd/containerd.log.
func StartManagedContainerd(ctx context.Context, dataDir string) (_ *ManagedContainerd, retErr error) {
	if ok, why := CanRunContainerd(); !ok {
		return nil, fmt.Errorf("failed to start containerd: %s", why)
	}
	dir, err := filepath.Abs(filepath.Join(dataDir, "containerd"))
	if err != nil {
		return nil, fmt.Errorf("failed to resolve data directory %q: %w", dataDir, err)
	}
	for _, d := range []string{dir, filepath.Join(dir, "root"), filepath.Join(dir, "state")} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			return nil, fmt.Errorf("failed to create directory %q: %w", d, err)
		}
	}
	m := &ManagedContainerd{dir: dir, address: ManagedContainerdAddress(dataDir), done: make(chan struct{})}
	if len(m.address) > 100 {
		return nil, fmt.Errorf("failed to start containerd: socket path %q is too long for a unix socket", m.address)
	}
	cfgPath := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfgPath, []byte(managedConfig(dir)), 0o644); err != nil {
		return nil, fmt.Errorf("failed to write %q: %w", cfgPath, err)
	}
	if _, err := os.Stat(m.address); err == nil && m.ping(ctx) == nil {
		return nil, fmt.Errorf("failed to start containerd: another containerd already answers on %q (stop it, or use it by its address)", m.address)
	}
	for _, sock := range []string{m.address, m.address + ".ttrpc"} {
		if err := os.Remove(sock); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("failed to remove stale socket %q: %w", sock, err)
		}
	}
	logPath := filepath.Join(dir, "containerd.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("failed to open %q: %w", logPath, err)
	}
	m.cmd = exec.Command("containerd", "--config", cfgPath)
	m.cmd.Stdout = logFile
	m.cmd.Stderr = logFile
	// If this process dies without stopping it, the daemon gets SIGTERM
	// too; containers live on in their shims and are re-adopted later.
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := m.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("failed to start containerd: %w", err)
	}
	go func() {
		m.waitErr = m.cmd.Wait()
		logFile.Close()
		close(m.done)
	}()
	defer func() {
		if retErr != nil {
			m.Stop()
		}
	}()
	if err := m.waitReady(ctx); err != nil {
		return nil, fmt.Errorf("failed to start containerd (log %s): %w", logPath, err)
	}
	go func() {
		select {
		case <-ctx.Done():
			m.Stop()
		case <-m.done:
		}
	}()
	return m, nil
}

// waitReady polls containerd's version service until it answers.
func (m *ManagedContainerd) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, ManagedStartTimeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-m.done:
			return fmt.Errorf("containerd exited: %v", m.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("containerd did not answer on %q: %w", m.address, ctx.Err())
		case <-tick.C:
		}
		if _, err := os.Stat(m.address); err != nil {
			continue
		}
		if m.ping(ctx) == nil {
			return nil
		}
	}
}

func (m *ManagedContainerd) ping(ctx context.Context) error {
	c, err := client.New(m.address, client.WithTimeout(time.Second))
	if err != nil {
		return err
	}
	defer c.Close()
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err = c.Version(pctx)
	return err
}

// ManagedContainerdAddress is the grpc socket of the managed containerd
// of dataDir: <dataDir>/containerd/containerd.sock (absolute).
func ManagedContainerdAddress(dataDir string) string {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		abs = dataDir
	}
	return filepath.Join(abs, "containerd", "containerd.sock")
}

// Address is the daemon's grpc socket.
func (m *ManagedContainerd) Address() string { return m.address }

// Dir is the daemon's directory (<dataDir>/containerd).
func (m *ManagedContainerd) Dir() string { return m.dir }

// Wait blocks until the daemon has exited and returns nil if it was stopped
// by Stop or its context.
func (m *ManagedContainerd) Wait() error {
	<-m.done
	var exitErr *exec.ExitError
	if errors.As(m.waitErr, &exitErr) {
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return nil
		}
	}
	if m.waitErr != nil {
		return fmt.Errorf("containerd exited: %w", m.waitErr)
	}
	return nil
}

// Stop sends SIGTERM, waits up to ManagedStopTimeout, then SIGKILL, and
// waits for the daemon to exit. Containers keep running in their shims.
func (m *ManagedContainerd) Stop() error {
	select {
	case <-m.done:
		return nil
	default:
	}
	if err := m.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("failed to stop containerd: %w", err)
	}
	t := time.NewTimer(ManagedStopTimeout)
	defer t.Stop()
	select {
	case <-m.done:
		return nil
	case <-t.C:
	}
	if err := m.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("failed to kill containerd: %w", err)
	}
	<-m.done
	return nil
}
