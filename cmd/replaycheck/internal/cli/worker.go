package cli

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/replaycheck/replaycheck/run"
	"github.com/replaycheck/replaycheck/run/proc"
)

// worker is the binary started by run --isolate (run.EnvWorker set): it runs the one instance
// the request on stdin names and writes its lines to the result pipe (proc.Results,
// run.ServeWorker). It is no subcommand: nothing a user types reaches it.
func worker(stderr io.Writer) int {
	out, err := proc.Results()
	if err != nil {
		fmt.Fprintf(stderr, "replaycheck worker: %v\n", err)
		return ExitUsage
	}
	if err := run.ServeWorker(context.Background(), os.Stdin, out); err != nil {
		fmt.Fprintf(stderr, "replaycheck worker: %v\n", err)
		return ExitUsage
	}
	return ExitOK
}

// isWorker reports whether this process was started as a worker of run --isolate.
func isWorker() bool { return os.Getenv(run.EnvWorker) != "" }
