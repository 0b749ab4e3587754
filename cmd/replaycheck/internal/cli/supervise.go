package cli

import (
	"os"

	"github.com/replaycheck/replaycheck/run/proc"
)

// Command is what the binary runs: Main in this process, or, for `run`, Main in a supervised
// child of this process (proc.Supervise: a plugin's _exit(0) that ends the run unfinished is not a
// pass). The tests that call Main directly run no child.
func Command(args []string) int {
	if isWorker() {
		return Main(args, os.Stdout, os.Stderr)
	}
	if finished, ok := proc.SupervisedChild(); ok {
		finished(proc.Started)
		code := Main(args, os.Stdout, os.Stderr)
		finished(code)
		return code
	}
	if len(args) > 0 && args[0] == "run" {
		return proc.SuperviseSelf(args, os.Stderr, "replaycheck run", "--isolate")
	}
	return Main(args, os.Stdout, os.Stderr)
}
