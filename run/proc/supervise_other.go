//go:build !linux

package proc

import "syscall"

// supervisedAttr keeps the supervised child in the supervisor's process group; only Linux has a
// parent-death signal.
func supervisedAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

// foreground reports false: the supervisor passes on every signal it gets.
func foreground() bool { return false }
