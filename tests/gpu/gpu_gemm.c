/* gpu_gemm.c - the Hopper GEMM engine (mkd/wgmma.cuh) on the GPU: checked
 * against a CPU reference, then timed against cuBLAS.
 *
 *   gpu_gemm [--check-only]      checks, then the timing table (H200);
 *                                --check-only skips the timing (for
 *                                compute-sanitizer)
 *   gpu_gemm --compile-only [--cubin FILE]
 *                                NVRTC only, no GPU: registers, stack and
 *                                spills of every kernel (exit 1 on a spill),
 *                                the sm_90a cubin to FILE for cuobjdump, and
 *                                the mma.cuh fallback built for sm_80/sm_90
 *
 * The test kernel is persistent (grid = number of SMs): each CTA walks the
 * output tiles t = blockIdx.x, + gridDim.x, ... in grouped order (bands of
 * GROUP tile rows, column by column inside a band), so the CTAs of one wave
 * share A rows and B columns in L2, and calls mkd_wgmma_tile::run per tile.
 * The _mc2 variants run in 2-CTA clusters: cluster c walks pairs of row
 * tiles of the same columns, its CTAs one row tile each, B's loads shared
 * (multicast; mkd/wgmma.cuh, clusters); the timing table's third column.
 * Once more launched cooperatively as well, as the megakernel is.
 *
 * Inputs are generated on the GPU from a hash of the element index; values
 * are k/128 for k in [-128, 128), exact in bf16 and f16, so the CPU
 * recomputes any element it needs without copying the matrices back.
 * Small shapes are checked whole, with a NaN sentinel around C (ldc > N and
 * extra rows) to catch stores outside the tile; large ones at 4096 random
 * elements.  Without a GPU it prints one "skipped" line and exits 0.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/nvrtc.h"
#include "runtime/cudrv.h"
#include "tests/gpu/cublas.h"
#include "runtime/tmap.h"

#define BM 128  /* the engine's tile rows: A's TMA box is BM x 64 */
#define BK 64   /* B's TMA box is BK x 64 */

/* ---- the kernels ------------------------------------------------------------ */

static const char SRC_HEAD[] =
	"#include \"mkd/mkd.cuh\"\n"
	"\n"
	"// index -> k/128, k in [-128, 128): the host's val() computes the same\n"
	"static __device__ float mkt_val(unsigned long long i, unsigned seed)\n"
	"{\n"
	"\tunsigned long long x = i * 0x9E3779B97F4A7C15ull + seed;\n"
	"\tx ^= x >> 31;\n"
	"\tx *= 0xBF58476D1CE4E5B9ull;\n"
	"\tx ^= x >> 29;\n"
	"\treturn (float)((int)(x >> 56) - 128) * (1.0f / 128.0f);\n"
	"}\n"
	"extern \"C\" __global__ void mkt_fill(unsigned short *p, long long n, unsigned seed, int f16)\n"
	"{\n"
	"\tfor (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;\n"
	"\t     i += (long long)gridDim.x * blockDim.x)\n"
	"\t\tp[i] = f16 ? mkd_f32_f16(mkt_val(i, seed)) : mkd_f32_bf16(mkt_val(i, seed));\n"
	"}\n"
	"\n"
	"// tile t of the grouped order (bands of G tile rows of MC row tiles, column\n"
	"// by column in a band): its first row for cluster rank q, its first column\n"
	"static __device__ __forceinline__ void mkt_at(int t, int tm, int tn, int G, int MC, int q, int BN,\n"
	"\t\t\t\t\t      int &m0, int &n0)\n"
	"{\n"
	"\tconst int band = t / (G * tn), first = band * G;\n"
	"\tconst int rows = tm - first < G ? tm - first : G;\n"
	"\tconst int r = t - band * G * tn;\n"
	"\tm0 = ((first + r % rows) * MC + q) * 128;\n"
	"\tn0 = (r / rows) * BN;\n"
	"}\n"
	"\n"
	"// persistent: cluster c (MC CTAs along x) takes tiles c, c + clusters, ...\n"
	"// in grouped order; a tile is MC row tiles of the same columns, the CTA\n"
	"// of cluster rank q the q-th (MC 2: B multicast, mkd/wgmma.cuh).  KIND 0:\n"
	"// a call a tile, the ring filled afresh; 1: the ring carried from tile to\n"
	"// tile (the megakernel's way); STG 2 (the epilogue by TMA stores through\n"
	"// tc) needs KIND 1\n"
	"template <typename T, typename TC, int BN, int STAGES, int MC, int KIND, int STG>\n"
	"static __device__ __forceinline__ void mkt_gemm(const mkd_tmap *ta, const mkd_tmap *tb,\n"
	"\t\t\t\t\t\tconst mkd_tmap *tc, TC *C, int M, int N, int K,\n"
	"\t\t\t\t\t\tlong long ldc)\n"
	"{\n"
	"\textern __shared__ __align__(1024) char smem[];\n"
	"\ttypedef mkd_wgmma_tile<T, TC, 128, BN, 64, STAGES, false, false, false, MC, STG> tile;\n"
	"\tconst int tm = ((M + 127) / 128 + MC - 1) / MC, tn = (N + BN - 1) / BN, total = tm * tn;\n"
	"\tconst int G = 16 / MC;  // tile rows (of MC row tiles) per band\n"
	"\tconst int q = (int)(blockIdx.x % MC), c = (int)(blockIdx.x / MC), nc = (int)(gridDim.x / MC);\n"
	"\tconst int nk = (K + 63) / 64;\n"
	"\tif (threadIdx.x == 0)\n"
	"\t\tmkd_wg_ring_reset();\n"
	"\tfor (int t = c; t < total; t += nc) {\n"
	"\t\tint m0, n0;\n"
	"\t\tmkt_at(t, tm, tn, G, MC, q, BN, m0, n0);\n"
	"\t\tif constexpr (KIND == 1) {\n"
	"\t\t\tconst mkd_wg_loads l = {ta, tb, m0, 0, 0, n0, nk, nullptr, 0};\n"
	"\t\t\ttile::run(l, mkd_wg_key(t, 0), [&](mkd_wg_loads &nl) -> long long {\n"
	"\t\t\t\tint m1, n1;\n"
	"\t\t\t\tif (t + nc >= total)\n"
	"\t\t\t\t\treturn -1;\n"
	"\t\t\t\tmkt_at(t + nc, tm, tn, G, MC, q, BN, m1, n1);\n"
	"\t\t\t\tnl = mkd_wg_loads{ta, tb, m1, 0, 0, n1, nk, nullptr, 0};\n"
	"\t\t\t\treturn mkd_wg_key(t + nc, 0);\n"
	"\t\t\t}, mkd_wg_waited(), C + (long long)m0 * ldc + n0, ldc, M - m0, N - n0, smem,\n"
	"\t\t\t\t  mkd_epi_none(), mkd_epi_none(), mkd_wg_out{tc, m0, n0});\n"
	"\t\t} else {\n"
	"\t\t\t// past M: no rows, this CTA only loads its part of B (live -1)\n"
	"\t\t\ttile::run(ta, m0, 0, tb, 0, n0, K, C + (long long)m0 * ldc + n0, ldc, M - m0,\n"
	"\t\t\t\t  N - n0, smem, mkd_epi_none(), m0 < M ? 0 : -1);\n"
	"\t\t}\n"
	"\t}\n"
	"}\n"
	"\n"
	"#define MKT_GEMM(name, T, TC, BN, S, MC, KIND, STG)                                    \\\n"
	"\textern \"C\" __constant__ int name##_smem =                                         \\\n"
	"\t\tmkd_wgmma_tile<T, TC, 128, BN, 64, S, false, false, false, MC, STG>::SMEM;   \\\n"
	"\textern \"C\" __global__ void __launch_bounds__(384, 1)                             \\\n"
	"\tname(const __grid_constant__ mkd_tmap ta, const __grid_constant__ mkd_tmap tb,   \\\n"
	"\t     const __grid_constant__ mkd_tmap tc, TC *C, int M, int N, int K, long long ldc) \\\n"
	"\t{                                                                                \\\n"
	"\t\tmkt_gemm<T, TC, BN, S, MC, KIND, STG>(&ta, &tb, &tc, C, M, N, K, ldc);   \\\n"
	"\t}\n";

/* The mma.cuh engine (every arch but sm_90a) must still build from the
 * same library. */
static const char SRC_FALLBACK[] =
	"#include \"mkd/mkd.cuh\"\n"
	"extern \"C\" __global__ void __launch_bounds__(256, 1)\n"
	"mkt_mma(const mkd_bf16 *A, const mkd_bf16 *B, mkd_bf16 *C, int M, int N, int K)\n"
	"{\n"
	"\textern __shared__ __align__(128) char smem[];\n"
	"\tmkd_mma_tile<mkd_bf16, mkd_bf16, 128, 128, 32, 3>::run(A, K, B, N, C, N, M, N, K,\n"
	"\t\t\t\t\t\t\t       0, 0, smem, mkd_epi_none());\n"
	"}\n"
	"#ifdef MKD_HAS_WGMMA\n"
	"#error \"wgmma engine visible outside sm_90a\"\n"
	"#endif\n";

/* mc: CTAs a cluster (2: B multicast to both, mkd/wgmma.cuh); kind: 0 a
 * call a tile, 1 the ring carried between tiles (mkt_gemm);
 * stg: the epilogue through shared memory (1: mkd_wgmma_tile::staged; 2:
 * stored by TMA, tstore, with kind 1) */
typedef struct variant {
	const char *name;
	int in_f16, out_f32, bn, stages, mc, kind, stg;
} variant;

/* the ones timed */
enum { V_128, V_256, V_256_MC2, V_256_CARRY, V_256_STG, V_256_TMA };
static const variant VARIANTS[] = {
	{"gemm_bf16_bf16_128", 0, 0, 128, 6, 1, 0, 0},
	{"gemm_bf16_bf16_256", 0, 0, 256, 4, 1, 0, 0},
	{"gemm_bf16_bf16_256_mc2", 0, 0, 256, 4, 2, 0, 0},
	{"gemm_bf16_bf16_256_carry", 0, 0, 256, 4, 1, 1, 0},
	{"gemm_bf16_bf16_256_stg", 0, 0, 256, 4, 1, 1, 1},
	{"gemm_bf16_bf16_256_tma", 0, 0, 256, 4, 1, 1, 2},
	{"gemm_bf16_f32_128", 0, 1, 128, 6, 1, 0, 0},
	{"gemm_bf16_f32_256", 0, 1, 256, 4, 1, 0, 0},
	{"gemm_f16_f32_128", 1, 1, 128, 6, 1, 0, 0},
	{"gemm_f16_bf16_256", 1, 0, 256, 4, 1, 0, 0},
	{"gemm_bf16_f32_128_mc2", 0, 1, 128, 6, 2, 0, 0},
	{"gemm_bf16_f32_256_stg", 0, 1, 256, 4, 1, 1, 1},
	{"gemm_f16_f32_128_stg", 1, 1, 128, 6, 1, 0, 1},
	{"gemm_bf16_f32_256_tma", 0, 1, 256, 4, 1, 1, 2},
	{"gemm_f16_bf16_128_tma", 1, 0, 128, 6, 1, 1, 2},
};
#define NVAR ((int)(sizeof VARIANTS / sizeof VARIANTS[0]))

static char *kernel_source(void)
{
	size_t n = sizeof SRC_HEAD + 160 * NVAR;
	char *s = malloc(n);
	if (!s)
		return NULL;
	size_t len = (size_t)snprintf(s, n, "%s\n", SRC_HEAD);
	for (int i = 0; i < NVAR; i++) {
		const variant *v = &VARIANTS[i];
		len += (size_t)snprintf(s + len, n - len, "MKT_GEMM(%s, %s, %s, %d, %d, %d, %d, %d)\n", v->name,
					v->in_f16 ? "mkd_f16" : "mkd_bf16",
					v->out_f32 ? "float" : "mkd_bf16", v->bn, v->stages, v->mc, v->kind,
					v->stg);
	}
	return s;
}

/* ---- host side of the data ---------------------------------------------------- */

static float val(unsigned long long i, unsigned seed)
{
	unsigned long long x = i * 0x9E3779B97F4A7C15ull + seed;
	x ^= x >> 31;
	x *= 0xBF58476D1CE4E5B9ull;
	x ^= x >> 29;
	return (float)((int)(x >> 56) - 128) * (1.0f / 128.0f);
}

enum { SEED_A = 0x1234567u, SEED_B = 0x89abcdefu };

static double ref_elem(long long m, long long n, long long K, long long N)
{
	double s = 0;
	for (long long k = 0; k < K; k++)
		s += (double)val((unsigned long long)(m * K + k), SEED_A) *
		     (double)val((unsigned long long)(k * N + n), SEED_B);
	return s;
}

static float bf16_to_f32(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static uint64_t rng_state = 0x243F6A8885A308D3ull;
static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* ---- the driver ---------------------------------------------------------------- */

static const cudrv *cu;
static int failures;

#define CK(call)                                                                      \
	do {                                                                          \
		CUresult r_ = (call);                                                 \
		if (r_ != CUDA_SUCCESS) {                                             \
			fprintf(stderr, "gpu_gemm: %s:%d: %s: %s\n", __FILE__, __LINE__, #call, \
				cudrv_errstr(r_));                                    \
			exit(1);                                                      \
		}                                                                     \
	} while (0)

typedef struct kern {
	CUfunction f;
	int smem, regs;
} kern;

static CUmodule mod;
static CUfunction fill_fn;
static kern kerns[NVAR];
static int sms;

static void fill(CUdeviceptr p, long long n, unsigned seed, int f16)
{
	void *args[] = {&p, &n, &seed, &f16};
	CK(cu->cuLaunchKernel(fill_fn, (unsigned)(sms * 8), 1, 1, 256, 1, 1, 0, NULL, args, NULL));
}

typedef struct gemm {
	CUdeviceptr A, B, C;
	long long M, N, K, ldc;
} gemm;

/* 1: launches are cooperative as well (the megakernel's are): whether the
 * driver takes clusters in a cooperative launch */
static int coop_launch;

static CUresult try_launch(int v, const gemm *g)
{
	_Alignas(64) unsigned char ta[MK_TMAP_BYTES], tb[MK_TMAP_BYTES], tc[MK_TMAP_BYTES];
	char err[256];
	/* C's map for the TMA stores: the M x N result (clipped there: the
	 * sentinel past N and M stays), 64 rows x 128 bytes a box */
	const int es = VARIANTS[v].out_f32 ? 4 : 2;
	memset(tc, 0, sizeof tc);
	if (mk_tmap_encode(cu, ta, g->A, 2, g->M, g->K, g->K, BM, 64, err, sizeof err) ||
	    mk_tmap_encode(cu, tb, g->B, 2, g->K, g->N, g->N, BK, 64, err, sizeof err) ||
	    (VARIANTS[v].stg == 2 &&
	     mk_tmap_encode(cu, tc, g->C, es, g->M, g->N, g->ldc, 64, 128 / es, err, sizeof err))) {
		fprintf(stderr, "gpu_gemm: %s\n", err);
		exit(1);
	}
	int M = (int)g->M, N = (int)g->N, K = (int)g->K;
	long long ldc = g->ldc;
	CUdeviceptr C = g->C;
	void *args[] = {ta, tb, tc, &C, &M, &N, &K, &ldc};
	/* clusters for the _mc2 variants only: the others launch as before
	 * (no cluster attribute), as the megakernel does without pairs */
	CUlaunchAttribute attr[2];
	unsigned na = 0;
	memset(attr, 0, sizeof attr);
	if (VARIANTS[v].mc > 1) {
		attr[na].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
		attr[na].value.clusterDim.x = (unsigned)VARIANTS[v].mc;
		attr[na].value.clusterDim.y = attr[na].value.clusterDim.z = 1;
		na++;
	}
	if (coop_launch) {
		attr[na].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
		attr[na++].value.cooperative = 1;
	}
	CUlaunchConfig cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.gridDimX = (unsigned)(sms / VARIANTS[v].mc * VARIANTS[v].mc);
	cfg.gridDimY = cfg.gridDimZ = 1;
	cfg.blockDimX = 384;
	cfg.blockDimY = cfg.blockDimZ = 1;
	cfg.sharedMemBytes = (unsigned)kerns[v].smem;
	cfg.attrs = attr;
	cfg.numAttrs = na;
	return cu->cuLaunchKernelEx(&cfg, kerns[v].f, args, NULL);
}

static void launch(int v, const gemm *g) { CK(try_launch(v, g)); }

/* ---- cuBLAS, if there is one (tests/gpu/cublas.h) -------------------------------- */

static mkt_cublas blas;

static int blas_open(void) { return mkt_cublas_open(&blas); }

/* row-major C[M,N] = A[M,K] B[K,N] */
static void blas_gemm(const gemm *g)
{
	int r = mkt_cublas_gemm_bf16(&blas, NULL, g->A, g->B, g->C, g->M, g->N, g->K, g->ldc);
	if (r != 0) {
		fprintf(stderr, "gpu_gemm: cublasGemmEx: status %d\n", r);
		exit(1);
	}
}

/* ---- checking ------------------------------------------------------------------------ */

static double tol(double ref, int out_f32, long long K)
{
	return fabs(ref) * (out_f32 ? 1e-5 : 1.0 / 128) + 1e-3 * sqrt((double)K);
}

static float out_at(const void *h, long long i, int out_f32)
{
	return out_f32 ? ((const float *)h)[i] : bf16_to_f32(((const uint16_t *)h)[i]);
}

/* Whole C, against ref[M*N]; everything past M x N in the (M + 8) x ldc
 * buffer must still be the 0xff sentinel. */
static int check_all(const char *what, const gemm *g, int out_f32, const double *ref)
{
	const long long rows = g->M + 8, es = out_f32 ? 4 : 2;
	unsigned char *h = malloc((size_t)(rows * g->ldc * es));
	long long bad = 0, outside = 0;
	double worst = 0;
	CK(cu->cuCtxSynchronize());
	CK(cu->cuMemcpyDtoH(h, g->C, (size_t)(rows * g->ldc * es)));
	for (long long m = 0; m < rows; m++)
		for (long long n = 0; n < g->ldc; n++) {
			long long i = m * g->ldc + n;
			if (m >= g->M || n >= g->N) {
				for (long long b = 0; b < es; b++)
					outside += h[i * es + b] != 0xff;
				continue;
			}
			double r = ref[m * g->N + n], e = fabs(out_at(h, i, out_f32) - r);
			if (!(e <= tol(r, out_f32, g->K))) {
				if (bad < 3)
					fprintf(stderr, "  %s: C[%lld][%lld] = %g, expected %g\n", what, m, n,
						out_at(h, i, out_f32), r);
				bad++;
			}
			if (e > worst || e != e)
				worst = e;
		}
	free(h);
	int ok = bad == 0 && outside == 0;
	printf("%-4s %-40s max err %.3g%s", ok ? "ok" : "FAIL", what, worst,
	       outside ? "" : ", nothing stored outside");
	if (bad)
		printf(", %lld wrong", bad);
	if (outside)
		printf(", %lld bytes stored outside the %lld x %lld result", outside, g->M, g->N);
	printf("\n");
	failures += !ok;
	return ok;
}

/* 4096 random elements (the same ones for every call with this shape) */
static int check_sample(const char *what, const gemm *g, int out_f32)
{
	enum { S = 4096 };
	static long long sm[S], sn[S];
	static double sref[S];
	static long long cm = -1, cn, ck;
	const long long es = out_f32 ? 4 : 2;
	if (cm != g->M || cn != g->N || ck != g->K) {
		for (int i = 0; i < S; i++) {
			sm[i] = (long long)(rng() % (uint64_t)g->M);
			sn[i] = (long long)(rng() % (uint64_t)g->N);
			if (i < 64) {  /* the corners and edges too */
				sm[i] = (i & 1) ? g->M - 1 - i / 2 % 4 : i / 2 % 4;
				sn[i] = (i & 2) ? g->N - 1 - i / 4 % 4 : i / 4 % 4;
			}
			sref[i] = ref_elem(sm[i], sn[i], g->K, g->N);
		}
		cm = g->M, cn = g->N, ck = g->K;
	}
	CK(cu->cuCtxSynchronize());
	long long bad = 0;
	double worst = 0;
	for (int i = 0; i < S; i++) {
		unsigned char b[4];
		CK(cu->cuMemcpyDtoH(b, g->C + (CUdeviceptr)((sm[i] * g->ldc + sn[i]) * es), (size_t)es));
		double e = fabs(out_at(b, 0, out_f32) - sref[i]);
		if (!(e <= tol(sref[i], out_f32, g->K))) {
			if (bad < 3)
				fprintf(stderr, "  %s: C[%lld][%lld] = %g, expected %g\n", what, sm[i], sn[i],
					out_at(b, 0, out_f32), sref[i]);
			bad++;
		}
		if (e > worst || e != e)
			worst = e;
	}
	printf("%-4s %-40s max err %.3g (4096 samples)", bad ? "FAIL" : "ok", what, worst);
	if (bad)
		printf(", %lld wrong", bad);
	printf("\n");
	failures += bad != 0;
	return bad == 0;
}

/* ---- timing --------------------------------------------------------------------------- */

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

/* median of 20 timed runs after 3 warm-ups, in ms; v < 0: cuBLAS */
static float time_ms(int v, const gemm *g)
{
	enum { WARM = 3, RUNS = 20 };
	CUevent e[RUNS + 1];
	float t[RUNS];
	for (int i = 0; i <= RUNS; i++)
		CK(cu->cuEventCreate(&e[i], 0));
	for (int i = 0; i < WARM; i++)
		v < 0 ? blas_gemm(g) : launch(v, g);
	CK(cu->cuEventRecord(e[0], NULL));
	for (int i = 0; i < RUNS; i++) {
		v < 0 ? blas_gemm(g) : launch(v, g);
		CK(cu->cuEventRecord(e[i + 1], NULL));
	}
	CK(cu->cuEventSynchronize(e[RUNS]));
	for (int i = 0; i < RUNS; i++)
		CK(cu->cuEventElapsedTime(&t[i], e[i], e[i + 1]));
	for (int i = 0; i <= RUNS; i++)
		CK(cu->cuEventDestroy(e[i]));
	qsort(t, RUNS, sizeof t[0], cmp_float);
	return (t[RUNS / 2 - 1] + t[RUNS / 2]) / 2;
}

/* ---- compiling ------------------------------------------------------------------------- */

static void print_ptxas(const char *log)
{
	for (const char *l = log; *l;) {
		const char *e = strchr(l, '\n');
		size_t n = e ? (size_t)(e - l) : strlen(l);
		if (memmem(l, n, "registers", 9) || memmem(l, n, "spill", 5) ||
		    memmem(l, n, "Compiling entry", 15) || memmem(l, n, "C75", 3) ||
		    memmem(l, n, "warning", 7))
			printf("  %.*s\n", (int)n, l);
		l += n + (e != NULL);
	}
}

/* Compiles the test kernels for sm_90a; 0 when they build without spills. */
static int compile(cg_binary *bin, int verbose)
{
	char *src = kernel_source();
	cg_compile_opts o = {.arch = "sm_90a", .use_cache = 1};
	if (!src)
		return -1;
	cg_status st = cg_compile(src, "gpu_gemm.cu", &o, CG_CUBIN, bin);
	free(src);
	if (st != CG_OK) {
		fprintf(stderr, "gpu_gemm: NVRTC: %s\n%s\n", cg_strerror(st), bin->log ? bin->log : "");
		return -1;
	}
	if (verbose) {
		printf("sm_90a: %zu-byte cubin, %.0f ms%s\n", bin->size, bin->compile_ms,
		       bin->from_cache ? " (cache)" : "");
		print_ptxas(bin->log);
	}
	int clean = bin->spill_stores == 0 && bin->spill_loads == 0 && bin->stack_bytes == 0 &&
		    !strstr(bin->log, "C7510") && !strstr(bin->log, "C7512") &&
		    !strstr(bin->log, "C7507") && !strstr(bin->log, "C7508");
	printf("%-4s sm_90a kernels: at most %d registers, %d bytes stack, %d/%d bytes spilled%s\n",
	       clean ? "ok" : "FAIL", bin->regs, bin->stack_bytes, bin->spill_stores,
	       bin->spill_loads, clean ? "" : " (or wgmma serialised / setmaxnreg ignored)");
	return clean ? 0 : -1;
}

static int compile_only(const char *cubin_path)
{
	cg_binary bin;
	int rc = compile(&bin, 1) ? 1 : 0;
	if (!rc && cubin_path) {
		FILE *f = fopen(cubin_path, "wb");
		if (!f || fwrite(bin.data, 1, bin.size, f) != bin.size) {
			fprintf(stderr, "gpu_gemm: cannot write %s\n", cubin_path);
			rc = 1;
		}
		if (f)
			fclose(f);
	}
	cg_binary_free(&bin);
	static const char *const archs[] = {"sm_80", "sm_90"};
	for (int i = 0; i < 2; i++) {
		cg_compile_opts o = {.arch = archs[i]};
		cg_status st = cg_compile(SRC_FALLBACK, "gpu_gemm_mma.cu", &o, CG_CUBIN, &bin);
		int ok = st == CG_OK && bin.spill_stores == 0 && bin.stack_bytes == 0;
		printf("%-4s %s mma.cuh fallback: %d registers, %d bytes stack, %d bytes spilled\n",
		       ok ? "ok" : "FAIL", archs[i], bin.regs, bin.stack_bytes, bin.spill_stores);
		if (st != CG_OK)
			fprintf(stderr, "%s\n", bin.log ? bin.log : cg_strerror(st));
		rc |= !ok;
		cg_binary_free(&bin);
	}
	return rc;
}

/* ---- main ------------------------------------------------------------------------------ */

static void check_shape(long long M, long long N, long long K, int whole)
{
	for (int f16 = 0; f16 < 2; f16++) {
		gemm g = {0, 0, 0, M, N, K, whole ? N + 8 : N};
		double *ref = NULL;
		int any = 0;
		for (int v = 0; v < NVAR; v++)
			any |= VARIANTS[v].in_f16 == f16;
		if (!any)
			continue;
		CK(cu->cuMemAlloc(&g.A, (size_t)(M * K * 2)));
		CK(cu->cuMemAlloc(&g.B, (size_t)(K * N * 2)));
		CK(cu->cuMemAlloc(&g.C, (size_t)((M + 8) * g.ldc * 4)));
		fill(g.A, M * K, SEED_A, f16);
		fill(g.B, K * N, SEED_B, f16);
		if (whole) {
			float *a = malloc(sizeof *a * (size_t)(M * K)), *b = malloc(sizeof *b * (size_t)(K * N));
			ref = calloc((size_t)(M * N), sizeof *ref);
			for (long long i = 0; i < M * K; i++)
				a[i] = val((unsigned long long)i, SEED_A);
			for (long long i = 0; i < K * N; i++)
				b[i] = val((unsigned long long)i, SEED_B);
			for (long long m = 0; m < M; m++)
				for (long long k = 0; k < K; k++) {
					double x = a[m * K + k];
					for (long long n = 0; n < N; n++)
						ref[m * N + n] += x * b[k * N + n];
				}
			free(a);
			free(b);
		}
		for (int v = 0; v < NVAR; v++) {
			const variant *va = &VARIANTS[v];
			char what[96];
			if (va->in_f16 != f16)
				continue;
			snprintf(what, sizeof what, "%lldx%lldx%lld %s", M, N, K, va->name);
			CK(cu->cuMemsetD8(g.C, 0xff, (size_t)((M + 8) * g.ldc * 4)));
			launch(v, &g);
			if (whole)
				check_all(what, &g, va->out_f32, ref);
			else
				check_sample(what, &g, va->out_f32);
		}
		free(ref);
		CK(cu->cuMemFree(g.A));
		CK(cu->cuMemFree(g.B));
		CK(cu->cuMemFree(g.C));
	}
}

int main(int argc, char **argv)
{
	const char *cubin_path = NULL;
	int only = 0, check_only = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--compile-only"))
			only = 1;
		else if (!strcmp(argv[i], "--check-only"))
			check_only = 1;
		else if (!strcmp(argv[i], "--cubin") && i + 1 < argc)
			cubin_path = argv[++i];
		else {
			fprintf(stderr, "usage: gpu_gemm [--check-only | --compile-only [--cubin FILE]]\n");
			return 2;
		}
	}
	if (only)
		return compile_only(cubin_path);

	char why[256];
	if (cudrv_get(&cu, why, sizeof why) != CUDRV_OK) {
		printf("gpu_gemm: skipped: %s\n", why);
		return 0;
	}
	CUdevice dev;
	CUcontext ctx;
	int major = 0, minor = 0;
	CK(cu->cuDeviceGet(&dev, 0));
	CK(cu->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
	CK(cu->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
	CK(cu->cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
	if (major != 9 || minor != 0) {
		printf("gpu_gemm: skipped: needs an sm_90 GPU, this one is sm_%d%d\n", major, minor);
		return 0;
	}
	CK(cu->cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(cu->cuCtxSetCurrent(ctx));

	cg_binary bin;
	if (compile(&bin, 0))
		return 1;
	CK(cu->cuModuleLoadData(&mod, bin.data));
	cg_binary_free(&bin);
	CK(cu->cuModuleGetFunction(&fill_fn, mod, "mkt_fill"));
	for (int v = 0; v < NVAR; v++) {
		char sym[96];
		CUdeviceptr p;
		size_t n;
		CK(cu->cuModuleGetFunction(&kerns[v].f, mod, VARIANTS[v].name));
		snprintf(sym, sizeof sym, "%s_smem", VARIANTS[v].name);
		CK(cu->cuModuleGetGlobal(&p, &n, mod, sym));
		CK(cu->cuMemcpyDtoH(&kerns[v].smem, p, sizeof kerns[v].smem));
		CK(cu->cuFuncSetAttribute(kerns[v].f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
					  kerns[v].smem));
		CK(cu->cuFuncGetAttribute(&kerns[v].regs, CU_FUNC_ATTRIBUTE_NUM_REGS, kerns[v].f));
		/* setmaxnreg trades 40 + 2 x 232 = 3 x 168 per thread: the kernel
		 * must start with exactly 168 */
		int ok = VARIANTS[v].bn <= 128 || kerns[v].regs == 168;
		printf("%-4s %-18s %d registers, %d bytes smem, %d CTAs x 384\n", ok ? "ok" : "FAIL",
		       VARIANTS[v].name, kerns[v].regs, kerns[v].smem, sms);
		if (!ok) {  /* setmaxnreg.inc would wait forever */
			printf("gpu_gemm: %s must start with 168 registers\n", VARIANTS[v].name);
			return 1;
		}
	}

	/* correctness */
	check_shape(128, 128, 64, 1);
	check_shape(256, 512, 1024, 1);
	check_shape(1000, 264, 264, 1);
	check_shape(640, 256, 512, 1);  /* 5 row tiles: a cluster's second CTA has none */
	check_shape(4096, 4096, 4096, 0);
	{  /* the 2-CTA clusters once more, launched cooperatively */
		gemm g = {0, 0, 0, 1024, 512, 1024, 512};
		CK(cu->cuMemAlloc(&g.A, (size_t)(g.M * g.K * 2)));
		CK(cu->cuMemAlloc(&g.B, (size_t)(g.K * g.N * 2)));
		CK(cu->cuMemAlloc(&g.C, (size_t)(g.M * g.N * 2)));
		fill(g.A, g.M * g.K, SEED_A, 0);
		fill(g.B, g.K * g.N, SEED_B, 0);
		CK(cu->cuMemsetD8(g.C, 0xff, (size_t)(g.M * g.N * 2)));
		coop_launch = 1;
		CUresult r = try_launch(V_256_MC2, &g);
		coop_launch = 0;
		if (r == CUDA_SUCCESS)
			check_sample("1024x512x1024 clusters of 2, cooperative", &g, 0);
		else
			printf("note cooperative launch in clusters of 2: %s\n", cudrv_errstr(r));
		CK(cu->cuMemFree(g.A));
		CK(cu->cuMemFree(g.B));
		CK(cu->cuMemFree(g.C));
	}
	if (check_only) {
		printf("gpu_gemm: %s\n", failures ? "WRONG RESULTS" : "all results correct");
		return failures != 0;
	}

	/* speed, bf16 in and out, against cuBLAS on the same data */
	static const long long shapes[][3] = {
		{8192, 8192, 8192}, {4096, 4096, 4096}, {8192, 28672, 8192}, {8192, 8192, 28672},
		{2048, 8192, 8192}, {1024, 8192, 8192}, {16384, 8192, 8192},
	};
	long long maxa = 0, maxb = 0, maxc = 0;
	for (int i = 0; i < 7; i++) {
		const long long *s = shapes[i];
		if (s[0] * s[2] > maxa) maxa = s[0] * s[2];
		if (s[2] * s[1] > maxb) maxb = s[2] * s[1];
		if (s[0] * s[1] > maxc) maxc = s[0] * s[1];
	}
	int have_blas = blas_open() == 0;
	if (!have_blas)
		printf("cuBLAS not available (%s): timing ours alone\n", blas.why);
	CUdeviceptr A, B, C, C2;
	CK(cu->cuMemAlloc(&A, (size_t)maxa * 2));
	CK(cu->cuMemAlloc(&B, (size_t)maxb * 2));
	CK(cu->cuMemAlloc(&C, (size_t)maxc * 2));
	CK(cu->cuMemAlloc(&C2, (size_t)maxc * 2));
	printf("\n%-18s %8s %8s %9s %9s %8s %8s %8s %6s\n", "M x N x K (bf16)", "128x128",
	       "128x256", "256 pairs", "256 carry", "+staged", "+tma", "cuBLAS", "ratio");
	for (int i = 0; i < 7; i++) {
		const long long *s = shapes[i];
		gemm g = {A, B, C, s[0], s[1], s[2], s[1]}, gb = g;
		gb.C = C2;
		char what[64];
		fill(A, s[0] * s[2], SEED_A, 0);
		fill(B, s[2] * s[1], SEED_B, 0);
		double flop = 2.0 * (double)s[0] * (double)s[1] * (double)s[2];
		static const int timed[] = {V_128, V_256, V_256_MC2, V_256_CARRY, V_256_STG, V_256_TMA};
		enum { NT = sizeof timed / sizeof timed[0] };
		double tf[NT], tb = 0, best = 0;
		for (int j = 0; j < NT; j++) {
			int v = timed[j];
			CK(cu->cuMemsetD8(C, 0xff, (size_t)(s[0] * s[1] * 2)));
			launch(v, &g);
			snprintf(what, sizeof what, "%lldx%lldx%lld %s", s[0], s[1], s[2], VARIANTS[v].name);
			check_sample(what, &g, 0);
			tf[j] = flop / (time_ms(v, &g) * 1e-3) / 1e12;
		}
		if (have_blas) {
			CK(cu->cuMemsetD8(C2, 0xff, (size_t)(s[0] * s[1] * 2)));
			blas_gemm(&gb);
			snprintf(what, sizeof what, "%lldx%lldx%lld cuBLAS", s[0], s[1], s[2]);
			check_sample(what, &gb, 0);
			tb = flop / (time_ms(-1, &gb) * 1e-3) / 1e12;
		}
		char shape[48];
		snprintf(shape, sizeof shape, "%lldx%lldx%lld", s[0], s[1], s[2]);
		for (int j = 0; j < NT; j++)
			best = tf[j] > best ? tf[j] : best;
		printf("%-18s %8.1f %8.1f %9.1f %9.1f %8.1f %8.1f %8.1f %6.3f  TFLOP/s\n", shape,
		       tf[0], tf[1], tf[2], tf[3], tf[4], tf[5], tb, tb > 0 ? best / tb : 0.0);
	}
	CK(cu->cuMemFree(A));
	CK(cu->cuMemFree(B));
	CK(cu->cuMemFree(C));
	CK(cu->cuMemFree(C2));
	CK(cu->cuModuleUnload(mod));
	printf("gpu_gemm: %s\n", failures ? "WRONG RESULTS" : "all results correct");
	return failures != 0;
}
