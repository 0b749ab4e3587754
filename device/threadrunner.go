package device

// ThreadRunner is an optional capability of a Device: a session on the OS thread that serves t,
// whose calls run there as one hand-off instead of one each, stated in Extensions.Threads.
//
// OnThread runs f on t's thread (the session), hands it on, a view of the device, and waits for it.
// Every call f makes on on for t runs there inline, exactly as if it had been handed off on its own
// (the same thread, the same rules, the same faults), without the device having to find out which
// thread it is on; on is the device in every other respect (the same state and capabilities). Calls
// for another thread are handed off as usual, and so are calls on on once f has returned. A call
// for t made on on from another goroutine while f runs runs on that goroutine, not on t's thread:
// that is only right while f waits for it (nothing then runs on t's thread; see SessionView). f
// must not wait for another goroutine that calls the device itself (not on) for t: that goroutine's
// call would wait for f. A panic in f is raised again on the caller's goroutine. When the device
// cannot (it is closed, or t is unknown), OnThread returns an error without running f, and the
// caller may run f itself. A wrapper that passes OnThread on to the device it wraps hands f a view
// of itself (itself will do: its calls for t then run inline after the device checks the thread),
// never the inner view, which would bypass it; a caller given a ThreadRunner that a wrapper
// forwarded keeps calling through the wrapper.
type ThreadRunner interface {
	OnThread(t Thread, f func(on Device)) error
}

// SessionView is an optional capability of the view a ThreadRunner hands its f (and of wrappers
// that pass it on): InSession(t) reports whether the view runs its calls for t inline, on the
// calling goroutine, right now: it is the view of a session for t and the session is running. f,
// holding the view, is on t's thread: work of its own for t that must run on t's thread (a runtime
// plugin's call) can then be done where it is instead of being handed to a thread of its own. The
// view's calls for t from another goroutine that f waits for run inline too, on that goroutine: t's
// thread is blocked in f, so nothing runs there at the same time, and handing them to it would wait
// for f.
type SessionView interface {
	InSession(t Thread) bool
}

// CallWatcher is an optional capability of the device a runtime under test is opened on (the
// engine's watched device): WatchCall runs f, a call into the runtime's own code (C code of a
// team's, which may deadlock or spin), under the watch that times device calls. Code that never
// returns then ends the instance in a timeout naming call, as a device call that never returns
// does, instead of hanging the run; the device calls f makes are watched as usual. f may make
// them from any thread, while WatchCall waits for it.
type CallWatcher interface {
	WatchCall(call string, f func())
}
