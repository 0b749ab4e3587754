/* next.c: a preloaded library of someone else's that wraps puts and finds the real one with
 * dlsym(RTLD_NEXT), as tracing and allocator libraries do. Preloaded after the interposer, whose
 * dlsym answers the call, RTLD_NEXT must still mean "after next.so", not "after the interposer":
 * otherwise it finds its own puts and recurses. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

int puts(const char *s) {
	static int depth;
	int (*real)(const char *) = (int (*)(const char *))dlsym(RTLD_NEXT, "puts");
	if (!real || ++depth > 1) {
		fprintf(stderr, "next.so: dlsym(RTLD_NEXT, \"puts\") gave %s\n", real ? "next.so's own puts" : "nothing");
		return EOF;
	}
	fputs("next: ", stdout);
	int r = real(s);
	depth--;
	return r;
}
