#include "hooks.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void crash_point(const char *entry) {
	const char *want = getenv("REPLAYCHECK_SEED_CRASH");
	if (want != NULL && strcmp(want, entry) == 0) {
		volatile int *volatile nowhere = NULL;
		*nowhere = 1;
	}
	want = getenv("REPLAYCHECK_SEED_HANG");
	if (want != NULL && strcmp(want, entry) == 0)
		for (;;)
			pause();
}
