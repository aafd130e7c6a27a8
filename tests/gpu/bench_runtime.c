/* bench_runtime.c - what running costs (make bench, on the GPU).
 *
 *  1. an empty kernel: launch + synchronise, and back-to-back launches;
 *     then timed one-shot as the megakernel is (event, launch, event),
 *     from 1 CTA up to the megakernel's launch (a CTA per SM, 384 threads,
 *     200 KB of shared memory, cooperative): where the fixed cost goes;
 *  2. a trivial pipeline (one 8x8 relu): one-shot run and resident run;
 *  3. a chain of dependent stages (samples/mlp_chain.mk, or argv[1]) as
 *     one megakernel (one-shot and resident) against the same stages as
 *     separate launches and as one CUDA graph of them.
 * Medians after warm-up; GPU times from CUDA events, resident and launch
 * latency from the host clock (they include the host's part).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codegen/nvrtc.h"
#include "runtime/cudrv.h"
#include "runtime/mk.h"
#include "runtime/mk_int.h"

enum { WARM = 20, N = 200 };

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmpd);
	return v[n / 2];
}

#define CK(x)                                                                   \
	do {                                                                    \
		CUresult r_ = (x);                                              \
		if (r_ != CUDA_SUCCESS) {                                       \
			fprintf(stderr, "bench: %s: %s\n", #x, cudrv_errstr(r_)); \
			return 1;                                               \
		}                                                               \
	} while (0)

static const char *launch_what[4];
static double launch_us[4];  /* one-shot GPU time of an empty kernel, by launch shape */

static int empty_kernel(double *launch_sync_us, double *back_to_back_us)
{
	const cudrv *cu;
	char why[256];
	if (cudrv_get(&cu, why, sizeof why) != CUDRV_OK) {
		fprintf(stderr, "bench: %s\n", why);
		return 1;
	}
	cg_compile_opts co = {.use_cache = 1};
	cg_binary bin;
	if (cg_compile("extern \"C\" __global__ void mk_empty() {}\n", "empty.cu", &co, CG_CUBIN,
		       &bin) != CG_OK) {
		fprintf(stderr, "bench: %s\n", bin.log);
		cg_binary_free(&bin);
		return 1;
	}
	CUmodule m;
	CUfunction f;
	CK(cu->cuModuleLoadData(&m, bin.data));
	cg_binary_free(&bin);
	CK(cu->cuModuleGetFunction(&f, m, "mk_empty"));
	CUstream s;
	CK(cu->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	double t[N];
	for (int i = 0; i < WARM + N; i++) {
		double t0 = now_us();
		CK(cu->cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
		CK(cu->cuStreamSynchronize(s));
		if (i >= WARM)
			t[i - WARM] = now_us() - t0;
	}
	*launch_sync_us = median(t, N);
	CUevent e0, e1;
	CK(cu->cuEventCreate(&e0, 0));
	CK(cu->cuEventCreate(&e1, 0));
	for (int rep = 0; rep < 5; rep++) {
		CK(cu->cuEventRecord(e0, s));
		for (int i = 0; i < 1000; i++)
			CK(cu->cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
		CK(cu->cuEventRecord(e1, s));
		CK(cu->cuEventSynchronize(e1));
		float ms;
		CK(cu->cuEventElapsedTime(&ms, e0, e1));
		t[rep] = ms * 1e3 / 1000;
	}
	*back_to_back_us = median(t, 5);
	/* where a one-shot run's fixed cost goes: the same empty kernel timed
	 * as mk_run_timed times the megakernel (event, launch, event, sync),
	 * growing towards the megakernel's launch one property at a time */
	CK(cu->cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 200 * 1024));
	int sms = 0;
	CUdevice dev;
	CK(cu->cuDeviceGet(&dev, 0));  /* the one mk_ctx_create took (MK_DEVICE aside) */
	CK(cu->cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
	static const struct { const char *what; int grid, threads, smem, coop; } shape[] = {
		{"1 CTA of 32 threads", 1, 32, 0, 0},
		{"a CTA per SM, 384 threads", -1, 384, 0, 0},
		{"same, 200 KB of shared memory", -1, 384, 200 * 1024, 0},
		{"same, cooperative (the megakernel's launch)", -1, 384, 200 * 1024, 1},
	};
	for (int k = 0; k < 4; k++) {
		CUlaunchAttribute attr;
		memset(&attr, 0, sizeof attr);
		attr.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
		attr.value.cooperative = 1;
		CUlaunchConfig cfg;
		memset(&cfg, 0, sizeof cfg);
		cfg.gridDimX = (unsigned)(shape[k].grid < 0 ? sms : shape[k].grid);
		cfg.gridDimY = cfg.gridDimZ = cfg.blockDimY = cfg.blockDimZ = 1;
		cfg.blockDimX = (unsigned)shape[k].threads;
		cfg.sharedMemBytes = (unsigned)shape[k].smem;
		cfg.hStream = s;
		cfg.attrs = &attr;
		cfg.numAttrs = (unsigned)shape[k].coop;
		for (int i = 0; i < WARM + N; i++) {
			CK(cu->cuEventRecord(e0, s));
			CK(cu->cuLaunchKernelEx(&cfg, f, NULL, NULL));
			CK(cu->cuEventRecord(e1, s));
			CK(cu->cuStreamSynchronize(s));
			float ms;
			CK(cu->cuEventElapsedTime(&ms, e0, e1));
			if (i >= WARM)
				t[i - WARM] = ms * 1e3;
		}
		launch_what[k] = shape[k].what;
		launch_us[k] = median(t, N);
	}
	cu->cuEventDestroy(e0);
	cu->cuEventDestroy(e1);
	cu->cuStreamDestroy(s);
	cu->cuModuleUnload(m);
	return 0;
}

static int load(mk_ctx *ctx, const char *path, const char *text, mk_pipeline **pl)
{
	mk_load_opts lo = MK_LOAD_OPTS_INIT;
	mk_status st = text ? mk_pipeline_load_string(ctx, "trivial.mk", text, &lo, pl)
			    : mk_pipeline_load_file(ctx, path, &lo, pl);
	if (st != MK_OK) {
		fprintf(stderr, "bench: %s: %s\n%s", mk_strerror(st), mk_ctx_error(ctx), mk_ctx_log(ctx));
		return 1;
	}
	/* inputs: small random values */
	for (int i = 0; i < mk_pipeline_ntensors(*pl); i++) {
		mk_tensor_info ti;
		mk_tensor_info_get(*pl, i, &ti);
		if (ti.kind != MK_TENSOR_IN)
			continue;
		size_t n = ti.bytes / (size_t)ti.elem_size;
		float *v = malloc(n * sizeof *v + 1);
		if (!v)
			return 1;
		for (size_t k = 0; k < n; k++)
			v[k] = (float)((k * 2654435761u) % 1000) / 1000.f - 0.5f;
		for (int r = 0; r < mk_pipeline_ranks(*pl); r++)
			mk_tensor_write_f32(*pl, ti.name, r, v, n);
		free(v);
	}
	return 0;
}

typedef enum { ONESHOT, RESIDENT, LAUNCHES, GRAPH } mode;

static int time_mode(mk_pipeline *pl, mode m, double *gpu_us, double *host_us)
{
	double g[N], h[N];
	mk_status st = MK_OK;
	if (m == RESIDENT && (st = mk_resident_start(pl)) != MK_OK)
		goto bad;
	for (int i = 0; i < WARM + N; i++) {
		float ms = 0;
		double t0 = now_us();
		switch (m) {
		case ONESHOT: st = mk_run_timed(pl, &ms); break;
		case RESIDENT: st = mk_resident_run(pl, &ms); break;
		case LAUNCHES: st = mk_run_stages(pl, 0, &ms); break;
		case GRAPH: st = mk_run_stages(pl, 1, &ms); break;
		}
		double t1 = now_us();
		if (st != MK_OK)
			goto bad;
		if (i >= WARM) {
			g[i - WARM] = ms * 1e3;
			h[i - WARM] = t1 - t0;
		}
	}
	if (m == RESIDENT && (st = mk_resident_stop(pl)) != MK_OK)
		goto bad;
	*gpu_us = median(g, N);
	*host_us = median(h, N);
	return 0;
bad:
	fprintf(stderr, "bench: %s\n%s", mk_strerror(st), mk_stall_report(pl));
	return 1;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);  /* tables survive a timeout */
	const char *chain = argc > 1 ? argv[1] : "samples/mlp_chain.mk";
	mk_ctx *ctx = NULL;
	if (mk_ctx_create(NULL, &ctx) != MK_OK) {
		printf("bench_runtime: skipped: %s\n", mk_ctx_error(ctx));
		mk_ctx_destroy(ctx);
		return 0;
	}
	double ls, bb;
	if (empty_kernel(&ls, &bb))
		return 1;
	mk_bench_per_stage = 1;
	mk_pipeline *triv = NULL, *ch = NULL;
	if (load(ctx, NULL,
		 "pipeline trivial {\n  in X : f32[8, 8]\n  out Y : f32[8, 8]\n  Y = relu(X)\n}\n", &triv) ||
	    load(ctx, chain, NULL, &ch))
		return 1;
	double tg[4], th[4], cg[4], chh[4];
	for (int m = 0; m < 4; m++)
		if (time_mode(triv, (mode)m, &tg[m], &th[m]) || time_mode(ch, (mode)m, &cg[m], &chh[m]))
			return 1;
	const ir_sched *s = mk_pipeline_sched(ch);
	printf("\n%s on %s\n", "bench_runtime", mk_ctx_device(ctx));
	printf("| what | GPU time (events) | host round trip |\n|---|---|---|\n");
	printf("| empty kernel: launch + sync | - | %.1f us |\n", ls);
	printf("| empty kernel: back-to-back launches | %.2f us each | - |\n", bb);
	for (int k = 0; k < 4; k++)
		printf("| empty kernel one-shot, %s | %.1f us | - |\n", launch_what[k], launch_us[k]);
	printf("| trivial pipeline, one-shot | %.1f us | %.1f us |\n", tg[ONESHOT], th[ONESHOT]);
	printf("| trivial pipeline, resident | - | %.1f us |\n", th[RESIDENT]);
	printf("| %s (%d stages, %d tasks), megakernel one-shot | %.1f us | %.1f us |\n", chain,
	       mk_pipeline_prog(ch)->nops, s->ntasks, cg[ONESHOT], chh[ONESHOT]);
	printf("| same, megakernel resident | - | %.1f us |\n", chh[RESIDENT]);
	printf("| same, one launch per stage | %.1f us | %.1f us |\n", cg[LAUNCHES], chh[LAUNCHES]);
	printf("| same, one CUDA graph of the stage kernels | %.1f us | %.1f us |\n", cg[GRAPH], chh[GRAPH]);
	printf("\nchain: megakernel vs separate launches %.2fx, vs CUDA graph %.2fx (GPU time; goal 2x and 1.2x)\n",
	       cg[LAUNCHES] / cg[ONESHOT], cg[GRAPH] / cg[ONESHOT]);
	mk_pipeline_destroy(triv);
	mk_pipeline_destroy(ch);
	mk_ctx_destroy(ctx);
	return 0;
}
