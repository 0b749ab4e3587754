// Command mkinterposer builds libreplaycheck-watch.so into a directory (make: build/).
//
//	go run ./watch/interpose/cmd/mkinterposer DIR
package main

import (
	"fmt"
	"os"

	"github.com/replaycheck/replaycheck/watch/interpose"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: mkinterposer DIR")
		os.Exit(2)
	}
	path, err := interpose.Build(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkinterposer:", err)
		os.Exit(1)
	}
	fmt.Println(path)
}
