package sim_test

import (
	"context"
	"fmt"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/backends"
	"github.com/replaycheck/replaycheck/device/conformance"
	"github.com/replaycheck/replaycheck/device/sim"
)

// The simulator is held to the backend conformance suite on every embedded profile, opened the way
// a front end opens it (backends.Open), in capture order and with a replay seed that shuffles
// independent graph branches: the contract holds in every order the captured dependencies allow.
// The cuda profile's synchronous copies are legacy-stream work, and its EndCapture instantiates the
// graph, as the binding's are and does on the driver.
var _ = func() bool {
	for _, profile := range sim.Profiles() {
		p, err := sim.LoadProfile(profile)
		if err != nil {
			panic(err)
		}
		for _, seed := range []uint64{0, 7} {
			name := fmt.Sprintf("sim %s", profile)
			if seed != 0 {
				name += fmt.Sprintf(", seed %d", seed)
			}
			conformance.Describe(name, func(ctx context.Context) (device.Device, error) {
				b, err := backends.Open("sim", backends.Config{Profile: profile, Seed: seed})
				if err != nil {
					return nil, err
				}
				return b.Open(ctx, 0)
			}, conformance.Options{SyncCopiesOnLegacyStream: profile == "cuda", EndCaptureInstantiates: profile == "cuda", ErrorCode: p.ErrorCode})
		}
	}
	return true
}()
