/* unwind.c: call stacks fast enough for every allocation (x86-64).
 *
 * glibc's backtrace() interprets each frame's DWARF call-frame information on every call, some
 * 3 µs for a shallow stack: more than the interposer may spend on an allocation. Here the rule
 * each return address needs (where the caller's frame starts, where rbp was saved) is worked out
 * once from the object's .eh_frame_hdr and .eh_frame, cached by address, and a walk is a few loads
 * per frame. Only what compilers emit for ordinary functions is understood (the canonical frame
 * address as rsp or rbp plus an offset, registers saved at offsets from it); anything else (an
 * expression, a signal frame) ends the walk there, and a stack whose first frame is not understood
 * is left to backtrace(). Every step is checked to move up the stack by a sane amount before
 * anything is read. Elsewhere than x86-64, backtrace() does the work. */
#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "rcw.h"

#if defined(__x86_64__)

enum { REG_RBP = 6, REG_RSP = 7, REG_RA = 16 };

/* How to step from a frame at pc to its caller: CFA = (rsp or rbp) + cfa_off; the return address
 * at CFA - 8; rbp saved at CFA + rbp_off when rbp_saved. last: the outermost frame (the return
 * address is undefined). */
typedef struct {
	uintptr_t pc;
	int32_t cfa_off, rbp_off;
	uint8_t cfa_reg, rbp_saved, ok, last;
} rule_t;

#define CACHE_SIZE 8192
static rule_t g_cache[CACHE_SIZE];
static pthread_mutex_t g_unwind_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t uleb(const uint8_t **p, const uint8_t *end) {
	uint64_t v = 0;
	int shift = 0;
	while (*p < end) {
		uint8_t b = *(*p)++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			break;
	}
	return v;
}

static int64_t sleb(const uint8_t **p, const uint8_t *end) {
	int64_t v = 0;
	int shift = 0;
	uint8_t b = 0;
	while (*p < end) {
		b = *(*p)++;
		if (shift < 64)
			v |= (int64_t)((uint64_t)(b & 0x7f) << shift);
		shift += 7;
		if (!(b & 0x80))
			break;
	}
	if (shift < 64 && (b & 0x40))
		v |= -((int64_t)1 << shift);
	return v;
}

/* Reads a pointer in DWARF exception-header encoding enc; 0 with *ok cleared when not understood.
 * datarel is the base of DW_EH_PE_datarel (the .eh_frame_hdr). */
static uintptr_t read_enc(const uint8_t **p, const uint8_t *end, uint8_t enc, uintptr_t datarel, int *ok) {
	const uint8_t *start = *p;
	uint64_t v = 0;
	if (enc == 0xff)
		return 0; /* DW_EH_PE_omit */
	switch (enc & 0x0f) {
	case 0x00: /* absptr */
	case 0x04: /* udata8 */
	case 0x0c: /* sdata8 */
		if (end - *p < 8)
			goto bad;
		memcpy(&v, *p, 8);
		*p += 8;
		break;
	case 0x01: v = uleb(p, end); break;
	case 0x09: v = (uint64_t)sleb(p, end); break;
	case 0x02: {
		uint16_t x;
		if (end - *p < 2)
			goto bad;
		memcpy(&x, *p, 2);
		*p += 2;
		v = x;
		break;
	}
	case 0x0a: {
		int16_t x;
		if (end - *p < 2)
			goto bad;
		memcpy(&x, *p, 2);
		*p += 2;
		v = (uint64_t)(int64_t)x;
		break;
	}
	case 0x03: {
		uint32_t x;
		if (end - *p < 4)
			goto bad;
		memcpy(&x, *p, 4);
		*p += 4;
		v = x;
		break;
	}
	case 0x0b: {
		int32_t x;
		if (end - *p < 4)
			goto bad;
		memcpy(&x, *p, 4);
		*p += 4;
		v = (uint64_t)(int64_t)x;
		break;
	}
	default: goto bad;
	}
	switch (enc & 0x70) {
	case 0x00: break;
	case 0x10: v += (uintptr_t)start; break; /* pcrel */
	case 0x30: v += datarel; break;           /* datarel */
	default: goto bad;
	}
	if (enc & 0x80) /* indirect: only personality routines, whose value is not needed */
		return 0;
	return (uintptr_t)v;
bad:
	*ok = 0;
	return 0;
}

/* The .eh_frame_hdr of the object holding pc. */
struct find {
	uintptr_t pc;
	const uint8_t *hdr;
};

static int find_cb(struct dl_phdr_info *info, size_t size, void *data) {
	(void)size;
	struct find *f = data;
	const uint8_t *hdr = NULL;
	int in = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && f->pc >= lo && f->pc < lo + ph->p_memsz)
			in = 1;
		if (ph->p_type == PT_GNU_EH_FRAME)
			hdr = (const uint8_t *)lo;
	}
	if (!in)
		return 0;
	f->hdr = hdr;
	return 1;
}

/* The CFA rules at pc from the FDE covering it. */
static void rule_for(uintptr_t pc, rule_t *r) {
	memset(r, 0, sizeof *r);
	r->pc = pc;
	struct find f = {pc, NULL};
	if (!dl_iterate_phdr(find_cb, &f) || !f.hdr)
		return;
	const uint8_t *h = f.hdr, *hend = h + (1u << 30);
	int ok = 1;
	if (h[0] != 1 || h[3] != 0x3b) /* version 1, table of datarel sdata4 pairs */
		return;
	const uint8_t *p = h + 4;
	read_enc(&p, hend, h[1], (uintptr_t)h, &ok); /* eh_frame_ptr */
	uintptr_t count = read_enc(&p, hend, h[2], (uintptr_t)h, &ok);
	if (!ok || !count)
		return;
	const int32_t *table = (const int32_t *)p;
	size_t lo = 0, hi = count;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if ((uintptr_t)h + (uintptr_t)(intptr_t)table[2 * mid] <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return;
	const uint8_t *fde = h + table[2 * (lo - 1) + 1];
	uint32_t len32;
	memcpy(&len32, fde, 4);
	if (len32 == 0xffffffff || len32 == 0)
		return;
	const uint8_t *fend = fde + 4 + len32, *q = fde + 4;
	int32_t cie_off;
	memcpy(&cie_off, q, 4);
	const uint8_t *cie = q - cie_off;
	q += 4;

	/* The CIE. */
	uint32_t clen;
	memcpy(&clen, cie, 4);
	if (clen == 0xffffffff || clen == 0)
		return;
	const uint8_t *cend = cie + 4 + clen, *c = cie + 8;
	uint8_t version = *c++;
	const char *aug = (const char *)c;
	c += strlen(aug) + 1;
	if (aug[0] && aug[0] != 'z')
		return;
	uint64_t code_align = uleb(&c, cend);
	int64_t data_align = sleb(&c, cend);
	uint64_t ra_reg = version == 1 ? *c++ : uleb(&c, cend);
	uint8_t fde_enc = 0;
	if (aug[0] == 'z') {
		uint64_t alen = uleb(&c, cend);
		const uint8_t *aend = c + alen;
		for (const char *a = aug + 1; *a; a++) {
			if (*a == 'R')
				fde_enc = *c++;
			else if (*a == 'P') {
				uint8_t penc = *c++;
				read_enc(&c, aend, penc & 0x7f, (uintptr_t)h, &ok);
			} else if (*a == 'L')
				c++;
			else if (*a == 'S')
				return; /* a signal frame */
			else
				return;
		}
		c = aend;
	}
	if (ra_reg != REG_RA || !ok)
		return;

	/* The FDE. */
	uintptr_t start = read_enc(&q, fend, fde_enc, (uintptr_t)h, &ok);
	uintptr_t range = read_enc(&q, fend, fde_enc & 0x0f, (uintptr_t)h, &ok);
	if (!ok || pc < start || pc >= start + range)
		return;
	if (aug[0] == 'z') {
		uint64_t alen = uleb(&q, fend);
		q += alen;
	}

	/* Run the CIE's initial instructions, then the FDE's up to pc. */
	typedef struct {
		uint8_t cfa_reg, rbp_saved, ra_undef;
		int64_t cfa_off, rbp_off;
	} state;
	state st = {REG_RSP, 0, 0, 8, 0}, init, stack[8];
	int depth = 0;
	uintptr_t loc = start;
	for (int pass = 0; pass < 2; pass++) {
		const uint8_t *ip = pass ? q : c, *end = pass ? fend : cend;
		while (ip < end) {
			uint8_t op = *ip++;
			uint64_t reg;
			int64_t off;
			switch (op & 0xc0) {
			case 0x40:
				loc += (op & 0x3f) * code_align;
				if (pass && loc > pc)
					goto done;
				continue;
			case 0x80:
				reg = op & 0x3f;
				off = (int64_t)uleb(&ip, end) * data_align;
				if (reg == REG_RBP)
					st.rbp_saved = 1, st.rbp_off = off;
				else if (reg == REG_RA && off != -8)
					return;
				continue;
			case 0xc0:
				reg = op & 0x3f;
				if (reg == REG_RBP)
					st.rbp_saved = pass ? init.rbp_saved : 0, st.rbp_off = pass ? init.rbp_off : 0;
				continue;
			}
			switch (op) {
			case 0x00: break;
			case 0x01: loc = read_enc(&ip, end, fde_enc, (uintptr_t)h, &ok); break;
			case 0x02: loc += *ip++ * code_align; break;
			case 0x03: {
				uint16_t d;
				memcpy(&d, ip, 2);
				ip += 2;
				loc += d * code_align;
				break;
			}
			case 0x04: {
				uint32_t d;
				memcpy(&d, ip, 4);
				ip += 4;
				loc += d * code_align;
				break;
			}
			case 0x05:
			case 0x11:
				reg = uleb(&ip, end);
				off = (op == 0x05 ? (int64_t)uleb(&ip, end) : sleb(&ip, end)) * data_align;
				if (reg == REG_RBP)
					st.rbp_saved = 1, st.rbp_off = off;
				else if (reg == REG_RA && off != -8)
					return;
				break;
			case 0x06:
				reg = uleb(&ip, end);
				if (reg == REG_RBP)
					st.rbp_saved = pass ? init.rbp_saved : 0, st.rbp_off = pass ? init.rbp_off : 0;
				break;
			case 0x07:
				reg = uleb(&ip, end);
				if (reg == REG_RA)
					st.ra_undef = 1;
				else if (reg == REG_RBP)
					st.rbp_saved = 0;
				break;
			case 0x08:
				reg = uleb(&ip, end);
				if (reg == REG_RBP)
					st.rbp_saved = 0;
				break;
			case 0x09:
				reg = uleb(&ip, end);
				uleb(&ip, end);
				if (reg == REG_RBP || reg == REG_RA)
					return;
				break;
			case 0x0a:
				if (depth == 8)
					return;
				stack[depth++] = st;
				break;
			case 0x0b:
				if (!depth)
					return;
				st = stack[--depth];
				break;
			case 0x0c:
			case 0x12:
				st.cfa_reg = (uint8_t)uleb(&ip, end);
				st.cfa_off = op == 0x0c ? (int64_t)uleb(&ip, end) : sleb(&ip, end) * data_align;
				break;
			case 0x0d: st.cfa_reg = (uint8_t)uleb(&ip, end); break;
			case 0x0e: st.cfa_off = (int64_t)uleb(&ip, end); break;
			case 0x13: st.cfa_off = sleb(&ip, end) * data_align; break;
			case 0x10:
			case 0x16:
				reg = uleb(&ip, end);
				ip += uleb(&ip, end);
				if (reg == REG_RBP || reg == REG_RA)
					return;
				break;
			case 0x14:
			case 0x15:
				reg = uleb(&ip, end);
				if (op == 0x14)
					uleb(&ip, end);
				else
					sleb(&ip, end);
				if (reg == REG_RBP || reg == REG_RA)
					return;
				break;
			case 0x2e: uleb(&ip, end); break; /* GNU_args_size */
			default: return;                  /* an expression (0x0f) or anything else */
			}
			if (!ok || (pass && loc > pc))
				goto done;
		}
		if (!pass)
			init = st;
	}
done:
	if (!ok || (st.cfa_reg != REG_RSP && st.cfa_reg != REG_RBP) || st.cfa_off < 16 - 8 || st.cfa_off > (1 << 20))
		return;
	r->cfa_reg = st.cfa_reg;
	r->cfa_off = (int32_t)st.cfa_off;
	r->rbp_saved = st.rbp_saved;
	r->rbp_off = (int32_t)st.rbp_off;
	r->last = st.ra_undef;
	r->ok = 1;
}

static const rule_t *rule_cached(uintptr_t pc) {
	rule_t *r = &g_cache[(pc ^ (pc >> 13)) & (CACHE_SIZE - 1)];
	if (r->pc != pc || !r->pc)
		rule_for(pc, r);
	return r;
}

/* Largest step up the stack one frame may take, and the whole walk. */
#define MAX_FRAME_BYTES (1u << 20)
#define MAX_STACK_BYTES (64u << 20)

__attribute__((noinline)) int rcw_backtrace(void **pcs, int max) {
	uintptr_t *fp = __builtin_frame_address(0);
	uintptr_t pc = fp[1], rsp = (uintptr_t)(fp + 2), rbp = fp[0], bottom = rsp;
	int n = 0;
	pthread_mutex_lock(&g_unwind_lock);
	while (n < max && pc) {
		pcs[n++] = (void *)pc;
		/* pc is a return address: the call is the byte before it. */
		const rule_t *r = rule_cached(pc - 1);
		if (!r->ok) {
			if (n == 1)
				n = 0; /* not even our own frame: let backtrace() try */
			break;
		}
		if (r->last)
			break;
		uintptr_t cfa = (r->cfa_reg == REG_RSP ? rsp : rbp) + (uintptr_t)(intptr_t)r->cfa_off;
		if (cfa <= rsp || cfa - rsp > MAX_FRAME_BYTES || cfa - bottom > MAX_STACK_BYTES || (cfa & 7))
			break;
		uintptr_t ra = *(const uintptr_t *)(cfa - 8);
		if (r->rbp_saved)
			rbp = *(const uintptr_t *)(cfa + (uintptr_t)(intptr_t)r->rbp_off);
		rsp = cfa;
		pc = ra;
	}
	pthread_mutex_unlock(&g_unwind_lock);
	if (!n)
		return backtrace(pcs, max);
	return n;
}

void rcw_unwind_atfork_prepare(void) { pthread_mutex_lock(&g_unwind_lock); }
void rcw_unwind_atfork_parent(void) { pthread_mutex_unlock(&g_unwind_lock); }
void rcw_unwind_atfork_child(void) { pthread_mutex_init(&g_unwind_lock, NULL); }

#else

int rcw_backtrace(void **pcs, int max) { return backtrace(pcs, max); }
void rcw_unwind_atfork_prepare(void) {}
void rcw_unwind_atfork_parent(void) {}
void rcw_unwind_atfork_child(void) {}

#endif
