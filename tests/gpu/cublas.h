/* cublas.h - cuBLAS loaded at run time, for the GPU tests and benchmarks.
 * One function: row-major bf16 C[M,N] = A[M,K] B[K,N], fp32 accumulation
 * (as column-major C^T = B^T A^T). */
#ifndef MK_TEST_CUBLAS_H
#define MK_TEST_CUBLAS_H

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef int (*mkt_cublas_create_fn)(void **);
typedef int (*mkt_cublas_set_stream_fn)(void *, void *);
typedef int (*mkt_cublas_gemm_ex_fn)(void *, int, int, int, int, int, const void *, const void *,
				     int, int, const void *, int, int, const void *, void *, int,
				     int, int, int);

typedef struct mkt_cublas {
	void *h;
	mkt_cublas_gemm_ex_fn gemm_ex;
	mkt_cublas_set_stream_fn set_stream;
	char why[256];
} mkt_cublas;

static int mkt_cublas_open(mkt_cublas *b)
{
	static const char *const names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
	const char *dirs[] = {getenv("MK_CUBLAS_DIR"), getenv("CUDA_HOME"), "/usr/local/cuda"};
	char path[512];
	void *lib = NULL;
	for (int i = 0; i < 3 && !lib; i++)
		lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	for (int d = 0; d < 3 && !lib; d++)
		for (int i = 0; i < 2 && !lib && dirs[d] && *dirs[d]; i++) {
			snprintf(path, sizeof path, "%s%s/%s", dirs[d], d ? "/lib64" : "", names[i]);
			lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		}
	if (!lib) {
		snprintf(b->why, sizeof b->why, "no libcublas.so.13 or .12; set MK_CUBLAS_DIR");
		return -1;
	}
	mkt_cublas_create_fn create = (mkt_cublas_create_fn)dlsym(lib, "cublasCreate_v2");
	b->gemm_ex = (mkt_cublas_gemm_ex_fn)dlsym(lib, "cublasGemmEx");
	b->set_stream = (mkt_cublas_set_stream_fn)dlsym(lib, "cublasSetStream_v2");
	if (!create || !b->gemm_ex || !b->set_stream || create(&b->h) != 0) {
		snprintf(b->why, sizeof b->why, "cublasCreate failed");
		return -1;
	}
	return 0;
}

/* 0 or cuBLAS's status; ldc: C's row pitch in elements (>= N) */
static int mkt_cublas_gemm_bf16(mkt_cublas *b, void *stream, uint64_t A, uint64_t B, uint64_t C,
				long long M, long long N, long long K, long long ldc)
{
	enum { OP_N = 0, R_16BF = 14, COMPUTE_32F = 68, GEMM_DEFAULT = -1 };
	const float one = 1.f, zero = 0.f;
	b->set_stream(b->h, stream);
	return b->gemm_ex(b->h, OP_N, OP_N, (int)N, (int)M, (int)K, &one, (const void *)(uintptr_t)B,
			  R_16BF, (int)N, (const void *)(uintptr_t)A, R_16BF, (int)K, &zero,
			  (void *)(uintptr_t)C, R_16BF, (int)ldc, COMPUTE_32F, GEMM_DEFAULT);
}

#endif
