//go:build linux

package sim_test

import (
	"sync"
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/runtime"
)

// threadLog records the OS thread id every device call ran on, by the Thread it was issued for.
type threadLog struct {
	mu   sync.Mutex
	tids map[runtime.Thread]map[int]bool
	ops  map[string]int // op -> tid of its last call
}

func (l *threadLog) record(op string, t runtime.Thread) {
	tid := syscall.Gettid()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.tids[t] == nil {
		l.tids[t] = map[int]bool{}
	}
	l.tids[t][tid] = true
	l.ops[op+"@"+t.String()] = tid
}

var _ = Describe("device threads", func() {
	It("run every call for Main on one OS thread and every call for Other on another", func() {
		d := onProfile("cann")
		log := &threadLog{tids: map[runtime.Thread]map[int]bool{}, ops: map[string]int{}}
		d.SetCallHook(log.record)

		var wg sync.WaitGroup
		for _, t := range []runtime.Thread{main, other, main, other} {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				s, err := d.CreateStream(t)
				Expect(err).NotTo(HaveOccurred())
				p, err := d.Malloc(t, 4*KiB)
				Expect(err).NotTo(HaveOccurred())
				Expect(d.Fill(t, s, p, 1)).To(Succeed())
				Expect(d.Free(t, p)).To(Succeed())
				Expect(d.DestroyStream(t, s)).To(Succeed())
			}()
		}
		wg.Wait()

		Expect(log.tids[main]).To(HaveLen(1), "all Main calls on one thread")
		Expect(log.tids[other]).To(HaveLen(1), "all Other calls on one thread")
		Expect(log.tids[main]).NotTo(Equal(log.tids[other]), "Main and Other are different OS threads")
	})

	It("apply THREAD_LOCAL rules by the OS thread that began the capture", func() {
		d := onProfile("cann")
		log := &threadLog{tids: map[runtime.Thread]map[int]bool{}, ops: map[string]int{}}
		d.SetCallHook(log.record)
		s := newStream(d)
		x := malloc(d, 1*KiB)

		Expect(d.BeginCapture(other, s, runtime.ThreadLocal)).To(Succeed())
		Expect(d.Write(main, x, filled(x.Bytes, 1))).To(Succeed(), "another thread may make unsafe calls")
		expectError(d.Write(other, x, filled(x.Bytes, 2)), 107030, runtime.ClassCaptureMode)
		_, err := d.EndCapture(main, s)
		expectError(err, 107038, runtime.ClassWrongThread)

		Expect(log.ops["BeginCapture@other"]).To(Equal(log.ops["Write@other"]), "rejected on the thread that began")
		Expect(log.ops["Write@main"]).NotTo(Equal(log.ops["Write@other"]))
		Expect(read(d, x)).To(Equal(filled(x.Bytes, 1)))
	})
})
