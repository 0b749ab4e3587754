/* rcw.h: what the interposer's parts share. core.c keeps the socket, the lock, the call stacks
 * and the model, and answers the wrappers in cuda.c and acl.c through the rcw_* calls below; each
 * of those takes the lock itself and sends the events docs/watch-events.md names. */
#ifndef RCW_H
#define RCW_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define RCW_API __attribute__((visibility("default")))

/* Families of entry points (RC_WATCH_BACKEND). */
enum { RCW_CUDA = 1, RCW_ACL = 2 };

/* One wrapped entry point: its exported name, our wrapper, whether it is a per-thread-stream
 * variant, and the real function, resolved once (state 1: looked up in the real library, real may
 * still be NULL when it lacks the name). */
typedef struct {
	const char *name;
	void *wrapper;
	int ptsz;
	void *real;
	int state;
} rcw_entry;

extern rcw_entry rcw_cuda_entries[];
extern const size_t rcw_cuda_count;
extern rcw_entry rcw_acl_entries[];
extern const size_t rcw_acl_count;

/* The real function for e, or NULL when the real library is not loaded or lacks it. The fast
 * paths below are inline: every wrapped call takes them, capturing or not. */
void *rcw_real_slow(int fam, rcw_entry *e);
static inline void *rcw_real(int fam, rcw_entry *e) {
	void *p = __atomic_load_n(&e->real, __ATOMIC_ACQUIRE);
	return p ? p : rcw_real_slow(fam, e);
}
/* The wrapper that stands for real pointer p (from cuGetProcAddress), or p. ptsz: 1 prefers
 * per-thread variants among entries with the same real pointer, 0 the others. */
void *rcw_map_real(int fam, void *p, int ptsz);
extern atomic_int rcw_g_on;     /* connected */
extern int rcw_g_backend;       /* RC_WATCH_BACKEND's families */
extern atomic_int rcw_g_active; /* captures in progress */
/* Whether events are sent for fam: connected and named by RC_WATCH_BACKEND. */
static inline int rcw_watching(int fam) {
	return atomic_load_explicit(&rcw_g_on, memory_order_relaxed) && (rcw_g_backend & fam);
}
/* Whether a capture is in progress anywhere in the process (ops matter only then). */
static inline int rcw_capturing(void) { return atomic_load_explicit(&rcw_g_active, memory_order_relaxed) > 0; }
/* Whether a private pool was declared (record, wait and sync matter only then). */
int rcw_private_declared(void);
int rcw_refuse(void);
long rcw_tid(void);

/* Stream keys: a handle, 0 for the legacy default stream, RCW_PTDS | tid for a thread's
 * per-thread default stream. */
#define RCW_PTDS (1ull << 63)

enum { RCW_DEVICE, RCW_HOST, RCW_ASYNC, RCW_POOL };
enum { RCW_COPY, RCW_MEMSET, RCW_KERNEL };
enum { RCW_SYNC_DEVICE, RCW_SYNC_STREAM, RCW_SYNC_EVENT };

void rcw_alloc(const char *call, uint64_t addr, uint64_t size, int kind, uint64_t pool, uint64_t stream);
void rcw_free(const char *call, uint64_t addr, int kind, uint64_t stream);
void rcw_begin(const char *call, uint64_t stream, int mode);
/* stream's capture ended: ok with graph made, or not (failed or invalidated). acl: also send
 * instantiate with exec = graph. */
void rcw_end(const char *call, uint64_t stream, uint64_t graph, int ok, int acl);
void rcw_instantiate(const char *call, uint64_t graph, uint64_t exec);
void rcw_update(const char *call, uint64_t exec, uint64_t graph, int ok);
/* Sends launch; returns 1 when the launch must be refused (stale and RC_WATCH_REFUSE=1). */
int rcw_launch(const char *call, uint64_t exec, uint64_t stream);
void rcw_destroy_exec(const char *call, uint64_t exec);
void rcw_destroy_graph(const char *call, uint64_t graph);
void rcw_mode(const char *call, int mode);
void rcw_record(const char *call, uint64_t event, uint64_t stream);
void rcw_wait(const char *call, uint64_t stream, uint64_t event);
void rcw_sync(const char *call, int what, uint64_t stream, uint64_t event);
/* A copy (w = dst, r = src) or memset (w = dst) enqueued on stream. */
void rcw_copy(const char *call, uint64_t stream, uint64_t dst, uint64_t src, uint64_t bytes);
void rcw_memset(const char *call, uint64_t stream, uint64_t dst, uint64_t bytes);

/* A kernel's arguments: argument i is args[i].size bytes at args[i].p. */
typedef struct {
	const void *p;
	size_t size;
} rcw_arg;
/* A kernel launch: args (nargs of them), or nolayout set when there is no layout; note, when set,
 * is sent once first (the first launch of a function without a layout). */
void rcw_kernel(const char *call, uint64_t stream, uint64_t func, const rcw_arg *args, size_t nargs, int nolayout,
		const char *note);
/* A kernel launch whose argument block (bytes at block) is device memory, which the host must not
 * read: its arguments are not scanned (nolayout), but the block is a range the graph reads. */
void rcw_kernel_block(const char *call, uint64_t stream, uint64_t func, uint64_t block, uint64_t bytes, const char *note);

/* Whether addr lies in a live device allocation (not host memory the interposer may read). */
int rcw_device_memory(uint64_t addr);

/* The caller's return addresses, innermost first (unwind.c): at most max, how many. */
int rcw_backtrace(void **pcs, int max);
void rcw_unwind_atfork_prepare(void);
void rcw_unwind_atfork_parent(void);
void rcw_unwind_atfork_child(void);

/* Fork: the parts' own locks and caches (cuda.c's layout cache). */
void rcw_cuda_atfork_prepare(void);
void rcw_cuda_atfork_parent(void);
void rcw_cuda_atfork_child(void);

#endif
