//go:build cgo

package plugin_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/runtime"
	"github.com/replaycheck/replaycheck/runtime/plugin"
)

// The rule behind a refusal (rc_runtime.refusal_rule, ABI version 4): the passthrough refuses
// malloc (RC_TEST_REFUSE) and names RC_TEST_RULE for it.
var _ = Describe("the rule that refused", func() {
	refusedMalloc := func(p *plugin.Plugin) (error, device.Counters, device.Counters) {
		GinkgoHelper()
		dev := openSim("cann")
		rt, err := p.Open(dev, true)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(rt.Close)
		before := dev.Counters()
		_, err = rt.Malloc(device.Main, 64)
		return err, before, dev.Counters()
	}
	loadWith := func(rule string, defs ...string) *plugin.Plugin {
		GinkgoHelper()
		setenv("RC_TEST_REFUSE", "malloc:no allocation here")
		setenv("RC_TEST_RULE", rule)
		p, err := plugin.Load(build("ruled", defs...))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(p.Close)
		return p
	}

	It("names the rule a version 4 plugin gives, on the refusal it made", func() {
		p := loadWith("my-rule-2")
		Expect(p.Version()).To(BeEquivalentTo(4))
		err, _, _ := refusedMalloc(p)
		Expect(device.IsRefusal(err)).To(BeTrue(), "%v", err)
		Expect(runtime.RefusedBy(err)).To(Equal("my-rule-2"))
		e, _ := device.AsError(err)
		Expect(e.Detail).To(Equal("no allocation here"))
		Expect(err.Error()).To(Equal(e.Error()), "the refusal's text is the plugin's, unchanged")
	})

	DescribeTable("names no rule when the plugin names none",
		func(rule string) {
			err, _, _ := refusedMalloc(loadWith(rule))
			Expect(device.IsRefusal(err)).To(BeTrue(), "%v", err)
			Expect(runtime.RefusedBy(err)).To(BeEmpty())
		},
		Entry("an empty name", ""),
		Entry("NULL", "-"),
	)

	It("loads an older plugin as before: a version 3 plugin's refusal_rule is never read, and its refusals name no rule", func() {
		for _, v := range []string{"3", "2", "1"} {
			p := loadWith("my-rule", "-DRC_TEST_ABI="+v)
			Expect(p.Version()).To(BeEquivalentTo(v[0]-'0'), v)
			err, _, _ := refusedMalloc(p)
			Expect(device.IsRefusal(err)).To(BeTrue(), "%s: %v", v, err)
			Expect(runtime.RefusedBy(err)).To(BeEmpty(), "version %s: the table ends before refusal_rule, whatever lies past it", v)
		}
	})

	DescribeTable("fails the refused call as the runtime's error when the name breaks the ABI",
		func(rule, says string) {
			p := loadWith(rule)
			err, _, _ := refusedMalloc(p)
			e, ok := device.AsError(err)
			Expect(ok).To(BeTrue(), "%v", err)
			Expect(e.Class).To(Equal(device.ClassInternal))
			Expect(e.Backend).To(Equal("runtime:ruled"))
			Expect(e.Detail).To(HavePrefix(p.Path() + ": refusal_rule named "))
			Expect(e.Detail).To(ContainSubstring(says))
			Expect(e.Detail).To(HaveSuffix("(runtime.h: rc_runtime.refusal_rule)"))
			Expect(runtime.RefusedBy(err)).To(BeEmpty())
		},
		Entry("upper case and a space", "Bad Rule", `the rule "Bad Rule" for the refusal of device.malloc_`),
		Entry("a leading '-'", "-x", `the rule "-x"`),
		Entry("a control character", `a\x1bb`, `the rule "a\x1bb"`),
		Entry("64 bytes", strings.Repeat("r", 64), `a rule of more than 63 bytes ("`+strings.Repeat("r", 63)+`"...)`),
	)

	It("accepts a name of 63 bytes", func() {
		err, _, _ := refusedMalloc(loadWith(strings.Repeat("r", 63)))
		Expect(runtime.RefusedBy(err)).To(Equal(strings.Repeat("r", 63)))
	})

	It("fails the refused call, and makes no inner call, when refusal_rule makes one", func() {
		setenv("RC_TEST_QUERY_CALLS", "refusal_rule")
		err, before, after := refusedMalloc(loadWith("my-rule"))
		e, ok := device.AsError(err)
		Expect(ok).To(BeTrue(), "%v", err)
		Expect(e.Class).To(Equal(device.ClassInternal))
		Expect(e.Op).To(Equal("RefusalRule"))
		Expect(e.Detail).To(ContainSubstring("refusal_rule made a device call (the inner device's malloc_)"))
		Expect(after).To(Equal(before), "the inner malloc was not made")
	})
})
