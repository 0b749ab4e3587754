#include "defects.h"

bool defect_pointer_equality(const allocation *a) {
#ifdef RC_SEED_DEFECT_POINTER_EQUALITY
	/* The defect: a pointer check. Whatever holds the captured address now passes for what the
	 * capture saw there; only a range no live allocation holds is stale. */
	return a != NULL;
#else
	(void)a;
	return false;
#endif
}

void defect_arena_rollback(state *S, rc_thread t) {
#ifdef RC_SEED_DEFECT_ARENA_ROLLBACK
	/* The defect: the capacity refusal rolls the whole bank back, releasing every committed region. */
	for (size_t i = 0; i < S->slots.n; i++) {
		slot_state *st = &S->slots.v[i];
		rc_error e;
		if (st->slot != RC_SLOT_ARENA || S->in.free_(S->in.self, t, st->ptr, &e) != RC_OK)
			continue;
		ledger_remove(S, st->ptr.addr);
		slot_take(S, i);
	}
	slots_compact(S);
#else
	(void)S;
	(void)t;
#endif
}

int32_t defect_retained_free(state *S, rc_thread t, const slot_state *st, const char *key, rc_error *err) {
#ifdef RC_SEED_DEFECT_RETAINED_FREE
	/* The defect: the buffer is freed first, then the growth is refused. */
	int32_t fs = S->in.free_(S->in.self, t, st->ptr, err);
	if (fs != RC_OK)
		return fs;
	ledger_remove(S, st->ptr.addr);
	slot_delete(S, key);
#else
	(void)S;
	(void)t;
	(void)st;
	(void)key;
	(void)err;
#endif
	return RC_OK;
}
