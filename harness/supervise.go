package harness

import (
	"os"

	"github.com/onsi/ginkgo/v2"

	"github.com/replaycheck/replaycheck/run"
	"github.com/replaycheck/replaycheck/run/proc"
)

// suiteFinished is what a supervised test binary reports on (Supervise); nil when it is not one.
var suiteFinished proc.Finished

// Supervise makes a test binary run in a supervised child of itself (proc.Supervise) and exit with
// its status: a runtime plugin or driver library that ends the process from inside without an
// exit handler (_exit(0)) would otherwise end `go test` with "ok". The child says it began when
// Register builds the tree and that it finished when RunSpecs returns; one that began and ended
// without finishing makes the binary exit 2 (or 128 plus the signal that killed it), saying so.
// Call it from an init function after ServeWorker (or first in TestMain), and run the suite with
// harness.RunSpecs. In the child, and in a worker of -replaycheck.isolate, it returns at once.
func Supervise() {
	if os.Getenv(run.EnvWorker) != "" {
		return
	}
	if f, ok := proc.SupervisedChild(); ok {
		suiteFinished = f
		return
	}
	os.Exit(proc.SuperviseSelf(os.Args[1:], os.Stderr, "replaycheck suite", "-replaycheck.isolate"))
}

// RunSpecs is ginkgo.RunSpecs, and says, in a supervised test binary (Supervise), that the suite
// finished.
func RunSpecs(t ginkgo.GinkgoTestingT, description string, args ...any) bool {
	ok := ginkgo.RunSpecs(t, description, args...)
	if suiteFinished != nil {
		suiteFinished(proc.AnyStatus)
		suiteFinished = nil
	}
	return ok
}
