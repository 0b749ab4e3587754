package cuda

import "github.com/replaycheck/replaycheck/device/internal/bind"

// Options configure the CUDA backend.
type Options struct {
	// Library is the path of the CUDA driver library to load. "" means $REPLAYCHECK_CUDA_LIB,
	// else SearchPaths.
	Library string
}

// EnvLibrary names the environment variable that overrides the library search.
const EnvLibrary = "REPLAYCHECK_CUDA_LIB"

// SearchPaths is where the backend looks for the driver when neither Options.Library nor
// $REPLAYCHECK_CUDA_LIB names one: the dynamic loader's search for the driver's soname. (Never the
// unversioned libcuda.so, which toolkits ship as a link stub.)
func SearchPaths() []string { return []string{"libcuda.so.1"} }

// candidates are the paths New tries for opts, in order.
func candidates(opts Options) []string { return bind.Candidates(opts.Library, EnvLibrary, SearchPaths) }

// library is how the binding's errors name what it loads.
var library = bind.NewLibrary("cuda", "driver library", "the driver library loaded but no driver is usable")

// ErrNoDriver is a library that loaded but whose cuInit failed: above all the toolkit's stub
// library (CUDA_ERROR_STUB_LIBRARY, 34), present where no driver is installed. A `devices`
// command reports it apart from a missing library. Its chain holds bind.ErrNoDriver, as ACL's
// does.
var ErrNoDriver = library.ErrNoDriver

// ErrNoLibrary is in the chain of every *NoLibraryError of this backend ("cuda: no driver
// library"); its chain holds bind.ErrNoLibrary, as ACL's does.
var ErrNoLibrary = library.ErrNoLibrary

// NoLibraryError is the failure to load any CUDA driver library; Tried lists every attempt. It is
// the one type of every binding (device/internal/bind).
type NoLibraryError = bind.NoLibraryError
