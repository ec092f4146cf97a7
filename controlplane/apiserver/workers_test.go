package apiserver

import (
	"errors"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

// goroutine is the calling goroutine's number, from its stack's header.
func goroutine() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	id, _, _ := strings.Cut(strings.TrimPrefix(string(buf), "goroutine "), " ")
	return id
}

// onWorker calls p.do(f) until f runs on a goroutine other than the
// caller's (a worker that has just finished a function may not be waiting
// for the next one yet, and then do runs f on the caller), and returns
// that goroutine and what do's panic, if any, was.
func onWorker(t *testing.T, p *workerPool, f func()) (ranOn string, recovered any) {
	t.Helper()
	caller := goroutine()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		ranOn, recovered = func() (g string, v any) {
			defer func() { v = recover() }()
			p.do(func() { g = goroutine(); f() })
			return g, nil
		}()
		if ranOn != caller {
			return ranOn, recovered
		}
	}
	t.Fatal("no function ran on the pool's worker")
	return "", nil
}

func TestWorkerPoolRunsOnAWorker(t *testing.T) {
	p := newWorkerPool(1)
	n := 0
	first, _ := onWorker(t, p, func() { n++ })
	second, _ := onWorker(t, p, func() { n++ })
	if first != second {
		t.Fatalf("f ran on goroutines %s and %s, want the pool's one worker both times", first, second)
	}
	if n < 2 {
		t.Fatalf("f ran %d times, want at least 2", n)
	}
}

func TestWorkerPoolRaisesPanicsOnTheCaller(t *testing.T) {
	p := newWorkerPool(1)
	worker, _ := onWorker(t, p, func() {})
	for _, want := range []any{errors.New("boom"), http.ErrAbortHandler, "text"} {
		ranOn, got := onWorker(t, p, func() { panic(want) })
		if got != want {
			t.Fatalf("recovered %v, want %v", got, want)
		}
		// The worker survived the panic: it took this function too.
		if ranOn != worker {
			t.Fatalf("a panic ran on goroutine %s, want the pool's one worker %s", ranOn, worker)
		}
	}
}

func TestWorkerPoolRunsOnTheCallerWhenAllAreBusy(t *testing.T) {
	p := newWorkerPool(1)
	busy := make(chan struct{})
	release := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		me := goroutine()
		for held := false; !held; time.Sleep(time.Millisecond) {
			p.do(func() {
				if goroutine() == me {
					return // the worker was not waiting yet; try again
				}
				held = true
				close(busy)
				<-release
			})
		}
	}()
	<-busy
	// The only worker is held: do must not wait for it.
	caller, ranOn := goroutine(), ""
	p.do(func() { ranOn = goroutine() })
	if ranOn != caller {
		t.Fatalf("f ran on goroutine %q while the only worker was busy, want the caller's %s", ranOn, caller)
	}
	close(release)
	<-finished
}
