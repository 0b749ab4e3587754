package watch_test

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/watch"
)

// expectation is what a recorded stream's header says the checker must find:
//
//	# expect: kind,kind...     the distinct findings' kinds, in order (empty: none)
//	# detail N: text           finding N's detail contains text
//	# count N: C               finding N was met C times
//	# refused N / # possible N finding N is refused / possible
//	# pid N: P                 finding N is in pid P
type expectation struct {
	kinds    []watch.Kind
	details  map[int]string
	counts   map[int]int
	refused  map[int]bool
	possible map[int]bool
	pids     map[int]int
}

// directive is a header line: a word, a finding's number (not for expect), then ":" and a value.
var directive = regexp.MustCompile(`^# (expect|detail|count|refused|possible|pid) ?([0-9]+)?(?::(.*)|$)`)

func readExpectation(path string) expectation {
	GinkgoHelper()
	data, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	x := expectation{details: map[int]string{}, counts: map[int]int{}, refused: map[int]bool{},
		possible: map[int]bool{}, pids: map[int]int{}}
	found := false
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		line := sc.Text()
		m := directive.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		word, rest := m[1], strings.TrimSpace(m[3])
		n, _ := strconv.Atoi(m[2])
		if (word == "expect") != (m[2] == "") {
			Fail(path + ": malformed directive " + strconv.Quote(line))
		}
		number := func() int {
			GinkgoHelper()
			v, err := strconv.Atoi(rest)
			Expect(err).NotTo(HaveOccurred(), "%s: %q", path, line)
			return v
		}
		switch word {
		case "expect":
			found = true
			for k := range strings.SplitSeq(rest, ",") {
				if k != "" {
					Expect(watch.Kinds).To(ContainElement(watch.Kind(k)), "%s: %q", path, line)
					x.kinds = append(x.kinds, watch.Kind(k))
				}
			}
		case "detail":
			x.details[n] = rest
		case "count":
			x.counts[n] = number()
		case "refused":
			x.refused[n] = true
		case "possible":
			x.possible[n] = true
		case "pid":
			x.pids[n] = number()
		}
	}
	Expect(found).To(BeTrue(), "%s has no # expect: line", path)
	return x
}

// checkStream runs a recorded stream through a Checker and returns the summary and the findings
// Add returned, in order.
func checkStream(path string, opt watch.Options) (watch.Summary, []watch.Finding) {
	GinkgoHelper()
	f, err := os.Open(path)
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	c := watch.NewChecker(opt)
	var live []watch.Finding
	Expect(watch.ReadEvents(f, path, func(e watch.Event) error {
		live = append(live, c.Add(e)...)
		return nil
	})).To(Succeed())
	return c.Result(), live
}

func kindsOf(fs []watch.Finding) []watch.Kind {
	out := []watch.Kind{}
	for _, f := range fs {
		out = append(out, f.Kind)
	}
	return out
}

func stackRoles(f watch.Finding) []string {
	var roles []string
	for _, s := range f.Stacks {
		roles = append(roles, s.Role)
	}
	return roles
}

var streams, _ = filepath.Glob("testdata/events/*.events")

var _ = Describe("recorded event streams", func() {
	It("cover every kind of finding and a clean stream of each shape", func() {
		seen := map[watch.Kind]bool{}
		clean := 0
		for _, path := range streams {
			x := readExpectation(path)
			for _, k := range x.kinds {
				seen[k] = true
			}
			if len(x.kinds) == 0 {
				clean++
			}
		}
		for _, k := range watch.Kinds {
			Expect(seen).To(HaveKey(k))
		}
		Expect(clean).To(BeNumerically(">=", 4))
	})

	for _, path := range streams {
		It(filepath.Base(path), func() {
			x := readExpectation(path)
			sum, live := checkStream(path, watch.Options{})
			Expect(kindsOf(sum.Findings)).To(Equal(append([]watch.Kind{}, x.kinds...)))
			// Add returns each distinct site once, when it is first met.
			Expect(kindsOf(live)).To(Equal(kindsOf(sum.Findings)))
			Expect(sum.Disagreements).To(BeEmpty(), "the interposer's stale= verdicts agree with the checker's")
			for i, f := range sum.Findings {
				n := i + 1
				Expect(f.Detail).NotTo(BeEmpty())
				Expect(f.Graph).NotTo(BeNil())
				Expect(f.Graph.PID).To(Equal(f.PID))
				Expect(f.Graph.Capture).To(BeNumerically(">", 0))
				Expect(f.Graph.Handle).NotTo(BeEmpty(), "finding %d: the graph's handle, filled at the capture's end", n)
				Expect(f.Range).NotTo(BeNil())
				Expect(f.Stacks).NotTo(BeEmpty())
				Expect(f.Stacks[0].Role).To(Equal("finding"), "the finding's own stack comes first")
				Expect(f.Count).To(BeNumerically(">=", 1))
				switch f.Kind {
				case watch.StaleReplay, watch.FreeCaptured, watch.OffCaptureWork, watch.SharedConcurrent:
					Expect(f.Captured).NotTo(BeNil())
					Expect(f.AtCapture).NotTo(BeNil())
					Expect(stackRoles(f)).To(ContainElement("captured"))
				}
				if f.Kind == watch.StaleReplay {
					Expect(f.AtCapture.Freed).To(BeTrue())
					Expect(stackRoles(f)).To(ContainElements("at-capture", "freed"))
					Expect(f.Graph.Exec).NotTo(BeEmpty())
					Expect(f.Graph.LaunchStream).NotTo(BeEmpty())
				}
				if f.Kind == watch.SharedConcurrent {
					Expect(f.Other).NotTo(BeNil())
				}
				if d, ok := x.details[n]; ok {
					Expect(f.Detail).To(ContainSubstring(d), "finding %d", n)
				}
				if c, ok := x.counts[n]; ok {
					Expect(f.Count).To(Equal(c), "finding %d", n)
				}
				Expect(f.Refused).To(Equal(x.refused[n]), "finding %d refused", n)
				Expect(f.Possible).To(Equal(x.possible[n]), "finding %d possible", n)
				if p, ok := x.pids[n]; ok {
					Expect(f.PID).To(Equal(p), "finding %d", n)
				}
			}
			for n := range x.details {
				Expect(n).To(BeNumerically("<=", len(sum.Findings)), "a detail for a finding that is not there")
			}
		})
	}
})

var _ = Describe("connections", func() {
	It("keep a forked image apart from the image it exec'd, whichever hello comes first", func() {
		path := filepath.Join("testdata", "events", "fork-exec-late-hello.events")
		sum, _ := checkStream(path, watch.Options{})
		Expect(sum.Findings).To(BeEmpty())
		Expect(sum.Processes).To(HaveLen(3))
		Expect(sum.Processes[1].Forked).To(BeTrue())
		Expect(sum.Processes[2].Exec).To(BeTrue())

		// The control: the same stream without conn= is one model for both images, and the
		// capture the forked image began is active when the exec'd image allocates.
		data, err := os.ReadFile(path)
		Expect(err).NotTo(HaveOccurred())
		stripped := regexp.MustCompile(` conn=\d+`).ReplaceAll(data, nil)
		c := watch.NewChecker(watch.Options{})
		Expect(watch.ReadEvents(bytes.NewReader(stripped), "stripped", func(e watch.Event) error {
			c.Add(e)
			return nil
		})).To(Succeed())
		Expect(kindsOf(c.Result().Findings)).To(Equal([]watch.Kind{watch.AllocInCapture}))
	})
})

var _ = Describe("an allocation in a capture that never ends", func() {
	It("is reported at the end of the stream when it served no private pool", func() {
		data, err := os.ReadFile(filepath.Join("testdata", "events", "segment-unused.events"))
		Expect(err).NotTo(HaveOccurred())
		cut, _, _ := bytes.Cut(data, []byte("op pid=")) // the program died inside the capture
		c := watch.NewChecker(watch.Options{})
		var live []watch.Finding
		Expect(watch.ReadEvents(bytes.NewReader(cut), "cut", func(e watch.Event) error {
			live = append(live, c.Add(e)...)
			return nil
		})).To(Succeed())
		Expect(live).To(BeEmpty(), "undecided while the capture may still give the segment a private block")
		Expect(kindsOf(c.Result().Findings)).To(Equal([]watch.Kind{watch.AllocInCapture}))
	})
})
