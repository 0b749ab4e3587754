// Command replaycheck verifies graph capture and replay on accelerator runtimes (ACLGraph, CUDA
// graphs, and a pure-Go simulator) and finds data that replays silently wrong.
//
//	replaycheck run [flags] [PATH...]    run probe instances, report a verdict for each
//	replaycheck list [flags] [PATH...]   list the instances probe files expand to
//	replaycheck validate [PATH...]       check probe files, print every problem with file:line:col
//	replaycheck baseline write|diff       record a platform baseline, or compare a run with it
//	replaycheck devices                  every backend, whether it is usable here, and its devices
//	replaycheck version
//	replaycheck help [command]
//
// Everything but this entry point lives in internal/cli; the script tests run this same code as
// a child process (testscript), so exit codes and crashes are real.
package main

import (
	"os"

	"github.com/replaycheck/replaycheck/cmd/replaycheck/internal/cli"
)

func main() { os.Exit(cli.Command(os.Args[1:])) }
