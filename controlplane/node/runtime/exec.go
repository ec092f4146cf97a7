package runtime

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/errdefs"
)

// TerminalSize is a terminal's size in characters.
type TerminalSize struct {
	Width, Height uint16
}

// ExecOptions describe a command run in a running container, as `kubectl
// exec` asks for it.
type ExecOptions struct {
	Cmd []string
	// Stdin, when set, feeds the command; its EOF closes the command's stdin.
	Stdin io.Reader
	// Stdout and Stderr receive the command's output (Stderr is unused with
	// a TTY, whose output all goes to Stdout).
	Stdout, Stderr io.Writer
	// TTY gives the command a terminal.
	TTY bool
	// Resize carries the terminal's size changes.
	Resize <-chan TerminalSize
}

// Exec runs a command in a running container, with the container's
// environment, user and namespaces, and returns its exit code once it
// exited and its output was copied. If ctx ends first, the command is
// killed.
func (c *Containerd) Exec(ctx context.Context, containerID string, opts ExecOptions) (int, error) {
	if len(opts.Cmd) == 0 {
		return 0, errors.New("failed to exec: no command")
	}
	ctr, err := c.client.LoadContainer(ctx, containerID)
	if err != nil {
		return 0, fmt.Errorf("failed to load container %q: %w", containerID, err)
	}
	task, err := ctr.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		return 0, fmt.Errorf("failed to exec in container %q: container not running", containerID)
	}
	if err != nil {
		return 0, fmt.Errorf("failed to load task of container %q: %w", containerID, err)
	}
	spec, err := ctr.Spec(ctx)
	if err != nil {
		return 0, fmt.Errorf("failed to read spec of container %q: %w", containerID, err)
	}
	pspec := *spec.Process
	pspec.Args = opts.Cmd
	pspec.Terminal = opts.TTY

	var idBytes [8]byte
	if _, err := rand.Read(idBytes[:]); err != nil {
		return 0, fmt.Errorf("failed to make exec ID: %w", err)
	}
	execID := "exec-" + hex.EncodeToString(idBytes[:])

	// stdin's EOF must reach the process: the FIFO closing alone does not
	// tell the shim, CloseIO does.
	var (
		procMu   sync.Mutex // guards proc and stdinEOF
		proc     client.Process
		stdinEOF bool
	)
	closeStdin := func(p client.Process) { _ = p.CloseIO(context.WithoutCancel(ctx), client.WithStdinCloser) }
	var stdin io.Reader
	if opts.Stdin != nil {
		stdin = &eofReader{r: opts.Stdin, onEOF: func() {
			procMu.Lock()
			p := proc
			stdinEOF = true
			procMu.Unlock()
			if p != nil {
				closeStdin(p)
			}
		}}
	}
	stdout, stderr := opts.Stdout, opts.Stderr
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	ioOpts := []cio.Opt{cio.WithStreams(stdin, stdout, stderr), cio.WithFIFODir(c.fifoDir())}
	if opts.TTY {
		ioOpts = append(ioOpts, cio.WithTerminal)
	}
	p, err := task.Exec(ctx, execID, &pspec, cio.NewCreator(ioOpts...))
	if err != nil {
		return 0, fmt.Errorf("failed to exec in container %q: %w", containerID, err)
	}
	defer func() { _, _ = p.Delete(context.WithoutCancel(ctx), client.WithProcessKill) }()
	exitCh, err := p.Wait(ctx)
	if err != nil {
		return 0, fmt.Errorf("failed to wait for exec in container %q: %w", containerID, err)
	}
	if err := p.Start(ctx); err != nil {
		return 0, fmt.Errorf("failed to start exec in container %q: %w", containerID, err)
	}
	procMu.Lock()
	proc = p
	eof := stdinEOF
	procMu.Unlock()
	if eof {
		closeStdin(p)
	}
	if opts.Resize != nil {
		go func() {
			for sz := range opts.Resize {
				_ = p.Resize(ctx, uint32(sz.Width), uint32(sz.Height))
			}
		}()
	}
	select {
	case st := <-exitCh:
		p.IO().Wait()
		code, _, err := st.Result()
		if err != nil {
			return 0, fmt.Errorf("failed to exec in container %q: %w", containerID, err)
		}
		return int(code), nil
	case <-ctx.Done():
		_ = p.Kill(context.WithoutCancel(ctx), syscall.SIGKILL)
		return 0, fmt.Errorf("failed to exec in container %q: %w", containerID, ctx.Err())
	}
}

// eofReader calls onEOF once when r is exhausted.
type eofReader struct {
	r     io.Reader
	once  sync.Once
	onEOF func()
}

func (e *eofReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		e.once.Do(e.onEOF)
	}
	return n, err
}
