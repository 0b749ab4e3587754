package watch_test

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/watch"
)

// finding is a finding of kind whose own stack is frames ("function@object" each).
func finding(kind watch.Kind, frames ...[2]string) watch.Finding {
	var fs []watch.Frame
	for _, f := range frames {
		fs = append(fs, watch.Frame{Function: f[0], Object: f[1]})
	}
	return watch.Finding{Kind: kind, Stacks: []watch.Stack{{Role: "captured", Frames: []watch.Frame{{Function: "warmup"}}}, {Role: "finding", Frames: fs}}}
}

var _ = Describe("Suppressions", func() {
	stack := []([2]string){
		{"", "/usr/lib/libcudart.so.12"},
		{"warmup_model", "/opt/app/libfoo.so"},
		{"run_step", "/opt/app/libfoo.so"},
		{"main", "/opt/app/bin/app"},
	}
	parse := func(text string) *watch.Suppressions {
		GinkgoHelper()
		s, err := watch.ParseSuppressions("s.supp", []byte(text))
		Expect(err).NotTo(HaveOccurred())
		return s
	}

	DescribeTable("match the finding's own stack from its innermost frame",
		func(text string, kind watch.Kind, match bool) {
			got := parse(text).Match(finding(kind, stack...))
			if match {
				Expect(got).NotTo(BeNil())
				Expect(got.Name).To(Equal("s"))
			} else {
				Expect(got).To(BeNil())
			}
		},
		Entry("kind only", "{\ns\nwatch:alloc-in-capture\n}", watch.AllocInCapture, true),
		Entry("another kind", "{\ns\nwatch:alloc-in-capture\n}", watch.FreeInCapture, false),
		Entry("any kind", "{\ns\nwatch:*\n}", watch.SharedConcurrent, true),
		Entry("a prefix of the frames", "{\ns\nwatch:*\nobj:*/libcudart.so*\nfun:warmup_*\n}", watch.StaleReplay, true),
		Entry("frames not from the innermost", "{\ns\nwatch:*\nfun:warmup_*\n}", watch.StaleReplay, false),
		Entry("... then a frame", "{\ns\nwatch:*\n...\nfun:run_step\n}", watch.StaleReplay, true),
		Entry("... between frames", "{\ns\nwatch:*\nobj:*cudart*\n...\nfun:main\n}", watch.StaleReplay, true),
		Entry("... at the end", "{\ns\nwatch:*\nobj:*cudart*\n...\n}", watch.StaleReplay, true),
		Entry("a frame past the stack", "{\ns\nwatch:*\n...\nfun:main\nfun:*\n}", watch.StaleReplay, false),
		Entry("? for one character", "{\ns\nwatch:*\n...\nfun:ma?n\n}", watch.StaleReplay, true),
		Entry("? is exactly one", "{\ns\nwatch:*\n...\nfun:mai?n\n}", watch.StaleReplay, false),
		Entry("a glob that must match all", "{\ns\nwatch:*\nobj:libcudart\n}", watch.StaleReplay, false),
		Entry("* across /", "{\ns\nwatch:*\nobj:*\nobj:/opt*so\n}", watch.StaleReplay, true),
		Entry("not the captured stack", "{\ns\nwatch:*\nfun:warmup\n}", watch.StaleReplay, false),
	)

	It("returns the first that matches, and nil for none", func() {
		s := parse("# two\n{\nfirst\nwatch:stale-replay\n}\n\n{\nsecond\nwatch:*\n}\n")
		Expect(s.Match(finding(watch.StaleReplay)).Name).To(Equal("first"))
		Expect(s.Match(finding(watch.FreeCaptured)).Name).To(Equal("second"))
		Expect(parse("").Match(finding(watch.FreeCaptured))).To(BeNil())
		var none *watch.Suppressions
		Expect(none.Match(finding(watch.FreeCaptured))).To(BeNil())
	})

	DescribeTable("reject a bad file, naming file:line and the rule",
		func(text, want string) {
			_, err := watch.ParseSuppressions("my.supp", []byte(text))
			Expect(err).To(MatchError(ContainSubstring(want)))
		},
		Entry("text outside", "fun:main\n", `my.supp:1: "fun:main" outside a suppression`),
		Entry("no name", "{\nwatch:*\n}\n", `my.supp:2: "watch:*" where the suppression's name was expected`),
		Entry("no kind", "{\nname\nfun:main\n}\n", `my.supp:3: "fun:main" where the kind was expected: watch:<kind>`),
		Entry("another tool's kind", "{\nname\nMemcheck:Leak\n}\n", "my.supp:3:"),
		Entry("an unknown kind", "# c\n{\nname\nwatch:stale\n}\n", `my.supp:4: unknown kind "stale"`),
		Entry("a bad frame line", "{\nname\nwatch:*\nsrc:a.c\n}\n", `my.supp:4: "src:a.c" is not a frame line`),
		Entry("not closed", "{\nname\nwatch:*\nfun:x\n", "suppression opened at line 1 is not closed"),
	)

	It("loads a file and says which file it could not read", func() {
		path := filepath.Join(GinkgoT().TempDir(), "w.supp")
		Expect(os.WriteFile(path, []byte("{\n  n\n  watch:free-captured\n}\n"), 0o644)).To(Succeed())
		s, err := watch.LoadSuppressions(path)
		Expect(err).NotTo(HaveOccurred())
		Expect(s.List).To(HaveLen(1))
		Expect(*s.List[0]).To(Equal(watch.Suppression{Name: "n", Kind: "free-captured", File: path, Line: 1}))
		_, err = watch.LoadSuppressions(path + ".missing")
		Expect(err).To(MatchError(ContainSubstring("w.supp.missing")))
	})
})
