package probes_test

import (
	"bytes"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/probes"
)

// stagesAll drives the oracle through a probe's stages in order, as the engine does: eager work
// applied once, each capture recorded and ended, everything taking effect.
func stagesAll(o *probes.Oracle, p *probes.Probe) {
	for _, st := range p.Stages() {
		if st.Capture != nil {
			captureAll(o, st.Capture)
		} else {
			eagerAll(o, st.Ops)
		}
	}
}

// The oracle on a phases list: bytes worked out by hand, as in oracle_test.go.
var _ = Describe("the oracle on phases", func() {
	// kv is 16 bytes of iota8 at first; the small graph writes its first 4 bytes, the eager entry
	// grows it to 32 bytes (re-created with its init), and the big graph copies all of it.
	const grown = `
		buffers:
		  entries: {bytes: 4, init: "fill:0x5a"}
		  kv: {bytes: 16, init: iota8}
		  attn: {bytes: 32}
		phases:
		  - capture: {name: small, ops: [copy: {dst: kv, src: entries}]}
		  - eager: [grow: {buffer: kv, bytes: 32}]
		  - capture: {name: big, ops: [copy: {dst: attn, src: kv}]}
	`
	iota := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i)
		}
		return b
	}

	It("applies an eager entry between the captures once, and each graph to the buffers its names have at launch", func() {
		p := oracleProbe(grown)
		o := probes.NewOracle(p)
		stagesAll(o, p)
		// Captured, not applied: kv is the grown iota, attn untouched.
		Expect(contents(o, "kv")).To(Equal(iota(32)))
		Expect(contents(o, "attn")).To(Equal(make([]byte, 32)))
		o.Launch("small", true)
		o.Launch("big", true)
		// small writes 4 bytes of 0x5a into the grown kv, its range as resolved at its capture
		// (4 bytes); big copies the whole 32 bytes, its range resolved after the grow.
		want := append(bytes.Repeat([]byte{0x5a}, 4), iota(32)[4:]...)
		Expect(contents(o, "kv")).To(Equal(want))
		Expect(contents(o, "attn")).To(Equal(want))
	})

	It("resolves the big graph before the grow when the grow comes after both captures (negative control)", func() {
		p := oracleProbe(`
			buffers:
			  entries: {bytes: 4, init: "fill:0x5a"}
			  kv: {bytes: 16, init: iota8}
			  attn: {bytes: 32}
			captures:
			  - {name: small, ops: [copy: {dst: kv, src: entries}]}
			  - {name: big, ops: [copy: {dst: attn, src: kv}]}
			between: [grow: {buffer: kv, bytes: 32}]
		`)
		o := probes.NewOracle(p)
		stagesAll(o, p)
		o.Launch("small", true)
		o.Launch("big", true)
		// big's copy was resolved at 16 bytes: the rest of attn stays zero.
		kv := append(bytes.Repeat([]byte{0x5a}, 4), iota(32)[4:]...)
		Expect(contents(o, "kv")).To(Equal(kv))
		Expect(contents(o, "attn")).To(Equal(append(kv[:16:16], make([]byte, 16)...)))
	})

	It("skips a capture's ops sized for a grow that did not take", func() {
		// A refused grow (took false) leaves kv at 16 bytes: the big graph resolves at 16.
		p := oracleProbe(grown)
		o := probes.NewOracle(p)
		for _, st := range p.Stages() {
			if st.Capture != nil {
				captureAll(o, st.Capture)
				continue
			}
			for _, op := range st.Ops {
				o.Eager(op, false)
			}
		}
		o.Launch("small", true)
		o.Launch("big", true)
		want := append(bytes.Repeat([]byte{0x5a}, 4), iota(16)[4:]...)
		Expect(contents(o, "kv")).To(Equal(want))
		Expect(contents(o, "attn")).To(Equal(append(want, make([]byte, 16)...)))
	})
})
