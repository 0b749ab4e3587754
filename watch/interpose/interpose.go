// Package interpose builds libreplaycheck-watch.so, the C interposer `replaycheck watch` preloads
// into the program it watches (LD_PRELOAD).
//
// The library wraps the CUDA driver and ACL entry points docs/watch-events.md names, reached in
// any of three ways: the exported symbol (a program linked to libcuda or libascendcl binds to
// ours), dlsym/dlvsym of the name from any handle, and, for CUDA, cuGetProcAddress(_v2), which is
// how the CUDA runtime reaches every driver entry point. Each wrapper calls the real function and
// sends one event per call that matters over the SOCK_SEQPACKET socket RC_WATCH_SOCKET names;
// without that socket it passes everything through and sends nothing. It never synchronises,
// allocates device memory or queries capture state: its model is host-side. It also defines the
// pool annotations of include/replaycheck/watch.h. No Go runs inside the program.
package interpose

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/replaycheck/replaycheck/internal/cbuild"
)

// FileName is the library's file name, also its soname.
const FileName = "libreplaycheck-watch.so"

// EnvLibrary names a prebuilt library Cached returns instead of building one.
const EnvLibrary = "REPLAYCHECK_WATCH_LIB"

// The environment the library reads (docs/watch-events.md).
const (
	EnvSocket  = "RC_WATCH_SOCKET"
	EnvBackend = "RC_WATCH_BACKEND"
	EnvRefuse  = "RC_WATCH_REFUSE"
)

//go:embed c/rcw.h c/core.c c/unwind.c c/cuda.c c/acl.c
var sources embed.FS

// units are the files compiled, in order.
var units = []string{"core.c", "unwind.c", "cuda.c", "acl.c"}

func files() (map[string][]byte, error) {
	out := map[string][]byte{}
	err := fs.WalkDir(sources, "c", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := sources.ReadFile(path)
		if err != nil {
			return err
		}
		out[filepath.Base(path)] = data
		return nil
	})
	return out, err
}

// Build compiles the library into dir and returns its absolute path.
func Build(dir string) (string, error) {
	src, err := files()
	if err != nil {
		return "", fmt.Errorf("interpose: %w", err)
	}
	args := append([]string{"-D_GNU_SOURCE", "-O2"}, units...)
	return cbuild.Build(cbuild.Library{
		What: "interpose: build " + FileName, Dir: dir, Name: FileName, Sources: src,
		Args: append(args, "-ldl", "-pthread"),
	})
}

// SourceHash identifies the sources (and compiler) a library is built from.
func SourceHash() (string, error) {
	src, err := files()
	if err != nil {
		return "", fmt.Errorf("interpose: %w", err)
	}
	h := sha256.New()
	for _, name := range append([]string{"rcw.h"}, units...) {
		fmt.Fprintf(h, "%s %d\n", name, len(src[name]))
		h.Write(src[name])
	}
	fmt.Fprintf(h, "cc %q\n", cbuild.Compiler())
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// Cached returns the library built once per source hash under os.UserCacheDir()/replaycheck/, or
// the one $REPLAYCHECK_WATCH_LIB names. Concurrent processes are safe: each builds into a
// temporary directory beside the final one and renames it into place; the first rename wins.
func Cached() (string, error) {
	if lib := os.Getenv(EnvLibrary); lib != "" {
		if _, err := os.Stat(lib); err != nil {
			return "", fmt.Errorf("interpose: $%s: %w", EnvLibrary, err)
		}
		return filepath.Abs(lib)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("interpose: %w", err)
	}
	return cachedIn(filepath.Join(cache, "replaycheck"))
}

func cachedIn(root string) (string, error) {
	sum, err := SourceHash()
	if err != nil {
		return "", err
	}
	final := filepath.Join(root, "watch-"+sum)
	lib := filepath.Join(final, FileName)
	if _, err := os.Stat(lib); err == nil {
		return lib, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("interpose: %w", err)
	}
	tmp, err := os.MkdirTemp(root, ".watch-"+sum+"-")
	if err != nil {
		return "", fmt.Errorf("interpose: %w", err)
	}
	defer os.RemoveAll(tmp)
	if _, err := Build(tmp); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, final); err != nil {
		// Another process renamed its build first: use that one.
		if _, serr := os.Stat(lib); serr == nil {
			return lib, nil
		}
		return "", fmt.Errorf("interpose: %w", err)
	}
	return lib, nil
}
