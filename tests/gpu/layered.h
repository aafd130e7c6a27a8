/* layered.h - bench_patterns' layered baseline: NCCL and cuBLAS one after
 * the other on one stream, as a framework runs them, and the helper
 * kernels compiled with NVRTC (fill writes the inputs of both sides, gelu
 * is tp_mlp's); the communicator and the cuBLAS handle of each rank.
 * Header-only, for bench_patterns.c alone.
 */
#ifndef MKT_LAYERED_H
#define MKT_LAYERED_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "codegen/nvrtc.h"
#include "runtime/cudrv.h"
#include "tests/gpu/bench_case.h"
#include "tests/gpu/bench_job.h"
#include "tests/gpu/cublas.h"
#include "tests/gpu/nccl.h"

static mkt_nccl nccl;
static mkt_cublas blas;

#define NK(call)                                                                    \
	do {                                                                        \
		int r_ = (call);                                                    \
		if (r_ != 0)                                                        \
			die("%s:%d: %s: %s", __FILE__, __LINE__, #call,             \
			    mkt_nccl_fn.GetErrorString(r_));                        \
	} while (0)

/* ---- helper kernels: inputs and gelu -------------------------------------- */

/* Inputs are k/128 * scale for k in [-128, 128) from a hash of the element
 * index; gelu is the erf form of mkd/ew.cuh, fp32 math, bf16 storage. */
static const char AUX_SRC[] =
	"#include \"mkd/base.cuh\"\n"
	"extern \"C\" __global__ void bp_fill(u16 *p, long long n, unsigned long long seed, float scale)\n"
	"{\n"
	"\tfor (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;\n"
	"\t     i += (long long)gridDim.x * blockDim.x) {\n"
	"\t\tunsigned long long x = (unsigned long long)i * 0x9E3779B97F4A7C15ull + seed;\n"
	"\t\tx ^= x >> 31;\n"
	"\t\tx *= 0xBF58476D1CE4E5B9ull;\n"
	"\t\tx ^= x >> 29;\n"
	"\t\tp[i] = mkd_f32_bf16((float)((int)(x >> 56) - 128) * (1.0f / 128.0f) * scale);\n"
	"\t}\n"
	"}\n"
	"static __device__ __forceinline__ u32 bp_g(u32 h)\n"
	"{\n"
	"\tfloat x = mkd_bf16_f32((u16)h);\n"
	"\treturn mkd_f32_bf16(0.5f * x * (1.f + erff(x * 0.7071067811865476f)));\n"
	"}\n"
	"static __device__ __forceinline__ u32 bp_g2(u32 w)\n"
	"{\n"
	"\treturn bp_g(w & 0xffffu) | bp_g(w >> 16) << 16;\n"
	"}\n"
	"extern \"C\" __global__ void bp_gelu(u16 *p, long long n)\n"
	"{\n"
	"\tconst long long n8 = n / 8, step = (long long)gridDim.x * blockDim.x;\n"
	"\tconst long long me = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
	"\tuint4 *v = (uint4 *)p;\n"
	"\tfor (long long i = me; i < n8; i += step) {\n"
	"\t\tuint4 w = v[i];\n"
	"\t\tw.x = bp_g2(w.x);\n"
	"\t\tw.y = bp_g2(w.y);\n"
	"\t\tw.z = bp_g2(w.z);\n"
	"\t\tw.w = bp_g2(w.w);\n"
	"\t\tv[i] = w;\n"
	"\t}\n"
	"\tfor (long long i = n8 * 8 + me; i < n; i += step)\n"
	"\t\tp[i] = (u16)bp_g(p[i]);\n"
	"}\n";

static CUmodule aux_mod;
static CUfunction fill_fn, gelu_fn;
static int sms;

/* ---- the layered baseline ------------------------------------------------------------- */

static CUstream stream;

static void fill(CUdeviceptr p, long long n, unsigned long long seed, float scale)
{
	void *args[] = {&p, &n, &seed, &scale};
	CK(cu->cuLaunchKernel(fill_fn, (unsigned)(sms * 4), 1, 1, 256, 1, 1, 0, stream, args, NULL));
}

static void gelu(CUdeviceptr p, long long n)
{
	void *args[] = {&p, &n};
	CK(cu->cuLaunchKernel(gelu_fn, (unsigned)(sms * 4), 1, 1, 256, 1, 1, 0, stream, args, NULL));
}

/* row-major C[M,N] = A[M,K] B[K,N], on stream (blas_setup) */
static void gemm(CUdeviceptr A, CUdeviceptr B, CUdeviceptr C, long long M, long long N, long long K)
{
	int r = mkt_cublas_gemm(&blas, A, B, C, M, N, K, N);
	if (r != 0)
		die("cublasGemmEx %lldx%lldx%lld: status %d", M, N, K, r);
}

static void baseline_ops(const bcase *c, int what)
{
	const long long W = c->world;
	const buf *b = c->b;
	switch (c->pat) {
	case P_AG_GEMM:
		if (what & DO_COMM)
			NK(mkt_nccl_fn.AllGather((void *)(uintptr_t)b[AG_A].d,
						 (void *)(uintptr_t)b[AG_AG].d, (size_t)(c->M / W * c->K),
						 MKT_NCCL_BF16, nccl.comm, stream));
		if (what & DO_COMPUTE)
			gemm(b[AG_AG].d, b[AG_B].d, b[AG_C].d, c->M, c->N, c->K);
		break;
	case P_GEMM_RS:
	case P_GEMM_AR:
		if (what & DO_COMPUTE)
			gemm(b[RS_X].d, b[RS_W].d, b[RS_C].d, c->M, c->N, c->K / W);
		if ((what & DO_COMM) && c->pat == P_GEMM_RS)
			NK(mkt_nccl_fn.ReduceScatter((void *)(uintptr_t)b[RS_C].d,
						     (void *)(uintptr_t)b[RS_Y].d, (size_t)(c->M / W * c->N),
						     MKT_NCCL_BF16, MKT_NCCL_SUM, nccl.comm, stream));
		if ((what & DO_COMM) && c->pat == P_GEMM_AR)
			NK(mkt_nccl_fn.AllReduce((void *)(uintptr_t)b[RS_C].d,
						 (void *)(uintptr_t)b[RS_Y].d, (size_t)(c->M * c->N),
						 MKT_NCCL_BF16, MKT_NCCL_SUM, nccl.comm, stream));
		break;
	case P_TP_MLP:
		if (what & DO_COMM)
			NK(mkt_nccl_fn.AllGather((void *)(uintptr_t)b[MLP_X].d,
						 (void *)(uintptr_t)b[MLP_XG].d, (size_t)(c->M / W * c->N),
						 MKT_NCCL_BF16, nccl.comm, stream));
		if (what & DO_COMPUTE) {
			gemm(b[MLP_XG].d, b[MLP_W1].d, b[MLP_U].d, c->M, c->K / W, c->N);
			gelu(b[MLP_U].d, c->M * (c->K / W));
			gemm(b[MLP_U].d, b[MLP_W2].d, b[MLP_P].d, c->M, c->N, c->K / W);
		}
		if (what & DO_COMM)
			NK(mkt_nccl_fn.ReduceScatter((void *)(uintptr_t)b[MLP_P].d,
						     (void *)(uintptr_t)b[MLP_Y].d, (size_t)(c->M / W * c->N),
						     MKT_NCCL_BF16, MKT_NCCL_SUM, nccl.comm, stream));
		break;
	default:
		break;
	}
}

/* ---- each rank's communicator, cuBLAS handle, helper kernels ---------------------------------- */

static int nccl_setup(job *j, char *why, size_t n)
{
	if (j->shared) {
		snprintf(why, n, "ranks share a GPU and NCCL needs one GPU per rank");
		return -1;
	}
	int bad = mkt_nccl_load(&nccl) != 0;
	if (job_max(j, bad)) {
		snprintf(why, n, "%.500s", bad ? nccl.why : "another rank has no NCCL");
		return -1;
	}
	setenv("NCCL_NVLS_ENABLE", "0", 1);  /* never NVLink multicast */
	mkt_nccl_id id;
	memset(&id, 0, sizeof id);
	if (j->rank == 0)
		NK(mkt_nccl_fn.GetUniqueId(&id));
	job_bcast(j, &id, sizeof id);
	NK(mkt_nccl_fn.CommInitRank(&nccl.comm, j->world, id, j->rank));
	return 0;
}

static int blas_setup(job *j, char *why, size_t n)
{
	int bad = mkt_cublas_open(&blas) != 0;
	if (!bad && mkt_cublas_set_stream(&blas, stream) != 0) {
		snprintf(blas.why, sizeof blas.why, "cublasCreate failed");
		bad = 1;
	}
	if (job_max(j, bad)) {
		snprintf(why, n, "%.500s", bad ? blas.why : "another rank has no cuBLAS");
		return -1;
	}
	return 0;
}

static void aux_compile(int major, int minor)
{
	char arch[32];
	snprintf(arch, sizeof arch, "sm_%d%d%s", major, minor, major == 9 ? "a" : "");
	cg_compile_opts co = {.arch = arch, .use_cache = 1};
	cg_binary bin;
	cg_status cs = cg_compile(AUX_SRC, "bench_patterns.cu", &co, CG_CUBIN, &bin);
	if (cs != CG_OK)
		die("NVRTC: %s\n%s", cg_strerror(cs), bin.log ? bin.log : "");
	CK(cu->cuModuleLoadData(&aux_mod, bin.data));
	cg_binary_free(&bin);
	CK(cu->cuModuleGetFunction(&fill_fn, aux_mod, "bp_fill"));
	CK(cu->cuModuleGetFunction(&gelu_fn, aux_mod, "bp_gelu"));
}

#endif
