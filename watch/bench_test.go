package watch_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/replaycheck/replaycheck/device/fake"
	"github.com/replaycheck/replaycheck/internal/cbuild"
	"github.com/replaycheck/replaycheck/watch"
	"github.com/replaycheck/replaycheck/watch/interpose"
)

// The benchmarks run watch/testdata/bench/bench.c over the fake libcuda, alternately unwatched
// (the yardstick) and under watch.Run, and report watched over unwatched. The program times its
// own workload, so starting it, loading the interposer and the checker's end of run are left out.

var benchOnce struct {
	sync.Once
	dir, prog, lib, fakeDir string
	err                     error
}

// TestMain removes what the benchmarks built, once they all ran.
func TestMain(m *testing.M) {
	code := m.Run()
	if benchOnce.dir != "" {
		os.RemoveAll(benchOnce.dir)
	}
	os.Exit(code)
}

func benchSetup(b *testing.B) (prog, lib, fakeDir string) {
	benchOnce.Do(func() {
		dir, err := os.MkdirTemp("", "replaycheck-watch-bench-")
		if err != nil {
			benchOnce.err = err
			return
		}
		o := &benchOnce
		o.dir = dir
		if o.fakeDir = filepath.Join(dir, "fake"); os.Mkdir(o.fakeDir, 0o755) != nil {
			o.err = fmt.Errorf("mkdir %s", o.fakeDir)
			return
		}
		if _, o.err = fake.Build(o.fakeDir, fake.CUDA, fake.Variant{}); o.err != nil {
			return
		}
		if o.lib, o.err = interpose.Build(dir); o.err != nil {
			return
		}
		o.prog = filepath.Join(dir, "bench")
		src, _ := filepath.Abs("testdata/bench/bench.c")
		args := append(cbuild.Compiler(), "-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-o", o.prog, src,
			"-L"+o.fakeDir, "-l:"+fake.CUDA.FileName())
		// With REPLAYCHECK_HARDWARE=cuda the fake only gives the linker its symbols: at run time
		// the dynamic loader finds the host's driver. Otherwise the fake, through the rpath.
		if os.Getenv("REPLAYCHECK_HARDWARE") != "cuda" {
			args = append(args, "-Wl,-rpath,"+o.fakeDir)
		}
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			o.err = fmt.Errorf("%v: %v\n%s", args, err, out)
		}
	})
	if benchOnce.err != nil {
		b.Fatal(benchOnce.err)
	}
	return benchOnce.prog, benchOnce.lib, benchOnce.fakeDir
}

// benchRun runs the workload once and returns the nanoseconds it timed.
func benchRun(b *testing.B, watched bool, workload string, n int) int64 {
	prog, lib, _ := benchSetup(b)
	args := []string{prog, workload, fmt.Sprint(n)}
	var out, errOut bytes.Buffer
	if watched {
		res, err := watch.Run(context.Background(), watch.Config{Program: args, Stdout: &out, Stderr: &errOut,
			Backend: "cuda", Interposer: lib})
		if err != nil {
			b.Fatal(err)
		}
		if res.ExitCode != 0 || len(res.Findings) > 0 {
			b.Fatalf("watched %v: exit %d, %d findings, stderr %s", args, res.ExitCode, len(res.Findings), errOut.String())
		}
	} else {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Stdout, cmd.Stderr = &out, &errOut
		// As many more variables as a watched program gets, of the same lengths: the fake reads
		// its environment at every call, and a longer one costs it more, watched or not.
		cmd.Env = append(os.Environ(), "LD_PRELOAX="+lib, "RC_WATCH_SOCKEX=/tmp/replaycheck-watch-0000000000/events",
			"RC_WATCH_BACKENX=cuda", "RC_WATCH_REFUSX=0")
		if err := cmd.Run(); err != nil {
			b.Fatalf("%v: %v: %s", args, err, errOut.String())
		}
	}
	var ns, ops int64
	if _, err := fmt.Sscanf(out.String(), "ns=%d ops=%d", &ns, &ops); err != nil {
		b.Fatalf("%v printed %q: %v", args, out.String(), err)
	}
	return ns
}

// benchRatio alternates unwatched and watched runs in ABBA order, b.N pairs, and reports the
// median of the pairs' ratios (a process on this kind of VM can run 1.5x slower than the one
// before it, watched or not: one pair's ratio says little, the median of many does) and the
// median difference per operation.
func benchRatio(b *testing.B, workload string, n int) {
	benchSetup(b)
	benchRun(b, false, workload, n) // untimed: page cache, the fake's first use
	benchRun(b, true, workload, n)
	var ratios, over []float64
	b.ResetTimer()
	for i := range b.N {
		var plain, watched int64
		if i%2 == 0 {
			plain = benchRun(b, false, workload, n)
			watched = benchRun(b, true, workload, n)
		} else {
			watched = benchRun(b, true, workload, n)
			plain = benchRun(b, false, workload, n)
		}
		ratios = append(ratios, float64(watched)/float64(max(plain, 1)))
		over = append(over, float64(watched-plain)/float64(n))
	}
	b.ReportMetric(median(ratios), "x-unwatched")
	b.ReportMetric(median(over), "ns-over/op")
}

func median(v []float64) float64 {
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// 10,000 launches of a 100-node graph: target at most 1.10x.
func BenchmarkLaunch100Nodes(b *testing.B) { benchRatio(b, "launch", 10000) }

// An allocation and a free, stacks included: target at most 5 µs over unwatched per pair.
func BenchmarkAllocFree(b *testing.B) { benchRatio(b, "allocfree", 10000) }

// A program that never captures: target at most 1.02x.
func BenchmarkNoCapture(b *testing.B) { benchRatio(b, "nocapture", 20000) }
