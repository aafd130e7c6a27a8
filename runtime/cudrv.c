/* cudrv.c - the CUDA driver API, loaded at run time; see cudrv.h.
 *
 * cuda.h renames many functions to their ABI version (cuMemAlloc is
 * cuMemAlloc_v2), so each X-macro entry has two names: the base name
 * (#name, not macro-expanded) and the versioned one (STR(name), expanded),
 * which is exactly the function whose prototype we were compiled against.
 *
 * So the versioned name is looked up first, with dlsym.  Asking
 * cuGetProcAddress for the base name at our CUDA_VERSION is NOT the same:
 * under CUDA 13.0 it answers "cuCtxSynchronize" with cuCtxSynchronize_v2,
 * which takes a CUcontext, while cuda.h's cuCtxSynchronize takes none
 * (seen on driver 580, H200).  cuGetProcAddress is the fallback for a
 * symbol a driver does not export under its versioned name.
 *
 * Loading happens once per process (base/dynlib opens the library and looks
 * the names up); the outcome (table, status, sentence) is kept and handed
 * to every caller.
 */
#include "cudrv.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dynlib.h"

#define STR_(x) #x
#define STR(x) STR_(x)

static cudrv drv;
static cudrv_status drv_status;
static char drv_why[256];
static pthread_once_t drv_once = PTHREAD_ONCE_INIT;
/* Set once cuGetErrorName/String are usable; read by cudrv_errstr, which
 * may run on any thread and must not itself load the driver. */
static atomic_int drv_names;

typedef CUresult (*getproc_v2_fn)(const char *, void **, int, cuuint64_t,
				  CUdriverProcAddressQueryResult *);
typedef CUresult (*getproc_v1_fn)(const char *, void **, int, cuuint64_t);

/* The name cuGetProcAddress knows: the versioned name less any "_vN".  Most
 * entries give their base name back; cuGraphInstantiate, which cuda.h maps
 * to cuGraphInstantiateWithFlags, gives the function we really call. */
static void base_name(const char *versioned, char *buf, size_t n)
{
	const char *v = strrchr(versioned, '_');
	size_t len = strlen(versioned);

	if (v && v[1] == 'v' && v[2] >= '0' && v[2] <= '9' &&
	    strspn(v + 2, "0123456789") == strlen(v + 2))
		len = (size_t)(v - versioned);
	snprintf(buf, n, "%.*s", (int)len, versioned);
}

/* For an entry point the driver does not export under its versioned name. */
static void *find(void *lib, const char *versioned)
{
	getproc_v2_fn gp2 = (getproc_v2_fn)dlsym(lib, "cuGetProcAddress_v2");
	getproc_v1_fn gp1 = gp2 ? NULL : (getproc_v1_fn)dlsym(lib, "cuGetProcAddress");
	char base[128];
	void *p = NULL;

	base_name(versioned, base, sizeof base);
	if (gp2) {
		CUdriverProcAddressQueryResult q = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
		if (gp2(base, &p, CUDA_VERSION, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &q) != CUDA_SUCCESS ||
		    q != CU_GET_PROC_ADDRESS_SUCCESS)
			p = NULL;
	} else if (gp1) {
		if (gp1(base, &p, CUDA_VERSION, CU_GET_PROC_ADDRESS_LEGACY_STREAM) != CUDA_SUCCESS)
			p = NULL;
	}
	return p;
}

#define X(name, ret, params) STR(name),
static const char *const syms[] = {CUDRV_FUNCS(X) NULL};   /* versioned: looked up */
#undef X
#define X(name, ret, params) #name,
static const char *const base_names[] = {CUDRV_FUNCS(X) NULL};   /* for messages */
#undef X
static const char *const sonames[] = {"libcuda.so.1", NULL};
static void *fns[sizeof syms / sizeof syms[0]];
static dynlib lib = {.names = sonames, .syms = syms, .table = fns, .find = find};

static void load(void)
{
	CUresult r;
	int n = 0, i = 0;

	if (!dynlib_open(&lib)) {
		drv_status = CUDRV_NO_DRIVER;
		if (lib.missing >= 0)
			snprintf(drv_why, sizeof drv_why,
				 "no CUDA driver found (libcuda.so.1 has no %s; the driver is "
				 "older than CUDA %d.%d)", base_names[lib.missing],
				 CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10);
		else
			snprintf(drv_why, sizeof drv_why, "no CUDA driver found (%.220s)", lib.why);
		return;
	}
#define X(name, ret, params) drv.name = (ret(*) params)fns[i++];
	CUDRV_FUNCS(X)
#undef X
	drv.lib = lib.handle;  /* kept open for the life of the process */
	atomic_store_explicit(&drv_names, 1, memory_order_release);

	if (drv.cuDriverGetVersion(&drv.version) != CUDA_SUCCESS)
		drv.version = 0;
	if ((r = drv.cuInit(0)) != CUDA_SUCCESS) {
		drv_status = CUDRV_NO_GPU;
		snprintf(drv_why, sizeof drv_why, "no GPU visible (cuInit: %s)", cudrv_errstr(r));
		return;
	}
	if ((r = drv.cuDeviceGetCount(&n)) != CUDA_SUCCESS) {
		drv_status = CUDRV_ERROR;
		snprintf(drv_why, sizeof drv_why, "CUDA driver error (cuDeviceGetCount: %s)",
			 cudrv_errstr(r));
		return;
	}
	if (n == 0) {
		drv_status = CUDRV_NO_GPU;
		snprintf(drv_why, sizeof drv_why, "no GPU visible (the driver reports 0 devices)");
		return;
	}
	drv_status = CUDRV_OK;
}

cudrv_status cudrv_get(const cudrv **out, char *why, size_t n)
{
	pthread_once(&drv_once, load);
	if (out)
		*out = drv_status == CUDRV_OK ? &drv : NULL;
	if (why && n)
		snprintf(why, n, "%s", drv_status == CUDRV_OK ? "" : drv_why);
	return drv_status;
}

/* ---- error strings ------------------------------------------------------- */

/* For when the driver cannot be asked: the codes a user is likely to meet,
 * with the driver's own wording. */
#define CUDRV_ERRORS(E)                                                               \
	E(CUDA_SUCCESS, "no error")                                                   \
	E(CUDA_ERROR_INVALID_VALUE, "invalid argument")                               \
	E(CUDA_ERROR_OUT_OF_MEMORY, "out of memory")                                  \
	E(CUDA_ERROR_NOT_INITIALIZED, "initialization error")                         \
	E(CUDA_ERROR_DEINITIALIZED, "driver shutting down")                           \
	E(CUDA_ERROR_STUB_LIBRARY, "CUDA driver is a stub library")                   \
	E(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER, "the requested call requires a newer driver") \
	E(CUDA_ERROR_DEVICE_UNAVAILABLE, "CUDA-capable device(s) is/are busy or unavailable") \
	E(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected")                 \
	E(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal")                        \
	E(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid")                 \
	E(CUDA_ERROR_INVALID_CONTEXT, "invalid device context")                       \
	E(CUDA_ERROR_NO_BINARY_FOR_GPU, "no kernel image is available for execution on the device") \
	E(CUDA_ERROR_ECC_UNCORRECTABLE, "uncorrectable ECC error encountered")        \
	E(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "peer access is not supported between these two devices") \
	E(CUDA_ERROR_INVALID_PTX, "a PTX JIT compilation failed")                     \
	E(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "the provided PTX was compiled with an unsupported toolchain.") \
	E(CUDA_ERROR_NVLINK_UNCORRECTABLE, "uncorrectable NVLink error detected during the execution") \
	E(CUDA_ERROR_INVALID_SOURCE, "device kernel image is invalid")                \
	E(CUDA_ERROR_FILE_NOT_FOUND, "file not found")                                \
	E(CUDA_ERROR_OPERATING_SYSTEM, "OS call failed or operation not supported on this OS") \
	E(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle")                       \
	E(CUDA_ERROR_NOT_FOUND, "named symbol not found")                             \
	E(CUDA_ERROR_NOT_READY, "device not ready")                                   \
	E(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered")     \
	E(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "too many resources requested for launch") \
	E(CUDA_ERROR_LAUNCH_TIMEOUT, "the launch timed out and was terminated")       \
	E(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "peer access is already enabled")   \
	E(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, "peer access has not been enabled")     \
	E(CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed")                    \
	E(CUDA_ERROR_ASSERT, "device-side assert triggered")                          \
	E(CUDA_ERROR_HARDWARE_STACK_ERROR, "hardware stack error")                    \
	E(CUDA_ERROR_ILLEGAL_INSTRUCTION, "an illegal instruction was encountered")   \
	E(CUDA_ERROR_MISALIGNED_ADDRESS, "misaligned address")                        \
	E(CUDA_ERROR_INVALID_ADDRESS_SPACE, "operation not supported on global/shared address space") \
	E(CUDA_ERROR_INVALID_PC, "invalid program counter")                           \
	E(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure")                     \
	E(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, "too many blocks in cooperative launch") \
	E(CUDA_ERROR_NOT_PERMITTED, "operation not permitted")                        \
	E(CUDA_ERROR_NOT_SUPPORTED, "operation not supported")                        \
	E(CUDA_ERROR_SYSTEM_NOT_READY, "system not yet initialized")                  \
	E(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "system has unsupported display driver / cuda driver combination") \
	E(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, "forward compatibility was attempted on non supported HW") \
	E(CUDA_ERROR_TIMEOUT, "wait operation timed out")                             \
	E(CUDA_ERROR_INVALID_CLUSTER_SIZE, "invalid cluster size")                    \
	E(CUDA_ERROR_UNKNOWN, "unknown error")

static const char *static_errstr(CUresult r)
{
	switch (r) {
#define E(code, desc) case code: return #code ": " desc;
	CUDRV_ERRORS(E)
#undef E
	default: return NULL;
	}
}

/* Strings composed at run time are interned, never freed, so the pointer
 * returned stays valid for the life of the process, on any thread. */
typedef struct interned {
	struct interned *next;
	CUresult code;
	char s[];
} interned;
static interned *interned_head;
static pthread_mutex_t interned_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *intern(CUresult r, const char *name, const char *desc)
{
	interned *e;
	size_t n;
	const char *s = NULL;

	pthread_mutex_lock(&interned_lock);
	for (e = interned_head; e; e = e->next)
		if (e->code == r)
			break;
	if (!e) {
		n = strlen(name) + strlen(desc) + 3;
		if ((e = malloc(sizeof *e + n)) != NULL) {
			e->code = r;
			snprintf(e->s, n, "%s: %s", name, desc);
			e->next = interned_head;
			interned_head = e;
		}
	}
	if (e)
		s = e->s;
	pthread_mutex_unlock(&interned_lock);
	return s;
}

const char *cudrv_errstr(CUresult r)
{
	const char *name = NULL, *desc = NULL, *s;
	char num[48];

	if (atomic_load_explicit(&drv_names, memory_order_acquire) &&
	    drv.cuGetErrorName(r, &name) == CUDA_SUCCESS && name &&
	    drv.cuGetErrorString(r, &desc) == CUDA_SUCCESS && desc &&
	    (s = intern(r, name, desc)) != NULL)
		return s;
	if ((s = static_errstr(r)) != NULL)
		return s;
	snprintf(num, sizeof num, "CUresult %d", (int)r);
	s = intern(r, num, "unrecognised CUDA error code");
	return s ? s : "unrecognised CUDA error code";
}
