//go:build linux

package sim_test

import (
	"runtime"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
)

// threadLog records the OS thread id every device call ran on, by the Thread it was issued for.
type threadLog struct {
	mu   sync.Mutex
	tids map[device.Thread]map[int]bool
	ops  map[string]int // op -> tid of its last call
}

func (l *threadLog) record(op string, t device.Thread) {
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
		log := &threadLog{tids: map[device.Thread]map[int]bool{}, ops: map[string]int{}}
		d.SetCallHook(log.record)

		var wg sync.WaitGroup
		for _, t := range []device.Thread{main, other, main, other} {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				s, err := d.CreateStream(t, device.Blocking)
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
		log := &threadLog{tids: map[device.Thread]map[int]bool{}, ops: map[string]int{}}
		d.SetCallHook(log.record)
		s := newStream(d)
		x := malloc(d, 1*KiB)

		Expect(d.BeginCapture(other, s, device.ThreadLocal)).To(Succeed())
		Expect(d.Write(main, x, filled(x.Bytes, 1))).To(Succeed(), "another thread may make unsafe calls")
		expectError(d.Write(other, x, filled(x.Bytes, 2)), 107030, device.ClassCaptureMode)
		_, err := d.EndCapture(main, s)
		expectError(err, 107038, device.ClassWrongThread)

		Expect(log.ops["BeginCapture@other"]).To(Equal(log.ops["Write@other"]), "rejected on the thread that began")
		Expect(log.ops["Write@main"]).NotTo(Equal(log.ops["Write@other"]))
		Expect(read(d, x)).To(Equal(filled(x.Bytes, 1)))
	})

	It("run a session (OnThread) on Main's thread: its Main calls there inline, its Other calls on Other's", func() {
		d := onProfile("cann")
		log := &threadLog{tids: map[device.Thread]map[int]bool{}, ops: map[string]int{}}
		d.SetCallHook(log.record)
		s := newStream(d) // outside the session: handed off
		var sessionTid int
		Expect(d.OnThread(main, func(on device.Device) {
			sessionTid = syscall.Gettid()
			for _, dev := range []device.Device{on, d} { // the session's view, and the device
				p, err := dev.Malloc(main, 4*KiB)
				Expect(err).NotTo(HaveOccurred())
				Expect(dev.Fill(main, s, p, 1)).To(Succeed())
				q, err := dev.Malloc(other, 4*KiB)
				Expect(err).NotTo(HaveOccurred())
				Expect(dev.Copy(other, s, q, p)).To(Succeed())
				Expect(dev.Free(main, p)).To(Succeed())
				Expect(dev.Free(other, q)).To(Succeed())
			}
		})).To(Succeed())
		Expect(log.tids[main]).To(HaveLen(1), "all Main calls on one thread, inside the session or not")
		Expect(log.tids[main]).To(HaveKey(sessionTid), "the session runs on Main's thread")
		Expect(log.tids[other]).To(HaveLen(1))
		Expect(log.tids[other]).NotTo(HaveKey(sessionTid), "Other's calls from the session are handed off")
	})

	It("make a call from another goroutine wait for a session, then run it on Main's thread (negative control)", func() {
		d := onProfile("cann")
		log := &threadLog{tids: map[device.Thread]map[int]bool{}, ops: map[string]int{}}
		d.SetCallHook(log.record)
		inSession, release, outside := make(chan struct{}), make(chan struct{}), make(chan error)
		session := make(chan error)
		go func() {
			session <- d.OnThread(main, func(device.Device) {
				close(inSession)
				<-release
			})
		}()
		<-inSession
		go func() {
			_, err := d.CreateStream(main, device.Blocking)
			outside <- err
		}()
		close(release)
		Expect(<-session).To(Succeed())
		Expect(<-outside).To(Succeed())
		Expect(log.tids[main]).To(HaveLen(1))
	})

	It("give the session a view whose Main calls run where they are made, unchecked, while the session lasts, and are handed off after it", func() {
		d := onProfile("cann")
		log := &threadLog{tids: map[device.Thread]map[int]bool{}, ops: map[string]int{}}
		d.SetCallHook(log.record)
		inSession, release := make(chan device.Device), make(chan struct{})
		session := make(chan error)
		go func() {
			session <- d.OnThread(main, func(on device.Device) {
				inSession <- on
				<-release
			})
		}()
		on := <-inSession
		released := false
		DeferCleanup(func() {
			if !released {
				close(release)
				<-session
			}
		})
		// Against the contract (the view is the session's alone), to show that the view does not
		// check the thread: from another goroutine, during the session, its call runs right there,
		// on a thread that is not Main's, where the device's own call would wait for the session.
		type answer struct {
			tid int
			err error
		}
		made := make(chan answer, 1)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			_, err := on.CreateStream(main, device.Blocking)
			made <- answer{syscall.Gettid(), err}
		}()
		var got answer
		Eventually(made, 5*time.Second).Should(Receive(&got), "the view's call waited for the session: it checked the thread")
		Expect(got.err).NotTo(HaveOccurred())
		Expect(log.tids[main]).To(And(HaveLen(1), HaveKey(got.tid)))
		close(release)
		released = true
		Expect(<-session).To(Succeed())

		// Once the session is over the view is the device again: its call is handed off to Main.
		log.tids[main] = map[int]bool{}
		_, err := on.CreateStream(main, device.Blocking)
		Expect(err).NotTo(HaveOccurred())
		_, err = d.CreateStream(main, device.Blocking)
		Expect(err).NotTo(HaveOccurred())
		Expect(log.tids[main]).To(HaveLen(1))
		Expect(log.tids[main]).NotTo(HaveKey(syscall.Gettid()))
	})
})

var _ = Describe("OnThread", func() {
	It("refuses an unknown thread and a closed device without running the session", func() {
		d := onProfile("cann")
		ran := false
		expectError(d.OnThread(device.Thread(7), func(device.Device) { ran = true }), 107000, device.ClassInvalidValue)
		Expect(d.Close()).To(Succeed())
		expectError(d.OnThread(main, func(device.Device) { ran = true }), 107000, device.ClassInvalidValue)
		Expect(ran).To(BeFalse())
	})

	It("raises a panic in the session on the caller's goroutine; the device goes on serving", func() {
		d := onProfile("cann")
		recovered := func() (v any) {
			defer func() { v = recover() }()
			_ = d.OnThread(main, func(device.Device) { panic("session exploded") })
			return nil
		}()
		Expect(recovered).To(Equal("session exploded"))
		_, err := d.CreateStream(main, device.Blocking)
		Expect(err).NotTo(HaveOccurred())
	})

	It("lets Close wait for a session, whose calls after Close began answer closed", func() {
		d := onProfile("cann")
		inSession, closing := make(chan struct{}), make(chan struct{})
		var after error
		session := make(chan error)
		go func() {
			session <- d.OnThread(main, func(device.Device) {
				close(inSession)
				<-closing
				// Close is waiting for the session (or has not begun): a call on Other must not
				// wait for Close, which waits for this session.
				for {
					_, after = d.CreateStream(other, device.Blocking)
					if after != nil {
						return
					}
				}
			})
		}()
		<-inSession
		closed := make(chan error)
		go func() { closed <- d.Close() }()
		close(closing)
		Expect(<-session).To(Succeed())
		Expect(<-closed).To(Succeed())
		expectError(after, 107000, device.ClassInvalidValue)
	})
})
