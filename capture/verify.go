package capture

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/probes"
)

// Replays, verification and forensics: each round's launches, the byte-for-byte comparison with
// the oracle after it, and the stale ranges a launch touched.

func (in *instance) replays() error {
	for round := 1; round <= in.spec.Replays; round++ {
		in.tl.beginRound(round)
		corrupted, stale := in.res.CorruptedRounds, len(in.res.Stale)
		in.tl.enter(PhaseEach)
		in.noteWrites(in.p.Replay.Each)
		if err := in.eager(probes.Stage{Phase: probes.PhaseEach}, in.p.Replay.Each); err != nil {
			return err
		}
		in.tl.enter(PhaseReplay)
		if err := in.armRound(round); err != nil {
			return err
		}
		launched := time.Now()
		in.roundLaunch = probes.Step{}
		for _, lc := range in.p.Replay.Order {
			g, ok := in.graphs[lc.Capture]
			if !ok {
				in.oracle.Launch(lc.Capture, false)
				continue
			}
			stream, step := in.streams[lc.Stream], probes.LaunchStep(round, lc.Capture)
			took, err := in.call(deviceCall{step: step, desc: fmt.Sprintf("Launch(graph %s) on %s", lc.Capture, lc.Stream),
				thread: device.Main}, exec(func() error { return in.dev.Launch(device.Main, g, stream) }))
			if err != nil {
				return err
			}
			// A launch the platform ran, or rejected after looking at it, touched what the graph
			// captured; one the runtime refused touched nothing.
			if took || in.tl.last().Class != device.ClassRefused {
				in.noteStale(lc.Capture, round, took)
				in.noteSharing(round, lc, took)
			}
			if took {
				in.roundLaunch = step
				in.noteLaunch(lc.Capture)
			}
			in.oracle.Launch(lc.Capture, took)
		}
		if err := in.verify(round, launched); errors.Is(err, errReplayFaulted) {
			break
		} else if err != nil {
			return err
		}
		in.res.Rounds = round
		if round > KeptRounds && round < in.spec.Replays && in.res.CorruptedRounds == corrupted &&
			len(in.res.Stale) == stale && !in.tl.eventful() {
			in.tl.elideRound()
		}
	}
	in.tl.round = 0
	return nil
}

// errReplayFaulted ends the rounds after a replay the device failed asynchronously
// (replayFaulted): the instance is judged on what it has.
var errReplayFaulted = errors.New("the replay faulted")

// replayFaulted reports whether err, the round's synchronisation failing, is the platform's
// answer to the round's launch: a GPU runs a graph after its launch returned, and a fault of that
// work (CUDA's illegal address over memory freed since capture) surfaces at the next
// synchronising call. It is then recorded as the launch's rejection, reported asynchronously: the
// round's stale ranges did not run as the probe meant, and a sticky error leaves the device
// unusable for the rest of the process (poisoned). A lost device, a guard's or the runtime under
// test's own failure stay what they are.
func (in *instance) replayFaulted(round int, err error) bool {
	// must made err: the platform's answer is ErrSetup, or ErrDeviceLost for a sticky one; a
	// guard's misuse and a runtime's own failure have kinds of their own.
	e, ok := device.AsError(err)
	if !ok || in.roundLaunch == (probes.Step{}) || e.Class == device.ClassRefused || e.Class == device.ClassDeviceLost {
		return false
	}
	if k := kindOf(err); k != ErrSetup && (k != ErrDeviceLost || !e.Sticky) {
		return false
	}
	if in.res.Rejection == nil {
		in.res.Rejection = rejectionOf(in.roundLaunch, e)
		in.res.Rejection.Asynchronous, in.res.Rejection.Sticky = true, e.Sticky
	}
	for i := range in.res.Stale {
		if in.res.Stale[i].Round == round {
			in.res.Stale[i].Ran = false
		}
	}
	in.poisoned = in.poisoned || e.Sticky
	return true
}

// verify compares every checked live buffer with the oracle after a round.
func (in *instance) verify(round int, launched time.Time) error {
	in.tl.enter(PhaseVerify)
	if err := in.must("SyncDevice (verify)", func() error { return in.dev.SyncDevice(device.Main) }); err != nil {
		if in.replayFaulted(round, err) {
			return errReplayFaulted
		}
		return err
	}
	// The round's replay is done once the device is: from the first launch to the end of the sync.
	checked := time.Now()
	in.times.rounds = append(in.times.rounds, checked.Sub(launched))
	defer func() { in.times.verify += time.Since(checked) }()
	// The timeline keeps one verify sync per round and not the reads: they add nothing a reader needs.
	names := in.p.Check
	if names == nil {
		names = in.oracle.Live()
	}
	differs := false
	for _, name := range names {
		want, live := in.oracle.Bytes(name)
		if !live {
			continue
		}
		a := in.bufs[name]
		if a == nil {
			return failf(ErrHarness, nil, "verify: the oracle holds buffer %q and the device does not", name)
		}
		if a.ptr.Bytes != int64(len(want)) {
			return failf(ErrHarness, nil, "verify: buffer %q is %d bytes on the device and %d in the oracle", name, a.ptr.Bytes, len(want))
		}
		in.times.verified += int64(len(want))
		in.cur = deviceCall{desc: "verify: reading " + name}
		var (
			equal bool
			got   []byte // the device's bytes, when byFingerprints read them
			err   error
		)
		if in.cmp != nil && in.cmp.fp != nil && !a.host && !in.knobs.NoFingerprints {
			equal, got, err = in.byFingerprints(name, a, want, in.res.FirstCorrupted == 0)
		} else {
			equal, err = in.equal(a, want)
		}
		if err != nil {
			if kindOf(err) == ErrHarness {
				return err
			}
			return fail(ErrSetup, nil, fmt.Errorf("verify: reading %s: %w", name, err))
		}
		if equal {
			continue
		}
		differs = true
		if in.res.FirstCorrupted == 0 {
			// Localising needs the device's bytes: read them back, once, in the first corrupted round
			// (by fingerprints, only the chunks that differ were).
			if got == nil {
				got, err = in.contents(a)
			}
			if err != nil {
				return fail(ErrSetup, nil, fmt.Errorf("verify: reading %s: %w", name, err))
			}
			ms, d := diff(round, name, want, got, MaxMismatches-len(in.res.Mismatches), in.knobs.SegmentBytes)
			in.res.Mismatches = append(in.res.Mismatches, ms...)
			in.res.Differences = append(in.res.Differences, d)
		}
	}
	in.fps.forgetUnseen()
	if differs {
		in.res.CorruptedRounds++
		if in.res.FirstCorrupted == 0 {
			in.res.FirstCorrupted = round
		}
	}
	return nil
}

// diff localises every difference of got against want: the first limit differing ranges as
// mismatches, and how many ranges and bytes differ in all (segmentBytes: localise).
func diff(round int, name string, want, got []byte, limit, segmentBytes int) ([]Mismatch, Difference) {
	loc := localise(want, got, limit, segmentBytes)
	var out []Mismatch
	for _, s := range loc.kept {
		show := min(s.end-s.off, MaxShownBytes)
		out = append(out, Mismatch{
			Round: round, Buffer: name, Offset: int64(s.off), Length: int64(s.end - s.off),
			Want: append(Bytes(nil), want[s.off:s.off+show]...), Got: append(Bytes(nil), got[s.off:s.off+show]...),
		})
	}
	return out, Difference{Round: round, Buffer: name, Ranges: int64(loc.ranges), Bytes: loc.bytes, BufferBytes: int64(len(want))}
}

// staleKey is a generation of a buffer in a capture, noted stale once (noteStale).
type staleKey struct {
	capture, buffer string
	gen             uint64
}

// firstStale returns ledger entry l as a stale range of a launch in round (ran: as noteStale's),
// its Now and Owners left to the caller; false when l was found stale before: each entry is
// reported once.
func (in *instance) firstStale(l Residency, round int, ran bool) (StaleRange, bool) {
	key := staleKey{l.Capture, l.Buffer, l.Generation}
	if in.staleSeen[key] {
		return StaleRange{}, false
	}
	in.staleSeen[key] = true
	return StaleRange{Capture: l.Capture, Buffer: l.Buffer, Range: l.Range, Generation: l.Generation, Access: l.Access, Round: round, Ran: ran}, true
}

// noteStale records, the first time a launch of capture's graph touches it, each range the graph
// captured that is no longer the allocation it captured: the buffer was freed, or freed and
// allocated again (a re-base, a pool block handed out again). That is a use of stale memory
// whether or not a checked byte differs yet; Result.Stale says which live buffers own the range
// now. ran is false when the platform rejected the launch.
func (in *instance) noteStale(capture string, round int, ran bool) {
	// The live buffers, in generation order, and an index of their ranges: made once, at the first
	// stale range, for n re-based buffers are n stale ranges.
	var (
		names  []string
		live   []*allocation
		owners device.Ranges
	)
	for _, l := range in.entriesOf(capture) {
		if a := in.bufs[l.Buffer]; (a != nil && a.gen == l.Generation) || in.heldPrivately(l) {
			continue
		}
		s, first := in.firstStale(l, round, ran)
		if !first {
			continue
		}
		if live == nil {
			names = in.liveNames()
			live = make([]*allocation, len(names))
			ptrs := make([]device.Ptr, len(names))
			for k, name := range names {
				live[k] = in.bufs[name]
				ptrs[k] = live[k].ptr
			}
			owners = device.NewRanges(ptrs)
		}
		var found []int
		owners.Overlapping(l.Range, func(k int) { found = append(found, k) })
		slices.Sort(found) // generation order
		var now []string
		for _, k := range found {
			name, a := names[k], live[k]
			s.Owners = append(s.Owners, name)
			now = append(now, fmt.Sprintf("buffer %s %v (generation %d)", name, a.ptr, a.gen))
		}
		if len(now) == 0 {
			s.Now = "free (no live allocation of the probe)"
		} else {
			s.Now = strings.Join(now, ", ")
		}
		in.res.Stale = append(in.res.Stale, s)
	}
}
