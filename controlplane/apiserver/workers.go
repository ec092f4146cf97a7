package apiserver

import "sync"

// net/http serves each request (each HTTP/2 stream) on a goroutine of its
// own, which starts with the runtime's small initial stack. A write's path
// is deep (admission, then the field manager's walks of the object through
// structured-merge-diff), so that stack grows several times in every write,
// and each growth copies it: about 3% of the process's CPU at 1,000 writes a
// second. As grpc-go's server workers do, writes run instead on a few
// long-lived goroutines whose stacks have already grown. A write that finds
// them all busy runs on its own goroutine as before: it never waits for one.

// stackWorkers is the process's pool, of poolSize goroutines that live as
// long as the process. A write holds one while it waits for etcd too, so
// there are more than cores: with 8 on 2 cores a quarter of the writes of
// the dashboard benchmark found none idle. An idle worker costs its stack,
// which the garbage collector halves while it stays idle.
var stackWorkers = sync.OnceValue(func() *workerPool { return newWorkerPool(poolSize) })

const poolSize = 64

// workerPool runs functions on its long-lived goroutines.
type workerPool struct {
	work chan *job
}

// A job is one function to run and what it ended with.
type job struct {
	f        func()
	panicked bool
	value    any
	done     chan struct{}
}

var jobs = sync.Pool{New: func() any { return &job{done: make(chan struct{}, 1)} }}

func newWorkerPool(n int) *workerPool {
	p := &workerPool{work: make(chan *job)}
	for range n {
		go p.worker()
	}
	return p
}

func (p *workerPool) worker() {
	for j := range p.work {
		j.run()
	}
}

func (j *job) run() {
	defer func() { j.done <- struct{}{} }()
	defer func() {
		if v := recover(); v != nil {
			j.panicked, j.value = true, v
		}
	}()
	j.f()
}

// do runs f on an idle worker, or on the caller's goroutine when none is
// idle, and returns when f has. A panic in f is raised again on the
// caller's goroutine with the same value (http.ErrAbortHandler included),
// where the request's own recovery sees it.
func (p *workerPool) do(f func()) {
	j := jobs.Get().(*job)
	j.f = f
	select {
	case p.work <- j:
		<-j.done
	default:
		j.f = nil
		jobs.Put(j)
		f()
		return
	}
	panicked, v := j.panicked, j.value
	*j = job{done: j.done}
	jobs.Put(j)
	if panicked {
		panic(v)
	}
}
