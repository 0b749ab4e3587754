package bind_test

import (
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/runtime"
	"github.com/replaycheck/replaycheck/runtime/internal/bind"
)

// bindOnly is a driver whose Bind fails on one thread; NewDevice calls nothing but Bind, Detail
// and Unbind (the embedded nil Driver would panic on anything else).
type bindOnly struct {
	bind.Driver
	fail    runtime.Thread
	mu      sync.Mutex
	binds   map[runtime.Thread]int
	unbinds map[runtime.Thread]int
}

func (d *bindOnly) Bind(t runtime.Thread) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if t == d.fail {
		return 7
	}
	d.binds[t]++
	return 0
}

func (d *bindOnly) Unbind(t runtime.Thread) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.unbinds[t]++
	return 0
}

func (d *bindOnly) Detail(int) string { return "injected" }

var _ = Describe("NewDevice", func() {
	codes := bind.Codes{Backend: "acl", Lookup: func(int) (string, runtime.Class) { return "", runtime.ClassInternal }}

	for _, failing := range []runtime.Thread{runtime.Main, runtime.Other} {
		It("undoes the bind that took when the other thread's fails: "+failing.String(), func() {
			drv := &bindOnly{fail: failing, binds: map[runtime.Thread]int{}, unbinds: map[runtime.Thread]int{}}
			d, err := bind.NewDevice(codes, drv, runtime.Capabilities{})
			Expect(d).To(BeNil())
			Expect(err).To(MatchError(ContainSubstring("binding the device on the " + failing.String() + " thread: injected")))
			Expect(drv.unbinds).To(Equal(drv.binds), "every bind that took is undone (aclrtSetDevice holds the device until aclrtResetDevice)")
			Expect(drv.binds).To(HaveLen(1))
		})
	}
})
