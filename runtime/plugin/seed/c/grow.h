/*
 * Growable arrays, and the rest of the host memory the seed runtime takes for its own bookkeeping.
 *
 * Every size is checked before it is computed: an element count or a byte count that would not fit
 * in a size_t never wraps round into a small allocation; it is out of memory, as a failed malloc
 * is. Out of memory for the bookkeeping aborts the process (out_of_memory): the state cannot go on
 * half-updated, and the harness cannot go on without it.
 */
#ifndef RC_SEED_GROW_H
#define RC_SEED_GROW_H

#include <stddef.h>
#include <string.h>

/* Shared by the plugin's files, exported by none: the plugin exports the ABI's three entry points
 * only, whatever its visibility flags. */
#pragma GCC visibility push(hidden)

/* out_of_memory ends the process: host memory for the bookkeeping cannot be had. */
_Noreturn void out_of_memory(void);

/* grow_need is n + more, the element count a growth needs; out of memory when it does not fit. */
size_t grow_need(size_t n, size_t more);

/* grow returns v (holding *cap elements of elem bytes) with room for at least need elements,
 * setting *cap: v when it has the room, else v reallocated to the next doubling of *cap (8 for an
 * empty array) that holds need, capped at the most elements a size_t counts in bytes. */
void *grow(void *v, size_t *cap, size_t need, size_t elem);

/* alloc_array is n zeroed elements of elem bytes (at least one), n * elem checked. */
void *alloc_array(size_t n, size_t elem);

/* dupstr is a copy of s. */
char *dupstr(const char *s);

#pragma GCC visibility pop

#define VEC(T) struct { T *v; size_t n, cap; }
#define PUSH(vec, val) \
	do { \
		(vec).v = grow((vec).v, &(vec).cap, grow_need((vec).n, 1), sizeof *(vec).v); \
		(vec).v[(vec).n++] = (val); \
	} while (0)
#define INSERT(vec, i, val) \
	do { \
		(vec).v = grow((vec).v, &(vec).cap, grow_need((vec).n, 1), sizeof *(vec).v); \
		memmove(&(vec).v[(i) + 1], &(vec).v[i], ((vec).n - (i)) * sizeof *(vec).v); \
		(vec).v[i] = (val); \
		(vec).n++; \
	} while (0)
#define DELETE(vec, i) \
	do { \
		memmove(&(vec).v[i], &(vec).v[(i) + 1], ((vec).n - (i) - 1) * sizeof *(vec).v); \
		(vec).n--; \
	} while (0)

#endif
