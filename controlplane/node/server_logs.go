package node

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/glassplane/glassplane/controlplane/node/runtime"
)

// serveLogs answers GET /containerLogs/{namespace}/{pod}/{container} with
// kubelet's query parameters: follow, previous, tailLines, sinceSeconds,
// sinceTime, timestamps, limitBytes.
func (a *Agent) serveLogs(w http.ResponseWriter, r *http.Request) {
	logs, ok := a.cfg.Runtime.(logRuntime)
	if !ok {
		writeAPIError(w, apierrors.NewBadRequest(fmt.Sprintf("the %s runtime keeps no container logs", a.cfg.Runtime.Name())))
		return
	}
	ns, podName, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	opts, previous, err := logOptions(r)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	pod, insts, err := a.findContainer(r.Context(), ns, podName, container)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	var inst runtime.ContainerStatus
	switch {
	case previous && len(insts) < 2:
		writeAPIError(w, apierrors.NewBadRequest(fmt.Sprintf("previous terminated container %q in pod %q not found", container, podName)))
		return
	case previous:
		inst = insts[len(insts)-2]
	case len(insts) == 0:
		writeAPIError(w, apierrors.NewBadRequest(fmt.Sprintf("container %q in pod %q is waiting to start: ContainerCreating", container, podName)))
		return
	default:
		inst = insts[len(insts)-1]
	}
	running := func() bool {
		byName, err := a.containersByName(r.Context(), pod.UID)
		if err != nil {
			return false
		}
		for _, c := range byName[container] {
			if c.ID == inst.ID {
				return c.State == runtime.StateRunning || c.State == runtime.StateCreated
			}
		}
		return false
	}
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	flusher := &flushWriter{w: w, rc: http.NewResponseController(w)}
	if err := runtime.ReadContainerLog(r.Context(), logs.LogPath(string(pod.UID), container, inst.Attempt), opts, flusher, running); err != nil {
		a.log.Debug("failed to serve container log", "pod", ns+"/"+podName, "container", container, "err", err)
	}
}

// logOptions reads kubelet's log query parameters.
func logOptions(r *http.Request) (runtime.LogOptions, bool, error) {
	q := r.URL.Query()
	opts := runtime.LogOptions{TailLines: -1, Follow: isTrue(q.Get("follow")), Timestamps: isTrue(q.Get("timestamps"))}
	if v := q.Get("tailLines"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return opts, false, apierrors.NewBadRequest(fmt.Sprintf("invalid tailLines %q", v))
		}
		opts.TailLines = n
	}
	if v := q.Get("limitBytes"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return opts, false, apierrors.NewBadRequest(fmt.Sprintf("invalid limitBytes %q", v))
		}
		opts.LimitBytes = n
	}
	if v := q.Get("sinceSeconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return opts, false, apierrors.NewBadRequest(fmt.Sprintf("invalid sinceSeconds %q", v))
		}
		opts.Since = time.Now().Add(-time.Duration(n) * time.Second)
	}
	if v := q.Get("sinceTime"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return opts, false, apierrors.NewBadRequest(fmt.Sprintf("invalid sinceTime %q", v))
		}
		opts.Since = t
	}
	return opts, isTrue(q.Get("previous")), nil
}

func isTrue(v string) bool { return v == "true" || v == "1" }

// flushWriter sends what was written at each Flush.
type flushWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (f *flushWriter) Write(p []byte) (int, error) { return f.w.Write(p) }

func (f *flushWriter) Flush() { _ = f.rc.Flush() }
