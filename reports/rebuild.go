package reports

import (
	"fmt"
	"slices"
	"strings"
)

// FromRun starts an empty report with a Document's run header, keeping every timeline it is
// given: a report rebuilt from a file shows what the file holds.
func FromRun(tool, version string, h Run) *Report {
	r := New(tool, version, Options{AllTimelines: true})
	r.Backend, r.Platform, r.Profile, r.Device, r.Runtime = h.Backend, h.Platform, h.Profile, h.Device, h.Runtime
	r.NotRun = slices.Clone(h.NotRun)
	r.BaselineFile = h.Baseline
	r.RunID, r.Host, r.Started, r.Ended = h.RunID, h.Host, h.Started, h.Ended
	r.Driver, r.RuntimeVersion, r.Config = h.Driver, h.RuntimeVersion, h.Config
	return r
}

// runOf is r's header as a Document writes it.
func runOf(r *Report) Run {
	return Run{
		Platform: RunName(r), Backend: r.Backend, Profile: r.Profile, Device: r.Device,
		Runtime: r.runtime(), Baseline: r.BaselineFile, Summary: r.Summary, NotRun: r.NotRun,
		RunID: r.RunID, Host: r.Host, Started: r.Started, Ended: r.Ended,
		Driver: r.Driver, RuntimeVersion: r.RuntimeVersion, Config: r.Config,
	}
}

// Reports rebuilds the runs of d, one report per runs[] entry with the results of its platform,
// with the verdicts as they were judged: nothing is judged again. A watch report's header and
// findings go to the first run.
func (d *Document) Reports() ([]*Report, error) {
	runs := make([]*Report, len(d.Runs))
	byPlatform := map[string]*Report{}
	for i, h := range d.Runs {
		runs[i] = FromRun(d.Tool, d.Version, h)
		runs[i].Started = d.Started
		byPlatform[RunName(runs[i])] = runs[i]
	}
	for _, e := range d.Results {
		r, ok := byPlatform[e.Platform]
		if !ok {
			return nil, fmt.Errorf("result %s is of platform %q, which no run in runs[] names", e.ID, e.Platform)
		}
		r.AddEntry(e)
	}
	if len(runs) > 0 && (d.Watch != nil || len(d.Findings) > 0) {
		// A watch report is one run: its header and findings are the document's.
		runs[0].Watch, runs[0].Findings = d.Watch, d.Findings
	}
	return runs, nil
}

// Source is a file's runs, as Merge takes them: Name names the file in errors.
type Source struct {
	Name string
	Runs []*Report
}

// Merge combines the runs of several sources (the shards of a run, or runs of several platforms)
// into one report per platform, in the order platforms first appear; a platform's entries are
// ordered by instance id. The runs of one platform must agree on backend, device and runtime, and
// hold an instance at most once; an instance one source did not run and another did is not
// "not run".
func Merge(sources []Source) ([]*Report, error) {
	began := func(r *Report) bool { return r.Device != "" || len(r.Results) > 0 }
	type merged struct {
		rep     *Report
		source  string            // the source the header came from
		entries []Entry           // every entry, in source order
		from    map[string]string // instance id -> the source that holds it
		notRun  []string
	}
	var order []*merged
	byPlatform := map[string]*merged{}
	for _, src := range sources {
		for _, r := range src.Runs {
			key := RunName(r)
			m, ok := byPlatform[key]
			switch {
			case !ok:
				m = &merged{rep: r, source: src.Name, from: map[string]string{}}
				byPlatform[key] = m
				order = append(order, m)
			case !began(r):
				// A run of a plan interrupted before it began opened no device: it says nothing
				// of one, and lists its instances as not run.
			case !began(m.rep):
				m.rep, m.source = r, src.Name // the header of a run that did begin
			default:
				for _, field := range []struct{ name, a, b string }{
					{"backend", m.rep.Backend, r.Backend},
					{"device", m.rep.Device, r.Device},
					{"runtime", m.rep.runtime(), r.runtime()},
				} {
					if field.a != field.b {
						return nil, fmt.Errorf("%s: the runs disagree on %s: %s has %q, %s has %q", key, field.name, m.source, field.a, src.Name, field.b)
					}
				}
			}
			for _, e := range r.Results {
				if prev, dup := m.from[e.ID]; dup {
					return nil, fmt.Errorf("%s: instance %s is in both %s and %s", key, e.ID, prev, src.Name)
				}
				m.from[e.ID] = src.Name
				m.entries = append(m.entries, e)
			}
			m.notRun = append(m.notRun, r.NotRun...)
		}
	}
	out := make([]*Report, len(order))
	for i, m := range order {
		r := FromRun(m.rep.Tool, m.rep.Version, runOf(m.rep))
		slices.SortStableFunc(m.entries, func(a, b Entry) int { return strings.Compare(a.ID, b.ID) })
		for _, e := range m.entries {
			r.AddEntry(e)
		}
		r.NotRun = nil
		seen := map[string]bool{}
		for _, id := range m.notRun {
			if _, ran := m.from[id]; !ran && !seen[id] {
				seen[id] = true
				r.NotRun = append(r.NotRun, id)
			}
		}
		out[i] = r
	}
	return out, nil
}
