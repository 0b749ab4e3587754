package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/replaycheck/replaycheck/reports"
	"github.com/replaycheck/replaycheck/run"
	"github.com/replaycheck/replaycheck/verdict"
)

// progress is a run.Sink that keeps one line on a terminal up to date: how many instances of the
// run are done, how many failed, and the last one. It writes nothing when w is not a terminal
// (CI logs, a pipe), and clears its line when the run ends.
type progress struct {
	w           io.Writer
	platform    string
	total, done int
	failed      int
	wroteOnce   bool
}

// newProgress returns a progress line on w when w is a terminal, nil otherwise.
func newProgress(w io.Writer) *progress {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	st, err := f.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	return &progress{w: w}
}

// Start learns the run's size and platform (run.Starter).
func (p *progress) Start(h run.Header) error {
	p.platform, p.total, p.done, p.failed = h.Platform, len(h.Instances), 0, 0
	return nil
}

// Result counts one finished instance and redraws the line (run.Sink).
func (p *progress) Result(e reports.Entry) error {
	p.done++
	if e.Verdict.Status == verdict.Fail {
		p.failed++
	}
	line := fmt.Sprintf("%s [%d/%d] %d failed  %s", p.platform, p.done, p.total, p.failed, e.ID)
	if len(line) > 100 {
		line = line[:97] + "..."
	}
	fmt.Fprintf(p.w, "\r\x1b[2K%s", line)
	p.wroteOnce = true
	return nil
}

// clear removes the line, so the report that follows starts on a clean line.
func (p *progress) clear() {
	if p != nil && p.wroteOnce {
		fmt.Fprint(p.w, "\r\x1b[2K")
	}
}
