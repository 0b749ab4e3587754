package probes_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
)

var _ = Describe("faults", func() {
	DescribeTable("ParseFault reads KIND@N",
		func(text string, kind device.FaultKind, at int) {
			f, err := probes.ParseFault(text)
			Expect(err).NotTo(HaveOccurred())
			Expect(f).To(Equal(probes.Fault{Kind: kind, At: at}))
			Expect(f.String()).To(Equal(text))
			Expect(f.Replay()).To(Equal(kind != device.FaultAllocFail))
		},
		Entry(nil, "alloc-fail@1", device.FaultAllocFail, 1),
		Entry(nil, "launch-fail@3", device.FaultLaunchFail, 3),
		Entry(nil, "device-lost@2", device.FaultDeviceLost, 2),
		Entry(nil, "hang@1000000", device.FaultHang, 1000000),
	)

	DescribeTable("ParseFault refuses what is not KIND@N",
		func(text, says string) {
			_, err := probes.ParseFault(text)
			Expect(err).To(MatchError(ContainSubstring(says)))
		},
		Entry(nil, "oom@1", `unknown fault kind "oom"`),
		Entry(nil, "hang", "want hang@K, K the replay round"),
		Entry(nil, "hang@0", `K must be an integer from 1 to 1000000 (the replay round), not "0"`),
		Entry(nil, "alloc-fail@-2", `N must be an integer from 1 to 1000000 (the allocation's number), not "-2"`),
		Entry(nil, "alloc-fail@1000001", "from 1 to 1000000"),
		Entry(nil, "launch-fail@two", `not "two"`),
		Entry("a leading 0", "hang@02", `not "02": K is written decimal without a leading 0, or 0x hex (a leading 0 is not allowed`),
		Entry("a sign", "hang@+2", `not "+2": K is written decimal without a leading 0, or 0x hex`),
		Entry("above the bound in hex", "hang@0xF4241", `from 1 to 1000000 (the replay round), not "0xF4241"`),
	)

	It("reads N as every number but a size is written: decimal or 0x hex", func() {
		Expect(probes.ParseFault("hang@0x10")).To(Equal(probes.Fault{Kind: device.FaultHang, At: 16}))
	})

	It("are read from a probe's faults list, in order, with their positions", func() {
		set, err := probes.Parse("f.yaml", []byte(`version: replaycheck/v1
set: s
probes:
  - name: p
    hazard: none
    streams: [main]
    buffers: {a: {bytes: 64}}
    capture: {ops: [fill: {dst: a, value: 1}]}
    expect: {guarded: exact}
    replays: 2
    faults: [alloc-fail@2, hang@2, launch-fail@1]
`), probes.DefaultLimits())
		Expect(err).NotTo(HaveOccurred())
		p := set.Probes[0]
		Expect(p.Faults).To(Equal([]probes.Fault{
			{Pos: probes.Pos{File: "f.yaml", Line: 11, Col: 14}, Kind: device.FaultAllocFail, At: 2},
			{Pos: probes.Pos{File: "f.yaml", Line: 11, Col: 28}, Kind: device.FaultHang, At: 2},
			{Pos: probes.Pos{File: "f.yaml", Line: 11, Col: 36}, Kind: device.FaultLaunchFail, At: 1},
		}))
	})
})
