// Package leakcheck finds the goroutines a test suite leaves behind.
//
// A suite calls Suite before RunSpecs. When the test ends, every goroutine that was not running
// before it, is still running after a short wait, and has replaycheck's code on its stack (or was
// started from it) is a leak, and the test fails listing each one's stack. Goroutines of the Go
// runtime, the testing package and Ginkgo are not replaycheck's and are left alone.
//
// Some goroutines are meant to outlive their test: a device call that never returns (an injected
// hang) keeps its driver thread, and the instance that made it, for the life of the process. A
// suite that injects hangs names those by the function they are blocked in (Allow...); a goroutine
// with one of them on its stack is not a leak. Nothing else is excused.
//
// Only the standard library is used: the stacks come from runtime.Stack.
package leakcheck

import (
	"bytes"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Module is the import path prefix that makes a goroutine replaycheck's.
const Module = "github.com/replaycheck/replaycheck/"

// Frames of goroutines that outlive an injected hang on purpose.
const (
	// HungSimCall: a simulator worker blocked for good by a hang fault.
	HungSimCall = Module + "device/sim.(*Device).hang"
	// HungCCall: a goroutine whose innermost frame is a call into C (cgo's _Cfunc_ stubs) that never
	// returned: the fake drivers' hang. Once every spec has ended, no other call into C is in flight.
	HungCCall = "(a call into C)"
	// AbandonedCall: the instance goroutine of a device call the watch gave up on, waiting for it.
	AbandonedCall = Module + "capture.(*watch).do"
	// AbandonedSession: the instance goroutine waiting for its session on the device's thread (the
	// engine runs an instance as one session where the device can), in which a call hung.
	AbandonedSession = Module + "capture.(*watch).session"
	// ParkedInstance: the instance goroutine whose abandoned call did return, parked for good.
	ParkedInstance = Module + "capture.(*watch).back"
)

// Wait is how long Check waits for goroutines that are ending (a worker told to stop, a child
// process being reaped) before calling them leaks.
const Wait = 5 * time.Second

// Goroutine is one goroutine as runtime.Stack prints it.
type Goroutine struct {
	ID    int
	Stack string   // the whole block, header included
	Funcs []string // the functions on the stack, innermost first, then the one that started it
}

// Snapshot is the set of goroutines running at one moment.
type Snapshot map[int]bool

// Take records the goroutines running now.
func Take() Snapshot {
	s := Snapshot{}
	for _, g := range Goroutines() {
		s[g.ID] = true
	}
	return s
}

// Leaks returns replaycheck's goroutines running now that s does not hold and no frame in allow
// excuses, waiting up to wait for them to end.
func (s Snapshot) Leaks(wait time.Duration, allow ...string) []Goroutine {
	deadline := time.Now().Add(wait)
	for {
		leaks := s.leaksNow(allow)
		if len(leaks) == 0 || time.Now().After(deadline) {
			return leaks
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (s Snapshot) leaksNow(allow []string) []Goroutine {
	var out []Goroutine
	for _, g := range Goroutines() {
		if s[g.ID] || !g.ours() || g.excused(allow) {
			continue
		}
		out = append(out, g)
	}
	return out
}

// Check returns an error listing the leaks (see Leaks), nil when there are none.
func (s Snapshot) Check(wait time.Duration, allow ...string) error {
	leaks := s.Leaks(wait, allow...)
	if len(leaks) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d goroutine(s) left running after %v:\n", len(leaks), wait)
	for _, g := range leaks {
		b.WriteString("\n")
		b.WriteString(g.Stack)
		b.WriteString("\n")
	}
	return fmt.Errorf("%s", b.String())
}

// Suite checks that the test t leaves no goroutine behind but those allow excuses: it takes a
// snapshot now and checks when t ends (after RunSpecs and every cleanup).
func Suite(t testing.TB, allow ...string) {
	t.Helper()
	s := Take()
	t.Cleanup(func() {
		if err := s.Check(Wait, allow...); err != nil {
			t.Error("leakcheck: " + err.Error())
		}
	})
}

func (g Goroutine) ours() bool {
	for _, f := range g.Funcs {
		if strings.HasPrefix(f, Module) {
			return true
		}
	}
	return false
}

func (g Goroutine) excused(allow []string) bool {
	if len(g.Funcs) > 0 && strings.Contains(g.Funcs[0], "._Cfunc_") && slices.Contains(allow, HungCCall) {
		return true
	}
	for _, f := range g.Funcs {
		if slices.Contains(allow, f) {
			return true
		}
	}
	return false
}

// Goroutines lists every goroutine but the caller's.
func Goroutines() []Goroutine {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	blocks := bytes.Split(buf, []byte("\n\n"))
	out := make([]Goroutine, 0, len(blocks))
	for i, block := range blocks {
		if i == 0 {
			continue // runtime.Stack prints the caller's goroutine first
		}
		if g, ok := parse(string(block)); ok {
			out = append(out, g)
		}
	}
	return out
}

// parse reads one block of runtime.Stack's output:
//
//	goroutine 7 [chan receive]:
//	pkg.f(...)
//		/path/file.go:12 +0x1d
//	created by pkg.g in goroutine 1
//		/path/file.go:30 +0x3f
func parse(block string) (Goroutine, bool) {
	lines := strings.Split(strings.TrimSpace(block), "\n")
	head, ok := strings.CutPrefix(lines[0], "goroutine ")
	if !ok {
		return Goroutine{}, false
	}
	idText, _, _ := strings.Cut(head, " ")
	id, err := strconv.Atoi(idText)
	if err != nil {
		return Goroutine{}, false
	}
	g := Goroutine{ID: id, Stack: block}
	for _, l := range lines[1:] {
		if l == "" || strings.HasPrefix(l, "\t") || strings.HasPrefix(l, "...") {
			continue // a file:line, or frames elided
		}
		l = strings.TrimPrefix(l, "created by ")
		if i := strings.Index(l, " in goroutine "); i >= 0 {
			l = l[:i]
		}
		g.Funcs = append(g.Funcs, funcName(l))
	}
	return g, true
}

// funcName strips the argument list from a frame line: "pkg.(*T).m(0x1, ...)" is "pkg.(*T).m".
// A method's receiver is in parentheses too, so the list is the last parenthesised group.
func funcName(frame string) string {
	if strings.HasSuffix(frame, ")") {
		depth := 0
		for i := len(frame) - 1; i >= 0; i-- {
			switch frame[i] {
			case ')':
				depth++
			case '(':
				depth--
				if depth == 0 {
					return frame[:i]
				}
			}
		}
	}
	return frame
}
