/* dlopen, dlsym and dlclose with their dlerror text: it belongs to the thread that made the
 * failing call, so each wrapper reads it there, before Go could move to another thread. */
#ifndef RC_DL_H
#define RC_DL_H

void *rc_dl_open(const char *path, char **err);
void *rc_dl_sym(void *h, const char *name, char **err);
int rc_dl_close(void *h, char **err);

#endif
