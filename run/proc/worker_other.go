//go:build !linux

package proc

import "syscall"

// workerAttr puts a worker in its own process group (a Ctrl-C at the terminal is the parent's to
// handle). Only Linux has a parent-death signal: elsewhere a worker whose parent was killed
// outright runs on until it ends of itself (a run's worker: its one instance, bounded by its
// timeout).
func workerAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// lockStarter does nothing where there is no parent-death signal to tie to a thread.
func lockStarter() (unlock func()) { return func() {} }
