package capture_test

import (
	"context"
	"github.com/replaycheck/replaycheck/runtime/guard"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/replaycheck/replaycheck/capture"
	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
	"github.com/replaycheck/replaycheck/probes"
	"github.com/replaycheck/replaycheck/verdict"
)

// openSim opens a fresh simulated device with the given profile; the caller closes it.
func openSim(profile string) device.Device {
	b, err := sim.New(sim.Options{Profile: profile})
	Expect(err).NotTo(HaveOccurred())
	dev, err := b.Open(context.Background(), 0)
	Expect(err).NotTo(HaveOccurred())
	return dev
}

// parseProbe loads one probe from YAML text.
func parseProbe(text string) *probes.Probe {
	set, err := probes.Parse("inline.yaml", []byte(text), probes.DefaultLimits())
	Expect(err).NotTo(HaveOccurred())
	Expect(set.Probes).To(HaveLen(1))
	return set.Probes[0]
}

func runOn(dev device.Device, p *probes.Probe, mode device.CaptureMode, replays int) *capture.Result {
	return runInstance(dev, p, mode, false, replays)
}

// runInstance runs p in mode with guards on (kernel mode) or off.
func runInstance(dev device.Device, p *probes.Probe, mode device.CaptureMode, guarded bool, replays int) *capture.Result {
	return capture.Run(context.Background(), dev, probes.Instance{Probe: p, Mode: mode, Guarded: guarded, Replays: replays}, capture.Options{Runtime: builtin})
}

func ctx() context.Context { return context.Background() }

// builtin is replaycheck's reference runtime, the runtime under test of most specs.
var builtin = guard.Reference(guard.Options{})

// lastEvent is the last event of res's timeline.
func lastEvent(res *capture.Result) capture.Event {
	ev := res.Timeline.Events()
	return ev[len(ev)-1]
}

// opaque forwards the Device interface only: no Unwrap, so the engine finds none of the device's
// optional capabilities behind it. It reads every buffer back instead of comparing it in place
// (device.Comparer), as a real backend without one does, and lists a graph's nodes instead of
// walking them (device.GraphWalker).
type opaque struct{ device.Device }

// catalog is the probe catalog of specs/, loaded once per tree construction.
type catalog struct{ sets []*probes.Set }

func loadCatalog() (catalog, error) {
	sets, err := probes.Load(probes.DefaultLimits(), "../specs")
	return catalog{sets}, err
}

// find returns the probe with the given "set/name" id, failing the spec when there is none.
func (c catalog) find(id string) *probes.Probe {
	for _, s := range c.sets {
		for _, p := range s.Probes {
			if p.ID() == id {
				return p
			}
		}
	}
	Fail("no probe " + id)
	return nil
}

// judge is verdict.Judge as a status and its reason.
func judge(res *capture.Result, b *verdict.Baseline) (verdict.Status, string) {
	v := verdict.Judge(res, b)
	return v.Status, v.Reason
}

// stepNames are steps as reports write them.
func stepNames(steps []probes.Step) []string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = s.String()
	}
	return out
}
