package probes

import "unsafe"

// tuneRace returns lim with the race check's knobs (race.go) as set leaves them, from their
// defaults: the one way the specs set them. A load with the limits holds its own copy, and
// nothing package-level changes: there is nothing to restore.
func tuneRace(lim Limits, set func(k *raceKnobs)) Limits {
	k := lim.raceKnobs()
	set(&k)
	lim.race = &k
	return lim
}

// SetBytes is the oracle's fill of b with v.
var SetBytes = setBytes

// ValueBound is the loader's upper bound of the YAML nodes a file makes, counted before parsing.
var ValueBound = valueBound

// OpKeysFit reports whether every op kind's keys fit the positions an op keeps (fieldsAt).
func OpKeysFit() bool {
	for _, spec := range opFields {
		if len(spec.keys) > maxOpKeys {
			return false
		}
	}
	return true
}

// ReportUnknown reports an unknown buffer name to a loader that has already listed `listed`
// problems, and returns how many problems it then lists and how many it has found.
func ReportUnknown(listed int, known func() []string) (kept, found int) {
	l := &loader{file: "f.yaml"}
	for i := range listed {
		l.errorf(Pos{File: "f.yaml", Line: i + 1, Col: 1}, RuleBadValue, "a problem") // distinct: one listed each
	}
	l.unknown(Pos{File: "f.yaml", Line: listed + 1, Col: 1}, RuleUndeclared, "undeclared buffer", "bufer", "buffers", known)
	return len(l.diags), l.found
}

// GraphOpSize is the size of one op of a captured graph.
const GraphOpSize = int(unsafe.Sizeof(graphOp{}))
