package capture_test

import "runtime"

// elsewhere runs f on a goroutine of its own, locked to an OS thread of its own, and waits for it.
func elsewhere(f func()) {
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread() // the thread exits with the goroutine
		defer close(done)
		f()
	}()
	<-done
}
