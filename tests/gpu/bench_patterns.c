/* bench_patterns.c - the fused tensor-parallel patterns against NCCL + cuBLAS
 * (make bench, on the GPU).
 *
 *   bench_patterns [-n N] [--sizes 4096,8192,...] [--patterns ag_gemm,...]
 *                  [--iters 20]       the table below
 *   bench_patterns --sweep [--sweep-size M] [-n N] [--patterns ...]
 *                                    instead of the table: the roles hint
 *                                    swept against the automatic split
 *   bench_patterns --check-libs      load cuBLAS and NCCL, compile the helper
 *                                    kernels with NVRTC; no GPU needed
 *
 * One process per rank: with -n N (default: one per visible GPU) the program
 * starts N copies of itself as mkrun -n does (MK_RANK, MK_WORLD_SIZE,
 * MK_ROOT, MK_JOB_TOKEN; rank r on GPU r % GPUs) and they join through
 * mk_comm_create; started by mpirun, Slurm or torchrun it is one rank.
 *
 * For each pattern and size, on the same inputs (bf16, fp32 accumulation):
 *  (a) fused: samples/PATTERN.mk through libmk, one persistent kernel per
 *      rank, mk_run_timed;
 *  (b) layered: the NCCL collective and the cuBLAS GEMM(s) one after the
 *      other on one stream, as a framework runs them (tp_mlp: allgather,
 *      GEMM, gelu, GEMM, reduce_scatter; gelu is a small NVRTC kernel);
 *  (c) the floor: the compute alone (GEMMs, and gelu) and the communication
 *      alone (the NCCL calls), each timed separately; floor = max of the two.
 * Every run is timed alone (CUDA events around it, then a sync), both sides
 * alike; a row reports the slowest rank's median of --iters runs after 3
 * warm-ups.  Afterwards sampled rows of the fused output are compared with
 * the layered output (bf16 tolerance relative to the output's rms).
 *
 * Shapes (mKernel's sweep), size = M:
 *   ag_gemm   C[M,N] = allgather(A)[M,K] B[K,N],  M = K = size, N = size/16
 *   gemm_rs   Y = reduce_scatter(X[M,K/W] W[K/W,N]),  M = N = size, K = size/16
 *   gemm_ar   Y = allreduce(X[M,K/W] W[K/W,N]),       M = N = size, K = size/16
 *   tp_mlp    S = size tokens, H = size/4, F = 4H = size (sequence-parallel
 *             MLP: allgather, GEMM, gelu, GEMM, reduce_scatter)
 *
 * Ranks sharing a GPU (N > GPUs, under MPS): NCCL refuses two ranks on one
 * GPU, so the layered run and the communication alone are skipped; the fused
 * and compute-alone numbers are printed as functional, not performance.
 * NVLink multicast is never used: NCCL_NVLS_ENABLE=0 in every rank.
 * Without a GPU it prints one "skipped" line and exits 0.  Exit 1 on a
 * mismatch or an error.
 */
#include <dlfcn.h>
#include <errno.h>
#include <glob.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "codegen/nvrtc.h"
#include "runtime/cudrv.h"
#include "runtime/mk.h"
#include "runtime/mk_int.h"

/* ---- NCCL and cuBLAS, loaded at run time ------------------------------------ */

/* The few pieces of the NCCL 2.x ABI used here; checked against nccl.h where
 * the build has it, so the bench builds where it does not. */
typedef struct bp_nccl_comm *bp_nccl_comm;
typedef struct bp_nccl_id { char internal[128]; } bp_nccl_id;
enum { BP_NCCL_BF16 = 9, BP_NCCL_SUM = 0 };
#if defined(__has_include)
#if __has_include(<nccl.h>)
#include <nccl.h>
_Static_assert(sizeof(ncclUniqueId) == sizeof(bp_nccl_id), "ncclUniqueId size");
_Static_assert((int)ncclBfloat16 == (int)BP_NCCL_BF16 && (int)ncclSum == (int)BP_NCCL_SUM,
	       "NCCL enum values");
#endif
#endif

static struct {
	void *lib;
	char path[1024], why[2048];
	int version;
	int (*GetVersion)(int *);
	const char *(*GetErrorString)(int);
	int (*GetUniqueId)(bp_nccl_id *);
	int (*CommInitRank)(bp_nccl_comm *, int, bp_nccl_id, int);
	int (*CommDestroy)(bp_nccl_comm);
	int (*AllGather)(const void *, void *, size_t, int, bp_nccl_comm, CUstream);
	int (*ReduceScatter)(const void *, void *, size_t, int, int, bp_nccl_comm, CUstream);
	int (*AllReduce)(const void *, void *, size_t, int, int, bp_nccl_comm, CUstream);
	bp_nccl_comm comm;
} nccl;

static struct {
	void *lib, *h;
	char path[1024], why[2048];
	int version;
	int (*Create)(void **);
	int (*Destroy)(void *);
	int (*SetStream)(void *, CUstream);
	int (*GetProperty)(int, int *);
	int (*GemmEx)(void *, int, int, int, int, int, const void *, const void *, int, int,
		      const void *, int, int, const void *, void *, int, int, int, int);
} blas;

/* dlopen the first of names[] found: in $env_dir, then on the loader's path,
 * then in each directory matching a pattern of dirs[] (NULL-terminated). */
static void *open_lib(const char *const *names, const char *env_dir, const char *const *dirs,
		      char *path, size_t n)
{
	char p[1024];
	void *lib;
	for (int i = 0; names[i] && env_dir && *env_dir; i++) {
		snprintf(p, sizeof p, "%s/%s", env_dir, names[i]);
		if ((lib = dlopen(p, RTLD_NOW | RTLD_LOCAL))) {
			snprintf(path, n, "%s", p);
			return lib;
		}
	}
	for (int i = 0; names[i]; i++)
		if ((lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL))) {
			char dir[4096] = "";
			if (dlinfo(lib, RTLD_DI_ORIGIN, dir) != 0 || !dir[0])
				snprintf(dir, sizeof dir, "(the loader's path)");
			snprintf(path, n, "%.500s/%s", dir, names[i]);
			return lib;
		}
	for (int d = 0; dirs[d]; d++) {
		glob_t g;
		if (glob(dirs[d], GLOB_NOSORT, NULL, &g) != 0)
			continue;
		for (size_t k = 0; k < g.gl_pathc; k++)
			for (int i = 0; names[i]; i++) {
				snprintf(p, sizeof p, "%s/%s", g.gl_pathv[k], names[i]);
				if ((lib = dlopen(p, RTLD_NOW | RTLD_LOCAL))) {
					snprintf(path, n, "%s", p);
					globfree(&g);
					return lib;
				}
			}
		globfree(&g);
	}
	return NULL;
}

#define SYM(lib, var, name) ((*(void **)&(var) = dlsym((lib), (name))) != NULL)

static int nccl_open(void)
{
	static const char *const names[] = {"libnccl.so.2", "libnccl.so", NULL};
	char cuda_dir[300];
	const char *ch = getenv("CUDA_HOME");
	snprintf(cuda_dir, sizeof cuda_dir, "%.280s/lib64", ch && *ch ? ch : "/usr/local/cuda");
	const char *const dirs[] = {
		"/usr/local/lib/python3*/dist-packages/nvidia/nccl/lib",
		"/usr/local/lib/python3*/site-packages/nvidia/nccl/lib",
		"/opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl/lib",
		"/usr/lib/python3*/dist-packages/nvidia/nccl/lib",
		"/usr/lib/python3/dist-packages/nvidia/nccl/lib",
		cuda_dir, "/usr/local/cuda/lib64", "/usr/lib/x86_64-linux-gnu", NULL};
	if (nccl.lib)
		return 0;
	nccl.lib = open_lib(names, getenv("MK_NCCL_DIR"), dirs, nccl.path, sizeof nccl.path);
	if (!nccl.lib) {
		snprintf(nccl.why, sizeof nccl.why,
			 "no libnccl.so.2 (looked in $MK_NCCL_DIR, the loader's path, the Python "
			 "nvidia-nccl wheel directories, %s); set MK_NCCL_DIR", cuda_dir);
		return -1;
	}
	if (!SYM(nccl.lib, nccl.GetVersion, "ncclGetVersion") ||
	    !SYM(nccl.lib, nccl.GetErrorString, "ncclGetErrorString") ||
	    !SYM(nccl.lib, nccl.GetUniqueId, "ncclGetUniqueId") ||
	    !SYM(nccl.lib, nccl.CommInitRank, "ncclCommInitRank") ||
	    !SYM(nccl.lib, nccl.CommDestroy, "ncclCommDestroy") ||
	    !SYM(nccl.lib, nccl.AllGather, "ncclAllGather") ||
	    !SYM(nccl.lib, nccl.ReduceScatter, "ncclReduceScatter") ||
	    !SYM(nccl.lib, nccl.AllReduce, "ncclAllReduce")) {
		snprintf(nccl.why, sizeof nccl.why, "%s lacks an entry point: %.500s", nccl.path, dlerror());
		nccl.lib = NULL;
		return -1;
	}
	if (nccl.GetVersion(&nccl.version) != 0)
		nccl.version = 0;
	return 0;
}

static int blas_open(void)
{
	static const char *const names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so", NULL};
	char cuda_dir[300];
	const char *ch = getenv("CUDA_HOME");
	snprintf(cuda_dir, sizeof cuda_dir, "%.280s/lib64", ch && *ch ? ch : "/usr/local/cuda");
	const char *const dirs[] = {
		cuda_dir, "/usr/local/cuda/lib64",
		"/usr/local/lib/python3*/dist-packages/nvidia/cublas/lib",
		"/opt/torch/.venv/lib/python3*/site-packages/nvidia/cublas/lib", NULL};
	if (blas.lib)
		return 0;
	blas.lib = open_lib(names, getenv("MK_CUBLAS_DIR"), dirs, blas.path, sizeof blas.path);
	if (!blas.lib) {
		snprintf(blas.why, sizeof blas.why, "no libcublas.so.13 or .12 (%s); set MK_CUBLAS_DIR",
			 cuda_dir);
		return -1;
	}
	if (!SYM(blas.lib, blas.Create, "cublasCreate_v2") ||
	    !SYM(blas.lib, blas.Destroy, "cublasDestroy_v2") ||
	    !SYM(blas.lib, blas.SetStream, "cublasSetStream_v2") ||
	    !SYM(blas.lib, blas.GetProperty, "cublasGetProperty") ||
	    !SYM(blas.lib, blas.GemmEx, "cublasGemmEx")) {
		snprintf(blas.why, sizeof blas.why, "%s lacks an entry point: %.500s", blas.path, dlerror());
		blas.lib = NULL;
		return -1;
	}
	int ma = 0, mi = 0, pa = 0;  /* libraryPropertyType: MAJOR 0, MINOR 1, PATCH 2 */
	blas.GetProperty(0, &ma);
	blas.GetProperty(1, &mi);
	blas.GetProperty(2, &pa);
	blas.version = ma * 10000 + mi * 100 + pa;
	return 0;
}

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

static const cudrv *cu;
static mk_ctx *the_ctx;
static CUmodule aux_mod;
static CUfunction fill_fn, gelu_fn;
static int sms;

/* ---- errors, progress ------------------------------------------------------------ */

static int my_rank;
static double t_start;

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "bench_patterns: rank %d: ", my_rank);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

/* progress, rank 0 only, on stderr */
static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
	if (my_rank != 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "bench_patterns [%6.1fs] ", now_s() - t_start);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

#define CK(call)                                                                          \
	do {                                                                              \
		CUresult r_ = (call);                                                     \
		if (r_ != CUDA_SUCCESS)                                                   \
			die("%s:%d: %s: %s", __FILE__, __LINE__, #call, cudrv_errstr(r_)); \
	} while (0)
#define NK(call)                                                                          \
	do {                                                                              \
		int r_ = (call);                                                          \
		if (r_ != 0)                                                              \
			die("%s:%d: %s: %s", __FILE__, __LINE__, #call, nccl.GetErrorString(r_)); \
	} while (0)

/* ---- the job: ranks, GPUs, agreement between ranks -------------------------------- */

typedef struct job {
	mk_comm *comm;        /* NULL: the only rank */
	int rank, world, local_rank, local_size;
	int ndev, dev;        /* GPUs visible here, mine */
	int rpg;              /* ranks on my GPU */
	int shared;           /* some GPU of the job holds several ranks */
} job;

static void job_barrier(job *j)
{
	if (j->comm && mk_comm_barrier(j->comm) != MK_OK)
		die("barrier: a peer rank failed or disappeared");
}

/* every rank gives v; all get the largest */
static int job_max(job *j, int v)
{
	if (!j->comm)
		return v;
	int *all = calloc((size_t)j->world, sizeof *all);
	if (!all || mk_comm_gather_int(j->comm, v, all) != MK_OK)
		die("exchanging results with the other ranks failed");
	int m = all[0];
	for (int r = 1; r < j->world; r++)
		m = all[r] > m ? all[r] : m;
	free(all);
	return m;
}

static double job_max_us(job *j, double us)
{
	double v = us * 100;  /* 10 ns units, capped at 21 s */
	return job_max(j, v > 2e9 ? 2000000000 : (int)v) / 100.0;
}

/* rank 0's n bytes (a multiple of 4) to every rank */
static void job_bcast(job *j, void *buf, size_t n)
{
	for (size_t i = 0; j->comm && i < n / 4; i++) {
		int v = 0, *all = calloc((size_t)j->world, sizeof *all);
		memcpy(&v, (char *)buf + 4 * i, 4);
		if (!all || mk_comm_gather_int(j->comm, j->rank == 0 ? v : 0, all) != MK_OK)
			die("broadcasting from rank 0 failed");
		memcpy((char *)buf + 4 * i, &all[0], 4);
		free(all);
	}
}

/* ---- the patterns --------------------------------------------------------------------- */

/* X(id, name, output tensor) */
#define PATTERNS(X)                     \
	X(AG_GEMM, "ag_gemm", "C")      \
	X(GEMM_RS, "gemm_rs", "Y")      \
	X(GEMM_AR, "gemm_ar", "Y")      \
	X(TP_MLP, "tp_mlp", "Y")

typedef enum {
#define X(id, name, out) P_##id,
	PATTERNS(X)
#undef X
	NPAT
} pat_id;

static const struct {
	const char *name, *out;
} PAT[] = {
#define X(id, name, out) {name, out},
	PATTERNS(X)
#undef X
};

enum { DO_COMPUTE = 1, DO_COMM = 2, DO_ALL = 3 };
enum { MAXBUF = 8 };

typedef struct buf {
	const char *name;     /* the pipeline's tensor, or NULL (baseline only) */
	long long elems;      /* one rank's piece */
	float scale;          /* inputs: values k/128 * scale; 0: not an input */
	CUdeviceptr d;
} buf;

typedef struct bcase {
	pat_id pat;
	long long size, M, N, K;  /* tp_mlp: M = S, N = H, K = F */
	int world;
	buf b[MAXBUF];
	int nb, out;              /* out: index of the output in b[] */
	long long out_rows, out_cols;
	long long fused_extra;    /* elements the fused pipeline holds beyond b[] */
	double flops;             /* one rank's */
	mk_param params[8];
	int nparams;
	char shape[64];
} bcase;

/* buffer indices per pattern */
enum { AG_A, AG_B, AG_AG, AG_C };
enum { RS_X, RS_W, RS_C, RS_Y };
enum { MLP_X, MLP_W1, MLP_W2, MLP_XG, MLP_U, MLP_P, MLP_Y };

static void add_buf(bcase *c, const char *name, long long elems, float scale)
{
	c->b[c->nb++] = (buf){name, elems, scale, 0};
}

static void add_param(bcase *c, const char *name, long long v)
{
	c->params[c->nparams++] = (mk_param){name, v};
}

/* Shapes and buffers of one case; NULL, or why it cannot run. */
static const char *setup_case(bcase *c, pat_id p, long long size, const job *j, char *why,
			      size_t n)
{
	const long long W = j->world;
	memset(c, 0, sizeof *c);
	c->pat = p;
	c->size = size;
	c->world = j->world;
	if (j->comm && j->world != j->local_size) {  /* several hosts: the mesh */
		add_param(c, "nodes", j->world / j->local_size);
		add_param(c, "gpus", j->local_size);
	}
	switch (p) {
	case P_AG_GEMM:
		c->M = c->K = size, c->N = size / 16;
		snprintf(c->shape, sizeof c->shape, "M=K=%lld N=%lld", c->M, c->N);
		if (size % 16 || c->M % W)
			goto indivisible;
		add_buf(c, "A", c->M / W * c->K, 1);
		add_buf(c, "B", c->K * c->N, (float)(1 / sqrt((double)c->K)));
		add_buf(c, NULL, c->M * c->K, 0);
		add_buf(c, "C", c->M * c->N, 0);
		c->out = AG_C, c->out_rows = c->M, c->out_cols = c->N;
		c->flops = 2.0 * c->M * c->N * c->K;
		break;
	case P_GEMM_RS:
	case P_GEMM_AR:
		c->M = c->N = size, c->K = size / 16;
		snprintf(c->shape, sizeof c->shape, "M=N=%lld K=%lld", c->M, c->K);
		if (size % 16 || c->K % W || (p == P_GEMM_RS && c->M % W))
			goto indivisible;
		add_buf(c, "X", c->M * (c->K / W), 1);
		add_buf(c, "W", c->K / W * c->N, (float)(1 / sqrt((double)c->K)));
		add_buf(c, NULL, c->M * c->N, 0);
		add_buf(c, "Y", (p == P_GEMM_RS ? c->M / W : c->M) * c->N, 0);
		c->out = RS_Y, c->out_rows = p == P_GEMM_RS ? c->M / W : c->M, c->out_cols = c->N;
		c->fused_extra = p == P_GEMM_AR ? 2 * c->M / W * c->N : 0;
		c->flops = 2.0 * c->M * c->N * (c->K / W);
		break;
	case P_TP_MLP:
		c->M = size, c->N = size / 4, c->K = 4 * c->N;
		snprintf(c->shape, sizeof c->shape, "S=%lld H=%lld F=%lld", c->M, c->N, c->K);
		if (size % 4 || c->M % W || c->K % W)
			goto indivisible;
		add_buf(c, "X", c->M / W * c->N, 1);
		add_buf(c, "W1", c->N * (c->K / W), (float)(1 / sqrt((double)c->N)));
		add_buf(c, "W2", c->K / W * c->N, (float)(1 / sqrt((double)c->K)));
		add_buf(c, NULL, c->M * c->N, 0);
		add_buf(c, NULL, c->M * (c->K / W), 0);
		add_buf(c, NULL, c->M * c->N, 0);
		add_buf(c, "Y", c->M / W * c->N, 0);
		c->out = MLP_Y, c->out_rows = c->M / W, c->out_cols = c->N;
		c->fused_extra = c->M * (c->K / W);  /* U and A are separate there */
		c->flops = 2.0 * 2.0 * c->M * c->N * (c->K / W);
		add_param(c, "S", c->M);
		add_param(c, "H", c->N);
		return NULL;
	default:
		return "no such pattern";
	}
	add_param(c, "M", c->M);
	add_param(c, "N", c->N);
	add_param(c, "K", c->K);
	return NULL;
indivisible:
	snprintf(why, n, "size %lld: a split dimension is not divisible by world %d (or size "
		 "by 16)", size, j->world);
	return why;
}

static long long case_bytes(const bcase *c)
{
	long long e = c->fused_extra;
	for (int i = 0; i < c->nb; i++)
		e += 2 * c->b[i].elems;  /* the layered buffers and the pipeline's own */
	return 2 * e;
}

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

/* row-major C[M,N] = A[M,K] B[K,N] as column-major C^T = B^T A^T */
static void gemm(CUdeviceptr A, CUdeviceptr B, CUdeviceptr C, long long M, long long N, long long K)
{
	enum { OP_N = 0, R_16BF = 14, COMPUTE_32F = 68, GEMM_DEFAULT = -1 };
	const float one = 1.f, zero = 0.f;
	int r = blas.GemmEx(blas.h, OP_N, OP_N, (int)N, (int)M, (int)K, &one,
			    (const void *)(uintptr_t)B, R_16BF, (int)N, (const void *)(uintptr_t)A,
			    R_16BF, (int)K, &zero, (void *)(uintptr_t)C, R_16BF, (int)N, COMPUTE_32F,
			    GEMM_DEFAULT);
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
			NK(nccl.AllGather((void *)(uintptr_t)b[AG_A].d, (void *)(uintptr_t)b[AG_AG].d,
					  (size_t)(c->M / W * c->K), BP_NCCL_BF16, nccl.comm, stream));
		if (what & DO_COMPUTE)
			gemm(b[AG_AG].d, b[AG_B].d, b[AG_C].d, c->M, c->N, c->K);
		break;
	case P_GEMM_RS:
	case P_GEMM_AR:
		if (what & DO_COMPUTE)
			gemm(b[RS_X].d, b[RS_W].d, b[RS_C].d, c->M, c->N, c->K / W);
		if ((what & DO_COMM) && c->pat == P_GEMM_RS)
			NK(nccl.ReduceScatter((void *)(uintptr_t)b[RS_C].d, (void *)(uintptr_t)b[RS_Y].d,
					      (size_t)(c->M / W * c->N), BP_NCCL_BF16, BP_NCCL_SUM,
					      nccl.comm, stream));
		if ((what & DO_COMM) && c->pat == P_GEMM_AR)
			NK(nccl.AllReduce((void *)(uintptr_t)b[RS_C].d, (void *)(uintptr_t)b[RS_Y].d,
					  (size_t)(c->M * c->N), BP_NCCL_BF16, BP_NCCL_SUM, nccl.comm,
					  stream));
		break;
	case P_TP_MLP:
		if (what & DO_COMM)
			NK(nccl.AllGather((void *)(uintptr_t)b[MLP_X].d, (void *)(uintptr_t)b[MLP_XG].d,
					  (size_t)(c->M / W * c->N), BP_NCCL_BF16, nccl.comm, stream));
		if (what & DO_COMPUTE) {
			gemm(b[MLP_XG].d, b[MLP_W1].d, b[MLP_U].d, c->M, c->K / W, c->N);
			gelu(b[MLP_U].d, c->M * (c->K / W));
			gemm(b[MLP_U].d, b[MLP_W2].d, b[MLP_P].d, c->M, c->N, c->K / W);
		}
		if (what & DO_COMM)
			NK(nccl.ReduceScatter((void *)(uintptr_t)b[MLP_P].d, (void *)(uintptr_t)b[MLP_Y].d,
					      (size_t)(c->M / W * c->N), BP_NCCL_BF16, BP_NCCL_SUM,
					      nccl.comm, stream));
		break;
	default:
		break;
	}
}

/* ---- timing ----------------------------------------------------------------------------- */

typedef struct runner {
	mk_pipeline *pl;    /* fused, or NULL: the baseline ops `what` */
	const bcase *c;
	int what;
} runner;

static CUevent ev0, ev1;

static float run_once(const runner *r)
{
	float ms = 0;
	if (r->pl) {
		mk_status st = mk_run_timed(r->pl, &ms);
		if (st != MK_OK)
			die("fused run: %s: %s\n%s", mk_strerror(st), mk_ctx_error(the_ctx),
			    mk_stall_report(r->pl));
		return ms;
	}
	CK(cu->cuEventRecord(ev0, stream));
	baseline_ops(r->c, r->what);
	CK(cu->cuEventRecord(ev1, stream));
	CK(cu->cuEventSynchronize(ev1));
	CK(cu->cuEventElapsedTime(&ms, ev0, ev1));
	return ms;
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

enum { WARM = 3 };

/* The slowest rank's median of `iters` runs after WARM warm-ups, in us.
 * Long runs get fewer iterations (at least 5), about 3 s per measurement;
 * *used says how many ran.  Every rank runs the same count. */
static double measure(const runner *r, job *j, int iters, int *used)
{
	job_barrier(j);
	float last = 0;
	for (int i = 0; i < WARM; i++)
		last = run_once(r);
	double warm_us = job_max_us(j, last * 1e3);
	int n = iters;
	if (warm_us * 1e-3 * n > 3000)
		n = (int)(3000 / (warm_us * 1e-3)) > 5 ? (int)(3000 / (warm_us * 1e-3)) : 5;
	if (n > iters)
		n = iters;
	float *t = malloc(sizeof *t * (size_t)(n > 0 ? n : 1));
	if (!t)
		die("out of memory");
	job_barrier(j);
	for (int i = 0; i < n; i++)
		t[i] = run_once(r);
	qsort(t, (size_t)n, sizeof *t, cmp_float);
	double med = n > 0 ? t[n / 2] * 1e3 : 0;
	free(t);
	if (used)
		*used = n;
	return job_max_us(j, med);
}

/* ---- correctness: sampled rows, fused against layered ------------------------------------- */

/* 0 when they agree; *rel: relative l2 error over the sampled rows.  The
 * tolerance is mkrun's for bf16: |f - b| <= rtol |b| + 4 rtol rms, rtol = 1/64,
 * and relative l2 <= 1e-2. */
static int compare(const bcase *c, CUdeviceptr fused, CUdeviceptr base, int rank, double *rel,
		   char *why, size_t n)
{
	enum { ROWS = 32 };
	const double rtol = 1.0 / 64;
	const long long cols = c->out_cols;
	uint16_t *hf = malloc((size_t)cols * 2 * ROWS), *hb = malloc((size_t)cols * 2 * ROWS);
	if (!hf || !hb)
		die("out of memory");
	uint64_t s = 0x9E3779B97F4A7C15ull * (uint64_t)(rank + 1);
	int nrows = c->out_rows < ROWS ? (int)c->out_rows : ROWS;
	CK(cu->cuCtxSynchronize());
	for (int i = 0; i < nrows; i++) {  /* the first and last rows, then random ones */
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		long long row = i == 0 ? 0 : i == 1 ? c->out_rows - 1 : (long long)(s >> 33) % c->out_rows;
		size_t off = (size_t)(row * cols * 2);
		CK(cu->cuMemcpyDtoH(hf + (size_t)i * cols, fused + off, (size_t)cols * 2));
		CK(cu->cuMemcpyDtoH(hb + (size_t)i * cols, base + off, (size_t)cols * 2));
	}
	size_t k = (size_t)nrows * (size_t)cols;
	double sr = 0, se = 0;
	for (size_t i = 0; i < k; i++) {
		double b = mk_bf16_to_f32(hb[i]);
		sr += b * b;
	}
	double rms = k ? sqrt(sr / (double)k) : 0, atol = 4 * rtol * (rms > 0 ? rms : 1);
	long long bad = 0, first = -1;
	for (size_t i = 0; i < k; i++) {
		double f = mk_bf16_to_f32(hf[i]), b = mk_bf16_to_f32(hb[i]), d = fabs(f - b);
		if (!(d <= atol + rtol * fabs(b))) {
			if (first < 0)
				first = (long long)i;
			bad++;
		}
		se += isnan(d) ? INFINITY : d * d;
	}
	*rel = sr > 0 ? sqrt(se / sr) : sqrt(se);
	if (bad || !(*rel <= 1e-2))
		snprintf(why, n, "rank %d: %lld of %zu sampled elements off (first: fused %g, layered %g), "
			 "rel l2 %.3g, rms %.3g", rank, bad, k,
			 first >= 0 ? (double)mk_bf16_to_f32(hf[first]) : 0.0,
			 first >= 0 ? (double)mk_bf16_to_f32(hb[first]) : 0.0, *rel, rms);
	free(hf);
	free(hb);
	return bad || !(*rel <= 1e-2);
}

/* ---- one row of the table ---------------------------------------------------------------- */

typedef enum { ROW_OK, ROW_MISMATCH, ROW_SKIPPED, ROW_ERROR } row_status;

typedef struct row {
	pat_id pat;
	long long size;
	char shape[64], split[64], why[400];
	row_status st;
	double fused, base, comp, comm;  /* us; < 0: not measured */
	double flops;
	double rel;
	int iters;
} row;

typedef struct opts {
	int nproc, iters, sweep, check_libs;
	long long sizes[16];
	int nsizes;
	int pats[NPAT];
	int npats;
	long long sweep_size;
} opts;

static const char *sample_path(pat_id p, char *out, size_t n)
{
	const char *dir = getenv("MK_SAMPLES");
	snprintf(out, n, "%.1000s/%s.mk", dir && *dir ? dir : "samples", PAT[p].name);
	if (access(out, R_OK) == 0)
		return out;
	char exe[1024];
	ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (k > 0) {  /* BUILD/tests/bench_patterns -> BUILD/../samples */
		exe[k] = 0;
		for (int up = 0; up < 3; up++) {
			char *sl = strrchr(exe, '/');
			if (sl)
				*sl = 0;
		}
		snprintf(out, n, "%.1000s/samples/%s.mk", exe, PAT[p].name);
	}
	return out;
}

static void describe_split(mk_pipeline *pl, char *out, size_t n)
{
	const ir_sched *s = mk_pipeline_sched(pl);
	size_t len = 0;
	out[0] = 0;
	for (int r = 0; s && r < s->nroles && len < n; r++)
		len += (size_t)snprintf(out + len, n - len, "%s%s %d", r ? ", " : "",
					ir_role_name(s->roles[r].kind), s->roles[r].ctas);
}

/* Loads a fused pipeline (file, or text when given); NULL with why[] set. */
static mk_pipeline *load_fused(mk_ctx *ctx, job *j, const bcase *c, const char *text,
			       mk_status *stp, char *why, size_t n)
{
	char path[2048];
	mk_load_opts lo = MK_LOAD_OPTS_INIT;
	lo.params = c->params;
	lo.nparams = c->nparams;
	lo.comm = j->comm;
	lo.ranks_per_gpu = j->comm ? j->rpg : 0;
	lo.timeout_ms = 20000;
	mk_pipeline *pl = NULL;
	mk_status st = text ? mk_pipeline_load_string(ctx, PAT[c->pat].name, text, &lo, &pl)
			    : mk_pipeline_load_file(ctx, sample_path(c->pat, path, sizeof path), &lo, &pl);
	*stp = st;
	if (st == MK_OK)
		return pl;
	const char *log = mk_ctx_log(ctx), *e = strstr(log, "error: ");
	if (st == MK_ERR_SOURCE && e) {
		e += strlen("error: ");
		const char *nl = strchr(e, '\n');
		snprintf(why, n, "the compiler rejects it: %.*s", (int)(nl ? nl - e : (long)strlen(e)), e);
	} else {
		snprintf(why, n, "%s: %s", mk_strerror(st), mk_ctx_error(ctx));
	}
	return NULL;
}

/* Inputs into the baseline buffers (when allocated) and the same bytes into
 * the pipeline's tensors (when loaded).  Rank r's piece has its own seed. */
static void write_inputs(bcase *c, mk_pipeline *pl, const job *j)
{
	for (int i = 0; i < c->nb; i++) {
		buf *b = &c->b[i];
		if (b->scale == 0)
			continue;
		unsigned long long seed = 0x5EED0000ull + (unsigned long long)c->pat * 977 +
					  (unsigned long long)i * 131 + (unsigned long long)j->rank * 7919;
		if (b->d)
			fill(b->d, b->elems, seed, b->scale);
		if (!pl)
			continue;
		unsigned long long dp = 0;
		mk_tensor_info ti;
		int k = mk_tensor_find(pl, b->name);
		if (k < 0 || mk_tensor_info_get(pl, k, &ti) != MK_OK ||
		    mk_tensor_devptr(pl, b->name, j->rank, &dp) != MK_OK)
			die("%s: the pipeline has no tensor %s on rank %d", PAT[c->pat].name, b->name,
			    j->rank);
		if (ti.bytes != (size_t)b->elems * 2)
			die("%s: tensor %s holds %zu bytes per rank, the baseline %lld", PAT[c->pat].name,
			    b->name, ti.bytes, b->elems * 2);
		if (b->d) {
			CK(cu->cuStreamSynchronize(stream));  /* the copy runs on the legacy stream */
			CK(cu->cuMemcpyDtoD((CUdeviceptr)dp, b->d, ti.bytes));
		} else {
			fill((CUdeviceptr)dp, b->elems, seed, b->scale);
		}
	}
	CK(cu->cuStreamSynchronize(stream));
	CK(cu->cuCtxSynchronize());
}

static void free_bufs(bcase *c)
{
	for (int i = 0; i < c->nb; i++)
		if (c->b[i].d) {
			cu->cuMemFree(c->b[i].d);
			c->b[i].d = 0;
		}
}

/* NULL when the case fits on every rank's GPU (its share of it), else why
 * not.  fused_only: the pipeline's memory alone (no layered buffers). */
static const char *check_memory(const bcase *c, job *j, int fused_only, char *why, size_t n)
{
	size_t fr = 0, tot = 0;
	CK(cu->cuMemGetInfo(&fr, &tot));
	double need = (double)(fused_only ? case_bytes(c) / 2 : case_bytes(c)) + (1 << 30);
	if (!job_max(j, need * j->rpg > (double)fr))
		return NULL;
	snprintf(why, n, "does not fit: about %.1f GiB per rank x %d rank%s per GPU, %.1f GiB free",
		 need / (1 << 30), j->rpg, j->rpg > 1 ? "s" : "", (double)fr / (1 << 30));
	return why;
}

/* One row: fused, layered, compute alone, communication alone, check. */
static void run_case(mk_ctx *ctx, job *j, const opts *o, pat_id p, long long size, int have_blas,
		     int have_nccl, row *rw)
{
	bcase c;
	char why[400];
	memset(rw, 0, sizeof *rw);
	rw->pat = p;
	rw->size = size;
	rw->fused = rw->base = rw->comp = rw->comm = rw->rel = -1;
	if (setup_case(&c, p, size, j, why, sizeof why) || check_memory(&c, j, !have_blas, why, sizeof why)) {
		rw->st = ROW_SKIPPED;
		snprintf(rw->why, sizeof rw->why, "%s", why);
		snprintf(rw->shape, sizeof rw->shape, "%s", c.shape);
		note("%s size %lld: skipped: %s", PAT[p].name, size, why);
		return;
	}
	snprintf(rw->shape, sizeof rw->shape, "%s", c.shape);
	rw->flops = c.flops;
	note("%s %s: loading the fused pipeline", PAT[p].name, c.shape);
	double t0 = now_s();
	mk_status st = MK_OK;
	mk_pipeline *pl = load_fused(ctx, j, &c, NULL, &st, why, sizeof why);
	if (job_max(j, pl == NULL)) {
		rw->st = st == MK_ERR_SOURCE || st == MK_ERR_TOO_LARGE || st == MK_ERR_NOMEM ? ROW_SKIPPED
											: ROW_ERROR;
		snprintf(rw->why, sizeof rw->why, "%s", pl ? "another rank could not load it" : why);
		if (!pl && j->rank != 0)
			fprintf(stderr, "bench_patterns: rank %d: %s: %s\n", j->rank, PAT[p].name, why);
		note("%s %s: %s", PAT[p].name, c.shape, rw->why);
		mk_pipeline_destroy(pl);
		return;
	}
	describe_split(pl, rw->split, sizeof rw->split);
	note("%s %s: loaded in %.1f s (%s)", PAT[p].name, c.shape, now_s() - t0, rw->split);
	int oom = 0;
	for (int i = 0; have_blas && i < c.nb && !oom; i++)
		if (cu->cuMemAlloc(&c.b[i].d, (size_t)c.b[i].elems * 2) != CUDA_SUCCESS)
			c.b[i].d = 0, oom = 1;
	if (job_max(j, oom)) {
		rw->st = ROW_SKIPPED;
		snprintf(rw->why, sizeof rw->why, "out of device memory for the layered buffers");
		free_bufs(&c);
		mk_pipeline_destroy(pl);
		return;
	}
	write_inputs(&c, pl, j);

	runner fused = {pl, &c, 0}, all = {NULL, &c, DO_ALL}, comp = {NULL, &c, DO_COMPUTE},
	       comm = {NULL, &c, DO_COMM};
	note("%s %s: timing the fused kernel", PAT[p].name, c.shape);
	rw->fused = measure(&fused, j, o->iters, &rw->iters);
	if (have_blas && have_nccl) {
		note("%s %s: timing NCCL + cuBLAS", PAT[p].name, c.shape);
		rw->base = measure(&all, j, o->iters, NULL);
	}
	if (have_blas) {
		note("%s %s: timing the compute alone", PAT[p].name, c.shape);
		rw->comp = measure(&comp, j, o->iters, NULL);
	}
	if (have_blas && have_nccl) {
		note("%s %s: timing the communication alone", PAT[p].name, c.shape);
		rw->comm = measure(&comm, j, o->iters, NULL);
	}
	rw->st = ROW_OK;
	if (have_blas && have_nccl) {
		/* every baseline buffer holds what one whole layered run leaves */
		unsigned long long fo = 0;
		double rel = 0;
		if (mk_tensor_devptr(pl, PAT[p].out, j->rank, &fo) != MK_OK)
			die("%s: no output tensor %s", PAT[p].name, PAT[p].out);
		int bad = compare(&c, (CUdeviceptr)fo, c.b[c.out].d, j->rank, &rel, why, sizeof why);
		if (bad)
			fprintf(stderr, "bench_patterns: %s %s: MISMATCH: %s\n", PAT[p].name, c.shape, why);
		double r = rel * 1e6;
		rw->rel = job_max(j, !(r < 2e9) ? 2000000000 : (int)r) / 1e6;
		if (job_max(j, bad)) {
			rw->st = ROW_MISMATCH;
			snprintf(rw->why, sizeof rw->why, "%s", bad ? why : "on another rank (see stderr)");
		}
	}
	free_bufs(&c);
	mk_pipeline_destroy(pl);
}

/* ---- the table ------------------------------------------------------------------------------ */

static void fmt_us(char *out, size_t n, double us)
{
	if (us < 0)
		snprintf(out, n, "-");
	else
		snprintf(out, n, "%.1f", us);
}

static void print_table(const row *rows, int nrows, const job *j, const opts *o)
{
	int shared = j->shared, world1 = j->world == 1;
	printf("\n| pattern | shape | world | fused split (CTAs per rank) | fused us | NCCL+cuBLAS us "
	       "| compute alone us | comm alone us | floor us | speedup (layered/fused) "
	       "| fused/floor | fused TFLOP/s per GPU | check |\n");
	printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
	for (int i = 0; i < nrows; i++) {
		const row *r = &rows[i];
		if (r->st == ROW_SKIPPED || r->st == ROW_ERROR) {
			printf("| %s | %s | %d | %s: %s | | | | | | | | | %s |\n", PAT[r->pat].name,
			       r->shape[0] ? r->shape : "-", j->world,
			       r->st == ROW_SKIPPED ? "skipped" : "ERROR", r->why,
			       r->st == ROW_SKIPPED ? "-" : "ERROR");
			continue;
		}
		char f[32], b[32], cp[32], cm[32], fl[32], sp[32], ff[32], tf[32], ck[64];
		double floor_us = r->comp >= 0 && r->comm >= 0 ? (r->comp > r->comm ? r->comp : r->comm) : -1;
		fmt_us(f, sizeof f, r->fused);
		fmt_us(b, sizeof b, r->base);
		fmt_us(cp, sizeof cp, r->comp);
		fmt_us(cm, sizeof cm, r->comm);
		fmt_us(fl, sizeof fl, floor_us);
		if (r->base > 0 && r->fused > 0)
			snprintf(sp, sizeof sp, "%.2fx", r->base / r->fused);
		else
			snprintf(sp, sizeof sp, "-");
		if (floor_us > 0 && r->fused > 0)
			snprintf(ff, sizeof ff, "%.2f", r->fused / floor_us);
		else
			snprintf(ff, sizeof ff, "-");
		snprintf(tf, sizeof tf, "%.0f", r->fused > 0 ? r->flops * j->rpg / (r->fused * 1e-6) / 1e12 : 0);
		if (r->st == ROW_MISMATCH)
			snprintf(ck, sizeof ck, "MISMATCH");
		else if (r->rel >= 0)
			snprintf(ck, sizeof ck, "ok (rel l2 %.1e)", r->rel);
		else
			snprintf(ck, sizeof ck, "not checked");
		printf("| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
		       PAT[r->pat].name, r->shape, j->world, r->split, f, b, cp, cm, fl, sp, ff, tf, ck);
	}
	int fewer = 0;
	for (int i = 0; i < nrows; i++)
		fewer |= rows[i].st == ROW_OK && rows[i].iters < o->iters;
	printf("\nTimes: the slowest rank's median of %d runs after %d warm-ups%s; each run alone "
	       "between two CUDA events, then a sync (fused: mk_run_timed, one persistent kernel per "
	       "rank; layered: the NCCL collective and the cuBLAS GEMMs one after the other on one "
	       "stream, tp_mlp's gelu a small NVRTC kernel included). Floor = max(compute alone, "
	       "communication alone). TFLOP/s per GPU = FLOPs of the ranks on one GPU / fused time "
	       "(per rank: ag_gemm 2MNK, gemm_rs and gemm_ar 2MN(K/world), tp_mlp 4SH(F/world)).\n",
	       o->iters, WARM, fewer ? " (fewer for runs longer than 3 s / iters: at least 5)" : "");
	printf("Check: %d sampled rows of each rank's fused output against the layered output, "
	       "|f - l| <= |l|/64 + rms/16 and relative l2 <= 1e-2.\n", 32);
	if (shared)
		printf("NOTE: ranks share a GPU (%d per GPU, MPS): these numbers are functional, not "
		       "performance. NCCL needs one GPU per rank, so the layered run, the communication "
		       "alone, the floor and the check are skipped; the compute-alone ranks run "
		       "concurrently on one GPU.\n", j->rpg);
	else if (world1)
		printf("NOTE: world 1: the collectives are local copies; this measures the GEMM engine "
		       "and the runtime, not overlap. Run with several GPUs (-n 2, 4, 8) for that.\n");
}

/* ---- --sweep: the roles hint against the automatic split --------------------------------------- */

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
	if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
		free(s);
		s = NULL;
	}
	if (s)
		s[n] = 0;
	fclose(f);
	return s;
}

/* the sample with `roles LINE` before its last '}' */
static char *with_roles(const char *text, const char *line)
{
	const char *end = strrchr(text, '}');
	if (!end)
		return NULL;
	size_t a = (size_t)(end - text), n = strlen(text) + strlen(line) + 16;
	char *s = malloc(n);
	if (s)
		snprintf(s, n, "%.*s  %s\n%s", (int)a, text, line, end);
	return s;
}

static int sweep_pattern(mk_ctx *ctx, job *j, const opts *o, pat_id p)
{
	bcase c;
	char why[400], path[2048];
	long long size = o->sweep_size;
	if (setup_case(&c, p, size, j, why, sizeof why) || check_memory(&c, j, 1, why, sizeof why)) {
		note("sweep %s size %lld: skipped: %s", PAT[p].name, size, why);
		if (j->rank == 0)
			printf("sweep %s size %lld: skipped: %s\n", PAT[p].name, size, why);
		return 0;
	}
	mk_status st;
	note("sweep %s %s: the automatic split", PAT[p].name, c.shape);
	mk_pipeline *pl = load_fused(ctx, j, &c, NULL, &st, why, sizeof why);
	if (job_max(j, pl == NULL)) {
		if (j->rank == 0)
			printf("sweep %s %s: %s\n", PAT[p].name, c.shape, pl ? "another rank could not load it" : why);
		mk_pipeline_destroy(pl);
		return st == MK_ERR_SOURCE || st == MK_ERR_TOO_LARGE ? 0 : 1;
	}
	const ir_sched *s = mk_pipeline_sched(pl);
	int total = s->ctas, ncomm = 0;
	ir_rolekind comm_roles[ROLE_COUNT];
	for (int r = 0; r < s->nroles; r++)
		if (s->roles[r].kind != ROLE_COMPUTE)
			comm_roles[ncomm++] = s->roles[r].kind;
	char auto_split[64];
	describe_split(pl, auto_split, sizeof auto_split);
	write_inputs(&c, pl, j);
	double auto_us = measure(&(runner){pl, &c, 0}, j, o->iters, NULL);
	mk_pipeline_destroy(pl);
	note("sweep %s %s: automatic (%s) %.1f us", PAT[p].name, c.shape, auto_split, auto_us);

	char *text = read_file(sample_path(p, path, sizeof path));
	if (!text)
		die("cannot read %s", path);
	static const int KS[] = {1, 2, 4, 8, 12, 16, 24, 32};
	double best_us = -1;
	char best[64] = "", list[600] = "";
	size_t ll = 0;
	for (size_t k = 0; ncomm > 0 && k < sizeof KS / sizeof KS[0]; k++) {
		int K = KS[k], compute = total - ncomm * K;
		if (compute < total / 2)
			break;
		char line[128], split[64];
		size_t n = (size_t)snprintf(line, sizeof line, "roles compute %d", compute);
		size_t m = (size_t)snprintf(split, sizeof split, "compute %d", compute);
		for (int r = 0; r < ncomm; r++) {
			n += (size_t)snprintf(line + n, sizeof line - n, ", %s %d", ir_role_name(comm_roles[r]), K);
			m += (size_t)snprintf(split + m, sizeof split - m, ", %s %d", ir_role_name(comm_roles[r]), K);
		}
		char *t = with_roles(text, line);
		if (!t)
			die("out of memory");
		pl = load_fused(ctx, j, &c, t, &st, why, sizeof why);
		free(t);
		if (job_max(j, pl == NULL)) {
			note("sweep %s: %s: %s", PAT[p].name, line, pl ? "another rank could not load it" : why);
			mk_pipeline_destroy(pl);
			continue;
		}
		write_inputs(&c, pl, j);
		double us = measure(&(runner){pl, &c, 0}, j, o->iters, NULL);
		mk_pipeline_destroy(pl);
		note("sweep %s %s: %s: %.1f us", PAT[p].name, c.shape, split, us);
		if (ll < sizeof list)
			ll += (size_t)snprintf(list + ll, sizeof list - ll, "%s%d: %.1f", ll ? ", " : "",
					       K, us);
		if (best_us < 0 || us < best_us) {
			best_us = us;
			snprintf(best, sizeof best, "%s", split);
		}
	}
	free(text);
	if (j->rank == 0) {
		printf("sweep %s %s, world %d: automatic split (%s) %.1f us", PAT[p].name, c.shape,
		       j->world, auto_split, auto_us);
		if (best_us > 0)
			printf(", best swept split (%s) %.1f us (automatic/best %.2f)\n"
			       "  swept (CTAs per communication role: us): %s\n",
			       best, best_us, auto_us / best_us, list);
		else
			printf("; no other split to sweep\n");
		fflush(stdout);
	}
	return 0;
}

/* ---- one rank ---------------------------------------------------------------------------------- */

static int nccl_setup(job *j, char *why, size_t n)
{
	if (j->shared) {
		snprintf(why, n, "ranks share a GPU and NCCL needs one GPU per rank");
		return -1;
	}
	int bad = nccl_open() != 0;
	if (job_max(j, bad)) {
		snprintf(why, n, "%.500s", bad ? nccl.why : "another rank has no NCCL");
		return -1;
	}
	setenv("NCCL_NVLS_ENABLE", "0", 1);  /* never NVLink multicast */
	bp_nccl_id id;
	memset(&id, 0, sizeof id);
	if (j->rank == 0)
		NK(nccl.GetUniqueId(&id));
	job_bcast(j, &id, sizeof id);
	NK(nccl.CommInitRank(&nccl.comm, j->world, id, j->rank));
	return 0;
}

static int blas_setup(job *j, char *why, size_t n)
{
	int bad = blas_open() != 0;
	if (!bad && (blas.Create(&blas.h) != 0 || blas.SetStream(blas.h, stream) != 0)) {
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

static int launcher_world(void);
static int mps_running(void);

static unsigned hash_str(const char *s, unsigned h)
{
	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

/* How many ranks of the job run on my GPU: the ranks whose host name and
 * PCI bus id are mine.  (Launchers may give each rank its own
 * CUDA_VISIBLE_DEVICES, so the local rank count alone does not say.) */
static int ranks_on_my_gpu(job *j)
{
	char host[256] = "", bus[64] = "";
	CUdevice dev;
	gethostname(host, sizeof host - 1);
	CK(cu->cuDeviceGet(&dev, j->dev));
	CK(cu->cuDeviceGetPCIBusId(bus, sizeof bus, dev));
	int key = (int)(hash_str(bus, hash_str(host, 2166136261u)) & 0x7fffffff);
	if (!j->comm)
		return 1;
	int *all = calloc((size_t)j->world, sizeof *all), n = 0;
	if (!all || mk_comm_gather_int(j->comm, key, all) != MK_OK)
		die("exchanging GPU ids failed");
	for (int r = 0; r < j->world; r++)
		n += all[r] == key;
	free(all);
	return n;
}

static int run_rank(const opts *o, int ndev)
{
	job j = {.world = 1, .local_size = 1, .ndev = ndev};
	char why[512];
	if (launcher_world() > 1) {
		mk_status st = mk_comm_create(&j.comm, why, sizeof why);
		if (st != MK_OK) {
			fprintf(stderr, "bench_patterns: joining the job: %s: %s\n", mk_strerror(st), why);
			return 1;
		}
		j.rank = mk_comm_rank(j.comm);
		j.world = mk_comm_size(j.comm);
		j.local_rank = mk_comm_local_rank(j.comm);
		j.local_size = mk_comm_local_size(j.comm);
	}
	my_rank = j.rank;
	j.dev = j.local_rank % ndev;
	j.rpg = ranks_on_my_gpu(&j);
	j.shared = job_max(&j, j.rpg) > 1;
	if (j.shared && j.rank == 0 && !mps_running())
		fprintf(stderr, "bench_patterns: warning: ranks share a GPU without MPS: their kernels "
			"time-slice and every wait on another rank crawls; start the MPS daemon "
			"(nvidia-cuda-mps-control -d, as root)\n");
	if (j.world == j.local_size)  /* one host: NCCL's bootstrap stays on loopback */
		setenv("NCCL_SOCKET_IFNAME", "lo", 0);

	mk_ctx *ctx = NULL;
	mk_ctx_opts co = {.device = j.dev};
	mk_status st = mk_ctx_create(&co, &ctx);
	if (st != MK_OK)
		die("%s: %s", mk_strerror(st), mk_ctx_error(ctx));
	the_ctx = ctx;
	CUdevice dev;
	int major = 0, minor = 0;
	CK(cu->cuDeviceGet(&dev, j.dev));
	CK(cu->cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
	CK(cu->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
	CK(cu->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
	aux_compile(major, minor);
	CK(cu->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
	CK(cu->cuEventCreate(&ev0, 0));
	CK(cu->cuEventCreate(&ev1, 0));

	int rc = 0;
	if (j.rank == 0)
		printf("bench_patterns on %s: world %d, %d GPU%s visible per host, %d rank%s per GPU%s\n",
		       mk_ctx_device(ctx), j.world, ndev, ndev > 1 ? "s" : "", j.rpg, j.rpg > 1 ? "s" : "",
		       j.shared ? " (MPS; functional numbers, not performance)" : "");
	if (o->sweep) {
		if (j.rank == 0)
			printf("sweep of the roles hint at size %lld (fused pipeline only)\n", o->sweep_size);
		for (int i = 0; i < o->npats; i++)
			rc |= sweep_pattern(ctx, &j, o, (pat_id)o->pats[i]);
	} else {
		char bwhy[512] = "", nwhy[512] = "";
		int have_blas = blas_setup(&j, bwhy, sizeof bwhy) == 0;
		int have_nccl = have_blas && nccl_setup(&j, nwhy, sizeof nwhy) == 0;
		if (!have_blas)
			snprintf(nwhy, sizeof nwhy, "no cuBLAS");
		if (j.rank == 0) {
			if (have_blas)
				printf("cuBLAS %d.%d.%d: %s\n", blas.version / 10000, blas.version / 100 % 100,
				       blas.version % 100, blas.path);
			else
				printf("cuBLAS: none (%s): layered run, compute alone and check skipped\n", bwhy);
			if (have_nccl)
				printf("NCCL %d.%d.%d: %s (NCCL_NVLS_ENABLE=0)\n", nccl.version / 10000,
				       nccl.version / 100 % 100, nccl.version % 100, nccl.path);
			else
				printf("NCCL: not used (%s): layered run, communication alone and check "
				       "skipped\n", nwhy);
			printf("shapes (size = M): ag_gemm M = K = size, N = size/16; gemm_rs and gemm_ar "
			       "M = N = size, K = size/16 (K split over the ranks); tp_mlp S = size, "
			       "H = size/4, F = 4H\n");
			fflush(stdout);
		}
		int nrows = o->npats * o->nsizes;
		row *rows = calloc((size_t)nrows, sizeof *rows);
		if (!rows)
			die("out of memory");
		for (int i = 0; i < o->npats; i++)
			for (int k = 0; k < o->nsizes; k++) {
				row *r = &rows[i * o->nsizes + k];
				run_case(ctx, &j, o, (pat_id)o->pats[i], o->sizes[k], have_blas, have_nccl, r);
				rc |= r->st == ROW_MISMATCH || r->st == ROW_ERROR;
			}
		if (j.rank == 0) {
			print_table(rows, nrows, &j, o);
			fflush(stdout);
		}
		free(rows);
		if (nccl.comm)
			nccl.CommDestroy(nccl.comm);
		if (blas.h)
			blas.Destroy(blas.h);
	}
	job_barrier(&j);
	note("done");
	cu->cuEventDestroy(ev0);
	cu->cuEventDestroy(ev1);
	cu->cuStreamDestroy(stream);
	cu->cuModuleUnload(aux_mod);
	mk_ctx_destroy(ctx);
	mk_comm_destroy(j.comm);
	return rc;
}

/* ---- --check-libs: what can be tested without a GPU ---------------------------------------------- */

static int check_libs(void)
{
	int rc = 0;
	if (blas_open() == 0)
		printf("cuBLAS %d.%d.%d: %s\n", blas.version / 10000, blas.version / 100 % 100,
		       blas.version % 100, blas.path);
	else
		printf("cuBLAS: %s\n", blas.why), rc = 1;
	if (nccl_open() == 0)
		printf("NCCL %d.%d.%d: %s\n", nccl.version / 10000, nccl.version / 100 % 100,
		       nccl.version % 100, nccl.path);
	else
		printf("NCCL: %s\n", nccl.why), rc = 1;
	cg_compile_opts co = {.arch = "sm_90a", .use_cache = 1};
	cg_binary bin;
	cg_status cs = cg_compile(AUX_SRC, "bench_patterns.cu", &co, CG_CUBIN, &bin);
	if (cs == CG_OK)
		printf("NVRTC: helper kernels (fill, gelu) for sm_90a: %d registers, %d bytes spilled%s\n",
		       bin.regs, bin.spill_stores, bin.from_cache ? " (cache)" : "");
	else
		printf("NVRTC: %s\n%s\n", cg_strerror(cs), bin.log ? bin.log : ""), rc = 1;
	cg_binary_free(&bin);
	char why[256];
	cudrv_status ds = cudrv_get(&cu, why, sizeof why);
	printf("CUDA driver: %s\n", ds == CUDRV_OK ? "a GPU is visible" : why);
	return rc;
}

/* ---- launching the ranks ---------------------------------------------------------------------- */

/* The world size a launcher (-n here, mkrun -n, mpirun, Slurm, torchrun)
 * gave this process, from the variables mkrun reads; 0 when none did. */
static int launcher_world(void)
{
	static const char *const size_vars[] = {"MK_WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
						"SLURM_NTASKS", "WORLD_SIZE"};
	for (size_t i = 0; i < sizeof size_vars / sizeof size_vars[0]; i++) {
		const char *v = getenv(size_vars[i]);
		if (v)
			return atoi(v) > 0 ? atoi(v) : 1;
	}
	return 0;
}

static int mps_running(void)
{
	const char *dir = getenv("CUDA_MPS_PIPE_DIRECTORY");
	char path[512];
	snprintf(path, sizeof path, "%s/control", dir ? dir : "/tmp/nvidia-mps");
	return access(path, F_OK) == 0;
}

static pid_t *child_pids;
static int nchild;

/* A signal that ends the launcher ends its ranks too: none is left holding a GPU. */
static void forward_signal(int sig)
{
	for (int r = 0; r < nchild; r++)
		if (child_pids[r] > 0)
			kill(child_pids[r], sig);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* N local ranks, this binary again (as mkrun -n).  When one rank fails the
 * others get 60 s to notice, then are killed: a rank stuck in an NCCL
 * collective with a dead peer never returns. */
static int spawn(int argc, char **argv, int n, int ndev)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof sa;
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl)) {
		fprintf(stderr, "bench_patterns: no local port for the rendezvous: %s\n", strerror(errno));
		return 1;
	}
	int port = ntohs(sa.sin_port);
	close(fd);
	char **args = calloc((size_t)argc + 1, sizeof *args);
	pid_t *pids = calloc((size_t)n, sizeof *pids);
	if (!args || !pids)
		return 1;
	int na = 0;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "-n")) {
			i++;
			continue;
		}
		args[na++] = argv[i];
	}
	char token[64];
	snprintf(token, sizeof token, "bench-%d-%ld", (int)getpid(), (long)time(NULL));
	fflush(stdout);
	child_pids = pids;
	nchild = n;
	signal(SIGTERM, forward_signal);
	signal(SIGINT, forward_signal);
	signal(SIGHUP, forward_signal);
	for (int r = 0; r < n; r++) {
		pid_t pid = fork();
		if (pid < 0) {
			fprintf(stderr, "bench_patterns: fork: %s\n", strerror(errno));
			return 1;
		}
		if (pid == 0) {
			char v[64];
			snprintf(v, sizeof v, "%d", r);
			setenv("MK_RANK", v, 1);
			setenv("MK_LOCAL_RANK", v, 1);
			snprintf(v, sizeof v, "%d", n);
			setenv("MK_WORLD_SIZE", v, 1);
			setenv("MK_LOCAL_WORLD_SIZE", v, 1);
			snprintf(v, sizeof v, "127.0.0.1:%d", port);
			setenv("MK_ROOT", v, 1);
			setenv("MK_JOB_TOKEN", token, 1);
			setenv("NCCL_NVLS_ENABLE", "0", 1);
			if (n > ndev) {  /* MPS: each rank its share of the SMs */
				snprintf(v, sizeof v, "%d", 100 * ndev / n);
				setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", v, 0);
			}
			execv("/proc/self/exe", args);
			fprintf(stderr, "bench_patterns: exec: %s\n", strerror(errno));
			_exit(127);
		}
		pids[r] = pid;
	}
	int worst = 0, left = n;
	double failed_at = 0;
	while (left > 0) {
		int status = 0;
		pid_t pid = waitpid(-1, &status, failed_at > 0 ? WNOHANG : 0);
		if (pid < 0 && errno == EINTR)
			continue;
		if (pid < 0)
			break;
		if (pid == 0) {
			if (now_s() - failed_at > 60) {
				for (int r = 0; r < n; r++)
					if (pids[r] > 0) {
						fprintf(stderr, "bench_patterns: rank %d still running 60 s after a "
							"failure: killed\n", r);
						kill(pids[r], SIGKILL);
					}
				failed_at = now_s() + 1e9;  /* once */
			}
			struct timespec ts = {0, 100000000};
			nanosleep(&ts, NULL);
			continue;
		}
		int r = 0;
		while (r < n && pids[r] != pid)
			r++;
		if (r == n)
			continue;
		pids[r] = 0;
		left--;
		int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		if (rc) {
			fprintf(stderr, "bench_patterns: rank %d %s %d\n", r,
				WIFEXITED(status) ? "exited with" : "was killed by signal",
				WIFEXITED(status) ? rc : WTERMSIG(status));
			if (failed_at == 0)
				failed_at = now_s();
		}
		if (rc > worst)
			worst = rc;
	}
	free(pids);
	free(args);
	return worst ? 1 : 0;
}

/* ---- main -------------------------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bench_patterns [options]\n"
		"  -n N               N local ranks, one process each (default: one per GPU);\n"
		"                     more ranks than GPUs needs the MPS daemon (functional numbers)\n"
		"  --sizes A,B,...    sizes M (default 4096,8192,16384,32768)\n"
		"  --patterns P,...   of ag_gemm, gemm_rs, gemm_ar, tp_mlp (default all)\n"
		"  --iters N          timed runs after 3 warm-ups (default 20)\n"
		"  --sweep            instead of the table: the fused pipeline with the roles hint\n"
		"                     varied, against the automatic split, at one size\n"
		"  --sweep-size M     the sweep's size (default: the first of --sizes, else 8192)\n"
		"  --check-libs       load cuBLAS and NCCL, compile the helper kernels; no GPU needed\n");
}

static int parse_list(const char *s, opts *o, int sizes)
{
	char *copy = strdup(s), *save = NULL;
	if (!copy)
		return -1;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (sizes) {
			char *end;
			long long v = strtoll(t, &end, 10);
			if (*end || v < 64 || v > (1 << 20) || o->nsizes == 16) {
				fprintf(stderr, "bench_patterns: bad size '%s'\n", t);
				free(copy);
				return -1;
			}
			o->sizes[o->nsizes++] = v;
			continue;
		}
		int p = 0;
		while (p < NPAT && strcmp(PAT[p].name, t))
			p++;
		if (p == NPAT || o->npats == NPAT) {
			fprintf(stderr, "bench_patterns: unknown pattern '%s' (ag_gemm, gemm_rs, gemm_ar, "
				"tp_mlp)\n", t);
			free(copy);
			return -1;
		}
		o->pats[o->npats++] = p;
	}
	free(copy);
	return 0;
}

static int parse_args(int argc, char **argv, opts *o)
{
	memset(o, 0, sizeof *o);
	o->iters = 20;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		int needs = !strcmp(a, "-n") || !strcmp(a, "--sizes") || !strcmp(a, "--patterns") ||
			    !strcmp(a, "--iters") || !strcmp(a, "--sweep-size");
		if (needs && !v) {
			fprintf(stderr, "bench_patterns: %s needs a value\n", a);
			return 2;
		}
		if (needs)
			i++;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			exit(0);
		} else if (!strcmp(a, "-n") || !strcmp(a, "--iters") || !strcmp(a, "--sweep-size")) {
			char *end;
			long long n = strtoll(v, &end, 10);
			if (*end || n < 1 || n > (1 << 20)) {
				fprintf(stderr, "bench_patterns: bad value for %s: %s\n", a, v);
				return 2;
			}
			if (!strcmp(a, "-n"))
				o->nproc = (int)(n > 256 ? 256 : n);
			else if (!strcmp(a, "--iters"))
				o->iters = (int)(n > 10000 ? 10000 : n);
			else
				o->sweep_size = n;
		} else if (!strcmp(a, "--sizes") || !strcmp(a, "--patterns")) {
			if (parse_list(v, o, !strcmp(a, "--sizes")))
				return 2;
		} else if (!strcmp(a, "--sweep")) {
			o->sweep = 1;
		} else if (!strcmp(a, "--check-libs")) {
			o->check_libs = 1;
		} else {
			fprintf(stderr, "bench_patterns: unknown option '%s'\n", a);
			usage(stderr);
			return 2;
		}
	}
	if (!o->sweep_size)
		o->sweep_size = o->nsizes ? o->sizes[0] : 8192;
	if (!o->nsizes) {
		static const long long def[] = {4096, 8192, 16384, 32768};
		for (int k = 0; k < 4; k++)
			o->sizes[o->nsizes++] = def[k];
	}
	if (!o->npats)
		for (int p = 0; p < NPAT; p++)
			o->pats[o->npats++] = p;
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);  /* tables survive a timeout */
	t_start = now_s();
	opts o;
	int rc = parse_args(argc, argv, &o);
	if (rc)
		return rc;
	if (o.check_libs)
		return check_libs();
	char why[256];
	if (cudrv_get(&cu, why, sizeof why) != CUDRV_OK) {
		printf("bench_patterns: skipped: %s\n", why);
		return 0;
	}
	int ndev = 0;
	if (cu->cuDeviceGetCount(&ndev) != CUDA_SUCCESS || ndev < 1) {
		printf("bench_patterns: skipped: no GPU visible\n");
		return 0;
	}
	if (launcher_world() > 0)  /* one rank of a job (a world of 1: the only one) */
		return run_rank(&o, ndev);
	int n = o.nproc > 0 ? o.nproc : ndev;
	if (n == 1)
		return run_rank(&o, ndev);
	if (n > ndev) {
		if (!mps_running()) {
			fprintf(stderr,
				"bench_patterns: %d ranks would share %d GPU%s, and the MPS daemon is not "
				"running (no %s/control): without it their kernels time-slice and every "
				"wait on another rank crawls. Start it (nvidia-cuda-mps-control -d, as "
				"root) or use -n %d.\n", n, ndev, ndev > 1 ? "s" : "",
				getenv("CUDA_MPS_PIPE_DIRECTORY") ? getenv("CUDA_MPS_PIPE_DIRECTORY")
								  : "/tmp/nvidia-mps", ndev);
			return 1;
		}
		fprintf(stderr, "bench_patterns: %d ranks share %d GPU%s (MPS, %d%% of the SMs each): "
			"the numbers are functional, not performance\n", n, ndev, ndev > 1 ? "s" : "",
			100 * ndev / n);
	}
	return spawn(argc, argv, n, ndev);
}
