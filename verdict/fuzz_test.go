package verdict_test

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/verdict"
)

// baselineRoundTrips parses data as a baseline file; when the reader accepts it, write (the
// writer under test) must write a file the reader reads back to the same baseline, and writing
// that again must give the same bytes. A refusal is fine: the reader only must not panic.
func baselineRoundTrips(data []byte, write func(*verdict.Baseline, io.Writer) error) error {
	b, err := verdict.ParseBaseline("fuzz.yaml", data)
	if err != nil {
		return nil
	}
	var first bytes.Buffer
	if err := write(b, &first); err != nil {
		return fmt.Errorf("writing an accepted baseline: %v", err)
	}
	back, err := verdict.ParseBaseline("written.yaml", first.Bytes())
	if err != nil {
		return fmt.Errorf("reading back what was written: %v\n%s", err, first.Bytes())
	}
	if back.Version != b.Version || back.Platform != b.Platform || back.Description != b.Description ||
		!maps.Equal(back.Instances, b.Instances) {
		return fmt.Errorf("read back %+v, wrote %+v\n%s", *back, *b, first.Bytes())
	}
	var second bytes.Buffer
	if err := write(back, &second); err != nil {
		return fmt.Errorf("writing the baseline read back: %v", err)
	}
	if !bytes.Equal(first.Bytes(), second.Bytes()) {
		return fmt.Errorf("written twice, two files:\n%s\n---\n%s", first.Bytes(), second.Bytes())
	}
	return nil
}

// FuzzBaseline: no input makes the baseline reader panic, and whatever it accepts WriteYAML
// writes back faithfully. Seeds: the catalog's baselines, testdata/fuzz/FuzzBaseline/, and these.
func FuzzBaseline(f *testing.F) {
	for _, seed := range []string{
		"version: replaycheck-baseline/v1\nplatform: sim/cann\ninstances: {}\n",
		"version: replaycheck-baseline/v1\nplatform: sim/cuda\ndescription: \"two\\nlines\"\ninstances:\n" +
			"  basic/simple-replay@global/guards-off: {outcome: exact}\n" +
			"  basic/sync@relaxed/guards-off: {outcome: rejected, class: capture-unsupported, code: 900, invalidated: true}\n",
		"version: replaycheck-baseline/v1\nplatform: p\ninstances:\n  a/b@global/guards-on: {outcome: exact}\n",
		// Quoted strings, harmless as they are: a mutation or two inside the quotes reaches what a
		// writer must quote.
		"version: replaycheck-baseline/v1\nplatform: \"vendor x/9.0\"\ninstances:\n" +
			"  \"a b/c@global/guards-off\": {outcome: rejected, class: \"some class\", code: 1}\n",
	} {
		f.Add([]byte(seed))
	}
	files, _ := filepath.Glob("../specs/baselines/*.yaml")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := baselineRoundTrips(data, (*verdict.Baseline).WriteYAML); err != nil {
			t.Fatal(err)
		}
	})
}

var _ = Describe("the baseline fuzz property (negative controls)", func() {
	rich := []byte("version: replaycheck-baseline/v1\nplatform: sim/cuda\ninstances:\n" +
		"  basic/sync@relaxed/guards-off: {outcome: rejected, class: capture-unsupported, code: 900, invalidated: true}\n")

	It("holds for the real writer, and fails for one that drops a field or writes differently each time", func() {
		Expect(baselineRoundTrips(rich, (*verdict.Baseline).WriteYAML)).To(Succeed())

		dropsInvalidated := func(b *verdict.Baseline, w io.Writer) error {
			c := *b
			c.Instances = map[string]verdict.Behaviour{}
			for id, beh := range b.Instances {
				beh.Invalidated = false
				c.Instances[id] = beh
			}
			return c.WriteYAML(w)
		}
		Expect(baselineRoundTrips(rich, dropsInvalidated)).To(MatchError(ContainSubstring("read back")))

		n := 0
		stamps := func(b *verdict.Baseline, w io.Writer) error {
			n++
			fmt.Fprintf(w, "# written %d\n", n)
			return b.WriteYAML(w)
		}
		Expect(baselineRoundTrips(rich, stamps)).To(MatchError(ContainSubstring("written twice, two files")))
	})

	It("does not reach the writer for input the reader refuses: a refusal is an answer", func() {
		Expect(baselineRoundTrips([]byte("version: v0\n"), func(*verdict.Baseline, io.Writer) error {
			return fmt.Errorf("the writer is not reached")
		})).To(Succeed())
	})
})
