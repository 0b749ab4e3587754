// Package cbuild compiles the project's C code into shared libraries with the system C compiler
// ($CC, else cc): the fake driver libraries (device/fake) and the seed runtime plugins
// (runtime/plugin/seed). A build writes its sources into a directory of its own, runs one
// compiler command there, and removes the sources when it succeeded; when it failed it leaves
// them, and its error names the directory, the command and what the compiler printed.
package cbuild

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// flags are the compiler flags every shared library is built with: C11, warnings as errors, and
// only what the sources mark visible exported.
var flags = []string{"-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-shared", "-fPIC", "-pthread", "-fvisibility=hidden"}

// Compiler is $CC split into words, or cc.
func Compiler() []string {
	if cc := strings.Fields(os.Getenv("CC")); len(cc) > 0 {
		return cc
	}
	return []string{"cc"}
}

// Library is one shared library to build.
type Library struct {
	// What names the build in its errors, e.g. "fake: build libcuda (full)".
	What string
	// Dir is where the library is written, and the sources' directory made (src-<Name up to its
	// first dot>-*).
	Dir string
	// Name is the library's file name, also its soname.
	Name string
	// Sources are the files written into the sources' directory, by path relative to it.
	Sources map[string][]byte
	// Args follow the common flags (C11, warnings as errors, hidden visibility), the soname and -o:
	// defines, include directories, the files to compile, linker options.
	Args []string
}

// Build compiles l and returns the library's absolute path.
func Build(l Library) (string, error) {
	wrap := func(err error) error { return fmt.Errorf("%s: %w", l.What, err) }
	if err := os.MkdirAll(l.Dir, 0o755); err != nil {
		return "", wrap(err)
	}
	out, err := filepath.Abs(filepath.Join(l.Dir, l.Name))
	if err != nil {
		return "", wrap(err)
	}
	stem, _, _ := strings.Cut(l.Name, ".")
	src, err := os.MkdirTemp(l.Dir, "src-"+stem+"-")
	if err != nil {
		return "", wrap(err)
	}
	for name, data := range l.Sources {
		path := filepath.Join(src, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return "", fmt.Errorf("%s in %s: %w", l.What, src, err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return "", fmt.Errorf("%s in %s: %w", l.What, src, err)
		}
	}
	cc := Compiler()
	args := append(slices.Concat(cc[1:], flags), "-Wl,-soname,"+l.Name, "-o", out)
	args = append(args, l.Args...)
	cmd := exec.Command(cc[0], args...)
	cmd.Dir = src
	var printed bytes.Buffer
	cmd.Stdout, cmd.Stderr = &printed, &printed
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s in %s: %s %s: %w\n%s", l.What, src, cc[0], strings.Join(args, " "), err, printed.String())
	}
	if err := os.RemoveAll(src); err != nil {
		return "", wrap(err)
	}
	return out, nil
}

// Each runs build(i) for every i below n, at most GOMAXPROCS at once, and returns their errors
// joined, followed by how many of the n failed; nil when none did.
func Each(n int, build func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = build(i)
		})
	}
	wg.Wait()
	failed := 0
	for _, err := range errs {
		if err != nil {
			failed++
		}
	}
	if failed == 0 {
		return nil
	}
	return errors.Join(append(errs, fmt.Errorf("%d of %d builds failed", failed, n))...)
}
