/* cuda_fork: a program whose child does the hazard. The parent forks before it touches the driver;
 * the child (fork) or the program exec'd in it (exec) replays a graph after freeing a buffer it
 * captured; the parent waits for it, then captures and replays a clean graph of its own.
 * Prints "child=<pid>" (the child's process id, which its findings carry). */
#define RC_CUDA
#include "drv.h"

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

enum { N = 4096 };

/* replay captures src -> b, replays, frees b when stale is set, and replays again. */
static void replay(int stale) {
	CUstream s = cu_stream();
	CUdeviceptr src = cu_alloc(N), b = cu_alloc(N);
	cu_fill(src, 0xA7, N);
	CK(cu.StreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CK(cu.MemcpyDtoDAsync(b, src, N, s));
	cu_graph g = cu_end(s);
	CK(cu.GraphLaunch(g.x, s));
	CK(cu.CtxSynchronize());
	if (stale)
		CK(cu.MemFree(b));
	CK(cu.GraphLaunch(g.x, s));
	CK(cu.CtxSynchronize());
	cu_drop(g);
	if (!stale)
		CK(cu.MemFree(b));
	CK(cu.MemFree(src));
}

int main(int argc, char **argv) {
	static const char *const variants[] = {"fork", "exec", "child", NULL};
	enum { FORK, EXEC, CHILD };
	int v = pick(argc, argv, variants);
	if (v == CHILD) {
		cu_open();
		replay(1);
		return 0;
	}
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		die("fork", 0);
	if (pid == 0) {
		if (v == EXEC) {
			execl("/proc/self/exe", argv[0], "child", (char *)NULL);
			die("execl", 0);
		}
		cu_open();
		replay(1);
		exit(0);
	}
	int status;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		die("the child", status);
	cu_open();
	replay(0);
	printf("child=%d\n", (int)pid);
	return 0;
}
