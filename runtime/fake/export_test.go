package fake

import "github.com/replaycheck/replaycheck/runtime/sim"

// GenerateProfile generates rules.h for any profile, with the given conditions taken as the ones
// the C core implements.
func GenerateProfile(p *sim.Profile, lib Library, implemented []string) ([]byte, error) {
	return generate(p, platformCodes[lib], implemented)
}
