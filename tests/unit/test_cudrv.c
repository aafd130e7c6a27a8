/* test_cudrv.c - loading the CUDA driver where there may be none.
 *
 * On CI (no GPU, no driver) cudrv_get must say so in one sentence and never
 * crash; on a GPU machine it must hand back a working table.  When the
 * toolkit's stub libcuda is around, the test runs itself again with the
 * stub in place of libcuda.so.1: that walks the whole entry-point table
 * through cuGetProcAddress (or dlsym) without a GPU.
 */
#include "runtime/cudrv.h"
#include "codegen/nvrtc.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static int starts(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

static const char *status_name(cudrv_status s)
{
	switch (s) {
	case CUDRV_OK: return "CUDRV_OK";
	case CUDRV_NO_DRIVER: return "CUDRV_NO_DRIVER";
	case CUDRV_NO_GPU: return "CUDRV_NO_GPU";
	case CUDRV_ERROR: return "CUDRV_ERROR";
	}
	return "?";
}

typedef struct {
	cudrv_status s;
	const cudrv *d;
	char why[256];
} result;

static void *getter(void *arg)
{
	result *r = arg;
	r->s = cudrv_get(&r->d, r->why, sizeof r->why);
	(void)cudrv_errstr(CUDA_ERROR_INVALID_VALUE);
	return NULL;
}

static void test_errstr(void)
{
	const char *a, *b;

	a = cudrv_errstr(CUDA_SUCCESS);
	CHECK_SAY(starts(a, "CUDA_SUCCESS: "), "errstr(CUDA_SUCCESS) = \"%s\"", a);
	a = cudrv_errstr(CUDA_ERROR_OUT_OF_MEMORY);
	CHECK_SAY(!strcmp(a, "CUDA_ERROR_OUT_OF_MEMORY: out of memory"), "errstr(OUT_OF_MEMORY) = \"%s\"", a);
	a = cudrv_errstr(CUDA_ERROR_NO_DEVICE);
	CHECK_SAY(starts(a, "CUDA_ERROR_NO_DEVICE: ") && strlen(a) > 24, "errstr(NO_DEVICE) = \"%s\"", a);
	a = cudrv_errstr(CUDA_ERROR_ILLEGAL_ADDRESS);
	CHECK_SAY(starts(a, "CUDA_ERROR_ILLEGAL_ADDRESS: "), "errstr(ILLEGAL_ADDRESS) = \"%s\"", a);
	a = cudrv_errstr((CUresult)12345);
	b = cudrv_errstr((CUresult)12345);
	CHECK_SAY(a && strstr(a, "12345") && a == b, "errstr(12345) = \"%s\", stable pointer", a ? a : "(null)");
	a = cudrv_errstr(CUDA_ERROR_UNKNOWN);
	CHECK_SAY(starts(a, "CUDA_ERROR_UNKNOWN: ") && !strchr(a, '\n'), "errstr(UNKNOWN) = \"%s\"", a);
}

/* The child run with the stub library as libcuda.so.1. */
static int stub_child(void)
{
	const cudrv *d = (const cudrv *)1;
	char why[256] = "";
	cudrv_status s = cudrv_get(&d, why, sizeof why);

	printf("      stub: %s: %s\n", status_name(s), why);
	CHECK_SAY(s == CUDRV_NO_GPU && strstr(why, "CUDA_ERROR_STUB_LIBRARY") && d == NULL,
	          "stub libcuda: every entry point found, cuInit refuses: CUDRV_NO_GPU");
	test_errstr();
	return failures != 0;
}

static void run_with_stub(const char *self)
{
	const char *home = getenv("CUDA_HOME");
	char stub[1024], tmp[] = "/tmp/mkt_cudrv.XXXXXX", link[1100];
	pid_t pid;
	int st = 0;

	snprintf(stub, sizeof stub, "%s/lib64/stubs/libcuda.so", home && *home ? home : "/usr/local/cuda");
	if (access(stub, R_OK) != 0) {
		printf("      (no stub libcuda at %s: stub run skipped)\n", stub);
		return;
	}
	if (!mkdtemp(tmp)) {
		CHECK_SAY(0, "mkdtemp");
		return;
	}
	snprintf(link, sizeof link, "%s/libcuda.so.1", tmp);
	if (symlink(stub, link) != 0) {
		CHECK_SAY(0, "symlink %s", link);
		rmdir(tmp);
		return;
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		setenv("LD_LIBRARY_PATH", tmp, 1);
		setenv("MKT_CUDRV_STUB", "1", 1);
		execl(self, self, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		st = -1;
	CHECK_SAY(st == 0, "run against the stub library passed");
	unlink(link);
	rmdir(tmp);
}

/* With a GPU: the table really works end to end - NVRTC cubin for this
 * device, module load, memory, launch, copy back. */
static void gpu_smoke(const cudrv *d)
{
	static const char src[] =
		"extern \"C\" __global__ void mkt_add(int *p) { p[threadIdx.x] += 2 * threadIdx.x; }\n";
	cg_compile_opts o = { 0 };
	cg_binary b;
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
	CUdeviceptr buf;
	char arch[32];
	int major = 0, minor = 0, h[64], i, good = 1;
	void *args[1];
	CUresult r;

	if (d->cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
	    d->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) ||
	    d->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)) {
		CHECK_SAY(0, "device 0 attributes");
		return;
	}
	snprintf(arch, sizeof arch, "sm_%d%d%s", major, minor, major == 9 ? "a" : "");
	o.arch = arch;
	if (cg_compile(src, "mkt_add.cu", &o, CG_CUBIN, &b) != CG_OK) {
		CHECK_SAY(0, "NVRTC cubin for %s: %s", arch, b.log ? b.log : "");
		cg_binary_free(&b);
		return;
	}
	CHECK_SAY(d->cuDevicePrimaryCtxRetain(&ctx, dev) == CUDA_SUCCESS &&
	          d->cuCtxSetCurrent(ctx) == CUDA_SUCCESS, "primary context on device 0 (%s)", arch);
	CHECK_SAY(d->cuModuleLoadData(&mod, b.data) == CUDA_SUCCESS &&
	          d->cuModuleGetFunction(&fn, mod, "mkt_add") == CUDA_SUCCESS, "cubin loads, kernel found");
	for (i = 0; i < 64; i++)
		h[i] = i;
	CHECK_SAY(d->cuMemAlloc(&buf, sizeof h) == CUDA_SUCCESS &&
	          d->cuMemcpyHtoD(buf, h, sizeof h) == CUDA_SUCCESS, "cuMemAlloc, cuMemcpyHtoD");
	args[0] = &buf;
	r = d->cuLaunchKernel(fn, 1, 1, 1, 64, 1, 1, 0, NULL, args, NULL);
	CHECK_SAY(r == CUDA_SUCCESS, "cuLaunchKernel: %s", cudrv_errstr(r));
	/* cuGetProcAddress would hand back cuCtxSynchronize_v2(CUcontext) here. */
	r = d->cuCtxSynchronize();
	CHECK_SAY(r == CUDA_SUCCESS, "cuCtxSynchronize (the v1 ABI of cuda.h): %s", cudrv_errstr(r));
	memset(h, 0, sizeof h);
	CHECK_SAY(d->cuMemcpyDtoH(h, buf, sizeof h) == CUDA_SUCCESS, "cuMemcpyDtoH");
	for (i = 0; i < 64; i++)
		good &= h[i] == 3 * i;
	CHECK_SAY(good, "kernel result right: h[63] = %d", h[63]);
	CHECK_SAY(d->cuMemFree(buf) == CUDA_SUCCESS && d->cuModuleUnload(mod) == CUDA_SUCCESS &&
	          d->cuDevicePrimaryCtxRelease(dev) == CUDA_SUCCESS, "freed, unloaded, released");
	cg_binary_free(&b);
}

int main(int argc, char **argv)
{
	result r[8];
	pthread_t t[8];
	const cudrv *d = (const cudrv *)1;
	char why[256] = "x", why2[256] = "y";
	cudrv_status s, s2;
	int i, same = 1;

	(void)argc;
	if (getenv("MKT_CUDRV_STUB"))
		return stub_child();

	/* errstr before the driver is even looked for: the static table. */
	test_errstr();

	for (i = 0; i < 8; i++)
		pthread_create(&t[i], NULL, getter, &r[i]);
	for (i = 0; i < 8; i++)
		pthread_join(t[i], NULL);
	s = cudrv_get(&d, why, sizeof why);
	for (i = 0; i < 8; i++)
		same &= r[i].s == s && r[i].d == d && !strcmp(r[i].why, why);
	CHECK_SAY(same, "8 threads racing to load get the same answer: %s", status_name(s));
	s2 = cudrv_get(NULL, why2, sizeof why2);
	CHECK_SAY(s2 == s && !strcmp(why, why2), "second call agrees");

	if (s == CUDRV_OK) {
		int n = 0;
		CHECK_SAY(d != NULL && why[0] == '\0', "driver loaded, table returned");
		CHECK_SAY(d->version >= 12000, "driver version %d", d->version);
		CHECK_SAY(d->cuDeviceGetCount(&n) == CUDA_SUCCESS && n > 0, "cuDeviceGetCount: %d GPU(s)", n);
		if (n > 0) {
			CUdevice dev;
			char name[128] = "";
			size_t mem = 0;
			CHECK_SAY(d->cuDeviceGet(&dev, 0) == CUDA_SUCCESS &&
			          d->cuDeviceGetName(name, sizeof name, dev) == CUDA_SUCCESS &&
			          d->cuDeviceTotalMem(&mem, dev) == CUDA_SUCCESS && mem > 0,
			          "device 0: %s, %zu MiB", name, mem >> 20);
			gpu_smoke(d);
		}
	} else {
		printf("      %s: %s\n", status_name(s), why);
		CHECK_SAY(s == CUDRV_NO_DRIVER || s == CUDRV_NO_GPU, "no GPU here: CUDRV_NO_DRIVER or CUDRV_NO_GPU");
		CHECK_SAY(d == NULL, "no table handed out");
		CHECK_SAY(why[0] && !strchr(why, '\n') && why[strlen(why) - 1] == ')',
		          "why is one line: \"%s\"", why);
		CHECK_SAY(starts(why, s == CUDRV_NO_DRIVER ? "no CUDA driver found (" : "no GPU visible ("),
		          "why says what is missing");
		s2 = cudrv_get(NULL, why2, 8);
		CHECK_SAY(strlen(why2) == 7, "why is cut to the buffer: \"%s\"", why2);
	}
	test_errstr();  /* again, now maybe through the driver */

	if (s == CUDRV_NO_DRIVER)
		run_with_stub(access("/proc/self/exe", X_OK) == 0 ? "/proc/self/exe" : argv[0]);
	printf("%s\n", failures ? "FAILED" : "all passed");
	return failures != 0;
}
