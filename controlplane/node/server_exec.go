package node

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/controlplane/node/runtime"
)

// The websocket remote command protocol (k8s.io/apimachinery's
// remotecommand, versions 4 and 5): each binary message starts with its
// channel number; the error channel carries a metav1.Status at the end; in
// v5 the client half-closes stdin with a close message [255, 0].
const (
	protocolV5 = "v5.channel.k8s.io"
	protocolV4 = "v4.channel.k8s.io"
	// protocolV1 is the first channel protocol: the error channel carries
	// the failure's text, and nothing on success.
	protocolV1       = "channel.k8s.io"
	channelStdin     = 0
	channelStdout    = 1
	channelStderr    = 2
	channelError     = 3
	channelResize    = 4
	channelClose     = 255
	execCloseTimeout = 5 * time.Second
)

// serveExec runs `kubectl exec` over a websocket: GET or POST
// /exec/{namespace}/{pod}/{container}?command=...&stdin=1&stdout=1&stderr=1&tty=1.
func (a *Agent) serveExec(w http.ResponseWriter, r *http.Request) {
	execer, ok := a.cfg.Runtime.(execRuntime)
	if !ok {
		writeAPIError(w, apierrors.NewBadRequest(fmt.Sprintf("the %s runtime cannot exec in containers", a.cfg.Runtime.Name())))
		return
	}
	ns, podName, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	q := r.URL.Query()
	cmd := q["command"]
	if len(cmd) == 0 {
		writeAPIError(w, apierrors.NewBadRequest("you must specify at least 1 command"))
		return
	}
	_, insts, err := a.findContainer(r.Context(), ns, podName, container)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	if len(insts) == 0 || insts[len(insts)-1].State != runtime.StateRunning {
		writeAPIError(w, apierrors.NewBadRequest(fmt.Sprintf("container %s is not running", container)))
		return
	}
	id := insts[len(insts)-1].ID
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		writeAPIError(w, apierrors.NewBadRequest("exec needs a websocket upgrade (v5.channel.k8s.io); SPDY is not served"))
		return
	}
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		Subprotocols: []string{protocolV5, protocolV4, protocolV1},
		// Only the API server reaches this endpoint, with its client
		// certificate: no browser and no ambient credentials, so the
		// Origin it forwards from its own client (x/net/websocket sends
		// http://localhost) means nothing here, as for the kubelet.
		InsecureSkipVerify: true,
	})
	if err != nil {
		return
	}
	conn.SetReadLimit(1 << 20)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()

	opts := runtime.ExecOptions{Cmd: cmd, TTY: isTrue(q.Get("tty"))}
	if isTrue(q.Get("stdout")) {
		opts.Stdout = &channelWriter{ctx: ctx, conn: conn, channel: channelStdout}
	}
	if isTrue(q.Get("stderr")) && !opts.TTY {
		opts.Stderr = &channelWriter{ctx: ctx, conn: conn, channel: channelStderr}
	}
	var stdinW *io.PipeWriter
	if isTrue(q.Get("stdin")) {
		var stdinR *io.PipeReader
		stdinR, stdinW = io.Pipe()
		opts.Stdin = stdinR
	}
	resize := make(chan runtime.TerminalSize, 4)
	if opts.TTY {
		opts.Resize = resize
	}
	go func() {
		defer cancel()
		defer close(resize)
		if stdinW != nil {
			defer stdinW.Close()
		}
		readExecInput(ctx, conn, conn.Subprotocol(), stdinW, resize)
	}()

	code, err := execer.Exec(ctx, id, opts)
	status := metav1.Status{Status: metav1.StatusSuccess}
	switch {
	case err != nil:
		status = metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonInternalError, Code: http.StatusInternalServerError, Message: err.Error()}
	case code != 0:
		status = metav1.Status{
			Status:  metav1.StatusFailure,
			Reason:  "NonZeroExitCode",
			Message: fmt.Sprintf("command terminated with non-zero exit code: error executing command [%s], exit code %d", strings.Join(cmd, " "), code),
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: "ExitCode", Message: strconv.Itoa(code)}}},
		}
	}
	body, _ := json.Marshal(status)
	if p := conn.Subprotocol(); p != protocolV5 && p != protocolV4 {
		// channel.k8s.io: the failure's text, nothing on success.
		body = nil
		if status.Status != metav1.StatusSuccess {
			body = []byte(status.Message)
		}
	}
	wctx, wcancel := context.WithTimeout(context.WithoutCancel(ctx), execCloseTimeout)
	defer wcancel()
	if body != nil {
		_ = conn.Write(wctx, websocket.MessageBinary, append([]byte{channelError}, body...))
	}
	_ = conn.Close(websocket.StatusNormalClosure, "")
}

// readExecInput feeds stdin and terminal sizes from the client until the
// connection closes.
func readExecInput(ctx context.Context, conn *websocket.Conn, protocol string, stdin *io.PipeWriter, resize chan<- runtime.TerminalSize) {
	for {
		_, msg, err := conn.Read(ctx)
		if err != nil {
			return
		}
		if len(msg) == 0 {
			continue
		}
		switch msg[0] {
		case channelStdin:
			if stdin != nil && len(msg) > 1 {
				if _, err := stdin.Write(msg[1:]); err != nil {
					return
				}
			}
		case channelResize:
			var sz runtime.TerminalSize
			if json.Unmarshal(msg[1:], &sz) == nil {
				select {
				case resize <- sz:
				default:
				}
			}
		case channelClose:
			if protocol == protocolV5 && len(msg) > 1 && msg[1] == channelStdin && stdin != nil {
				stdin.Close()
			}
		}
	}
}

// channelWriter sends what is written as messages on one channel.
type channelWriter struct {
	ctx     context.Context
	conn    *websocket.Conn
	channel byte
}

func (c *channelWriter) Write(p []byte) (int, error) {
	msg := make([]byte, 0, len(p)+1)
	msg = append(msg, c.channel)
	msg = append(msg, p...)
	if err := c.conn.Write(c.ctx, websocket.MessageBinary, msg); err != nil {
		return 0, err
	}
	return len(p), nil
}
