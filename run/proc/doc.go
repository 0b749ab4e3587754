// Package proc runs replaycheck's child processes: the supervised child a front end runs its run
// in, and the worker a run gives one instance to (run --isolate). It knows processes, pipes,
// signals and a shared page; what a child does, what its lines mean (probes, results,
// configurations) is package run's, and proc imports nothing of replaycheck.
//
// # Supervision
//
// A runtime plugin or driver library that ends the process from inside without an exit handler
// (_exit(), or a kill of its own) leaves nothing to say so, and its status, 0 for _exit(0), reads
// as a pass. So a front (the CLI's run, the Ginkgo suite) starts itself again as a supervised child
// (SuperviseSelf, Supervise) and waits for it. The child has EnvSupervised set to 3 and the write
// end of a pipe as descriptor 3; SupervisedChild, called once and early, takes both (and forgets
// the variable, so that the processes the child starts are not taken for supervised children) and
// returns the Finished the child reports on, one line each:
//
//	started        Finished(Started): it begins its run, before it loads or opens anything
//	finished CODE  Finished(CODE): it finished, and exits with status CODE
//	finished       Finished(AnyStatus): it finished, and the status it exits with is its own
//	               (a test binary, whose status is decided after it can report)
//
// The supervisor's status is the child's when its last line is a finish that matches how it
// ended (a signal after "finished CODE", a SIGINT once the run stopped listening, changes
// nothing), or when it exited having said nothing (it began no run: a test binary whose -run
// selected no suite). A child that began and ended otherwise ended unfinished: the supervisor says so on
// stderr, naming the front's isolate flag as the cure, and returns 2, or 128 plus the signal that
// killed it. A child ended by a stop signal (SIGINT, SIGTERM, SIGHUP, SIGPIPE) gets no such line:
// its end is the user's doing, and so is one ended after the supervisor itself got a signal. Then
// the supervisor ends itself by the same signal (SIGPIPE excepted), so that a shell sees what it
// saw before there was a supervisor.
//
// The child stays in the supervisor's process group, so the terminal treats the two as one job:
// a Ctrl-C, Ctrl-Z or hangup reaches both, the child may write to the terminal (a child in a group
// of its own is stopped by its first write under `stty tostop`), and job control needs nothing
// from the supervisor. The supervisor passes on SIGTERM always, and SIGINT, SIGHUP or SIGQUIT only
// when its group is not the foreground group of its controlling terminal, guessing that a signal it
// alone got was sent to it alone. A signal the supervisor was started ignoring (nohup's SIGHUP)
// stays ignored, by both.
//
// # Workers
//
// RunWorker starts a worker and waits for it. The worker reads its request on standard input,
// writes its lines on the result pipe (descriptor ResultsFD, 3) and stores the name of each call
// it is about to make on the last-call page (descriptor LastCallFD, 4; MapLastCall). It runs in a
// process group of its own (a Ctrl-C at the terminal is the parent's to handle), with the first
// 64 KiB of its standard error kept. RunWorker says how it ended (End): Wait's error, the signal
// that killed it or that the Go runtime said it could not handle (a signal in C code, after which
// the runtime exits 2), the line of its standard error that says why (a panic, a fatal error) and
// the last call it stored.
//
// # The last-call page
//
// The last-call page is one page of an unlinked file that the parent and the worker share
// (MAP_SHARED). It has two slots, each a 4-byte length and a name; byte 0 says which is current.
// A name goes into the other slot, then byte 0 flips to it, so the page always holds a whole name:
// one that a worker dying while it writes leaves is the previous one. A store is a few bytes of
// memory, no system call, and nothing a crash in the call that follows can undo: announcing each
// call on the result pipe cost about 4 µs a call.
//
// # Parent death
//
// On Linux a supervised child and a worker are killed (SIGKILL) when their parent dies, even by
// SIGKILL or the OOM killer: a killed run leaves no process holding a device. Linux ties that
// parent-death signal to the thread that started the child, so Supervise and RunWorker keep their
// goroutine on its OS thread until the child has ended (the Go runtime ends a thread whose
// goroutine exits locked to it, as a device's worker thread does).
//
// # What it cannot do
//
// Other systems have no parent-death signal: there a child whose parent was killed outright runs
// on until it ends of itself. The foreground guess fails both ways: a signal sent to the whole
// group (timeout(1), kill -TERM -PGID) reaches the supervised child twice, which a run reads as a
// second signal (abandon the instance in flight), and a SIGINT, SIGHUP or SIGQUIT sent to the
// supervisor alone while the job is in the foreground is not passed on. The last-call page says
// which call a worker was about to make, not whether the call returned; a name longer than 2,040
// bytes is cut. A worker that exits 0 having written nothing, or that never stored a call, is
// told apart only by what its lines say, which is the caller's to read.
package proc
