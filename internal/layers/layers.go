// Package layers states which of replaycheck's packages may import which, and checks a module's
// import graph against those rules. Its test runs the check on this module with `go list -deps`,
// so a change that makes the platform depend on the runtime under test, or the two runtimes under
// test depend on each other, fails `go test`.
//
// The rules, by package path relative to the module:
//
//	device/...       the platform: imports nothing of the runtime under test (runtime/...), the
//	                 engine (capture), the probe language (probes) or anything above them
//	runtime          the seam: imports the platform and nothing that implements or drives it
//	runtime/guard    the reference guards: not runtime/plugin
//	runtime/plugin   the C ABI loader and its seed plugins: not runtime/guard
//	capture          the engine: no implementation of the runtime under test, only the seam
//	probes           the probe language: neither the engine nor the runtime under test
//	verdict          judging: not reports, run or a front
//	reports          rendering: not run or a front
//	run/proc         the run's processes: nothing of replaycheck at all
//	watch            watching a program: none of the layers above, so reports can render its
//	                 findings; its interposer (watch/interpose) is C with a Go builder
package layers

import (
	"fmt"
	"slices"
	"strings"
)

// Rule forbids the packages under From (a path relative to the module, with "/..." for a tree) to
// depend, directly or through others, on any package under one of Not.
type Rule struct {
	From string
	Not  []string
}

// Rules are replaycheck's layering rules (see the package doc), in a fresh slice.
func Rules() []Rule {
	return []Rule{
		{From: "device/...", Not: []string{"runtime/...", "capture/...", "probes/...", "verdict/...", "reports/...", "run/...", "harness/...", "cmd/..."}},
		{From: "runtime", Not: []string{"runtime/guard/...", "runtime/plugin/...", "capture/...", "probes/...", "run/...", "harness/...", "cmd/..."}},
		{From: "runtime/guard/...", Not: []string{"runtime/plugin/...", "capture/...", "run/...", "harness/...", "cmd/..."}},
		{From: "runtime/plugin/...", Not: []string{"runtime/guard/...", "capture/...", "run/...", "harness/...", "cmd/..."}},
		{From: "capture/...", Not: []string{"runtime/guard/...", "runtime/plugin/...", "verdict/...", "reports/...", "run/...", "harness/...", "cmd/..."}},
		{From: "probes/...", Not: []string{"capture/...", "runtime/...", "verdict/...", "reports/...", "run/...", "harness/...", "cmd/..."}},
		{From: "verdict/...", Not: []string{"reports/...", "run/...", "harness/...", "cmd/..."}},
		{From: "reports/...", Not: []string{"run/...", "harness/...", "cmd/..."}},
		{From: "watch/...", Not: []string{"device/...", "runtime/...", "capture/...", "probes/...", "verdict/...", "reports/...", "run/...", "harness/...", "cmd/..."}},
		{From: "run/proc/...", Not: []string{"device/...", "runtime/...", "capture/...", "probes/...", "verdict/...", "reports/...", "run", "harness/...", "cmd/...", "internal/..."}},
	}
}

// Graph maps a package (relative path) to every package it depends on, directly or not (go list's
// Deps, already relative; packages outside the module may stay in it and match no rule).
type Graph map[string][]string

// match reports whether pkg is pattern: the path itself, or with "/..." anything under it too.
func match(pattern, pkg string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pkg == pattern
}

// Violations lists every dependency in g that rules forbid, one line each, sorted:
// "device/sim imports runtime/guard (rule: device/... must not import runtime/...)".
func Violations(g Graph, rules []Rule) []string {
	var out []string
	for pkg, deps := range g {
		for _, r := range rules {
			if !match(r.From, pkg) {
				continue
			}
			for _, dep := range deps {
				for _, not := range r.Not {
					if match(not, dep) {
						out = append(out, fmt.Sprintf("%s imports %s (rule: %s must not import %s)", pkg, dep, r.From, not))
					}
				}
			}
		}
	}
	slices.Sort(out)
	return out
}
