/* embed.c - libmk in an application: load ag_gemm.mk on two virtual ranks,
 * share one weight buffer between them, run twice, check a few results.
 * Without a GPU (or with --cpu) the same program runs on libmk's CPU
 * reference executor, each rank with its own copy of the weights.
 *
 *   cc embed.c $(pkg-config --cflags --libs mk) -o embed && ./embed [--cpu] [ag_gemm.mk]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mk.h"

enum { M = 512, N = 256, K = 256, RANKS = 2 };

static float rnd(unsigned *s)
{
	*s = *s * 1664525u + 1013904223u;
	return (float)(*s >> 8) / (float)(1u << 24) * 2.f - 1.f;
}

/* what the GPU sees: inputs rounded to bf16 */
static float bf16(float x)
{
	unsigned u;
	memcpy(&u, &x, 4);
	u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
	memcpy(&x, &u, 4);
	return x;
}

int main(int argc, char **argv)
{
	int cpu = argc > 1 && !strcmp(argv[1], "--cpu");
	const char *path = argc > 1 + cpu ? argv[1 + cpu] : "samples/ag_gemm.mk";
	mk_ctx *ctx = NULL;
	mk_pipeline *pl = NULL;
	int rc = 1;
	mk_ctx_opts co = {.cpu = cpu};
	mk_status st = mk_ctx_create(&co, &ctx);
	if (st == MK_ERR_NO_DRIVER || st == MK_ERR_NO_GPU) {
		fprintf(stderr, "embed: %s (%s): running on the CPU reference instead\n",
			mk_strerror(st), mk_ctx_error(ctx));
		mk_ctx_destroy(ctx);
		co.cpu = cpu = 1;
		st = mk_ctx_create(&co, &ctx);
	}
	if (st != MK_OK) {
		fprintf(stderr, "embed: %s: %s\n", mk_strerror(st), mk_ctx_error(ctx));
		goto out;
	}
	mk_param params[] = {{"M", M}, {"N", N}, {"K", K}};
	mk_load_opts lo = MK_LOAD_OPTS_INIT;
	lo.params = params;
	lo.nparams = 3;
	lo.ranks = RANKS;
	st = mk_pipeline_load_file(ctx, path, &lo, &pl);
	if (st != MK_OK) {
		fprintf(stderr, "embed: %s: %s\n%s", mk_strerror(st), mk_ctx_error(ctx), mk_ctx_log(ctx));
		goto out;
	}
	/* inputs: rank r holds rows r*M/2.. of A; both ranks share one B */
	static float a[RANKS][M / RANKS * K], b[K * N], c[M * N];
	unsigned seed = 7;
	for (int r = 0; r < RANKS; r++)
		for (int i = 0; i < M / RANKS * K; i++)
			a[r][i] = rnd(&seed);
	for (int i = 0; i < K * N; i++)
		b[i] = rnd(&seed);
	for (int r = 0; r < RANKS; r++)
		if ((st = mk_tensor_write_f32(pl, "A", r, a[r], M / RANKS * K)) != MK_OK)
			goto fail;
	if ((st = mk_tensor_write_f32(pl, "B", 0, b, K * N)) != MK_OK)
		goto fail;
	unsigned long long b0;
	if (cpu) {  /* host memory: no device pointer to share */
		if ((st = mk_tensor_write_f32(pl, "B", 1, b, K * N)) != MK_OK)
			goto fail;
	} else if ((st = mk_tensor_devptr(pl, "B", 0, &b0)) != MK_OK ||
		   (st = mk_tensor_bind(pl, "B", 1, b0, (size_t)K * N * 2)) != MK_OK) {
		goto fail;
	}

	for (int run = 0; run < 2; run++)
		if ((st = mk_run(pl)) != MK_OK)
			goto fail;
	/* rank 1's C holds all M rows: check a few against the CPU */
	if ((st = mk_tensor_read_f32(pl, "C", 1, c, M * N)) != MK_OK)
		goto fail;
	double worst = 0;
	for (int k = 0; k < 16; k++) {
		int i = (k * 97) % M, j = (k * 31) % N;
		const float *arow = a[i / (M / RANKS)] + (size_t)(i % (M / RANKS)) * K;
		double ref = 0;
		for (int q = 0; q < K; q++)
			ref += (double)bf16(arow[q]) * bf16(b[q * N + j]);
		double err = fabs(c[i * N + j] - ref) / (fabs(ref) + 1);
		if (err > worst)
			worst = err;
	}
	printf("embed: %s on %s: 2 runs, worst relative error %.2e on 16 samples: %s\n", path,
	       mk_ctx_device(ctx), worst, worst < 2e-2 ? "ok" : "WRONG");
	rc = worst < 2e-2 ? 0 : 1;
	goto out;
fail:
	fprintf(stderr, "embed: %s: %s\n%s", mk_strerror(st), mk_ctx_error(ctx), mk_stall_report(pl));
out:
	mk_pipeline_destroy(pl);
	mk_ctx_destroy(ctx);
	return rc;
}
