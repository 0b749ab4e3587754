package runtime

// ThreadRunner is an optional capability of a Device: running a whole batch of calls on the OS
// thread that serves t, as one hand-off instead of one per call. The engine looks for it with As.
//
// OnThread runs f on t's thread, hands it on, a view of the device, and waits for it. Every call
// f makes on on for t runs there inline, exactly as if it had been handed off on its own (the same
// thread, the same rules, the same faults), without the device having to find out which thread
// it is on; on is the device in every other respect (the same state and capabilities). Calls for
// another thread are handed off as usual, and so are calls on on once f has returned. on is f's
// alone: handed to another goroutine while f runs, its calls would run on the wrong thread. f must
// not wait for another goroutine that calls the device for t: that goroutine's call would wait for
// f. A panic in f is raised again on the caller's goroutine. When the device cannot (it is closed,
// or t is unknown), OnThread returns an error without running f, and the caller may run f itself.
// A wrapper that passes OnThread on to the device it wraps hands f a view of itself (itself will
// do: its calls for t then run inline after the device checks the thread), never the inner view,
// which would bypass it; a caller that finds a ThreadRunner behind wrappers (As) keeps calling
// through the wrappers.
type ThreadRunner interface {
	OnThread(t Thread, f func(on Device)) error
}
