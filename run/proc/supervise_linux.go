package proc

import (
	"syscall"
	"unsafe"
)

// supervisedAttr keeps the supervised child in the supervisor's process group (see Supervise) and
// has the kernel kill it when the supervisor dies (the thread that started it: lockStarter).
func supervisedAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// foreground reports whether this process's group is the foreground group of its controlling
// terminal (asked through /dev/tty, whatever standard input, output and error are: go test gives a
// test binary a pipe and /dev/null): a SIGINT, SIGHUP or SIGQUIT it gets then most likely came from
// the terminal, to the whole group. False when there is no controlling terminal.
func foreground() bool {
	tty, err := syscall.Open("/dev/tty", syscall.O_RDONLY|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer syscall.Close(tty)
	var pgrp int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(tty), syscall.TIOCGPGRP, uintptr(unsafe.Pointer(&pgrp))); e != 0 {
		return false
	}
	return int(pgrp) == syscall.Getpgrp()
}
