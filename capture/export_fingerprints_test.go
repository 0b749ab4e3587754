package capture

import (
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/runtime/guard"
)

// FingerprintVerifier verifies one device buffer by fingerprints as the engine does after a round
// (byFingerprints), keeping the oracle's fingerprints from one call to the next: for the
// benchmarks.
type FingerprintVerifier struct {
	in *instance
	a  *allocation
}

// NewFingerprintVerifier verifies p on dev, which must state device.Fingerprinter.
func (opt Options) NewFingerprintVerifier(dev device.Device, p device.Ptr) (*FingerprintVerifier, error) {
	g, err := guard.New(dev, guard.Program)
	if err != nil {
		return nil, err
	}
	in := &instance{dev: g, knobs: opt.knobsOf()}
	in.cmp = &deviceCompare{fp: device.ExtensionsOf(dev).Fingerprint}
	return &FingerprintVerifier{in: in, a: &allocation{ptr: p}}, nil
}

// Verify reports whether the buffer holds want; rewritten: the oracle rewrote every chunk since
// the call before (the first call computes them all).
func (v *FingerprintVerifier) Verify(want []byte, rewritten bool) (bool, error) {
	if rewritten && v.in.fps != nil {
		if b := v.in.fps.bufs["bench"]; b != nil {
			b.dirtyFrom(0, -1)
		}
	}
	eq, _, err := v.in.byFingerprints("bench", v.a, want, false)
	return eq, err
}
