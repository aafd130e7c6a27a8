/* bench_gemm.c - the matmul-only pipeline (samples/gemm.mk) as a megakernel
 * against cuBLAS on the same inputs (make bench).
 *
 * For each shape: random bf16 inputs written through libmk; the pipeline
 * timed with mk_run_timed (CUDA events around one launch, as cuBLAS is
 * timed around one call), median of 20 after 3 warm-ups, run by run
 * alternating with cuBLAS's (both sides under the same clocks: measured
 * one after the other, the long shapes' times moved by up to 15% from run
 * to run, one side's without the other's; docs/perf-notes.md, thirtieth
 * session); both results
 * checked on 4096 random elements against a double-precision CPU dot
 * product of the same (bf16-rounded) inputs.  Prints a table last.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cudrv.h"
#include "runtime/mk.h"
#include "runtime/mk_int.h"
#include "tests/gpu/cublas.h"

enum { WARM = 3, N_RUNS = 20, SAMPLES = 4096 };

/* one cuBLAS GEMM of the shape, for mkt_time_events */
typedef struct blas_run {
	mkt_cublas *blas;
	CUdeviceptr A, B, C;
	long long M, N, K;
} blas_run;

static int blas_gemm(void *arg, CUstream st)
{
	const blas_run *g = arg;
	return mkt_cublas_gemm_bf16(g->blas, st, g->A, g->B, g->C, g->M, g->N, g->K, g->N);
}

static uint64_t rng(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* worst |err| / tolerance over the samples (<= 1 passes) */
static double check(const uint16_t *A, const uint16_t *B, const uint16_t *C, long long M, long long N,
		    long long K, uint64_t seed)
{
	double worst = 0;
	for (int s = 0; s < SAMPLES; s++) {
		long long i = (long long)(rng(&seed) % (uint64_t)M), j = (long long)(rng(&seed) % (uint64_t)N);
		double ref = 0;
		for (long long k = 0; k < K; k++)
			ref += (double)mk_bf16_to_f32(A[i * K + k]) * mk_bf16_to_f32(B[k * N + j]);
		double tol = fabs(ref) / 64 + 1e-2 * sqrt((double)K) / 8;
		double e = fabs(mk_bf16_to_f32(C[i * N + j]) - ref) / tol;
		if (!(e <= worst))
			worst = e;
	}
	return worst;
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);  /* tables survive a timeout */
	static const long long shapes[][3] = {
		{8192, 8192, 8192}, {16384, 8192, 8192}, {4096, 4096, 4096}, {8192, 28672, 8192},
		{8192, 8192, 28672}, {2048, 8192, 8192}, {1024, 8192, 8192}};
	mk_ctx *ctx = NULL;
	if (mk_ctx_create(NULL, &ctx) != MK_OK) {
		printf("bench_gemm: skipped: %s\n", mk_ctx_error(ctx));
		mk_ctx_destroy(ctx);
		return 0;
	}
	mkt_cublas blas = {0};
	int have_blas = mkt_cublas_open(&blas) == 0;
	if (!have_blas)
		fprintf(stderr, "bench_gemm: no cuBLAS (%s): megakernel only\n", blas.why);
	const cudrv *cu;
	char why[256];
	cudrv_get(&cu, why, sizeof why);
	char rows[16][256];
	int nrows = 0, bad = 0;
	for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
		long long M = shapes[si][0], N = shapes[si][1], K = shapes[si][2];
		mk_param prm[] = {{"M", M}, {"N", N}, {"K", K}};
		mk_load_opts lo = MK_LOAD_OPTS_INIT;
		lo.params = prm;
		lo.nparams = 3;
		mk_pipeline *pl = NULL;
		if (mk_pipeline_load_file(ctx, "samples/gemm.mk", &lo, &pl) != MK_OK) {
			fprintf(stderr, "bench_gemm: %s\n%s", mk_ctx_error(ctx), mk_ctx_log(ctx));
			return 1;
		}
		size_t na = (size_t)(M * K), nb = (size_t)(K * N), nc = (size_t)(M * N);
		uint16_t *A = malloc(na * 2), *B = malloc(nb * 2), *C = malloc(nc * 2);
		if (!A || !B || !C)
			return 1;
		uint64_t seed = 42 + si;
		for (size_t i = 0; i < na; i++)
			A[i] = mk_f32_to_bf16((float)((double)(rng(&seed) >> 11) / 9007199254740992.0 * 2 - 1));
		for (size_t i = 0; i < nb; i++)
			B[i] = mk_f32_to_bf16((float)((double)(rng(&seed) >> 11) / 9007199254740992.0 * 2 - 1));
		if (mk_tensor_write(pl, "A", 0, A, na * 2) != MK_OK || mk_tensor_write(pl, "B", 0, B, nb * 2) != MK_OK)
			return 1;
		/* cuBLAS on the pipeline's own A and B, into a C of its own */
		CUstream st = NULL;
		blas_run g = {&blas, 0, 0, 0, M, N, K};
		if (have_blas) {
			unsigned long long dA, dB;
			mk_tensor_devptr(pl, "A", 0, &dA);
			mk_tensor_devptr(pl, "B", 0, &dB);
			g.A = dA, g.B = dB;
			if (cu->cuMemAlloc(&g.C, nc * 2) != CUDA_SUCCESS || cu->cuStreamCreate(&st, 0))
				return 1;
		}
		float t[N_RUNS], tb[N_RUNS];
		for (int i = 0; i < WARM + N_RUNS; i++) {
			float ms, mb = 0;
			if (mk_run_timed(pl, &ms) != MK_OK) {
				fprintf(stderr, "bench_gemm: %s\n%s", mk_ctx_error(ctx), mk_stall_report(pl));
				return 1;
			}
			if (have_blas && mkt_time_events(cu, st, 0, 1, blas_gemm, &g, &mb))
				return 1;
			if (i >= WARM)
				t[i - WARM] = ms, tb[i - WARM] = mb;
		}
		qsort(t, N_RUNS, sizeof *t, mkt_cmp_float);
		qsort(tb, N_RUNS, sizeof *tb, mkt_cmp_float);
		float ours = t[N_RUNS / 2], theirs = have_blas ? tb[N_RUNS / 2] : 0;
		mk_tensor_read(pl, "C", 0, C, nc * 2);
		double e_ours = check(A, B, C, M, N, K, seed), e_blas = 0;
		if (have_blas) {
			cu->cuMemcpyDtoH(C, g.C, nc * 2);
			e_blas = check(A, B, C, M, N, K, seed);
			cu->cuMemFree(g.C);
			cu->cuStreamDestroy(st);
		}
		double fl = 2.0 * M * N * K;
		int ok = e_ours <= 1 && e_blas <= 1;
		bad |= !ok;
		snprintf(rows[nrows++], sizeof rows[0],
			 "| %lldx%lldx%lld | %.1f | %.0f | %.1f | %.0f | %.3f | %s |", M, N, K, ours * 1e3,
			 fl / ours / 1e9, theirs * 1e3, theirs > 0 ? fl / theirs / 1e9 : 0.0,
			 theirs > 0 ? theirs / ours : 0.0, ok ? "ok" : "WRONG");
		fprintf(stderr, "%s\n", rows[nrows - 1]);
		free(A);
		free(B);
		free(C);
		mk_pipeline_destroy(pl);
	}
	printf("\nbench_gemm on %s: samples/gemm.mk (megakernel) vs cuBLAS, bf16, median of %d\n",
	       mk_ctx_device(ctx), N_RUNS);
	printf("| M x N x K | megakernel us | TFLOP/s | cuBLAS us | TFLOP/s | ratio | check |\n"
	       "|---|---|---|---|---|---|---|\n");
	for (int i = 0; i < nrows; i++)
		printf("%s\n", rows[i]);
	mk_ctx_destroy(ctx);
	return bad;
}
