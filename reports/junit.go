package reports

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/replaycheck/replaycheck/internal/plural"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/verdict"
)

// The JUnit XML shape CI test reporters read (Jenkins' junit step, GitLab's artifacts:reports:junit,
// the GitHub Actions JUnit reporters): the de facto schema of Ant and Maven Surefire. Only what
// those readers use is written.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure"`
	Error     *junitProblem `xml:"error"`
	Skipped   *junitSkipped `xml:"skipped"`
	SystemOut *junitText    `xml:"system-out"`
}

// junitProblem is a <failure> or an <error>: a one-line message, a type, and the detail block as
// its body.
type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Body    string `xml:",cdata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

type junitText struct {
	Text string `xml:",cdata"`
}

// WriteJUnit writes runs as one JUnit XML document: a <testsuites> holding one <testsuite> per
// run, named after its platform key ("sim/cann"), with one <testcase> per instance.
//
// A testcase's classname is the probe ("set/name") and its name the full instance id
// ("set/name@mode/guards-off"): several common readers (GitHub check annotations, dorny's
// test-reporter, Jenkins' list of failed tests) show the name without the classname, and the
// instance id is unique there, is what --run selects and is the key of baselines and the other
// reports; readers that show both (GitLab, Jenkins' per-class pages) group by probe.
//
// The verdict decides the element: fail is a <failure> whose type is the verdict's rule and whose
// body is the text report's detail block (WriteDetail), except when the run ended in error
// (outcome error), which is an <error> whose type is the error's kind; skip is <skipped>. An
// uncharacterised instance passes, as it does for the exit status, with a <system-out> note: JUnit
// has no "recorded, not judged", and skipped would tell a dashboard it never ran. A passing
// instance whose detail the text report shows (an expected corruption, stale ranges) carries that
// detail as <system-out>.
//
// An instance the run did not reach (an interrupted run: Report.NotRun) is a testcase with an
// <error type="not-run">, after those that ran, so CI counts the run against the build.
//
// A watch report (Report.IsWatch) is a testsuite "replaycheck watch" (junitWatchSuite): a
// failing testcase per distinct finding, or one passing testcase "no findings".
//
// Times are the instances' durations in seconds; a suite's timestamp is its report's Started.
// Nothing else depends on the clock, so the same reports write the same bytes.
func WriteJUnit(w io.Writer, runs ...*Report) error {
	doc := junitSuites{Suites: []junitSuite{}}
	var total time.Duration
	for i, r := range runs {
		if i == 0 {
			doc.Name = strings.TrimSpace(r.Tool + " " + r.Version)
		}
		s, d, err := junitSuiteOf(r)
		if err != nil {
			return err
		}
		doc.Suites = append(doc.Suites, s)
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Errors += s.Errors
		doc.Skipped += s.Skipped
		total += d
	}
	doc.Time = junitSeconds(total)

	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("writing JUnit report: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("writing JUnit report: %w", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("writing JUnit report: %w", err)
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return fmt.Errorf("writing JUnit report: %w", err)
	}
	return nil
}

func junitSuiteOf(r *Report) (junitSuite, time.Duration, error) {
	if r.IsWatch() {
		s, d := junitWatchSuite(r)
		return s, d, nil
	}
	s := junitSuite{Name: RunName(r), Cases: []junitCase{}}
	if !r.Started.IsZero() {
		// The schema's xs:dateTime without a zone; Started is UTC.
		s.Timestamp = r.Started.UTC().Format("2006-01-02T15:04:05")
	}
	prop := func(name, value string) {
		if value != "" {
			s.Properties = append(s.Properties, junitProperty{Name: name, Value: safeChars(value)})
		}
	}
	prop("tool", strings.TrimSpace(r.Tool+" "+r.Version))
	prop("backend", r.Backend)
	prop("profile", r.Profile)
	prop("device", r.Device)
	prop("runtime", r.runtime())
	prop("baseline", r.BaselineFile)

	var total time.Duration
	for _, e := range r.Results {
		c, err := junitCaseOf(r, e)
		if err != nil {
			return s, 0, err
		}
		s.Tests++
		switch {
		case c.Failure != nil:
			s.Failures++
		case c.Error != nil:
			s.Errors++
		case c.Skipped != nil:
			s.Skipped++
		}
		total += e.Duration
		s.Cases = append(s.Cases, c)
	}
	for _, id := range r.NotRun {
		s.Cases = append(s.Cases, junitNotRun(r, id))
		s.Tests++
		s.Errors++
	}
	s.Time = junitSeconds(total)
	return s, total, nil
}

// junitNotRun is an instance the run never reached (Report.NotRun) as a testcase with an <error>
// of type "not-run". Not <skipped>: Jenkins, GitLab and GitHub's JUnit reporters show skipped tests
// as neutral and keep a build green with them, and an interrupted run must not read as a pass (it
// exits 1). <error> is what they count against a build, and says the instance has no verdict
// rather than a failing one.
func junitNotRun(r *Report, id string) junitCase {
	probe, _, _, err := probes.ParseID(id)
	if err != nil {
		probe, _, _ = strings.Cut(id, "@")
	}
	msg := fmt.Sprintf("not run: the run was interrupted before this instance (%d of %s not run)",
		len(r.NotRun), plural.Count(len(r.NotRun)+len(r.Results), "instance"))
	return junitCase{Name: safeChars(id), Classname: safeChars(probe), Time: junitSeconds(0),
		Error: &junitProblem{Message: msg, Type: "not-run"}}
}

func junitCaseOf(r *Report, e Entry) (junitCase, error) {
	c := junitCase{Name: safeChars(e.ID), Classname: safeChars(e.Probe), Time: junitSeconds(e.Duration)}
	detail := func() (string, error) {
		var b strings.Builder
		if err := WriteDetail(&b, e); err != nil {
			return "", err
		}
		return safeChars(b.String()), nil
	}
	switch e.Verdict.Status {
	case verdict.Fail:
		body, err := detail()
		if err != nil {
			return c, err
		}
		if e.Outcome == probes.Errored {
			kind := "error"
			if e.Error != nil && e.Error.Kind != "" {
				kind = string(e.Error.Kind)
			}
			c.Error = &junitProblem{Message: safeChars(errorMessage(e)), Type: safeChars(kind), Body: body}
		} else {
			c.Failure = &junitProblem{Message: safeChars(e.Verdict.Reason), Type: safeChars(string(e.Verdict.Rule)), Body: body}
		}
	case verdict.Skip:
		msg := e.Verdict.Reason
		if msg == "" {
			msg = e.Reason
		}
		c.Skipped = &junitSkipped{Message: safeChars(msg)}
	case verdict.Uncharacterised:
		// It ran and did not fail the run (exit status 0): a pass, with a note saying it was not
		// judged. <skipped> would count it as not run, <failure> would contradict the exit status.
		note := fmt.Sprintf("outcome %s: %s\n%s\n", e.Outcome, e.Reason, uncharacterisedHint(r))
		c.SystemOut = &junitText{Text: safeChars(note)}
	default:
		if hasFinding(e) {
			body, err := detail()
			if err != nil {
				return c, err
			}
			c.SystemOut = &junitText{Text: body}
		}
	}
	return c, nil
}

// errorMessage is an <error>'s message: the kind of error and what the engine said of it.
func errorMessage(e Entry) string {
	if e.Error == nil {
		return e.Verdict.Reason
	}
	msg := "the run ended in error (" + string(e.Error.Kind) + ")"
	if e.Error.Step != nil {
		msg += " at " + e.Error.Step.String()
	}
	if e.Error.Message != "" {
		msg += ": " + e.Error.Message
	}
	return msg
}

// junitSeconds is a duration as JUnit's decimal seconds, to the millisecond as Surefire writes it.
func junitSeconds(d time.Duration) string {
	d = max(d, 0).Round(time.Millisecond)
	return fmt.Sprintf("%d.%03d", d/time.Second, d%time.Second/time.Millisecond)
}

// safeChars replaces what XML 1.0 cannot carry at all (control characters other than tab, newline
// and carriage return, such as a terminal escape; invalid UTF-8) with U+FFFD. encoding/xml does
// that for attributes, but not inside CDATA, where a plugin's message could otherwise make the
// document ill-formed; the Markdown summary uses it too, so no escape sequence reaches a CI page.
func safeChars(s string) string {
	ok := func(r rune) bool {
		return r == '\t' || r == '\n' || r == '\r' ||
			(r >= 0x20 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD) || (r >= 0x10000 && r <= 0x10FFFF)
	}
	clean := true
	for i, r := range s {
		if !ok(r) || (r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD")) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		if !ok(r) || (r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD")) {
			r = utf8.RuneError
		}
		b.WriteRune(r)
	}
	return b.String()
}
