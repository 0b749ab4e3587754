package cuda

// PlatformKey is the platform key of a driver version and device name, for the unit tests.
var PlatformKey = platformKey
