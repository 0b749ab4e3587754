/* The fake driver libraries' fault injection (FakeFaults): not part of any driver's ABI. Each
 * trampoline calls an entry point the dl package resolved. */
#ifndef RC_BIND_FAKEFAULTS_H
#define RC_BIND_FAKEFAULTS_H

/* replaycheck_fake_inject(kind, n) */
int rc_bind_fake_inject(void *fn, int kind, long n);
/* replaycheck_fake_fired(i, &kind, &n) */
int rc_bind_fake_fired(void *fn, long i, int *kind, long *n);

#endif
