package cuda

import (
	"errors"
	"fmt"
	"os"

	"github.com/replaycheck/replaycheck/internal/dl"
)

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

func candidates(opts Options) []string {
	if opts.Library != "" {
		return []string{opts.Library}
	}
	if env := os.Getenv(EnvLibrary); env != "" {
		return []string{env}
	}
	return SearchPaths()
}

// ErrNoDriver is a library that loaded but whose cuInit failed: above all the toolkit's stub
// library (CUDA_ERROR_STUB_LIBRARY, 34), present where no driver is installed. A `devices`
// command reports it apart from a missing library.
var ErrNoDriver = errors.New("cuda: the driver library loaded but no driver is usable")

// ErrNoLibrary is in the chain of every *NoLibraryError.
var ErrNoLibrary = errors.New("cuda: no driver library")

// NoLibraryError is the failure to load any CUDA driver library; Tried lists every attempt.
type NoLibraryError struct {
	Tried []dl.Attempt
	Err   error // the loader's error, e.g. dl.ErrNoCgo
}

func (e *NoLibraryError) Error() string {
	if len(e.Tried) == 0 {
		return fmt.Sprintf("cuda: no driver library: %v", e.Err)
	}
	return fmt.Sprintf("cuda: no driver library could be loaded (%s)", dl.Tried(e.Tried))
}

func (e *NoLibraryError) Unwrap() []error { return []error{ErrNoLibrary, e.Err} }
