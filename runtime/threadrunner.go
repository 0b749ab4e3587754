package runtime

// ThreadRunner is an optional capability of a Device: running a whole batch of calls on the OS
// thread that serves t, as one hand-off instead of one per call. The engine looks for it with As.
//
// OnThread runs f on t's thread and waits for it; every call f makes on the device for t runs
// there inline, exactly as if it had been handed off on its own (the same thread, the same rules,
// the same faults). Calls for another thread are handed off as usual. f must not wait for another
// goroutine that calls the device for t: that goroutine's call would wait for f. A panic in f is
// raised again on the caller's goroutine. When the device cannot (it is closed, or t is unknown),
// OnThread returns an error without running f, and the caller may run f itself.
type ThreadRunner interface {
	OnThread(t Thread, f func()) error
}
