/* next_main.c: prints through puts (wrapped by next.so), then asks dlsym(RTLD_NEXT) itself. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

int main(void) {
	if (puts("hello") == EOF)
		return 1;
	/* From the program, the next puts is next.so's (preloaded), as without the interposer. */
	Dl_info info;
	void *p = dlsym(RTLD_NEXT, "puts");
	printf("next puts in %s\n", p && dladdr(p, &info) ? info.dli_fname : "nothing");
	return 0;
}
