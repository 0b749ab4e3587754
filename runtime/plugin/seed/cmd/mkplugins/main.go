// Command mkplugins builds the seed runtime plugins into a directory (make plugins: build/plugins):
// DIR/reference.so and one DIR/<defect>.so for each defective variant.
//
//	go run ./runtime/plugin/seed/cmd/mkplugins DIR
package main

import (
	"flag"
	"fmt"
	"os"
	"sync"

	"github.com/replaycheck/replaycheck/runtime/plugin/seed"
)

func main() {
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: mkplugins DIR\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, "mkplugins:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	names := seed.Names()
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() { _, errs[i] = seed.Build(dir, name) })
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
		return fmt.Errorf("%d of %d builds failed", failed, len(names))
	}
	fmt.Printf("mkplugins: %d plugins in %s\n", len(names), dir)
	return nil
}
