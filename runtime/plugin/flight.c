// _exit, write and ssize_t are POSIX: -std=c11 declares only ISO C's.
#define _POSIX_C_SOURCE 200809L

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "flight.h"

// Calls in flight, for the exit handlers.
//
// A plugin that calls exit() or quick_exit() would end replaycheck with the plugin's status (0: a
// CI job reads a pass) and no report. Every call into the plugin is made through a wrapper of
// calls.c that notes it in flight: in rcp_flight (any thread) and in rcp_here (the thread making
// it). The handlers the loader registers with atexit and at_quick_exit write which plugin and entry
// were in flight to stderr and _exit 2 when the thread ending the process is inside a call into a
// plugin, or, when strict, when any call into a plugin is in flight (a plugin's own thread), or
// else when a plugin is loaded (an exit between calls). Go never ends the process through either
// itself, except a race-enabled build's exit(0) (racefini), where calls given up on a timeout may
// still be in flight on other threads: its exit handler is not strict. _exit() runs no handler.

#define RCP_FLIGHT 64
static _Atomic(const char *) rcp_flight[RCP_FLIGHT];
static atomic_int rcp_flight_more; // calls in flight that found no free entry in rcp_flight
static _Thread_local const char *rcp_here;
static int rcp_strict;

static const char *rcp_desc(const rc_runtime *r) {
	const char *d = ((const rcp_box *)r)->desc;
	return d ? d : "a runtime plugin was inside a call";
}

static int rcp_flight_enter(const char *d) {
	for (int i = 0; i < RCP_FLIGHT; i++) {
		const char *none = NULL;
		if (atomic_compare_exchange_strong(&rcp_flight[i], &none, d)) return i;
	}
	atomic_fetch_add(&rcp_flight_more, 1);
	return -1;
}

static void rcp_flight_leave(int k) {
	if (k >= 0) atomic_store(&rcp_flight[k], NULL);
	else atomic_fetch_sub(&rcp_flight_more, 1);
}

// rcp_loaded: what the handler says of each plugin loaded and not closed (C memory, the
// Plugin's), for an exit() that no call in flight explains.
#define RCP_LOADED 16
static _Atomic(const char *) rcp_loaded[RCP_LOADED];
static atomic_int rcp_loaded_more; // plugins loaded that found no free entry in rcp_loaded

void rcp_loaded_add(const char *d) {
	for (int i = 0; i < RCP_LOADED; i++) {
		const char *none = NULL;
		if (atomic_compare_exchange_strong(&rcp_loaded[i], &none, d)) return;
	}
	atomic_fetch_add(&rcp_loaded_more, 1);
}

void rcp_loaded_remove(const char *d) {
	for (int i = 0; i < RCP_LOADED; i++) {
		const char *was = d;
		if (atomic_compare_exchange_strong(&rcp_loaded[i], &was, NULL)) return;
	}
	atomic_fetch_sub(&rcp_loaded_more, 1);
}

// rcp_say writes what fn() ended the process during: d, and where.
static void rcp_say(const char *fn, const char *d, const char *where) {
	char line[1536];
	int n = snprintf(line, sizeof line,
	                 "replaycheck: %s() was called while %s%s: a runtime plugin must return from every call and never end the process (docs/runtime-abi.md, Results); replaycheck exits with status 2, its reports unwritten\n", fn, d, where);
	if (n > 0) {
		size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
		ssize_t w = write(2, line, len);
		(void)w;
	}
}

// rcp_ended is the handler of exit() (fn "exit", registered with atexit) and of quick_exit()
// (at_quick_exit). Go ends the process with exit_group, never through either, but for a
// race-enabled build's exit(0): strict is whether any call of either is C code's.
static void rcp_ended(const char *fn, int strict) {
	int said = 0;
	if (rcp_here) {
		rcp_say(fn, rcp_here, "");
		said = 1;
	} else if (strict) {
		const char *other = " (on a thread other than the call's)";
		for (int i = 0; i < RCP_FLIGHT; i++) {
			const char *d = atomic_load(&rcp_flight[i]);
			if (d) {
				rcp_say(fn, d, other);
				said = 1;
			}
		}
		if (atomic_load(&rcp_flight_more) > 0) {
			rcp_say(fn, "more runtime plugin calls were in flight", other);
			said = 1;
		}
		for (int i = 0; !said && i < RCP_LOADED; i++) {
			const char *d = atomic_load(&rcp_loaded[i]);
			if (d) {
				rcp_say(fn, d, "");
				said = 1;
			}
		}
		if (!said && atomic_load(&rcp_loaded_more) > 0) {
			rcp_say(fn, "a runtime plugin was loaded, between replaycheck's calls into it (from a thread of the plugin's own, or other C code)", "");
			said = 1;
		}
	}
	if (said) _exit(2);
}

static void rcp_at_exit(void) { rcp_ended("exit", rcp_strict); }
static void rcp_at_quick_exit(void) { rcp_ended("quick_exit", 1); }

// rcp_register_exit registers both handlers, each whether or not the other could be: 0 when both
// are.
int rcp_register_exit(int strict) {
	rcp_strict = strict;
	int quick = at_quick_exit(rcp_at_quick_exit);
	int plain = atexit(rcp_at_exit);
	return quick != 0 || plain != 0 ? -1 : 0;
}

rcp_note rcp_in(const rc_runtime *r) {
	const char *d = rcp_desc(r);
	rcp_note n = {rcp_here, rcp_flight_enter(d)};
	rcp_here = d;
	return n;
}

void rcp_out(rcp_note n) {
	rcp_here = n.was;
	rcp_flight_leave(n.k);
}
