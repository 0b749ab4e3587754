package device

import "syscall"

// selfID is the calling OS thread's id (gettid): one system call, no allocation.
func selfID() int { return syscall.Gettid() }
