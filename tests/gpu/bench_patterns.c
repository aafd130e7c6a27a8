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
 *
 * This file: the options, the timing, the check, one row and the table,
 * the sweep, one rank, --check-libs.  The job and its launcher are
 * bench_job.h, the cases bench_case.h, the layered baseline layered.h
 * (cuBLAS and NCCL loaded by cublas.h and nccl.h).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/nvrtc.h"
#include "runtime/cudrv.h"
#include "runtime/mk.h"
#include "runtime/mk_int.h"
#include "tests/gpu/bench_case.h"
#include "tests/gpu/bench_job.h"
#include "tests/gpu/cublas.h"
#include "tests/gpu/layered.h"
#include "tests/gpu/nccl.h"

static mk_ctx *the_ctx;

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
	qsort(t, (size_t)n, sizeof *t, mkt_cmp_float);
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

	srcset file;
	src_init(&file);
	int err, id = src_load(&file, sample_path(p, path, sizeof path), &err);
	if (id < 0)
		die("cannot read %s: %s", path, strerror(err));
	const char *text = file.files[id].text;
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
	src_free(&file);
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
			mkt_nccl_fn.CommDestroy(nccl.comm);
		mkt_cublas_close(&blas);
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
	if (mkt_cublas_load(&blas) == 0)
		printf("cuBLAS %d.%d.%d: %s\n", blas.version / 10000, blas.version / 100 % 100,
		       blas.version % 100, blas.path);
	else
		printf("cuBLAS: %s\n", blas.why), rc = 1;
	if (mkt_nccl_load(&nccl) == 0)
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
