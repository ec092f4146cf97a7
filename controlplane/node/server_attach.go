package node

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/coder/websocket"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/controlplane/node/runtime"
)

// serveAttach runs `kubectl attach` over a websocket (the exec protocol):
// GET or POST /attach/{namespace}/{pod}/{container}?stdout=1&stderr=1. The
// container's output from now on is streamed on the stdout and stderr
// channels until it stops or the client goes; the error channel then says
// Success. Containers run without a stdin or terminal here, so a container
// whose spec asks for stdin cannot be attached to with one: that is refused
// rather than silently ignored; for a container without stdin, stdin and
// tty are dropped, as containerd's CRI attach drops them.
func (a *Agent) serveAttach(w http.ResponseWriter, r *http.Request) {
	logs, ok := a.cfg.Runtime.(logRuntime)
	if !ok {
		writeAPIError(w, apierrors.NewBadRequest(fmt.Sprintf("the %s runtime cannot attach to containers", a.cfg.Runtime.Name())))
		return
	}
	ns, podName, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	q := r.URL.Query()
	pod, insts, err := a.findContainer(r.Context(), ns, podName, container)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	if len(insts) == 0 || insts[len(insts)-1].State != runtime.StateRunning {
		writeAPIError(w, apierrors.NewBadRequest(fmt.Sprintf("container %s is not running", container)))
		return
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == container && (c.Stdin || c.TTY) && (isTrue(q.Get("stdin")) || isTrue(q.Get("tty"))) {
			writeAPIError(w, apierrors.NewBadRequest(fmt.Sprintf("container %s asks for a stdin or terminal, which the %s runtime does not give containers: attach without -i and -t to see its output", container, a.cfg.Runtime.Name())))
			return
		}
	}
	inst := insts[len(insts)-1]
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		writeAPIError(w, apierrors.NewBadRequest("attach needs a websocket upgrade (v5.channel.k8s.io); SPDY is not served"))
		return
	}
	// As for exec: only the API server reaches this endpoint, with its
	// client certificate, so the Origin it forwards means nothing here.
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		Subprotocols:       []string{protocolV5, protocolV4, protocolV1},
		InsecureSkipVerify: true,
	})
	if err != nil {
		return
	}
	conn.SetReadLimit(1 << 20)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	// The client's messages (stdin, resizes, its close) are read and
	// dropped; its going away ends the attach.
	go func() {
		defer cancel()
		readExecInput(ctx, conn, conn.Subprotocol(), nil, nil)
	}()

	running := func() bool {
		byName, err := a.containersByName(ctx, pod.UID)
		if err != nil {
			return false
		}
		for _, c := range byName[container] {
			if c.ID == inst.ID {
				return c.State == runtime.StateRunning
			}
		}
		return false
	}
	path := logs.LogPath(string(pod.UID), container, inst.Attempt)
	var wg sync.WaitGroup
	for stream, channel := range map[string]byte{"stdout": channelStdout, "stderr": channelStderr} {
		if !isTrue(q.Get(stream)) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := &channelWriter{ctx: ctx, conn: conn, channel: channel}
			opts := runtime.LogOptions{Follow: true, TailLines: 0, Stream: stream}
			if err := runtime.ReadContainerLog(ctx, path, opts, out, running); err != nil {
				a.log.Debug("failed to attach to a container's output", "pod", ns+"/"+podName, "container", container, "err", err)
			}
		}()
	}
	wg.Wait()
	if p := conn.Subprotocol(); p == protocolV5 || p == protocolV4 {
		// channel.k8s.io says nothing on success.
		body, _ := json.Marshal(metav1.Status{Status: metav1.StatusSuccess})
		wctx, wcancel := context.WithTimeout(context.WithoutCancel(ctx), execCloseTimeout)
		defer wcancel()
		_ = conn.Write(wctx, websocket.MessageBinary, append([]byte{channelError}, body...))
	}
	_ = conn.Close(websocket.StatusNormalClosure, "")
}
