package run

import (
	"syscall"
	"unsafe"
)

// supervisedAttr keeps the supervised child in the supervisor's process group (see Supervise) and
// has the kernel kill it when the supervisor dies (the thread that started it: lockStarter).
func supervisedAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// foreground reports whether this process's group is the foreground group of the terminal on
// its standard input, output or error: a SIGINT, SIGHUP or SIGQUIT it gets then came from the
// terminal, to the whole group.
func foreground() bool {
	for fd := range 3 {
		var pgrp int32
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TIOCGPGRP, uintptr(unsafe.Pointer(&pgrp))); e == 0 {
			return int(pgrp) == syscall.Getpgrp()
		}
	}
	return false
}
