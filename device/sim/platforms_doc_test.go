package sim_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/device/sim"
)

var updateDocs = flag.Bool("update", false, "rewrite the generated part of docs/platforms.md from the profiles")

const (
	docBegin = "<!-- BEGIN: generated from device/sim/profiles by `go test ./device/sim -update`; do not edit -->"
	docEnd   = "<!-- END: generated -->"
)

// platformTables renders every profile's rules as Markdown, one table per profile, in file order.
func platformTables() string {
	var b strings.Builder
	for _, name := range sim.Profiles() {
		p, err := sim.LoadProfile(name)
		Expect(err).NotTo(HaveOccurred())
		fmt.Fprintf(&b, "\n### %s: %s\n\n", p.Name, p.Description)
		b.WriteString("| situation | calls | modes | answer | evidence |\n|---|---|---|---|---|\n")
		for _, r := range p.Rules {
			modes := "all"
			if len(r.ModeNames) > 0 {
				modes = strings.Join(r.ModeNames, ", ")
			}
			if len(r.CallerModeNames) > 0 {
				modes += "; caller in " + strings.Join(r.CallerModeNames, ", ")
			}
			if !r.FreedBytes.IsZero() {
				modes += "; freed allocation " + r.FreedBytes.String()
			}
			answer := "allowed, unchecked"
			switch {
			case r.Crash != "":
				answer = fmt.Sprintf("crashes the process (%s); the simulator ends the instance in error of kind crash, the capture over", r.Crash)
			case !r.Allow:
				answer = fmt.Sprintf("%d %s [%s]", r.Code, r.Name, r.Class)
				switch {
				case r.Invalidates && r.EndsCapture:
					// The condition names captures other than the one ended (profile validation).
					answer += ", ends the capture and invalidates the other"
				case r.Invalidates:
					answer += ", invalidates the capture"
				case r.EndsCapture:
					answer += ", ends the capture"
				}
			}
			evidence := r.Source
			if r.Note != "" {
				evidence += ": " + strings.Join(strings.Fields(r.Note), " ")
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", cell(r.Situation), strings.Join(r.Calls, ", "), modes, cell(answer), cell(evidence))
		}
	}
	return b.String()
}

func cell(s string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(s), " "), "|", "\\|")
}

// docs/platforms.md shows the users the rules the simulator runs; it is generated from the same
// data, so the two cannot drift.
var _ = Describe("docs/platforms.md", func() {
	It("holds every profile rule as the profiles state it", func() {
		path := filepath.Join("..", "..", "docs", "platforms.md")
		data, err := os.ReadFile(path)
		Expect(err).NotTo(HaveOccurred())
		text := string(data)
		begin, end := strings.Index(text, docBegin), strings.Index(text, docEnd)
		Expect(begin).To(BeNumerically(">=", 0), "no generated-section marker in %s", path)
		Expect(end).To(BeNumerically(">", begin))
		want := platformTables() + "\n"
		got := text[begin+len(docBegin) : end]
		if *updateDocs {
			var out bytes.Buffer
			out.WriteString(text[:begin+len(docBegin)])
			out.WriteString(want)
			out.WriteString(text[end:])
			Expect(os.WriteFile(path, out.Bytes(), 0o644)).To(Succeed())
			return
		}
		Expect(got).To(Equal(want), "docs/platforms.md is out of date (go test ./device/sim -update):\n%s", cmp.Diff(want, got))
	})
})
