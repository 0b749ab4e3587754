/*
 * The defects: each RC_SEED_DEFECT_* macro, given to every file of the build (-D), adds one to the
 * reference, for the defective plugins:
 *
 *   RC_SEED_DEFECT_ARENA_ROLLBACK      a capacity refusal on an arena region first releases every
 *                                      committed region of the bank (a refusal with a side effect);
 *   RC_SEED_DEFECT_RETAINED_FREE       a retained slot's growth frees the buffer, then is refused;
 *   RC_SEED_DEFECT_NO_CAPTURE_WATCH    allocator calls and off-capture work go through during a
 *                                      capture;
 *   RC_SEED_DEFECT_POINTER_EQUALITY    the residency check asks only whether each captured range is
 *                                      still allocated, not by the allocation it had at capture;
 *   RC_SEED_DEFECT_NO_RETAINED_SLOT    a retained slot's buffer grows by free + malloc and may be
 *                                      released or freed, as a plain one's: the retained slot's
 *                                      refusals are gone, and the residency check refuses the
 *                                      replay of the graph that captured it instead.
 *
 * The reference rules (seed.c) call the hooks below where a defect would strike; every defect's
 * code is in defects.c, and built without the defect's macro its hook does nothing.
 */
#ifndef RC_SEED_DEFECTS_H
#define RC_SEED_DEFECTS_H

#include "seed.h"

/* WATCH_OFF is guarding's removed for the capture watch: true, the watch is off. */
#ifdef RC_SEED_DEFECT_NO_CAPTURE_WATCH
#define WATCH_OFF true
#else
#define WATCH_OFF false
#endif

/* RETAINED_OFF is guarding's removed for the retained slot: true, its refusals are gone. */
#ifdef RC_SEED_DEFECT_NO_RETAINED_SLOT
#define RETAINED_OFF true
#else
#define RETAINED_OFF false
#endif

/* Shared by the plugin's files, exported by none: the plugin exports the ABI's three entry points
 * only, whatever its visibility flags. */
#pragma GCC visibility push(hidden)

/* defect_pointer_equality says whether the residency check takes a, the live allocation holding a
 * captured range now (NULL: none), for the one the capture saw there: only with
 * RC_SEED_DEFECT_POINTER_EQUALITY, for any a. */
bool defect_pointer_equality(const allocation *a);

/* defect_arena_rollback is called just before a capacity refusal on an arena region: with
 * RC_SEED_DEFECT_ARENA_ROLLBACK it releases every committed region of the bank. */
void defect_arena_rollback(state *S, rc_thread t);

/* defect_retained_free is called just before the refusal of the growth of the retained slot st,
 * named key: with RC_SEED_DEFECT_RETAINED_FREE it frees the slot's buffer and empties the slot,
 * returning the free's status and error when it failed. RC_OK otherwise. */
int32_t defect_retained_free(state *S, rc_thread t, const slot_state *st, const char *key, rc_error *err);

#pragma GCC visibility pop

#endif
