/*
 * The test hooks: how the tests of replaycheck's run --isolate and of its timeout break a plugin.
 *
 * REPLAYCHECK_SEED_CRASH names one of the plugin's entry points (malloc, free, begin_capture,
 * end_capture, launch, fill, copy, provision): entering it faults with SIGSEGV, a real invalid
 * access, as REPLAYCHECK_FAKE_CRASH does in the fake drivers. REPLAYCHECK_SEED_HANG names one the
 * same way: entering it never returns (a deadlocked allocator), without a device call. Unset,
 * nothing changes.
 */
#ifndef RC_SEED_HOOKS_H
#define RC_SEED_HOOKS_H

/* Shared by the plugin's files, exported by none: the plugin exports the ABI's three entry points
 * only, whatever its visibility flags. */
#pragma GCC visibility push(hidden)

/* crash_point is called on entering the entry point named entry: it faults or hangs there when the
 * environment asks for it, and otherwise returns. */
void crash_point(const char *entry);

#pragma GCC visibility pop

#endif
