//go:build !linux

package device

import (
	"runtime"
	"strconv"
	"strings"
)

// selfID, where no system call names the calling OS thread without cgo, is the calling goroutine's
// id, from its stack header ("goroutine 7 [running]:"): the worker's goroutine is the only one its
// locked thread runs, so it identifies the thread as well. Slower than gettid; asked only while
// the worker is busy.
func selfID() int {
	var buf [64]byte
	s := strings.TrimPrefix(string(buf[:runtime.Stack(buf[:], false)]), "goroutine ")
	id, _ := strconv.Atoi(s[:max(strings.IndexByte(s, ' '), 0)])
	return id
}
