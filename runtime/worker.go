package runtime

import (
	goruntime "runtime"
	"sync"
)

// Worker runs closures on one goroutine that holds its OS thread for its whole life, so every call a
// backend makes through it comes from the same OS thread (what ACL and CUDA bind contexts and capture
// modes to). The zero Worker is not usable; use StartWorker.
type Worker struct {
	jobs chan func()
	once sync.Once
	done chan struct{}
}

// StartWorker starts a worker; init, when non-nil, runs first on the locked thread (e.g. to make a
// context current).
func StartWorker(init func()) *Worker {
	w := &Worker{jobs: make(chan func()), done: make(chan struct{})}
	ready := make(chan struct{})
	go func() {
		goruntime.LockOSThread()
		// The thread is never unlocked: when the goroutine exits the OS thread exits with it, so no
		// other goroutine inherits a thread that a runtime bound a context to.
		if init != nil {
			init()
		}
		close(ready)
		for job := range w.jobs {
			job()
		}
		close(w.done)
	}()
	<-ready
	return w
}

// Do runs f on the worker's thread and waits for it. A panic in f is carried back and raised again
// on the caller's goroutine, where the caller can recover it; the worker goes on serving.
func (w *Worker) Do(f func()) {
	fin := make(chan any, 1)
	w.jobs <- func() {
		defer func() { fin <- recover() }()
		f()
	}
	if v := <-fin; v != nil {
		panic(v)
	}
}

// Stop ends the worker after the jobs already queued. Do must not be called afterwards.
func (w *Worker) Stop() {
	w.once.Do(func() { close(w.jobs) })
	<-w.done
}
