//go:build cgo

#include "fakefaults.h"

int rc_bind_fake_inject(void *fn, int kind, long n) { return ((int (*)(int, long))fn)(kind, n); }

int rc_bind_fake_fired(void *fn, long i, int *kind, long *n) {
	return ((int (*)(long, int *, long *))fn)(i, kind, n);
}
