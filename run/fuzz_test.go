package run_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/run"
)

// writeJournal writes runs into a new journal in dir the way a run does: Create, then Start with
// each header and Result with each of its entries.
func writeJournal(dir string, runs []*run.JournalRun) error {
	j, err := run.Create(dir)
	if err != nil {
		return err
	}
	for _, r := range runs {
		if err := j.Start(r.Header); err != nil {
			j.Close()
			return err
		}
		for _, e := range r.Entries {
			if err := j.Result(e); err != nil {
				j.Close()
				return err
			}
		}
	}
	return j.Close()
}

// journalRoundTrips reads data as a journal file in dir; when the reader accepts it, write (the
// writer under test) must write a journal that reads back to the same runs, compared in their JSON
// form (the journal's own). Start makes the header's paths absolute, so the runs read first are
// expected with theirs made absolute. A refusal is fine: the reader only must not panic.
func journalRoundTrips(dir string, data []byte, write func(string, []*run.JournalRun) error) error {
	in := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(in, data, 0o644); err != nil {
		return err
	}
	j, err := run.ReadJournalFile(in)
	if err != nil {
		return nil
	}
	for _, r := range j.Runs {
		r.Header.Config.Paths = slices.Clone(r.Header.Config.Paths)
		for i, p := range r.Header.Config.Paths {
			if abs, err := filepath.Abs(p); err == nil {
				r.Header.Config.Paths[i] = abs
			}
		}
	}
	want, err := json.Marshal(j.Runs)
	if err != nil {
		return fmt.Errorf("the runs read back do not marshal: %v", err)
	}
	out := filepath.Join(dir, "out")
	if err := write(out, j.Runs); err != nil {
		return fmt.Errorf("writing an accepted journal: %v", err)
	}
	back, err := run.ReadJournal(out)
	if err != nil {
		return fmt.Errorf("reading back what was written: %v", err)
	}
	got, err := json.Marshal(back.Runs)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("read back\n%s\nwrote\n%s", got, want)
	}
	return nil
}

// FuzzJournal: no input makes the journal reader panic, and whatever it accepts the journal's
// writer writes back faithfully. Seeds: testdata/fuzz/FuzzJournal/ (real journals of one and of
// two runs, and a torn one) and these.
func FuzzJournal(f *testing.F) {
	header := `{"journal":"replaycheck-journal/v1","tool":"replaycheck","version":"dev","run_id":"r","started":"2026-01-02T03:04:05+01:00","backend":"sim","platform":"sim/cann","device":"d","runtime":"builtin","config":{"backend":"sim","timeout_ns":1,"paths":["specs","../x"]},"instances":["a/b@global/guards-off"]}`
	for _, seed := range []string{
		header + "\n",
		header + "\n" + `{"id":"a/b@global/guards-off","probe":"a/b","mode":"global","outcome":"exact","verdict":{"status":"pass"}}` + "\n",
		header + "\n" + `{"id":"a/b@global/guards-off","outcome":"exa`, // torn
		`{"journal":"replaycheck-journal/v0"}` + "\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := journalRoundTrips(t.TempDir(), data, writeJournal); err != nil {
			t.Fatal(err)
		}
	})
}

// corpusInput reads the []byte input of a seed file of a one-argument fuzz target.
func corpusInput(file string) []byte {
	data, err := os.ReadFile(file)
	Expect(err).NotTo(HaveOccurred())
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	Expect(lines).To(HaveLen(2))
	Expect(lines[0]).To(Equal("go test fuzz v1"))
	lit, ok := strings.CutPrefix(lines[1], "[]byte(")
	Expect(ok).To(BeTrue())
	s, err := strconv.Unquote(strings.TrimSuffix(lit, ")"))
	Expect(err).NotTo(HaveOccurred())
	return []byte(s)
}

var _ = Describe("the journal fuzz property (negative controls)", func() {
	It("holds for the journal's writer on the seed journals, and fails for a writer that loses an entry or a run", func() {
		files, err := filepath.Glob("testdata/fuzz/FuzzJournal/*")
		Expect(err).NotTo(HaveOccurred())
		Expect(files).NotTo(BeEmpty())
		losesLastEntry := func(dir string, runs []*run.JournalRun) error {
			last := *runs[len(runs)-1]
			last.Entries = last.Entries[:max(0, len(last.Entries)-1)]
			return writeJournal(dir, append(runs[:len(runs)-1:len(runs)-1], &last))
		}
		losesFirstRun := func(dir string, runs []*run.JournalRun) error {
			if len(runs) == 1 {
				return losesLastEntry(dir, runs)
			}
			return writeJournal(dir, runs[1:])
		}
		for _, file := range files {
			data := corpusInput(file)
			Expect(journalRoundTrips(GinkgoT().TempDir(), data, writeJournal)).To(Succeed(), file)
			Expect(journalRoundTrips(GinkgoT().TempDir(), data, losesLastEntry)).To(MatchError(ContainSubstring("read back")), file)
			Expect(journalRoundTrips(GinkgoT().TempDir(), data, losesFirstRun)).To(MatchError(ContainSubstring("read back")), file)
		}
	})
})
