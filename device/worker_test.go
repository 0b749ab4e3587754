package device_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
)

// Portable: the worker tells its own thread by gettid on Linux and by goroutine elsewhere.
var _ = Describe("Worker on its own thread", func() {
	It("runs a Do made from inside a job inline, where a hand-off would wait for itself", func() {
		w := device.StartWorker(nil)
		defer w.Stop()
		var outside, inside, nested bool
		outside = w.OnOwnThread()
		w.Do(func() {
			inside = w.OnOwnThread()
			w.Do(func() { nested = true })
		})
		Expect(outside).To(BeFalse(), "the caller's goroutine is not the worker's")
		Expect(inside).To(BeTrue())
		Expect(nested).To(BeTrue())
	})

	It("raises a nested job's panic through the outer job to the caller", func() {
		w := device.StartWorker(nil)
		defer w.Stop()
		recovered := func() (v any) {
			defer func() { v = recover() }()
			w.Do(func() { w.Do(func() { panic("nested") }) })
			return nil
		}()
		Expect(recovered).To(Equal("nested"))
	})

	It("does not take another goroutine for its own while a job runs (negative control)", func() {
		w := device.StartWorker(nil)
		defer w.Stop()
		running, release := make(chan struct{}), make(chan struct{})
		go w.Do(func() {
			close(running)
			<-release
		})
		<-running
		// The worker is busy: only the identity check keeps this goroutine from running inline.
		Expect(w.OnOwnThread()).To(BeFalse())
		other := device.StartWorker(nil)
		defer other.Stop()
		var fromOther bool
		other.Do(func() { fromOther = w.OnOwnThread() })
		Expect(fromOther).To(BeFalse(), "another worker's thread is not this one's")
		close(release)
	})
})
