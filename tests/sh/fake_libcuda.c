/* fake_libcuda.c - a libcuda.so.1 for tests/sh/mkrun_launch.sh: it says
 * there is one GPU and fails every other call (CUDA_ERROR_NO_DEVICE), so
 * that mkrun -n forks its ranks and they join the job (the bootstrap and fd
 * passing need no GPU) before they stop at the first real driver call.
 * cuInit writes what the rank was given to $FAKE_CUDA_LOG.<pid>: its rank,
 * the job token, MK_ROOT_FD.  Not part of any build; the test compiles it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int CUresult;

CUresult cuInit(unsigned flags);
CUresult cuDriverGetVersion(int *v);
CUresult cuDeviceGetCount(int *n);
CUresult cuGetProcAddress_v2(const char *sym, void **p, int ver, unsigned long long flags,
			     int *status);

static CUresult nope(void) { return 100; /* CUDA_ERROR_NO_DEVICE */ }

CUresult cuInit(unsigned flags)
{
	const char *log = getenv("FAKE_CUDA_LOG");
	(void)flags;
	if (log && getenv("MK_RANK")) {
		char path[4096];
		FILE *f;
		snprintf(path, sizeof path, "%s.%d", log, (int)getpid());
		if ((f = fopen(path, "w")) != NULL) {
			fprintf(f, "rank=%s\ntoken=%s\nroot_fd=%s\n", getenv("MK_RANK"),
				getenv("MK_JOB_TOKEN") ? getenv("MK_JOB_TOKEN") : "",
				getenv("MK_ROOT_FD") ? getenv("MK_ROOT_FD") : "");
			fclose(f);
		}
	}
	return 0;
}

CUresult cuDriverGetVersion(int *v)
{
	*v = 12080;
	return 0;
}

CUresult cuDeviceGetCount(int *n)
{
	*n = 1;
	return 0;
}

CUresult cuGetProcAddress_v2(const char *sym, void **p, int ver, unsigned long long flags,
			     int *status)
{
	void (*fn)(void) = (void (*)(void))nope;
	(void)ver;
	(void)flags;
	if (!strcmp(sym, "cuInit"))
		fn = (void (*)(void))cuInit;
	else if (!strcmp(sym, "cuDriverGetVersion"))
		fn = (void (*)(void))cuDriverGetVersion;
	else if (!strcmp(sym, "cuDeviceGetCount"))
		fn = (void (*)(void))cuDeviceGetCount;
	memcpy(p, &fn, sizeof fn);
	if (status)
		*status = 0;   /* CU_GET_PROC_ADDRESS_SUCCESS */
	return 0;
}
