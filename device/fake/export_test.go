package fake

import "github.com/replaycheck/replaycheck/device/sim"

// GenerateProfile generates rules.h for any profile, with the given conditions taken as the ones
// the C core implements.
func GenerateProfile(p *sim.Profile, lib Library, implemented []string) ([]byte, error) {
	return generate(p, platformCodes[lib], implemented)
}

// BuildProfile builds the full lib from profile p instead of the simulator's embedded one, so a
// test can show what the library does without one of its rules.
func BuildProfile(dir string, lib Library, p *sim.Profile) (string, error) {
	rules, err := GenerateProfile(p, lib, Conditions)
	if err != nil {
		return "", err
	}
	return build(dir, lib, Variant{}, rules)
}
