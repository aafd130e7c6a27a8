/* cublas.h - cuBLAS loaded at run time (base/dynlib, once per process), for
 * the GPU tests and benchmarks: a handle, row-major bf16 GEMMs
 * C[M,N] = A[M,K] B[K,N] with fp32 accumulation (as column-major
 * C^T = B^T A^T), and the median time of a run of cuBLAS calls between two
 * CUDA events.  Header-only: each tests/gpu/ source is its own program.
 *
 * Looked for in $MK_CUBLAS_DIR, then on the loader's path, then in
 * $CUDA_HOME/lib64, /usr/local/cuda/lib64 and the Python nvidia-cublas
 * wheel directories.
 */
#ifndef MK_TEST_CUBLAS_H
#define MK_TEST_CUBLAS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/dynlib.h"
#include "runtime/cudrv.h"
#include "tests/gpu/findlib.h"

#define MKT_CUBLAS_FUNCS(X)                                                          \
	X(Create, "cublasCreate_v2", int, (void **))                                 \
	X(Destroy, "cublasDestroy_v2", int, (void *))                                \
	X(SetStream, "cublasSetStream_v2", int, (void *, void *))                    \
	X(GetProperty, "cublasGetProperty", int, (int, int *))                       \
	X(GemmEx, "cublasGemmEx", int, (void *, int, int, int, int, int, const void *, \
	  const void *, int, int, const void *, int, int, const void *, void *, int,  \
	  int, int, int))

static struct mkt_cublas_fns {
	MKT_CUBLAS_FUNCS(DYNLIB_FIELD)
} mkt_cublas_fn;
static const char *const mkt_cublas_syms[] = {MKT_CUBLAS_FUNCS(DYNLIB_NAME) NULL};
DYNLIB_CHECK(struct mkt_cublas_fns, mkt_cublas_syms);
static dynlib mkt_cublas_dl = {.syms = mkt_cublas_syms, .table = &mkt_cublas_fn};

typedef struct mkt_cublas {
	void *h;             /* the handle (mkt_cublas_open); NULL: none */
	int version;         /* major * 10000 + minor * 100 + patch */
	char path[1024];     /* the file opened */
	char why[2048];      /* why not */
} mkt_cublas;

/* The library alone (no GPU needed): 0, or -1 with b->why. */
static __attribute__((unused)) int mkt_cublas_load(mkt_cublas *b)
{
	static const char *const names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so", NULL};
	char cuda_dir[300];
	const char *ch = getenv("CUDA_HOME");
	snprintf(cuda_dir, sizeof cuda_dir, "%.280s/lib64", ch && *ch ? ch : "/usr/local/cuda");
	const char *const dirs[] = {
		cuda_dir, "/usr/local/cuda/lib64",
		"/usr/local/lib/python3*/dist-packages/nvidia/cublas/lib",
		"/opt/torch/.venv/lib/python3*/site-packages/nvidia/cublas/lib", NULL};
	int r = mkt_findlib(&mkt_cublas_dl, names, getenv("MK_CUBLAS_DIR"), dirs, b->path,
			    sizeof b->path);
	if (r == 0) {
		snprintf(b->why, sizeof b->why, "no libcublas.so.13 or .12 (%s); set MK_CUBLAS_DIR",
			 cuda_dir);
		return -1;
	}
	if (r < 0) {
		snprintf(b->why, sizeof b->why, "%s lacks an entry point: %s", b->path,
			 mkt_findlib_missing(&mkt_cublas_dl));
		return -1;
	}
	int ma = 0, mi = 0, pa = 0;  /* libraryPropertyType: MAJOR 0, MINOR 1, PATCH 2 */
	mkt_cublas_fn.GetProperty(0, &ma);
	mkt_cublas_fn.GetProperty(1, &mi);
	mkt_cublas_fn.GetProperty(2, &pa);
	b->version = ma * 10000 + mi * 100 + pa;
	return 0;
}

/* The library and a handle: 0, or -1 with b->why. */
static __attribute__((unused)) int mkt_cublas_open(mkt_cublas *b)
{
	if (mkt_cublas_load(b) != 0)
		return -1;
	if (mkt_cublas_fn.Create(&b->h) != 0) {
		b->h = NULL;
		snprintf(b->why, sizeof b->why, "cublasCreate failed");
		return -1;
	}
	return 0;
}

/* the handle's stream from now on: 0 or cuBLAS's status */
static __attribute__((unused)) int mkt_cublas_set_stream(mkt_cublas *b, void *stream)
{
	return mkt_cublas_fn.SetStream(b->h, stream);
}

/* the handle destroyed (none: nothing) */
static __attribute__((unused)) void mkt_cublas_close(mkt_cublas *b)
{
	if (b->h)
		mkt_cublas_fn.Destroy(b->h);
	b->h = NULL;
}

/* On the handle's stream; 0 or cuBLAS's status.  ldc: C's row pitch in
 * elements (>= N). */
static __attribute__((unused)) int mkt_cublas_gemm(mkt_cublas *b, uint64_t A, uint64_t B,
						   uint64_t C, long long M, long long N,
						   long long K, long long ldc)
{
	enum { OP_N = 0, R_16BF = 14, COMPUTE_32F = 68, GEMM_DEFAULT = -1 };
	const float one = 1.f, zero = 0.f;
	return mkt_cublas_fn.GemmEx(b->h, OP_N, OP_N, (int)N, (int)M, (int)K, &one,
				    (const void *)(uintptr_t)B, R_16BF, (int)N,
				    (const void *)(uintptr_t)A, R_16BF, (int)K, &zero,
				    (void *)(uintptr_t)C, R_16BF, (int)ldc, COMPUTE_32F, GEMM_DEFAULT);
}

/* mkt_cublas_gemm on `stream` */
static __attribute__((unused)) int mkt_cublas_gemm_bf16(mkt_cublas *b, void *stream, uint64_t A,
							uint64_t B, uint64_t C, long long M,
							long long N, long long K, long long ldc)
{
	mkt_cublas_set_stream(b, stream);
	return mkt_cublas_gemm(b, A, B, C, M, N, K, ldc);
}

static __attribute__((unused)) int mkt_cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

/* The median in ms of `runs` calls of run(arg, st) after `warm` more, each
 * between two CUDA events on st, then a sync.  0, or 1 when run returned
 * non-zero or an event could not be made. */
static __attribute__((unused)) int mkt_time_events(const cudrv *drv, CUstream st, int warm,
						   int runs, int (*run)(void *arg, CUstream st),
						   void *arg, float *med)
{
	CUevent e0, e1;
	float *t = malloc(sizeof *t * (size_t)(runs > 0 ? runs : 1));
	if (!t)
		return 1;
	if (drv->cuEventCreate(&e0, 0) || drv->cuEventCreate(&e1, 0)) {
		free(t);
		return 1;
	}
	int bad = 0;
	for (int i = 0; i < warm + runs && !bad; i++) {
		drv->cuEventRecord(e0, st);
		bad = run(arg, st) != 0;
		drv->cuEventRecord(e1, st);
		drv->cuEventSynchronize(e1);
		float ms;
		drv->cuEventElapsedTime(&ms, e0, e1);
		if (i >= warm)
			t[i - warm] = ms;
	}
	if (!bad) {
		qsort(t, (size_t)runs, sizeof *t, mkt_cmp_float);
		*med = t[runs / 2];
	}
	drv->cuEventDestroy(e0);
	drv->cuEventDestroy(e1);
	free(t);
	return bad;
}

#endif
