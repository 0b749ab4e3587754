package proc

import (
	"fmt"
	"syscall"
)

var signalNames = map[syscall.Signal]string{
	syscall.SIGSEGV: "SIGSEGV", syscall.SIGBUS: "SIGBUS", syscall.SIGABRT: "SIGABRT", syscall.SIGILL: "SIGILL",
	syscall.SIGFPE: "SIGFPE", syscall.SIGKILL: "SIGKILL", syscall.SIGTERM: "SIGTERM", syscall.SIGINT: "SIGINT",
	syscall.SIGTRAP: "SIGTRAP", syscall.SIGSYS: "SIGSYS", syscall.SIGPIPE: "SIGPIPE", syscall.SIGHUP: "SIGHUP",
	syscall.SIGQUIT: "SIGQUIT",
}

// signalName is a signal's name as replaycheck's messages give it: SIGSEGV, SIGKILL.
func signalName(s syscall.Signal) string {
	if n, ok := signalNames[s]; ok {
		return n
	}
	return fmt.Sprintf("%d (%v)", int(s), s)
}
