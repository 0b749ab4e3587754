package interpose_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func aclProg(way string) string {
	if way == "linked" {
		return built.aclLinked
	}
	return built.aclDl
}

func aclRun(env []string, way, scenario string) result {
	return run(opts{driverDir: built.acl, preload: true, env: env}, aclProg(way), way, scenario)
}

var _ = Describe("the ACL interposer", func() {
	for _, way := range []string{"linked", "dlsym"} {
		It("sees a program that reaches libascendcl through "+way, func() {
			r := aclRun(nil, way, "basic")
			Expect(r.code).To(Equal(0), r.out)
			a, b, s, ri := hex(r.value("a")), hex(r.value("b")), hex(r.value("stream")), hex(r.value("ri"))
			Expect(r.names()).To(Equal([]string{"hello", "alloc", "alloc", "begin", "op", "op", "end", "instantiate",
				"launch", "free", "launch", "destroy-exec", "destroy-graph", "free"}))
			stacksSound(r)
			Expect(r.named("alloc")[0].get("call")).To(Equal("aclrtMalloc"))
			Expect(r.named("alloc")[0].get("addr")).To(Equal(a))
			Expect(r.named("begin")[0].get("stream")).To(Equal(s))
			Expect(r.named("op")[0].get("call")).To(Equal("aclrtMemsetAsync"))
			Expect(r.named("op")[0].get("w")).To(Equal(a + "+4096"))
			Expect(r.named("op")[1].get("w")).To(Equal(b + "+4096"))
			Expect(r.named("op")[1].get("r")).To(Equal(a + "+4096"))
			Expect(r.named("end")[0].get("graph")).To(Equal(ri))
			inst := r.named("instantiate")[0]
			Expect(inst.get("graph")).To(Equal(ri))
			Expect(inst.get("exec")).To(Equal(ri), "the model RI is the executable graph too")
			Expect(inst.get("call")).To(Equal("aclmdlRICaptureEnd"))
			l := r.named("launch")
			Expect(l[0].get("call")).To(Equal("aclmdlRIExecuteAsync"))
			Expect(l[0].get("stale")).To(Equal("0"))
			Expect(l[1].get("stale")).To(Equal("1"))
			Expect(r.value("stale_launch")).To(Equal("507011"), "the fake answers the replay over freed memory itself")
			Expect(r.named("destroy-exec")[0].get("exec")).To(Equal(ri))
			Expect(r.named("destroy-graph")[0].get("graph")).To(Equal(ri))
		})
	}

	It("refuses a stale execution with ACL_ERROR_INVALID_PARAM under RC_WATCH_REFUSE=1", func() {
		r := aclRun(nil, "dlsym", "refuse")
		Expect(r.code).To(Equal(0), r.out)
		Expect(r.value("launch")).To(Equal("0"))
		Expect(r.value("bystander_byte")).To(Equal("aa"))
		r = aclRun([]string{"RC_WATCH_REFUSE=1"}, "dlsym", "refuse")
		Expect(r.code).To(Equal(0), r.out)
		Expect(r.value("launch")).To(Equal("100000"))
		Expect(r.value("bystander_byte")).To(Equal("11"))
		Expect(r.named("launch")[0].get("refused")).To(Equal("1"))
	})

	It("follows a forked stream, allocations in the capture, host memory and the mode", func() {
		r := aclRun(nil, "linked", "join")
		Expect(r.code).To(Equal(0), r.out)
		Expect(r.names()).To(Equal([]string{"hello", "mode", "alloc", "begin", "alloc", "join", "op", "free", "end",
			"instantiate", "alloc", "free"}))
		Expect(r.named("mode")[0].get("mode")).To(Equal("relaxed"))
		Expect(r.named("join")[0].get("stream")).To(Equal(hex(r.value("s2"))))
		Expect(r.named("join")[0].get("event")).To(Equal(hex(r.value("e1"))))
		Expect(r.named("op")[0].get("capture")).To(Equal("1"))
		Expect(r.named("alloc")[2].get("kind")).To(Equal("host"))
		Expect(r.named("alloc")[2].get("call")).To(Equal("aclrtMallocHost"))
	})

	It("scans a kernel's host argument block, and never reads one in device memory", func() {
		r := aclRun(nil, "dlsym", "kernel")
		Expect(r.code).To(Equal(0), r.out)
		Expect(r.out).NotTo(ContainSubstring("nokernel"))
		a := hex(r.value("a"))
		ops := r.named("op")
		Expect(ops).To(HaveLen(2))
		Expect(ops[0].get("call")).To(Equal("aclrtLaunchKernel"))
		Expect(ops[0].get("func")).To(Equal(hex(r.value("func"))))
		Expect(ops[0].fields["arg"]).To(Equal([]string{"0:0:" + a, "0:8:" + hex("0x"+addHex(a, 16))}))
		Expect(ops[1].get("nolayout")).To(Equal("1"))
		Expect(ops[1].fields).NotTo(HaveKey("arg"))
		Expect(r.named("note")).To(HaveLen(1))
		Expect(ops[1].get("r")).To(Equal(hex(r.value("args_dev"))+"+24"), "the device block is a range the graph reads")
	})

	for _, way := range []string{"linked", "dlsym"} {
		It("sees aclrtLaunchKernelV2, WithHostArgs and WithConfig's argument lists reached through "+way, func() {
			r := aclRun(nil, way, "launches")
			Expect(r.code).To(Equal(0), r.out)
			a, b, dev := hex(r.value("a")), hex(r.value("b")), hex(r.value("args_dev"))
			args := func(y string) []string { return []string{"0:0:" + y, "0:8:" + hex("0x"+addHex(y, 16))} }
			ops := r.named("op")
			Expect(ops).To(HaveLen(5), "one op per launch in the capture, none for the eager one")
			for _, op := range ops {
				Expect(op.get("what")).To(Equal("kernel"))
				Expect(op.get("func")).To(Equal(hex(r.value("func"))))
				Expect(op.get("capture")).To(Equal("1"))
			}
			Expect(ops[0].get("call")).To(Equal("aclrtLaunchKernelV2"))
			Expect(ops[0].fields["arg"]).To(Equal(args(a)))
			Expect(ops[0].fields).NotTo(HaveKey("r"))
			Expect(ops[1].get("call")).To(Equal("aclrtLaunchKernelV2"))
			Expect(ops[1].get("nolayout")).To(Equal("1"))
			Expect(ops[1].fields).NotTo(HaveKey("arg"))
			Expect(ops[1].get("r")).To(Equal(dev + "+24"))
			Expect(ops[2].get("call")).To(Equal("aclrtLaunchKernelWithHostArgs"))
			Expect(ops[2].fields["arg"]).To(Equal(args(a)), "c, past argsSize, is never read")
			Expect(ops[3].get("call")).To(Equal("aclrtLaunchKernelWithConfig"))
			Expect(ops[3].fields["arg"]).To(Equal(args(b)), "each list holds what was appended to it")
			Expect(ops[4].get("call")).To(Equal("aclrtLaunchKernelWithConfig"))
			Expect(ops[4].fields["arg"]).To(Equal(args(a)))
			notes := r.named("note")
			Expect(notes).To(HaveLen(1))
			Expect(notes[0].get("text")).To(HavePrefix("aclrtLaunchKernelV2:"))
		})
	}
})
