package acl

// The parts of the platform key, for the unit tests.
var (
	PlatformKey = platformKey
	Family      = family
	MajorMinor  = majorMinor
)

// TaskKind maps an aclmdlRITaskType to a device.GraphNode kind.
var TaskKind = taskKind
