package fake

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// LogEntry is one line of a call log (REPLAYCHECK_FAKE_LOG, see the package doc).
type LogEntry struct {
	// TID is the kernel thread id of the thread that made the call.
	TID int
	// Kind is "call" (an entry point entered), "fail" (a call that failed) or "hang" (a call that
	// will never return, by an injected hang fault).
	Kind string
	// Entry is the entry point; empty for a hang.
	Entry string
	// Args are the arguments a call line records after the entry point, for the entry points
	// whose arguments the library logs (cuStreamCreate: "flags=1"); empty otherwise.
	Args string
	// Code and Detail are a failure's.
	Code   int
	Detail string
}

// ReadLog reads the call log at path. A line of another form, or a last line without its newline
// (the library writes whole lines), is an error that names the file and the line; the entries
// before it are returned with it.
func ReadLog(path string) ([]LogEntry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("fake: call log: %w", err)
	}
	if len(data) == 0 {
		return nil, nil
	}
	var out []LogEntry
	lines := strings.Split(string(data), "\n")
	for i, line := range lines {
		if i == len(lines)-1 {
			if line != "" {
				return out, fmt.Errorf("fake: call log %s:%d: the last line is cut short (no newline): %q", path, i+1, line)
			}
			break
		}
		e, ok := parseLogLine(line)
		if !ok {
			return out, fmt.Errorf("fake: call log %s:%d: %q is not \"<tid> call <entry>[ <args>]\", \"<tid> fail <entry> <code>: <detail>\" or \"<tid> hang\"", path, i+1, line)
		}
		out = append(out, e)
	}
	return out, nil
}

func parseLogLine(line string) (LogEntry, bool) {
	tid, rest, _ := strings.Cut(line, " ")
	n, err := strconv.Atoi(tid)
	if err != nil || n <= 0 {
		return LogEntry{}, false
	}
	e := LogEntry{TID: n}
	e.Kind, rest, _ = strings.Cut(rest, " ")
	switch e.Kind {
	case "hang":
		return e, rest == ""
	case "call":
		var hasArgs bool
		e.Entry, e.Args, hasArgs = strings.Cut(rest, " ")
		return e, e.Entry != "" && (!hasArgs || e.Args != "")
	case "fail":
		var code string
		var detailed bool
		e.Entry, rest, _ = strings.Cut(rest, " ")
		code, e.Detail, detailed = strings.Cut(rest, ": ")
		e.Code, err = strconv.Atoi(code)
		return e, e.Entry != "" && err == nil && detailed
	}
	return LogEntry{}, false
}

// Callers is, for each entry point entered, the kernel thread ids of its calls in order.
func Callers(entries []LogEntry) map[string][]int {
	out := map[string][]int{}
	for _, e := range entries {
		if e.Kind == "call" {
			out[e.Entry] = append(out[e.Entry], e.TID)
		}
	}
	return out
}
