package node

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/httpstream/spdy"

	"github.com/glassplane/glassplane/controlplane/node/runtime"
)

// Port forwarding speaks kubelet's SPDY protocol portforward.k8s.io: for
// each forwarded connection the client opens an error stream and a data
// stream carrying the same requestID and port headers; the node connects
// to that port on the pod's localhost and copies the data stream both
// ways, writing any failure to the error stream. kubectl first tries a
// websocket tunnel of the same protocol; the node refuses it and kubectl
// falls back to SPDY.
const (
	portForwardProtocolV1 = "portforward.k8s.io"
	// portForwardIdleTimeout closes a forwarding connection nobody used,
	// as kubelet's streaming idle timeout.
	portForwardIdleTimeout = 4 * time.Hour
	// portForwardPairTimeout bounds the wait for a stream's partner.
	portForwardPairTimeout = 30 * time.Second
)

// podDialer is what port forwarding needs from a runtime.
type podDialer interface {
	DialPod(ctx context.Context, pod runtime.PodSpec, port int) (net.Conn, error)
}

// servePortForward answers /portForward/{namespace}/{pod}.
func (a *Agent) servePortForward(w http.ResponseWriter, r *http.Request) {
	dialer, ok := a.cfg.Runtime.(podDialer)
	if !ok {
		writeAPIError(w, apierrors.NewBadRequest(fmt.Sprintf("the %s runtime cannot forward ports", a.cfg.Runtime.Name())))
		return
	}
	if a.podLister == nil {
		writeAPIError(w, apierrors.NewServiceUnavailable("node agent is starting"))
		return
	}
	pod, err := a.podLister.Pods(r.PathValue("namespace")).Get(r.PathValue("pod"))
	if err != nil {
		writeAPIError(w, apierrors.NewNotFound(corev1.Resource("pods"), r.PathValue("pod")))
		return
	}
	if pod.Status.Phase != corev1.PodRunning {
		writeAPIError(w, apierrors.NewBadRequest(fmt.Sprintf("pod %s is not running", pod.Name)))
		return
	}
	if r.Header.Get("Upgrade") == "websocket" {
		http.Error(w, "this node forwards ports over SPDY only", http.StatusBadRequest)
		return
	}
	if _, err := httpstream.Handshake(r, w, []string{portForwardProtocolV1}); err != nil {
		return
	}
	streams := make(chan httpstream.Stream, 4)
	conn := spdy.NewResponseUpgrader().UpgradeResponse(w, r, func(s httpstream.Stream, _ <-chan struct{}) error {
		port, err := strconv.ParseUint(s.Headers().Get(corev1.PortHeader), 10, 16)
		if err != nil || port == 0 {
			return fmt.Errorf("invalid %q header %q", corev1.PortHeader, s.Headers().Get(corev1.PortHeader))
		}
		switch s.Headers().Get(corev1.StreamType) {
		case corev1.StreamTypeData, corev1.StreamTypeError:
		default:
			return fmt.Errorf("invalid stream type %q", s.Headers().Get(corev1.StreamType))
		}
		streams <- s
		return nil
	})
	if conn == nil {
		return
	}
	defer conn.Close()
	conn.SetIdleTimeout(portForwardIdleTimeout)
	spec := podSpecFor(pod)
	ctx := r.Context()
	type pair struct {
		data, errs httpstream.Stream
		created    time.Time
	}
	pairs := map[string]*pair{}
	var wg sync.WaitGroup
	defer wg.Wait()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-conn.CloseChan():
			return
		case <-ctx.Done():
			return
		case <-tick.C:
			for id, p := range pairs {
				if time.Since(p.created) > portForwardPairTimeout {
					conn.RemoveStreams(p.data, p.errs)
					delete(pairs, id)
				}
			}
		case s := <-streams:
			id := s.Headers().Get(corev1.PortForwardRequestIDHeader)
			p := pairs[id]
			if p == nil {
				p = &pair{created: time.Now()}
				pairs[id] = p
			}
			if s.Headers().Get(corev1.StreamType) == corev1.StreamTypeData {
				p.data = s
			} else {
				p.errs = s
			}
			if p.data == nil || p.errs == nil {
				continue
			}
			delete(pairs, id)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer conn.RemoveStreams(p.data, p.errs)
				a.forwardStream(ctx, dialer, spec, p.data, p.errs)
			}()
		}
	}
}

// forwardStream copies one forwarded connection between the client's data
// stream and the pod's port.
func (a *Agent) forwardStream(ctx context.Context, dialer podDialer, pod runtime.PodSpec, data, errs httpstream.Stream) {
	defer errs.Close()
	defer data.Close()
	port, _ := strconv.Atoi(data.Headers().Get(corev1.PortHeader))
	target, err := dialer.DialPod(ctx, pod, port)
	if err != nil {
		fmt.Fprintf(errs, "error forwarding port %d to pod %s, uid %v: %v", port, pod.Name, pod.UID, err)
		return
	}
	defer target.Close()
	// The client closing its side half-closes the pod's; the forwarding
	// ends when the pod's side is done.
	go func() {
		_, _ = io.Copy(target, data)
		if tc, ok := target.(interface{ CloseWrite() error }); ok {
			_ = tc.CloseWrite()
		}
	}()
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(data, target)
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}
