/*
 * The seed runtime's state: one per opened runtime, shared by the plugin's files (seed.c, the
 * reference rules; defects.c, the defects).
 */
#ifndef RC_SEED_SEED_H
#define RC_SEED_SEED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "grow.h"
#include "replaycheck/runtime.h"

/* device.PoolGranularity */
#define GRANULARITY 512

typedef struct {
	rc_ptr ptr;
	uint64_t gen;
} allocation;

/* A range a captured op touches, the generation of the allocation holding it at capture (0: none
 * made here) and whether the op writes it. */
typedef struct {
	rc_ptr ptr;
	uint64_t gen;
	int write;
} range;

typedef VEC(range) ranges;

typedef struct {
	rc_slot slot;
	char *key;
	rc_ptr ptr;
} slot_state;

typedef struct {
	uint64_t seq; /* the runtime's own key: never 0, never reused */
	uint64_t id;  /* the platform's capture ID; 0 when it reported none */
	rc_stream origin;
	uint32_t mode;
	ranges ranges;
} capture;

typedef struct {
	rc_event e;
	uint64_t seq;
} recorded;

typedef struct {
	rc_graph g;
	ranges ranges;
} graph;

typedef struct {
	uint64_t addr;
	int64_t size; /* a multiple of GRANULARITY */
	rc_ptr used;  /* what the caller asked for; zero for a free block */
} block;

typedef struct {
	char *name;
	uint32_t host; /* 0: device memory */
	rc_ptr segment;
	VEC(block) blocks; /* cover the segment in address order */
} pool;

typedef struct {
	uint64_t seq;
	rc_graph g;
	rc_stream s;
	ranges ranges;
} flight;

typedef struct {
	rc_event e;
	rc_stream s;
	uint64_t upto;
} fence;

typedef struct {
	rc_stream s, o; /* the last launch on o that a Wait on s ordered before s */
	uint64_t upto;
} order;

typedef struct {
	rc_mode mode;
	rc_device in;
	/* The inner device's entry outside rc_device: inner is the first member of an rc_inner. */
	int32_t (*in_create_stream_with_flags)(void *self, rc_thread t, uint32_t flags, rc_stream *out, rc_error *err);
	VEC(slot_state) slots;
	/* index: each slot's position in slots plus one (0: an empty cell), by key; open addressing
	 * with linear probing, index_cap a power of two at least four times the slots (slot_index_*). */
	size_t *index, index_cap;
	VEC(allocation) live; /* the residency ledger, sorted by address */
	uint64_t next_gen;
	VEC(capture) caps; /* active captures begun here, in the order they began */
	uint64_t last_seq;
	VEC(recorded) recorded_in;
	VEC(graph) graphs;
	VEC(pool) pools;
	uint64_t fseq;
	VEC(flight) airborne;
	VEC(fence) fences;
	VEC(order) ordered;
	bool retired;
	/* The slot log (slots_changed): the keys of the last changes of what a slot holds, the i-th
	 * at version log_base + i + 1. */
	VEC(char *) slot_log;
	uint64_t log_base;
	/* refused_by names the rule behind the last refusal (refusal_rule): one of the RULE_ names. */
	const char *refused_by;
} state;

/* The rules that refuse, named as replaycheck's reference guards are (rc_runtime.refusal_rule). */
#define RULE_RETAINED "retained"
#define RULE_ARENA "arena"
#define RULE_CAPTURE_WATCH "capture-watch"
#define RULE_RESIDENCY "residency"
#define RULE_ISOLATION "isolation"

/* Shared by the plugin's files, exported by none: the plugin exports the ABI's three entry points
 * only, whatever its visibility flags. */
#pragma GCC visibility push(hidden)

/* The reference's changes of state that the defects (defects.c) make too, out of turn (seed.c). */
void ledger_remove(state *S, uint64_t addr);
void slot_take(state *S, size_t i);
void slots_compact(state *S);
void slot_delete(state *S, const char *key);

#pragma GCC visibility pop

#endif
