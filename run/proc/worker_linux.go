package proc

import (
	"runtime"
	"syscall"
)

// workerAttr puts a worker in its own process group (a Ctrl-C at the terminal is the parent's to
// handle: a run finishes the instance in flight, a second abandons it and the command's context
// kills the worker) and has the kernel kill it when the parent dies, so a parent killed outright
// (SIGKILL, the OOM killer) leaves no worker behind holding what it holds (a device).
func workerAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// lockStarter keeps the goroutine that starts a child (a worker, a supervised child) on its OS
// thread until unlock: Linux sends the parent-death signal when the thread that forked the child
// ends, not the process, and the Go runtime ends a thread whose goroutine exits locked to it (a
// device's worker thread does). While this goroutine holds the thread no other can end it.
func lockStarter() (unlock func()) {
	runtime.LockOSThread()
	return runtime.UnlockOSThread
}
