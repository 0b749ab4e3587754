package device

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Worker runs closures on one goroutine that holds its OS thread for its whole life, so every call
// a backend makes through it comes from the same OS thread (what ACL and CUDA bind contexts and
// capture modes to). The zero Worker is not usable; use StartWorker.
type Worker struct {
	jobs chan func()
	quit chan struct{} // closed by Abandon
	once sync.Once
	gone sync.Once
	done chan struct{}
	// self is the worker's selfID (its OS thread, or on other systems than Linux its goroutine);
	// busy is set while the worker runs init or a job: only then can a caller be on its thread.
	self int
	busy atomic.Bool
}

// StartWorker starts a worker; init, when non-nil, runs first on the locked thread (e.g. to make a
// context current).
func StartWorker(init func()) *Worker {
	w := &Worker{jobs: make(chan func()), quit: make(chan struct{}), done: make(chan struct{})}
	ready := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		// The thread is never unlocked: when the goroutine exits the OS thread exits with it, so no
		// other goroutine inherits a thread that a runtime bound a context to.
		w.self = selfID()
		if init != nil {
			w.busy.Store(true)
			init()
			w.busy.Store(false)
		}
		close(ready)
		defer close(w.done)
		for {
			select {
			case job, ok := <-w.jobs:
				if !ok {
					return
				}
				w.busy.Store(true)
				job()
				w.busy.Store(false)
			case <-w.quit:
				return
			}
		}
	}()
	<-ready
	return w
}

// OnOwnThread reports whether the caller is running on the worker's thread: inside one of its
// jobs (or init), since the locked thread runs nothing else. Cheap when it is not: an idle worker
// answers with one atomic load, before any system call.
func (w *Worker) OnOwnThread() bool {
	return w.busy.Load() && selfID() == w.self
}

// Do runs f on the worker's thread and waits for it. A panic in f is carried back and raised again
// on the caller's goroutine, where the caller can recover it; the worker goes on serving. Called
// from the worker's own thread (a job that calls Do again), f runs inline: handing it off would
// wait for the job that is waiting for it.
func (w *Worker) Do(f func()) {
	if w.OnOwnThread() {
		f()
		return
	}
	fin := make(chan any, 1)
	select {
	case w.jobs <- func() {
		defer func() { fin <- recover() }()
		f()
	}:
	case <-w.quit:
		panic("runtime: Do on an abandoned worker")
	}
	if v := <-fin; v != nil {
		panic(v)
	}
}

// Abandon lets the worker go without waiting for it: an idle worker ends at once, one inside a job
// (a driver call that never returns) ends if the job ever does. It is how a device given up after
// a hang releases its threads; Do panics afterwards, and Stop must not be called.
func (w *Worker) Abandon() {
	w.gone.Do(func() { close(w.quit) })
}

// Stop ends the worker after the jobs already queued. Do must not be called afterwards.
func (w *Worker) Stop() {
	w.once.Do(func() { close(w.jobs) })
	<-w.done
}
