package acl

// The parts of the platform key, for the unit tests.
var (
	PlatformKey = platformKey
	Family      = family
	MajorMinor  = majorMinor
)
