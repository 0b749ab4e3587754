// Package backends is the one place a front end (the CLI, the Ginkgo suite) chooses a
// runtime.Backend by name.
//
// Names lists the backends built into this binary; Open returns one configured by Config. A name
// of a backend that replaycheck knows but this binary does not carry yet (acl, cuda) is an error
// that says so; any other name is an error that lists the known ones. Nothing is opened here
// beyond the backend itself: devices are opened by the caller through runtime.Backend.Open.
package backends

import (
	"fmt"
	"slices"
	"strings"

	"github.com/replaycheck/replaycheck/runtime"
	"github.com/replaycheck/replaycheck/runtime/sim"
)

// Config configures a backend. Zero values take the backend's defaults.
type Config struct {
	// Profile is the platform profile of the simulator ("cann", "cuda"); "" is DefaultProfile.
	Profile string
	// Seed shuffles the simulator's independent replay branches; 0 is its deterministic order.
	Seed uint64
	// Memory is the simulated device memory in bytes; 0 is the simulator's default.
	Memory int64
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

// builtin are the backends this binary can open.
var builtin = []string{"sim"}

// planned are backends replaycheck defines but this binary does not carry yet.
var planned = []string{"acl", "cuda"}

// Names lists the backends Open accepts, in a stable order.
func Names() []string { return slices.Clone(builtin) }

// Open returns the backend called name, configured by cfg.
func Open(name string, cfg Config) (runtime.Backend, error) {
	switch name {
	case "sim":
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
	if slices.Contains(planned, name) {
		return nil, fmt.Errorf("backend %q is not built into this binary yet (built in: %s)", name, strings.Join(builtin, ", "))
	}
	return nil, fmt.Errorf("unknown backend %q (known: %s)", name, strings.Join(append(Names(), planned...), ", "))
}
