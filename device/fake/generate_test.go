package fake_test

import (
	"os"
	"regexp"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/fake"
	"github.com/replaycheck/replaycheck/device/sim"
)

// cEnum lists the constants of enum name in a C source, in order, without the count.
func cEnum(path, name, prefix string) []string {
	GinkgoHelper()
	data, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	body := regexp.MustCompile(`(?s)enum ` + name + ` \{(.*?)\};`).FindSubmatch(data)
	Expect(body).NotTo(BeNil(), "enum %s in %s", name, path)
	var out []string
	for _, m := range regexp.MustCompile(`\b`+prefix+`[A-Z_]+\b`).FindAllString(string(body[1]), -1) {
		if !strings.HasSuffix(m, "_COUNT") {
			out = append(out, m)
		}
	}
	return out
}

var _ = Describe("the rule generator", func() {
	It("knows exactly the simulator's conditions, in the order of the C enum", func() {
		Expect(fake.Conditions).To(Equal(sim.Conditions()), "the C core implements every simulator condition")
		var want []string
		for _, c := range fake.Conditions {
			want = append(want, fake.CondEnum(c))
		}
		Expect(cEnum("c/core.h", "rc_cond", "RC_COND_")).To(Equal(want))
		core, err := os.ReadFile("c/core.c")
		Expect(err).NotTo(HaveOccurred())
		eval := regexp.MustCompile(`(?s)\nstatic int eval\(.*?\n\}\n`).Find(core)
		Expect(eval).NotTo(BeNil(), "eval in c/core.c")
		for _, c := range want {
			Expect(string(eval)).To(ContainSubstring("\tcase "+c+":"), "the C core's eval has a case for %s", c)
		}
	})

	It("knows every call a condition is evaluated for, in the order of the C enum", func() {
		var want []string
		for _, c := range fake.Calls {
			want = append(want, fake.OpEnum(c))
		}
		Expect(cEnum("c/core.h", "rc_op", "RC_OP_")).To(Equal(want))
		for _, cond := range sim.Conditions() {
			for _, call := range sim.ConditionCalls(cond) {
				Expect(fake.Calls).To(ContainElement(call), "condition %s", cond)
			}
		}
	})

	for _, lib := range fake.Libraries {
		It("writes every rule of the "+lib.Profile()+" profile, with its condition, modes and code", func() {
			p, err := sim.LoadProfile(lib.Profile())
			Expect(err).NotTo(HaveOccurred())
			out, err := fake.Generate(lib)
			Expect(err).NotTo(HaveOccurred())
			text := string(out)
			rules := regexp.MustCompile(`(?s)/\* rule (\d+) \*/ (.*?)\},\n`).FindAllStringSubmatch(text, -1)
			Expect(rules).To(HaveLen(len(p.Rules)))
			for i, r := range p.Rules {
				row := rules[i][2]
				Expect(row).To(ContainSubstring(".cond = "+fake.CondEnum(r.When)+","), "rule %d", i+1)
				for _, c := range r.Calls {
					Expect(row).To(ContainSubstring("RC_OP_BIT("+fake.OpEnum(c)+")"), "rule %d", i+1)
				}
				Expect(row).To(ContainSubstring(".allow = %d,", b2i(r.Allow)), "rule %d", i+1)
				Expect(row).To(ContainSubstring(".code = %d,", r.Code), "rule %d", i+1)
				Expect(row).To(ContainSubstring(".invalidates = %d, .ends_capture = %d,", b2i(r.Invalidates), b2i(r.EndsCapture)), "rule %d", i+1)
				Expect(row).To(ContainSubstring(".pageable = %d,", b2i(r.Pageable)), "rule %d", i+1)
				Expect(row).To(ContainSubstring(".freed_at_least = %d, .freed_below = %d, .instantiation = %d,",
					r.FreedBytes.AtLeast, r.FreedBytes.Below, b2i(slices.Contains(fake.InstantiationConditions, r.When))), "rule %d", i+1)
				Expect(strings.Count(row, "RC_MODE_BIT")).To(Equal(len(r.Modes)+len(r.CallerModes)), "rule %d", i+1)
			}
			for class, code := range p.Errors {
				Expect(text).To(ContainSubstring(`{"%s", %d, "%s"}`, class, code.Code, code.Name))
			}
		})
	}

	It("fails, naming it, on a condition the C core does not implement", func() {
		p, err := sim.LoadProfile("cuda")
		Expect(err).NotTo(HaveOccurred())
		p.Rules[3].When = "no-such-condition"
		_, err = fake.GenerateProfile(p, fake.CUDA, fake.Conditions)
		Expect(err).To(MatchError(ContainSubstring(`condition "no-such-condition" is not implemented`)))

		p, _ = sim.LoadProfile("cann")
		fewer := slices.DeleteFunc(slices.Clone(fake.Conditions), func(c string) bool { return c == "fork-unjoined" })
		_, err = fake.GenerateProfile(p, fake.ACL, fewer)
		Expect(err).To(MatchError(ContainSubstring(`condition "fork-unjoined" is not implemented`)))
	})

	It("answers at the instantiation the EndCapture conditions on the other captures, which must come last", func() {
		for _, c := range fake.InstantiationConditions {
			Expect(sim.Conditions()).To(ContainElement(c))
			Expect(sim.ConditionCalls(c)).To(Equal([]string{"EndCapture"}), "condition %s", c)
		}
		p, err := sim.LoadProfile("cuda")
		Expect(err).NotTo(HaveOccurred())
		first := slices.IndexFunc(p.Rules, func(r sim.Rule) bool { return slices.Contains(fake.InstantiationConditions, r.When) })
		Expect(first).To(BeNumerically(">", 0), "the cuda profile has instantiation rules")
		end := slices.IndexFunc(p.Rules, func(r sim.Rule) bool { return r.When == "fork-unjoined" })
		Expect(end).To(BeNumerically(">=", 0))
		moved := p.Rules[end]
		p.Rules = slices.Insert(slices.Delete(p.Rules, end, end+1), len(p.Rules)-1, moved)
		_, err = fake.GenerateProfile(p, fake.CUDA, fake.Conditions)
		Expect(err).To(MatchError(ContainSubstring("a rejecting EndCapture rule after rule")))
	})

	It("refuses modes or invalidates on capture-fill-freed, which names no capture by the instantiation", func() {
		for _, edit := range []func(r *sim.Rule){
			func(r *sim.Rule) { r.Modes = []device.CaptureMode{device.Relaxed} },
			func(r *sim.Rule) { r.Invalidates = true },
		} {
			p, err := sim.LoadProfile("cuda")
			Expect(err).NotTo(HaveOccurred())
			i := slices.IndexFunc(p.Rules, func(r sim.Rule) bool { return r.When == "capture-fill-freed" })
			Expect(i).To(BeNumerically(">=", 0))
			_, err = fake.GenerateProfile(p, fake.CUDA, fake.Conditions)
			Expect(err).NotTo(HaveOccurred(), "as the profile has it")
			edit(&p.Rules[i])
			_, err = fake.GenerateProfile(p, fake.CUDA, fake.Conditions)
			Expect(err).To(MatchError(ContainSubstring(`condition "capture-fill-freed" takes neither modes nor invalidates`)))
		}
	})

	It("fails when one code would carry two names", func() {
		p, _ := sim.LoadProfile("cuda")
		p.Rules[len(p.Rules)-1].Name = "CUDA_ERROR_SOMETHING_ELSE" // 401 is CUDA_ERROR_ILLEGAL_STATE
		_, err := fake.GenerateProfile(p, fake.CUDA, fake.Conditions)
		Expect(err).To(MatchError(ContainSubstring("code 401")))
	})
})

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
