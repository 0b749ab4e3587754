// Package backends is the one place a front end (the CLI, the Ginkgo suite) chooses a
// device.Backend by name.
//
// Backends register themselves: the simulator always, the device backends (acl, cuda) from
// build-tagged files, so a binary built without cgo simply lacks them and says why. Names lists
// the backends this binary can open; Open returns one configured by Config; Known lists every
// backend replaycheck defines, with the reason a missing one is missing (Unavailable). Nothing is
// opened here beyond the backend itself: devices are opened by the caller through
// device.Backend.Open, and the caller closes the backend.
package backends

import (
	"fmt"
	"slices"
	"strings"

	"github.com/replaycheck/replaycheck/device"
	"github.com/replaycheck/replaycheck/device/sim"
)

// Config configures a backend. Zero values take the backend's defaults.
type Config struct {
	// Profile is the platform profile of the simulator ("cann", "cuda"); "" is DefaultProfile.
	Profile string
	// Seed shuffles the simulator's independent replay branches; 0 is its deterministic order.
	Seed uint64
	// Memory is the simulated device memory in bytes; 0 is the simulator's default.
	Memory int64
	// Library is the driver library a device backend loads; "" lets it search (its environment
	// variable first, then the usual install locations).
	Library string
}

// DefaultProfile is the simulator profile used when Config.Profile is empty: ACLGraph is the
// first target platform.
const DefaultProfile = "cann"

// ProfileOf is the platform profile a backend runs with: only the simulator has profiles, so every
// other backend gets "" whatever was asked for.
func ProfileOf(name, profile string) string {
	if name != "sim" {
		return ""
	}
	if profile == "" {
		return DefaultProfile
	}
	return profile
}

// opener opens one backend.
type opener func(Config) (device.Backend, error)

// known are the backends replaycheck defines, in the order they are listed.
var known = []string{"sim", "acl", "cuda"}

// registered are the backends this binary carries; build-tagged files add to it.
var registered = map[string]opener{"sim": openSim}

// missing says, for a known backend this binary does not carry, why; build-tagged files set it.
var missing = map[string]string{}

func register(name string, open opener) { registered[name] = open }

func openSim(cfg Config) (device.Backend, error) {
	profile := cfg.Profile
	if profile == "" {
		profile = DefaultProfile
	}
	// sim.New validates the profile name and lists the embedded ones when it is unknown.
	b, err := sim.New(sim.Options{Profile: profile, Memory: cfg.Memory, Seed: cfg.Seed})
	if err != nil {
		return nil, fmt.Errorf("opening backend sim: %w", err)
	}
	return b, nil
}

// Names lists the backends Open accepts, in a stable order.
func Names() []string {
	var out []string
	for _, n := range known {
		if registered[n] != nil {
			out = append(out, n)
		}
	}
	return out
}

// Known lists every backend replaycheck defines, carried by this binary or not.
func Known() []string { return slices.Clone(known) }

// Unavailable says why this binary cannot open a known backend: "" when it can.
func Unavailable(name string) string {
	if registered[name] != nil {
		return ""
	}
	if why := missing[name]; why != "" {
		return why
	}
	return "not built into this binary yet"
}

// Open returns the backend called name, configured by cfg. The caller closes it.
func Open(name string, cfg Config) (device.Backend, error) {
	if open := registered[name]; open != nil {
		return open(cfg)
	}
	if slices.Contains(known, name) {
		return nil, fmt.Errorf("backend %q: %s (this binary has: %s)", name, Unavailable(name), strings.Join(Names(), ", "))
	}
	return nil, fmt.Errorf("unknown backend %q (known: %s)", name, strings.Join(known, ", "))
}
