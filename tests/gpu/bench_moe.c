/* bench_moe.c - an MoE layer: routing, expert GEMMs, combine (make bench,
 * on the GPU).
 *
 *   bench_moe [--ranks R] [-D NAME=VALUE ...]   (samples/moe_dispatch_gemm.mk;
 *                                               default T=8192 E=64 H=2048
 *                                               F=1024 topk=8)
 *
 * On one GPU with R virtual ranks (default 1), on the same inputs (uniform
 * routing, seeded):
 *  (a) fused: one persistent kernel (route, dispatch, expert GEMMs, silu,
 *      combine, tile by tile);
 *  (b) unfused, the same code: one kernel per stage, back to back (what a
 *      framework's dispatch kernel + grouped GEMM + combine kernel looks
 *      like, with this library's kernels);
 *  (c) the floor for the compute: cuBLAS, two GEMMs per expert over exactly
 *      the rows routed to it (no capacity padding), all experts on this GPU,
 *      one stream; silu, dispatch and combine not counted.
 * Medians of 10 runs after 3 warm-ups, CUDA events.  With R > 1 the ranks
 * share the GPU: the all_to_all is loads between ranks' buffers, not NVLink,
 * and NCCL cannot run two ranks on one GPU, so there is no NCCL row: on one
 * GPU these are functional numbers for the exchange, real ones for the
 * compute.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cudrv.h"
#include "runtime/mk.h"
#include "runtime/mk_int.h"
#include "tests/gpu/cublas.h"

enum { WARM = 3, RUNS = 10, MAXP = 16 };

static uint64_t rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static float uni(uint64_t *s) { return (float)((double)(rng(s) >> 11) / 9007199254740992.0 * 2 - 1); }

/* the floor's buffers: rows grouped by expert, count[e] rows each */
typedef struct experts {
	mkt_cublas *blas;
	long long E, H, F;
	const long long *count;
	CUdeviceptr A, W1, Hh, W2, Y;
} experts;

/* two cuBLAS GEMMs per expert over its rows, for mkt_time_events */
static int expert_gemms(void *arg, CUstream st)
{
	const experts *x = arg;
	const long long H = x->H, F = x->F;
	long long r0 = 0;
	for (long long e = 0; e < x->E; e++) {
		if (x->count[e] == 0)
			continue;
		if (mkt_cublas_gemm_bf16(x->blas, st, x->A + (CUdeviceptr)(r0 * H * 2),
					 x->W1 + (CUdeviceptr)(e * H * F * 2),
					 x->Hh + (CUdeviceptr)(r0 * F * 2), x->count[e], F, H, F) ||
		    mkt_cublas_gemm_bf16(x->blas, st, x->Hh + (CUdeviceptr)(r0 * F * 2),
					 x->W2 + (CUdeviceptr)(e * F * H * 2),
					 x->Y + (CUdeviceptr)(r0 * H * 2), x->count[e], H, F, H))
			return 1;
		r0 += x->count[e];
	}
	return 0;
}

static long long param(const mk_param *p, int n, const char *name, long long dflt)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(p[i].name, name))
			return p[i].value;
	return dflt;
}

/* median of RUNS after WARM: mode 0 megakernel, 1 one kernel per stage */
static int time_pipeline(mk_pipeline *pl, int mode, float *med)
{
	float t[RUNS];
	for (int i = 0; i < WARM + RUNS; i++) {
		float ms;
		mk_status st = mode ? mk_run_stages(pl, 0, &ms) : mk_run_timed(pl, &ms);
		if (st != MK_OK) {
			fprintf(stderr, "bench_moe: %s\n%s", mk_strerror(st), mk_stall_report(pl));
			return 1;
		}
		if (i >= WARM)
			t[i - WARM] = ms;
	}
	qsort(t, RUNS, sizeof *t, mkt_cmp_float);
	*med = t[RUNS / 2] * 1000.f;
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	mk_param prm[MAXP];
	int np = 0, ranks = 1;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--ranks") && i + 1 < argc) {
			ranks = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "-D") && i + 1 < argc && np < MAXP) {
			char *eq = strchr(argv[++i], '=');
			if (!eq) {
				fprintf(stderr, "bench_moe: -D NAME=VALUE\n");
				return 2;
			}
			*eq = 0;
			prm[np++] = (mk_param){argv[i], atoll(eq + 1)};
		} else {
			fprintf(stderr, "usage: bench_moe [--ranks R] [-D NAME=VALUE ...]\n");
			return 2;
		}
	}
	static const struct { const char *n; long long v; } dflt[] = {
		{"T", 8192}, {"E", 64}, {"H", 2048}, {"F", 1024}, {"topk", 8}};
	for (size_t d = 0; d < sizeof dflt / sizeof dflt[0]; d++)
		if (param(prm, np, dflt[d].n, -1) < 0 && np < MAXP)
			prm[np++] = (mk_param){dflt[d].n, dflt[d].v};
	long long T = param(prm, np, "T", 0), E = param(prm, np, "E", 0), H = param(prm, np, "H", 0),
		  F = param(prm, np, "F", 0), k = param(prm, np, "topk", 0);

	mk_ctx *ctx = NULL;
	if (mk_ctx_create(NULL, &ctx) != MK_OK) {
		printf("bench_moe: skipped: %s\n", mk_ctx_error(ctx));
		mk_ctx_destroy(ctx);
		return 0;
	}
	mk_bench_per_stage = 1;
	mk_load_opts lo = MK_LOAD_OPTS_INIT;
	lo.params = prm;
	lo.nparams = np;
	lo.ranks = ranks;
	lo.timeout_ms = 20000;
	mk_pipeline *pl = NULL;
	if (mk_pipeline_load_file(ctx, "samples/moe_dispatch_gemm.mk", &lo, &pl) != MK_OK) {
		fprintf(stderr, "bench_moe: %s\n%s", mk_ctx_error(ctx), mk_ctx_log(ctx));
		return 1;
	}
	const ir_prog *p = mk_pipeline_prog(pl);
	long long C = p->tensors[ir_find_tensor(p, "Xe")].shape[1];
	/* inputs: uniform routing, values in [-1, 1), gates 1/k */
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	long long *count = calloc((size_t)E, sizeof *count);
	if (!count)
		return 1;
	for (int r = 0; r < ranks; r++) {
		const char *names[] = {"X", "idx", "gate", "W1", "W2"};
		for (int n = 0; n < 5; n++) {
			mk_tensor_info ti;
			if (mk_tensor_info_get(pl, mk_tensor_find(pl, names[n]), &ti) != MK_OK)
				return 1;
			size_t cnt = ti.bytes / ti.elem_size;
			float *v = malloc(cnt * sizeof *v);
			if (!v)
				return 1;
			for (size_t i = 0; i < cnt; i++) {
				if (n == 1) {
					v[i] = (float)(rng(&seed) % (uint64_t)E);
					count[(long long)v[i]]++;
				} else {
					v[i] = n == 2 ? 1.f / (float)k : uni(&seed) * (n >= 3 ? 0.05f : 1.f);
				}
			}
			if (mk_tensor_write_f32(pl, names[n], r, v, cnt) != MK_OK) {
				fprintf(stderr, "bench_moe: %s\n", mk_ctx_error(ctx));
				return 1;
			}
			free(v);
		}
	}
	long long most = 0;
	for (long long e = 0; e < E; e++)
		most = count[e] > most ? count[e] : most;
	if (most > C) {
		fprintf(stderr, "bench_moe: an expert drew %lld tokens, over the capacity %lld\n", most, C);
		return 1;
	}
	float fused, staged;
	if (time_pipeline(pl, 0, &fused) || time_pipeline(pl, 1, &staged))
		return 1;

	/* (c) cuBLAS per expert over its routed rows */
	float floor_us = 0;
	mkt_cublas blas = {0};
	const cudrv *cu;
	char why[256];
	if (mkt_cublas_open(&blas) != 0 || cudrv_get(&cu, why, sizeof why) != CUDRV_OK) {
		fprintf(stderr, "bench_moe: no cuBLAS (%s): no floor row\n", blas.why);
	} else {
		long long rows = T * k;
		experts x = {.blas = &blas, .E = E, .H = H, .F = F, .count = count};
		CUstream st;
		float ms;
		if (cu->cuMemAlloc(&x.A, (size_t)(rows * H * 2)) || cu->cuMemAlloc(&x.W1, (size_t)(E * H * F * 2)) ||
		    cu->cuMemAlloc(&x.Hh, (size_t)(rows * F * 2)) || cu->cuMemAlloc(&x.W2, (size_t)(E * F * H * 2)) ||
		    cu->cuMemAlloc(&x.Y, (size_t)(rows * H * 2)) || cu->cuStreamCreate(&st, 0))
			return 1;
		/* bf16 values near 0.03 everywhere (0x3cf5): tensor cores do not
		 * run faster on them than on random data */
		cu->cuMemsetD16(x.A, 0x3cf5, (size_t)(rows * H));
		cu->cuMemsetD16(x.W1, 0x3cf5, (size_t)(E * H * F));
		cu->cuMemsetD16(x.W2, 0x3cf5, (size_t)(E * F * H));
		if (mkt_time_events(cu, st, WARM, RUNS, expert_gemms, &x, &ms))
			return 1;
		floor_us = ms * 1000.f;
		cu->cuMemFree(x.A), cu->cuMemFree(x.W1), cu->cuMemFree(x.Hh), cu->cuMemFree(x.W2), cu->cuMemFree(x.Y);
	}
	double flops = 2.0 * 2.0 * (double)(T * k) * (double)H * (double)F;
	printf("\nbench_moe on %s: T=%lld tokens, top-%lld of E=%lld experts, H=%lld, F=%lld, "
	       "capacity C=%lld (largest bucket %lld), %d rank%s on one GPU\n",
	       mk_ctx_device(ctx), T, k, E, H, F, C, most, ranks, ranks > 1 ? "s" : "");
	printf("| version | us | TFLOP/s (routed rows) | vs fused |\n|---|---|---|---|\n");
	printf("| fused: one persistent kernel | %.1f | %.0f | 1.00x |\n", fused, flops / fused / 1e6);
	printf("| unfused: one kernel per stage, same code | %.1f | %.0f | %.2fx |\n", staged,
	       flops / staged / 1e6, staged / fused);
	if (floor_us > 0)
		printf("| floor: cuBLAS, two GEMMs per expert over its rows only | %.1f | %.0f | %.2fx |\n",
		       floor_us, flops / floor_us / 1e6, floor_us / fused);
	printf("Medians of %d runs after %d warm-ups (CUDA events).  The floor counts the expert "
	       "GEMMs only (no routing, silu or combine).%s\n", RUNS, WARM,
	       ranks > 1 ? "  Ranks share one GPU: exchange numbers are functional." : "");
	mk_pipeline_destroy(pl);
	mk_ctx_destroy(ctx);
	free(count);
	return 0;
}
