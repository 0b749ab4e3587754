// Command mkfakes builds the fake driver libraries into a directory (make fakes: build/fake):
// DIR/libascendcl.so and DIR/libcuda.so.1, DIR/stub/ with both stub variants, and
// DIR/missing-<symbol>/ with the library that lacks that one export, for every export.
//
//	go run ./runtime/fake/cmd/mkfakes [-missing all|none|sym,sym] DIR
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/replaycheck/replaycheck/runtime/fake"
)

func main() {
	missing := flag.String("missing", "all", "exports to build missing-<symbol> variants for: all, none, or a comma-separated list")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: mkfakes [-missing all|none|sym,...] DIR\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *missing); err != nil {
		fmt.Fprintln(os.Stderr, "mkfakes:", err)
		os.Exit(1)
	}
}

type job struct {
	dir string
	lib fake.Library
	v   fake.Variant
}

func run(dir, missing string) error {
	var jobs []job
	for _, lib := range fake.Libraries {
		jobs = append(jobs, job{dir, lib, fake.Variant{}}, job{filepath.Join(dir, "stub"), lib, fake.Variant{Stub: true}})
		for _, sym := range lib.Exports() {
			if missing == "all" || slices.Contains(strings.Split(missing, ","), sym) {
				v := fake.Variant{Omit: sym}
				jobs = append(jobs, job{filepath.Join(dir, v.String()), lib, v})
			}
		}
	}
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, j := range jobs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			_, errs[i] = fake.Build(j.dir, j.lib, j.v)
		})
	}
	wg.Wait()
	failed := 0
	for _, err := range errs {
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d builds failed", failed, len(jobs))
	}
	fmt.Printf("mkfakes: %d libraries in %s\n", len(jobs), dir)
	return nil
}
