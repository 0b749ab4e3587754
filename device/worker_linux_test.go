package device_test

import (
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
)

// Linux only: the OS thread id comes from gettid.
var _ = Describe("Worker", func() {
	It("runs every job on one OS thread, a different one from another worker's", func() {
		a, b := device.StartWorker(nil), device.StartWorker(nil)
		defer a.Stop()
		defer b.Stop()
		tid := func(w *device.Worker) (id int) {
			w.Do(func() { id = syscall.Gettid() })
			return id
		}
		first := tid(a)
		for range 50 {
			Expect(tid(a)).To(Equal(first))
		}
		Expect(tid(b)).NotTo(Equal(first))
	})

	It("runs init first, on the worker's own thread", func() {
		var initTid int
		w := device.StartWorker(func() { initTid = syscall.Gettid() })
		defer w.Stop()
		var jobTid int
		w.Do(func() { jobTid = syscall.Gettid() })
		Expect(initTid).NotTo(BeZero())
		Expect(jobTid).To(Equal(initTid))
	})

	It("raises a job's panic on the caller's goroutine and keeps serving", func() {
		w := device.StartWorker(nil)
		defer w.Stop()
		recovered := func() (v any) {
			defer func() { v = recover() }()
			w.Do(func() { panic("device call exploded") })
			return nil
		}()
		Expect(recovered).To(Equal("device call exploded"))
		ran := false
		w.Do(func() { ran = true })
		Expect(ran).To(BeTrue())
	})

	It("stops after the jobs already queued, and a second Stop is harmless", func() {
		w := device.StartWorker(nil)
		ran := 0
		w.Do(func() { ran++ })
		w.Stop()
		w.Stop()
		Expect(ran).To(Equal(1))
	})
})

var _ = Describe("Worker nesting (Linux)", func() {
	It("runs a nested Do on the same OS thread, and a Do from another goroutine after the job, on it too", func() {
		w := device.StartWorker(nil)
		defer w.Stop()
		var outer, inner, later int
		running, release := make(chan struct{}), make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			w.Do(func() {
				outer = syscall.Gettid()
				w.Do(func() { inner = syscall.Gettid() })
				close(running)
				<-release
			})
		}()
		<-running
		handedOff := make(chan struct{})
		go func() {
			defer close(handedOff)
			// Queued behind the job, not run inline on this goroutine's thread.
			w.Do(func() { later = syscall.Gettid() })
		}()
		close(release)
		<-done
		<-handedOff
		Expect(inner).To(Equal(outer))
		Expect(later).To(Equal(outer))
		Expect(syscall.Gettid()).NotTo(Equal(outer))
	})
})
