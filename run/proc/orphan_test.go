package proc_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// procStat is the state, parent and process group of process pid from /proc (state "" when it is
// gone).
func procStat(pid int) (state string, ppid, pgrp int) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return "", 0, 0
	}
	// pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses, so split after the
	// last ')'.
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	if len(f) < 3 {
		return "", 0, 0
	}
	ppid, _ = strconv.Atoi(f[1])
	pgrp, _ = strconv.Atoi(f[2])
	return f[0], ppid, pgrp
}

// workerOf is the worker process of pid: a child that leads its own process group, as a worker
// does (not the child the os package forks once to probe for pidfd support); 0 when there is none.
func workerOf(pid int) int {
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		if child, err := strconv.Atoi(d.Name()); err == nil {
			if _, ppid, pgrp := procStat(child); ppid == pid && pgrp == child {
				return child
			}
		}
	}
	return 0
}

var _ = Describe("a worker whose parent is killed", func() {
	// start starts a parent (mode: 1, or end-threads to end OS threads all the while) and returns
	// it and its worker, once the worker hangs.
	start := func(mode string) (*exec.Cmd, int) {
		GinkgoHelper()
		if runtime.GOOS != "linux" {
			Skip("the parent-death signal is Linux's")
		}
		parent := exec.Command(os.Args[0])
		parent.Env = append(os.Environ(), parentMode+"="+mode)
		parent.Stderr = GinkgoWriter
		Expect(parent.Start()).To(Succeed())
		var worker int
		Eventually(func() int {
			if s, _, _ := procStat(parent.Process.Pid); s == "Z" {
				StopTrying("the parent exited: its worker ended at once")
			}
			worker = workerOf(parent.Process.Pid)
			return worker
		}, "30s", "10ms").ShouldNot(BeZero())
		DeferCleanup(func() { // if the spec failed: a worker still alive, still in its own group
			if s, _, pgrp := procStat(worker); s != "" && s != "Z" && pgrp == worker {
				_ = syscall.Kill(worker, syscall.SIGKILL)
			}
		})
		DeferCleanup(func() { _ = parent.Process.Kill(); _ = parent.Wait() })
		return parent, worker
	}
	state := func(pid int) func() string {
		return func() string { s, _, _ := procStat(pid); return s }
	}

	It("lives while its parent does, though the parent's goroutines end OS threads", func() {
		_, worker := start("end-threads")
		// Linux sends the parent-death signal when the thread that started the child ends: the
		// parent keeps that thread for the child's life (worker_linux.go, lockStarter).
		Consistently(state(worker), "1s", "10ms").ShouldNot(Or(BeEmpty(), Equal("Z")))
	})

	It("dies with it (Linux: the parent-death signal), instead of running on without it", func() {
		parent, worker := start("1")
		Consistently(state(worker), "200ms").ShouldNot(Or(BeEmpty(), Equal("Z")), "the worker hangs while its parent lives")
		Expect(parent.Process.Kill()).To(Succeed())
		_ = parent.Wait()
		// Gone, or a zombie where no init reaps it (a container's): dead either way.
		Eventually(state(worker), "5s", "10ms").Should(Or(BeEmpty(), Equal("Z")))
	})
})
