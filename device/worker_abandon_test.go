package device_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/internal/leakcheck"
)

var _ = Describe("an abandoned Worker", func() {
	It("ends at once when idle, ends after a job that was still running, and refuses Do", func() {
		snap := leakcheck.Take()
		idle, busy := device.StartWorker(nil), device.StartWorker(nil)
		release, started := make(chan struct{}), make(chan struct{})
		go busy.Do(func() { close(started); <-release })
		<-started
		Expect(snap.Leaks(0)).To(HaveLen(3), "two workers and the goroutine waiting on the busy one")

		idle.Abandon()
		busy.Abandon()
		busy.Abandon() // a second Abandon is harmless
		Expect(snap.Leaks(time.Second)).To(HaveLen(2), "the idle worker ended; the busy one is in its job")
		close(release)
		Expect(snap.Leaks(5 * time.Second)).To(BeEmpty())
		Expect(func() { idle.Do(func() {}) }).To(PanicWith("runtime: Do on an abandoned worker"))
	})
})
