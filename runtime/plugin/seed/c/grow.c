#include "grow.h"

#include <stdint.h>
#include <stdlib.h>

_Noreturn void out_of_memory(void) { abort(); }

size_t grow_need(size_t n, size_t more) {
	if (more > SIZE_MAX - n)
		out_of_memory();
	return n + more;
}

/* doubled is twice n, or max when that is more. */
static size_t doubled(size_t n, size_t max) { return n > max / 2 ? max : n * 2; }

void *grow(void *v, size_t *cap, size_t need, size_t elem) {
	if (need <= *cap)
		return v;
	size_t max = SIZE_MAX / (elem ? elem : 1); /* the most elements whose bytes a size_t counts */
	if (need > max)
		out_of_memory();
	size_t n = *cap ? doubled(*cap, max) : (max < 8 ? max : 8);
	while (n < need)
		n = doubled(n, max);
	void *p = realloc(v, n * elem);
	if (!p)
		out_of_memory();
	*cap = n;
	return p;
}

void *alloc_array(size_t n, size_t elem) {
	if (n == 0)
		n = 1;
	if (elem == 0)
		elem = 1;
	if (n > SIZE_MAX / elem)
		out_of_memory();
	void *p = calloc(n, elem);
	if (!p)
		out_of_memory();
	return p;
}

char *dupstr(const char *s) {
	size_t n = grow_need(strlen(s), 1);
	char *p = malloc(n);
	if (!p)
		out_of_memory();
	return memcpy(p, s, n);
}
