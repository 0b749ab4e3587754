/* cuda_threads: two threads capture at the same time, each in THREAD_LOCAL mode (its interaction
 * mode too) on its own stream, a copy into its own buffer. Then thread 1 frees its buffer (hazard)
 * or not (clean), and each thread replays its own graph. The finding must name thread 1's capture
 * and buffer, not thread 2's. Prints "stream=<thread 1's stream> buffer=<thread 1's buffer>". */
#define RC_CUDA
#include "drv.h"

#include <pthread.h>

enum { N = 4096 };

static CUcontext ctx;
static int stale;
static pthread_barrier_t both_ready, both_capturing, both_captured;

typedef struct {
	int index;
	CUstream s;
	CUdeviceptr src, b;
} worker;

static void *capture(void *arg) {
	worker *w = arg;
	CK(cu.CtxSetCurrent(ctx));
	int mode = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
	CK(cu.ThreadExchangeStreamCaptureMode(&mode));
	w->s = cu_stream();
	w->src = cu_alloc(N);
	w->b = cu_alloc(N);
	pthread_barrier_wait(&both_ready); /* no allocation while either captures */
	CK(cu.StreamBeginCapture(w->s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
	pthread_barrier_wait(&both_capturing);
	CK(cu.MemcpyDtoDAsync(w->b, w->src, N, w->s));
	cu_graph g = cu_end(w->s);
	pthread_barrier_wait(&both_captured);
	if (w->index == 1 && stale)
		CK(cu.MemFree(w->b));
	CK(cu.GraphLaunch(g.x, w->s));
	CK(cu.StreamSynchronize(w->s));
	cu_drop(g);
	if (!(w->index == 1 && stale))
		CK(cu.MemFree(w->b));
	CK(cu.MemFree(w->src));
	return NULL;
}

int main(int argc, char **argv) {
	static const char *const variants[] = {"hazard", "clean", NULL};
	stale = !pick(argc, argv, variants);
	ctx = cu_open();
	pthread_barrier_init(&both_ready, NULL, 2);
	pthread_barrier_init(&both_capturing, NULL, 2);
	pthread_barrier_init(&both_captured, NULL, 2);
	worker w[2] = {{.index = 1}, {.index = 2}};
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, capture, &w[i]))
			die("pthread_create", i);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("stream=%#llx buffer=%#llx\n", (unsigned long long)(uintptr_t)w[0].s, w[0].b);
	return 0;
}
