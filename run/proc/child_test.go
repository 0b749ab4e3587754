package proc_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"time"

	"github.com/replaycheck/replaycheck/run/proc"
)

// The specs' children are this test binary again, told what to be by its environment.

// workerMode makes this test binary a worker (proc.RunWorker) that does what the mode says: hang
// sleeps for good; page stores calls on its last-call page, echoes its request on the result pipe
// and exits 3; results says whether it has a result pipe (proc.Results) on standard output and
// exits 0, or 6 when it has none.
const workerMode = "REPLAYCHECK_TEST_PROC_WORKER"

// parentMode makes this test binary the parent of one worker that hangs, for good: the specs of a
// worker whose parent is killed (orphan_test.go) kill it. Mode end-threads ends OS threads all the
// while.
const parentMode = "REPLAYCHECK_TEST_PROC_PARENT"

func init() {
	switch os.Getenv(workerMode) {
	case "":
	case "hang":
		for { // asleep with a timer: a select{} here is a deadlock Go ends, without cgo's threads
			time.Sleep(time.Hour)
		}
	case "page":
		page, err := proc.MapLastCall()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(5)
		}
		page.Store("Malloc")
		page.Store("Launch")
		out, err := proc.Results()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(6)
		}
		io.Copy(out, os.Stdin)
		os.Exit(3)
	case "results":
		if _, err := proc.Results(); err != nil {
			fmt.Println(err)
			os.Exit(6)
		}
		fmt.Println("a result pipe")
		os.Exit(0)
	default:
		os.Exit(4)
	}
	mode := os.Getenv(parentMode)
	if mode == "" {
		return
	}
	if mode == "end-threads" {
		// Goroutines that exit locked to their OS thread end it, as a closed device's worker
		// thread does: one of them must not be the thread that started the worker.
		go func() {
			for {
				var wg sync.WaitGroup
				for range 16 {
					wg.Go(func() { runtime.LockOSThread() })
				}
				wg.Wait()
				time.Sleep(time.Millisecond)
			}
		}()
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), workerMode+"=hang")
	end, err := proc.RunWorker(cmd, nil, func(r io.Reader) { io.Copy(io.Discard, r) })
	fmt.Fprintln(os.Stderr, "parent: the worker ended:", end.Err, err)
	os.Exit(2)
}
