// Command mkplugins builds the seed runtime plugins into a directory (make plugins: build/plugins):
// DIR/reference.so and one DIR/<defect>.so for each defective variant.
//
//	go run ./runtime/plugin/seed/cmd/mkplugins DIR
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/replaycheck/replaycheck/internal/cbuild"
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
	err := cbuild.Each(len(names), func(i int) error {
		_, err := seed.Build(dir, names[i])
		return err
	})
	if err != nil {
		return err
	}
	fmt.Printf("mkplugins: %d plugins in %s\n", len(names), dir)
	return nil
}
