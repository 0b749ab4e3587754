package acl

import (
	"os"
	"path/filepath"

	"github.com/replaycheck/replaycheck/device/internal/bind"
)

// Options configure the ACL backend.
type Options struct {
	// Library is the path of the ACL runtime library to load. "" means the library named by
	// $REPLAYCHECK_ACL_LIB, else the first of SearchPaths that loads.
	Library string
}

// EnvLibrary names the environment variable that overrides the library search.
const EnvLibrary = "REPLAYCHECK_ACL_LIB"

// SearchPaths is where the backend looks for the ACL runtime when neither Options.Library nor
// $REPLAYCHECK_ACL_LIB names one, in order: the dynamic loader's own search for libascendcl.so,
// then for libacl_rt.so (newer runtimes), then the usual CANN install locations, $ASCEND_HOME_PATH
// (set by CANN's set_env.sh) first. The one place these locations are listed.
func SearchPaths() []string {
	names := []string{"libascendcl.so", "libacl_rt.so"}
	var dirs []string
	if home := os.Getenv("ASCEND_HOME_PATH"); home != "" {
		dirs = append(dirs, filepath.Join(home, "lib64"), filepath.Join(home, "runtime", "lib64"))
	}
	dirs = append(dirs,
		"/usr/local/Ascend/ascend-toolkit/latest/lib64",
		"/usr/local/Ascend/ascend-toolkit/latest/runtime/lib64",
		"/usr/local/Ascend/cann/lib64",
		"/usr/local/Ascend/latest/lib64",
	)
	paths := append([]string(nil), names...)
	for _, d := range dirs {
		for _, n := range names {
			paths = append(paths, filepath.Join(d, n))
		}
	}
	return paths
}

// candidates are the paths New tries for opts, in order.
func candidates(opts Options) []string { return bind.Candidates(opts.Library, EnvLibrary, SearchPaths) }

// library is how the binding's errors name what it loads.
var library = bind.NewLibrary("acl", "runtime library", "the runtime library loaded but the driver is not usable")

// ErrNoDriver is a library that loaded but whose runtime has no usable device driver: aclInit
// failed, or aclrtGetDeviceCount did (ACL_ERROR_RT_NO_DEVICE, 207004, from a CANN install without
// the NPU driver). A `devices` command reports it apart from a missing library, and apart from a
// driver that counts no device. Its chain holds bind.ErrNoDriver, as CUDA's does.
var ErrNoDriver = library.ErrNoDriver

// NoLibraryError is the failure to load any ACL runtime library; Tried lists every attempt. It is
// the one type of every binding (device/internal/bind).
type NoLibraryError = bind.NoLibraryError

// ErrNoLibrary is in the chain of every *NoLibraryError of this backend ("acl: no runtime
// library"); its chain holds bind.ErrNoLibrary, as CUDA's does.
var ErrNoLibrary = library.ErrNoLibrary
