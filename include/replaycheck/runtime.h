/*
 * replaycheck runtime plugin ABI, version 4.
 *
 * A team puts its own runtime (its allocator and its capture guards) under replaycheck's probes by
 * building a shared library that implements this ABI and running `replaycheck run --runtime
 * PATH.so`. The runtime is a decorator over a device: replaycheck hands it the INNER device (the
 * simulator, ACL, CUDA or a fake driver, whichever the run uses) as a table of calls, and the
 * runtime returns the device the engine drives: the same table of calls, plus the allocator calls a
 * framework puts in front of the driver (slots that provision and grow named buffers, pools, an
 * arena bank, retirement). Every probe op reaches the runtime through that table; what the runtime
 * lets through it forwards to the inner device, what it refuses it refuses.
 *
 * Loading. replaycheck dlopens the library and resolves rc_runtime_abi_version, rc_runtime_open
 * and rc_runtime_close; a missing one fails the load and is named. rc_runtime_abi_version() must
 * return RC_ABI_VERSION as the plugin was compiled. replaycheck loads plugins of version 4 (this
 * header), of version 3 (without rc_runtime.refusal_rule, which replaycheck then treats as NULL),
 * of version 2 (without rc_runtime.create_stream_with_flags either, NULL too) and of version 1
 * (without rc_runtime.slots_changed either, NULL too); any other version is refused at load with
 * the numbers. For every probe instance, rc_runtime_open is called with
 * the version the plugin reported, the instance's execution mode (program: guards off, kernel:
 * guards on) and a fresh inner table over the run's device (one device serves every instance of a
 * run, so its memory and counters carry over from one instance to the next): from version 3, inner
 * points to the device member of an rc_inner (below). The runtime fills *out, and
 * rc_runtime_close(out->self) ends the instance, after replaycheck retired it.
 * *inner, and the calls it points to, stay valid until rc_runtime_close returns: the runtime may
 * keep the pointer rather than copy the table. An rc_runtime_open that does not return RC_OK gets
 * no rc_runtime_close (the runtime frees what it made itself); one that returns RC_OK with an
 * entry of *out left NULL is closed at once and the instance fails, naming the entry.
 *
 * Results. Every call returns RC_OK, RC_REFUSED or RC_ERROR:
 *   - RC_OK: the call took effect; out-parameters are set.
 *   - RC_REFUSED: the runtime refused the call and changed nothing: no address, size, contents,
 *     slot or allocator call. err->message says what was protected (the report shows it), and
 *     rc_runtime.refusal_rule (version 4) which of the runtime's rules refused. After
 *     every refusal of a probe's op in kernel mode replaycheck compares the device's counters and
 *     every buffer's slot, address and size with what they were before: a refusal with a side
 *     effect fails the instance and names what changed. Contents a refusal touched show in the
 *     byte comparison after the round.
 *   - RC_ERROR: the call failed. For an error of the inner device, return RC_ERROR with the
 *     rc_error the inner call filled, unchanged: the platform's code, name and class pass through
 *     to the report. replaycheck recognises it by its contents, among the inner calls of the same
 *     call: an rc_error changed in any field is the runtime's own failure. A runtime's own failure
 *     (out of pool memory, a bad key) sets class and message (and code 0); a class_name that is
 *     not one of replaycheck's classes, or "refused" with RC_ERROR, is reported as "internal".
 *   Every call returns, and the runtime never ends the process: one that calls exit() or
 *   quick_exit(), inside a call or between calls, makes replaycheck exit with status 2, naming
 *   the plugin and the entry point in flight, if any (atexit and at_quick_exit handlers of the
 *   loader's).
 *
 * Threads. A device has two threads, RC_THREAD_MAIN and RC_THREAD_OTHER (replaycheck runs each on
 * a locked OS thread of its own). Every call names the thread it is made for in `t`; a runtime
 * that forwards a call passes the same `t` to the inner device, which runs it on that OS thread.
 * An inner call for a `t` that is neither is not made: it fails, and the call that made it fails
 * with the runtime's error naming the rule, whatever the runtime returns.
 * replaycheck calls the runtime's functions from an OS thread of its choosing, one call at a time
 * per opened runtime: a runtime needs no lock for the state of one opened runtime, and must not
 * rely on which OS thread calls it. Calls to different opened runtimes may overlap: state shared
 * between them (a global) needs a lock. host_write, host_read, holds and slots_changed take no
 * thread: the first two are the CPU's own stores and loads, the last two questions about the
 * runtime's own state. Make inner calls while a call of replaycheck's into the runtime is in
 * progress: from the thread it was made on, or from a thread of the runtime's own that the call
 * waits for. An inner call made between replaycheck's calls is not made: it fails, and
 * replaycheck's next call into the runtime (or its close) fails with the runtime's error naming
 * the rule.
 *
 * Queries. What replaycheck asks to judge a run (the device's capabilities and counters, a graph's
 * nodes) goes to the inner device directly, never through the runtime: a runtime cannot hide an
 * allocator call or a node it slipped into a graph.
 *
 * Handles. A stream, event or graph a call makes (device.create_stream, create_stream_with_flags,
 * device.create_event, device.end_capture) is checked as it returns: replaycheck sets *out to
 * UINT64_MAX before the call, and an RC_OK that left it, a stream 0 (the default stream), a
 * handle the inner device has not made through the runtime's inner table (or has destroyed), or
 * a handle of that kind the runtime answered before and has not destroyed fails the call as the
 * runtime's error (the rule named), never a handle used. So does a stream the runtime made through
 * the inner table of another kind than the call asked for (rc_stream_flags: create_stream makes
 * blocking streams, create_stream_with_flags the kind its flags say).
 *
 * Memory. Buffers (device or host) are rc_ptr ranges: the address the inner device returned and
 * the length asked for. host_write/host_read/write/read move exactly ptr.bytes bytes. An
 * allocation's answer is checked as it returns: replaycheck sets *out of malloc_, alloc_host and
 * pool_alloc to {UINT64_MAX, -1}, which no buffer is, before the call, and an RC_OK that left it,
 * or names {0,0}, an address 0, fewer bytes than asked or a range that wraps past the end of the
 * address space, fails the call as the runtime's error (the rule named), never a buffer used.
 *
 * All strings are NUL-terminated UTF-8. replaycheck cleans each string it reads from the runtime
 * before it reaches a report: a byte that is not UTF-8 becomes U+FFFD, a control character
 * (newline and ESC included) its escape (\n, \x1b). Nothing here allocates on the caller's
 * behalf: out parameters are caller-owned, and err is never NULL.
 */
#ifndef REPLAYCHECK_RUNTIME_H
#define REPLAYCHECK_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RC_ABI_VERSION 4u

typedef enum { RC_OK = 0, RC_REFUSED = 1, RC_ERROR = 2 } rc_status;

typedef enum { RC_THREAD_MAIN = 0, RC_THREAD_OTHER = 1 } rc_thread;

/* The execution mode an instance runs in: program mode lets everything through, as the platform
 * does; kernel mode is the runtime's guards. */
typedef enum { RC_MODE_PROGRAM = 0, RC_MODE_KERNEL = 1 } rc_mode;

/* Capture modes and statuses, numbered as ACL and CUDA number them. */
typedef enum { RC_CAPTURE_GLOBAL = 0, RC_CAPTURE_THREAD_LOCAL = 1, RC_CAPTURE_RELAXED = 2 } rc_capture_mode;
typedef enum { RC_CAPTURE_NONE = 0, RC_CAPTURE_ACTIVE = 1, RC_CAPTURE_INVALIDATED = 2 } rc_capture_status;

typedef enum { RC_HOST_PAGEABLE = 1, RC_HOST_PINNED = 2 } rc_host_memory;

/* A buffer's slot, as the probe language names it (`slot: plain|retained|arena`). */
typedef enum { RC_SLOT_PLAIN = 0, RC_SLOT_RETAINED = 1, RC_SLOT_ARENA = 2 } rc_slot;

/* How a provision was served. */
typedef enum {
	RC_NOT_SERVED = 0, /* refused or failed */
	RC_IN_PLACE = 1,   /* no allocator call: the slot's address and size are unchanged */
	RC_ALLOCATED = 2,  /* the first allocation of an empty slot */
	RC_REBASED = 3     /* freed and allocated again: the address may have changed */
} rc_served;

typedef struct {
	uint64_t addr;
	int64_t bytes;
} rc_ptr;

/* How a stream is created (version 3). A blocking stream synchronises with the platform's default
 * stream (CUDA's legacy stream), the kind create_stream makes; a non-blocking one does not
 * (cudaStreamNonBlocking: the kind PyTorch captures on). Every ACL stream is non-blocking. */
typedef enum { RC_STREAM_BLOCKING = 0, RC_STREAM_NON_BLOCKING = 1 } rc_stream_flags;

/* Opaque handles issued by the inner device; stream 0 is the platform's default stream. */
typedef uint64_t rc_stream;
typedef uint64_t rc_event;
typedef uint64_t rc_graph;

/* What a call that did not return RC_OK says. */
typedef struct {
	int32_t code;        /* the platform's code; 0 for a refusal or a runtime's own failure */
	uint32_t invalidated; /* non-zero: the error also invalidated the capture in progress */
	char name[64];        /* the platform's name for code, e.g. "ACL_ERROR_RT_STREAM_CAPTURED" */
	char class_name[32];  /* the portable class: "captured-stream", "out-of-memory", ... ("refused" for a refusal) */
	char message[512];    /* why, in words */
} rc_error;

typedef struct {
	uint32_t status; /* rc_capture_status */
	uint32_t mode;   /* rc_capture_mode */
	uint64_t id;     /* identifies the capture; 0 when none */
	rc_stream origin;
} rc_capture_info;

/* The device API as a table of calls. replaycheck fills one for the inner device; the runtime
 * fills one (rc_runtime.device) for the device the engine drives. self is passed back as the first
 * argument of every call. */
typedef struct rc_device {
	void *self;
	int32_t (*malloc_)(void *self, rc_thread t, int64_t bytes, rc_ptr *out, rc_error *err);
	int32_t (*free_)(void *self, rc_thread t, rc_ptr p, rc_error *err);
	int32_t (*write)(void *self, rc_thread t, rc_ptr dst, const void *src, rc_error *err);
	int32_t (*read)(void *self, rc_thread t, void *dst, rc_ptr src, rc_error *err);
	int32_t (*alloc_host)(void *self, rc_thread t, int64_t bytes, rc_host_memory kind, rc_ptr *out, rc_error *err);
	int32_t (*free_host)(void *self, rc_thread t, rc_ptr p, rc_error *err);
	int32_t (*host_write)(void *self, rc_ptr dst, const void *src, rc_error *err);
	int32_t (*host_read)(void *self, void *dst, rc_ptr src, rc_error *err);

	int32_t (*create_stream)(void *self, rc_thread t, rc_stream *out, rc_error *err);
	int32_t (*destroy_stream)(void *self, rc_thread t, rc_stream s, rc_error *err);
	int32_t (*create_event)(void *self, rc_thread t, rc_event *out, rc_error *err);
	int32_t (*destroy_event)(void *self, rc_thread t, rc_event e, rc_error *err);

	int32_t (*fill)(void *self, rc_thread t, rc_stream s, rc_ptr dst, uint8_t value, rc_error *err);
	int32_t (*copy)(void *self, rc_thread t, rc_stream s, rc_ptr dst, rc_ptr src, rc_error *err);
	int32_t (*axpy)(void *self, rc_thread t, rc_stream s, rc_ptr y, rc_ptr x, uint32_t a, rc_error *err);
	int32_t (*record)(void *self, rc_thread t, rc_event e, rc_stream s, rc_error *err);
	int32_t (*wait)(void *self, rc_thread t, rc_stream s, rc_event e, rc_error *err);
	int32_t (*sync_stream)(void *self, rc_thread t, rc_stream s, rc_error *err);
	int32_t (*sync_device)(void *self, rc_thread t, rc_error *err);
	int32_t (*query_event)(void *self, rc_thread t, rc_event e, uint32_t *complete, rc_error *err);
	int32_t (*sync_event)(void *self, rc_thread t, rc_event e, rc_error *err);

	int32_t (*exchange_capture_mode)(void *self, rc_thread t, rc_capture_mode mode, rc_capture_mode *old, rc_error *err);
	int32_t (*begin_capture)(void *self, rc_thread t, rc_stream s, rc_capture_mode mode, rc_error *err);
	int32_t (*end_capture)(void *self, rc_thread t, rc_stream s, rc_graph *out, rc_error *err);
	int32_t (*capture_info)(void *self, rc_thread t, rc_stream s, rc_capture_info *out, rc_error *err);
	int32_t (*launch)(void *self, rc_thread t, rc_graph g, rc_stream s, rc_error *err);
	int32_t (*destroy_graph)(void *self, rc_thread t, rc_graph g, rc_error *err);
} rc_device;

/* The inner device of version 3: rc_runtime_open's inner points to the device member of an
 * rc_inner, its first member, so a plugin of version 1 or 2 reads the rc_device it always did, and
 * a plugin that opened with version 3 reads the whole as (const rc_inner *)inner. */
typedef struct rc_inner {
	rc_device device;
	/* create_stream_with_flags creates a stream of the kind flags says (rc_stream_flags). Flags
	 * that are neither RC_STREAM_BLOCKING nor RC_STREAM_NON_BLOCKING break the ABI: the call is
	 * not made, and the runtime's call that made it fails with the runtime's error, as for a
	 * thread that is none. Never NULL. */
	int32_t (*create_stream_with_flags)(void *self, rc_thread t, uint32_t flags, rc_stream *out, rc_error *err);
} rc_inner;

/* One region of an arena bank commit: its key and the capacity asked for. */
typedef struct {
	const char *key;
	int64_t bytes;
} rc_region;

/* The runtime under test: the device the engine drives, and the allocator a framework puts in
 * front of the driver. */
typedef struct rc_runtime {
	void *self;
	rc_device device;

	/* provision serves a buffer of bytes for the slot named key: cur is what the slot holds (a zero
	 * rc_ptr for a first allocation). replaycheck sets *out to cur and *served to RC_NOT_SERVED
	 * before the call. On RC_REFUSED the slot holds cur still; on RC_ERROR *out is what the slot
	 * holds afterwards (a zero rc_ptr when a re-base freed the old buffer and the new allocation
	 * failed). On RC_OK replaycheck checks the answer: *served is RC_IN_PLACE, RC_ALLOCATED or
	 * RC_REBASED; a request of more than 0 bytes names a buffer, of at least those bytes, not at
	 * address 0 and ending inside the address space; and RC_IN_PLACE leaves *out = cur (a growth
	 * is re-based or refused). An answer that breaks one fails the instance as the runtime's
	 * error. */
	int32_t (*provision)(void *self, rc_thread t, rc_slot slot, const char *key, rc_ptr cur, int64_t bytes,
	                     rc_ptr *out, rc_served *served, rc_error *err);
	/* release gives back the buffer the slot named key holds. */
	int32_t (*release)(void *self, rc_thread t, rc_slot slot, const char *key, rc_ptr p, rc_error *err);
	/* holds reports what the slot named key holds now: 1 and *slot, *p when it holds a buffer, 0 when
	 * it is empty. It never fails and changes nothing: it makes no inner call (one it makes is not
	 * made, and fails the next call into the runtime with the runtime's error). */
	int32_t (*holds)(void *self, const char *key, rc_slot *slot, rc_ptr *p);
	/* commit_bank commits arena regions at once; out[i] is region i's buffer. replaycheck sets every
	 * out[i] to {UINT64_MAX, -1}, which no buffer is, before the call. On RC_OK replaycheck checks
	 * the answer: every out[i] is written; each answers its region's bytes as provision's *out
	 * answers a request; and no two regions' buffers share a byte. An answer that breaks one fails
	 * the call as the runtime's error. */
	int32_t (*commit_bank)(void *self, rc_thread t, const rc_region *regions, size_t n, rc_ptr *out, rc_error *err);
	/* Pools: one segment reserved per named pool, blocks served from it with no driver call. host is
	 * 0 for a segment of device memory, an rc_host_memory for one of host memory. */
	int32_t (*reserve_pool)(void *self, rc_thread t, const char *name, int64_t bytes, uint32_t host, rc_error *err);
	int32_t (*pool_alloc)(void *self, rc_thread t, const char *name, int64_t bytes, rc_ptr *out, rc_error *err);
	int32_t (*pool_free)(void *self, rc_thread t, const char *name, rc_ptr p, rc_error *err);
	/* retire frees everything the runtime holds: every slot's buffer and every pool's segment. */
	int32_t (*retire)(void *self, rc_thread t, rc_error *err);

	/* Version 2. slots_changed is the runtime's log of slot changes, so that replaycheck need not
	 * ask holds about every buffer before every call of a guarded instance (O(buffers) per call).
	 * It may be NULL: replaycheck then asks holds about every slotted buffer before every call.
	 *
	 * The runtime keeps a version number that moves whenever what holds would answer for some key
	 * changes (held or empty, slot kind, address or size), and a log of the keys of the last
	 * changes. slots_changed sets *now to the version now, in every case, and returns the number
	 * of keys logged after version since: each key once per change, in order (naming a key whose
	 * slot ended as it was costs one holds question, nothing else). It writes the first cap of
	 * them into keys, each valid until the next call into the runtime; a count above cap asks for
	 * another call with room for them all, answered the same. It returns -1 when the log no longer
	 * reaches back to since, or since is not a version it gave (replaycheck asks about every slot
	 * then, and starts again from *now). It never fails and changes nothing, and makes no inner
	 * call, like holds.
	 *
	 * A change the log misses makes replaycheck's snapshot of a slot stale: a refusal that follows
	 * is then reported as a side effect. `replaycheck run --check-slot-log` reads every slot as
	 * well and fails the instance naming the first change the log missed. */
	int64_t (*slots_changed)(void *self, uint64_t since, const char **keys, size_t cap, uint64_t *now);

	/* Version 3. create_stream_with_flags creates a stream of the kind flags says (rc_stream_flags),
	 * as device.create_stream creates a blocking one; a runtime forwards it to the inner device's
	 * (rc_inner) with the same t. It may be NULL: the runtime then creates blocking streams only,
	 * and replaycheck skips the instances of probes that list streams under `non-blocking`, saying
	 * that the runtime lacks the capability non-blocking-streams. replaycheck calls it only for
	 * RC_STREAM_NON_BLOCKING; device.create_stream makes every blocking stream. */
	int32_t (*create_stream_with_flags)(void *self, rc_thread t, uint32_t flags, rc_stream *out, rc_error *err);

	/* Version 4. refusal_rule names the rule of the runtime's that refused its last call: the one
	 * that returned RC_REFUSED. replaycheck asks right after every RC_REFUSED, before any other call
	 * into the runtime, and records the name with the refusal, so that a probe can say which rule
	 * must refuse (expect.refused-by: {guard: NAME}) and a refusal by another rule fails it. A name
	 * is 1 to 63 bytes of lower-case ASCII letters, digits and '-', not starting with '-'; a rule
	 * that is one of replaycheck's reference guards' takes its name: "retained", "arena",
	 * "capture-watch", "residency", "isolation". NULL or "" names none. The string stays valid until
	 * the runtime's next call. It never fails, changes nothing and makes no inner call, like holds
	 * (one it makes is not made, and fails the refused call with the runtime's error); a name that
	 * is not one fails the refused call as the runtime's error. The entry may be NULL: the
	 * runtime's refusals then name no rule, and a probe that names one fails on them. */
	const char *(*refusal_rule)(void *self);
} rc_runtime;

/* The three entry points a plugin exports. */
uint32_t rc_runtime_abi_version(void);
int32_t rc_runtime_open(uint32_t abi_version, rc_mode mode, const rc_device *inner, rc_runtime *out, rc_error *err);
void rc_runtime_close(void *self);

#ifdef __cplusplus
}
#endif

#endif /* REPLAYCHECK_RUNTIME_H */
