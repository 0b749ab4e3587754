// Command mkfakes builds the fake driver libraries into a directory (make fakes: build/fake):
// DIR/libascendcl.so and DIR/libcuda.so.1, DIR/stub/ with both stub variants, and
// DIR/missing-<symbol>/ with the library that lacks that one export, for every export.
//
//	go run ./device/fake/cmd/mkfakes [-missing all|none|sym,sym] DIR
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/replaycheck/replaycheck/device/fake"
	"github.com/replaycheck/replaycheck/internal/cbuild"
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
	err := cbuild.Each(len(jobs), func(i int) error {
		_, err := fake.Build(jobs[i].dir, jobs[i].lib, jobs[i].v)
		return err
	})
	if err != nil {
		return err
	}
	fmt.Printf("mkfakes: %d libraries in %s\n", len(jobs), dir)
	return nil
}
