//go:build cgo

#include <dlfcn.h>
#include <stddef.h>

#include "dl.h"

void *rc_dl_open(const char *path, char **err) {
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	*err = h ? NULL : dlerror();
	return h;
}

void *rc_dl_sym(void *h, const char *name, char **err) {
	dlerror();
	void *p = dlsym(h, name);
	char *e = dlerror();
	*err = e;
	return e ? NULL : p;
}

int rc_dl_close(void *h, char **err) {
	int rc = dlclose(h);
	*err = rc ? dlerror() : NULL;
	return rc;
}
