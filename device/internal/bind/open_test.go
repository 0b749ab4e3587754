package bind_test

import (
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/internal/bind"
)

// bindOnly is a driver whose Bind fails on one thread; NewDevice calls nothing but Bind, Detail
// and Unbind (the embedded nil Driver would panic on anything else).
type bindOnly struct {
	bind.Driver
	fail    device.Thread
	mu      sync.Mutex
	binds   map[device.Thread]int
	unbinds map[device.Thread]int
}

func (d *bindOnly) Bind(t device.Thread) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if t == d.fail {
		return 7
	}
	d.binds[t]++
	return 0
}

func (d *bindOnly) Unbind(t device.Thread) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.unbinds[t]++
	return 0
}

func (d *bindOnly) Detail(int) string { return "injected" }

var _ = Describe("NewDevice", func() {
	codes := bind.Codes{Backend: "acl", Lookup: func(int) (string, device.Class) { return "", device.ClassInternal }}

	for _, failing := range []device.Thread{device.Main, device.Other} {
		It("undoes the bind that took when the other thread's fails: "+failing.String(), func() {
			drv := &bindOnly{fail: failing, binds: map[device.Thread]int{}, unbinds: map[device.Thread]int{}}
			d, err := bind.NewDevice(codes, drv, device.Capabilities{})
			Expect(d).To(BeNil())
			Expect(err).To(MatchError(ContainSubstring("binding the device on the " + failing.String() + " thread: injected")))
			Expect(drv.unbinds).To(Equal(drv.binds), "every bind that took is undone (aclrtSetDevice holds the device until aclrtResetDevice)")
			Expect(drv.binds).To(HaveLen(1))
		})
	}
})
