/*
 * replaycheck/watch.h: pool annotations for `replaycheck watch`.
 *
 * A caching allocator (a framework's or a runtime's memory pool) tells replaycheck watch about
 * the blocks it hands out, so that a block is an allocation of its own, with generations, as a
 * driver allocation is: the driver only sees the pool's segments. The interposer
 * (libreplaycheck-watch.so, preloaded by `replaycheck watch`) defines these functions. They are
 * declared weak: a program built with them runs unchanged without the interposer, where they are
 * NULL, at the cost of one null test per call. Use the macros, which make that test:
 *
 *     #include "replaycheck/watch.h"
 *
 *     void *block = carve(pool, bytes);
 *     RC_WATCH_POOL_ALLOC(pool, block, bytes);  // if (rc_watch_pool_alloc) rc_watch_pool_alloc(...)
 *     ...
 *     RC_WATCH_POOL_FREE(pool, block);          // the block is back in the pool
 *
 * pool is any pointer naming the pool (its handle); addr is the block's device address.
 *
 * A weak reference is resolved when the program is loaded. An executable (rather than a shared
 * library) that calls these must keep the reference dynamic: build it position-independent (the
 * default of most toolchains) and, with GNU ld, link with -Wl,-z,dynamic-undefined-weak where the
 * linker would otherwise resolve an undefined weak symbol to 0 at link time.
 */
#ifndef REPLAYCHECK_WATCH_H
#define REPLAYCHECK_WATCH_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A block of bytes at addr, taken from pool. */
__attribute__((weak)) void rc_watch_pool_alloc(const void *pool, const void *addr, size_t bytes);
/* The block at addr is back in pool (free for the pool to hand out again). */
__attribute__((weak)) void rc_watch_pool_free(const void *pool, const void *addr);
/* pool is graph-private (PyTorch's and torch_npu's capture pools): blocks allocated and freed
 * inside captures into it are shared by those captures, not findings (docs/watch.md). */
__attribute__((weak)) void rc_watch_pool_private(const void *pool);

#define RC_WATCH_POOL_ALLOC(pool, addr, bytes)                          \
	do {                                                            \
		if (rc_watch_pool_alloc)                                \
			rc_watch_pool_alloc((pool), (addr), (bytes));   \
	} while (0)
#define RC_WATCH_POOL_FREE(pool, addr)                                  \
	do {                                                            \
		if (rc_watch_pool_free)                                 \
			rc_watch_pool_free((pool), (addr));             \
	} while (0)
#define RC_WATCH_POOL_PRIVATE(pool)                                     \
	do {                                                            \
		if (rc_watch_pool_private)                              \
			rc_watch_pool_private((pool));                  \
	} while (0)

#ifdef __cplusplus
}
#endif

#endif
