/* compile.c - the front half of the path, on one page.
 *
 *   text --parse--> AST --check--> ir_prog --expand--> ir_prog --plan-->
 *   planned ir_prog --lower--> tile graph --schedule--> schedule --verify-->
 *   verified schedule
 *
 * (The back half, schedule -> CUDA -> NVRTC -> cubin, is cg_build in
 * codegen/build.c; the runtime loads and runs what it makes.)  Each pass
 * reports through the diagnostics; compile_run stops at the first pass
 * that fails or at `upto`.  A verifier failure or an exhausted arena is
 * the compiler's failure, not the user's: exit code 3.  A program that
 * needs more than the compile's bound on memory (compile_opts.max_mem) is
 * the user's: a "program too large" error, at the op being lowered when
 * the lowering hits it (lower.c), else at the pipeline.
 */
#include "compile.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../grammar/ast.h"

static const char *const pass_names[] = {
	"parse", "check", "expand", "plan", "lower", "schedule", "verify",
};
_Static_assert(sizeof pass_names / sizeof *pass_names == PASS_COUNT, "a name per pass");

const char *compile_pass_name(compile_pass k)
{
	return k >= 0 && k < PASS_COUNT ? pass_names[k] : "?";
}

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* The arena reached its bound in pass k: an error of the user's, unless
 * the pass reported it already. */
static int too_large(const compile_out *out, int file, compile_pass k, diags *d, arena *a)
{
	const size_t held = a->held, limit = a->limit;
	arena_lift(a);  /* room for the message */
	if (diag_has_errors(d))
		return 1;
	span where = out->prog ? out->prog->where : out->ast ? out->ast->where
			       : (span){.file = file};
	diag_error(d, where,
		   "program too large: %d tasks, %zu MB of compile memory in %s (the bound is "
		   "%zu MB; mkc --max-memory=MB)", out->sched ? out->sched->ntasks : 0,
		   held >> 20, compile_pass_name(k), limit >> 20);
	return 1;
}

/* After pass k: its time; 0 to go on, else compile_run's status. */
static int done(compile_out *out, int file, compile_pass k, double *t0, int failed, diags *d,
		arena *a)
{
	double t = now_ms();
	out->pass_ms[k] = t - *t0;
	*t0 = t;
	if (a->over)
		return too_large(out, file, k, d, a);
	if (a->failed)
		return 3;
	if (k == PASS_VERIFY && failed)
		return 3;
	return failed || diag_has_errors(d) ? 1 : 0;
}

/* An environment switch: set, not empty and not "0" */
static int env_on(const char *name)
{
	const char *v = getenv(name);
	return v && *v && strcmp(v, "0");
}

/* An environment switch of a few values: the index + 1 of the one set in
 * vals (NULL-terminated), 0 when unset or empty; a value mkc does not know
 * is ignored with a warning naming those it does (want) */
static int env_pick(diags *d, const char *name, const char *const *vals, const char *want)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return 0;
	for (int i = 0; vals[i]; i++)
		if (!strcmp(v, vals[i]))
			return i + 1;
	diag_warning(d, SPAN_NONE, "%s=%s ignored: %s", name, v, want);
	return 0;
}

int compile_run(srcset *src, int file, const compile_opts *o,
		compile_pass upto, diags *d, arena *a, compile_out *out)
{
	memset(out, 0, sizeof *out);
	compile_opts opt = {0};
	if (o)
		opt = *o;
	/* A/B switches of the environment (set and not "0") */
	if (env_on("MK_NO_WGMMA"))  /* every matmul on the portable tile (diagnosis) */
		opt.no_wgmma = 1;
	/* MK_ATTN_ENGINE=mma: attention on the mma.sync tile (A/B against
	 * wgmma, the plan's own where it fits) */
	static const char *const engines[] = {"mma", "wgmma", NULL};
	if (env_pick(d, "MK_ATTN_ENGINE", engines, "mma or wgmma") == 1)
		opt.attn_mma = 1;
	if (env_on("MK_NO_VIEWS"))  /* every layout op copies (views against copies) */
		opt.no_views = 1;
	if (env_on("MK_NO_EPI2"))  /* add and mul stay stages of their own */
		opt.no_epi2 = 1;
	if (env_on("MK_NO_CARRY"))  /* every matmul tile fills its ring afresh */
		opt.no_carry = 1;
	if (env_on("MK_NO_POOL"))  /* bucket matmuls' tiles where the list puts them */
		opt.no_pool = 1;
	if (env_on("MK_ZERO_PAST"))  /* buckets' rows past the tokens zeroed (A/B) */
		opt.zero_past = 1;
	if (env_on("MK_NO_LATE"))  /* a matmul's flags all waited for up front */
		opt.no_late = 1;
	if (env_on("MK_LATE"))  /* every tile that can waits per operand */
		opt.all_late = 1;
	/* MK_WG_STAGES=N: the Hopper engine's ring depth, 2..12 (A/B) */
	const char *ws = getenv("MK_WG_STAGES");
	const int nws = ws ? atoi(ws) : 0;
	if (nws >= 2 && nws <= 12)
		opt.wg_stages = nws;
	else if (ws && *ws)
		diag_warning(d, SPAN_NONE, "MK_WG_STAGES=%s ignored: a ring of 2 to 12 stages", ws);
	/* MK_ATTN_KEYS=64|128, MK_ATTN_OVERLAP=0|1: the Hopper attention
	 * tile's shape (A/B) */
	static const char *const keys[] = {"64", "128", NULL}, *const offon[] = {"0", "1", NULL};
	const int ak = env_pick(d, "MK_ATTN_KEYS", keys, "64 or 128");
	if (ak)
		opt.attn_keys = ak == 1 ? 64 : 128;
	/* 1 off, 2 on: as compile_opts.attn_overlap counts */
	const int ao = env_pick(d, "MK_ATTN_OVERLAP", offon, "0 or 1");
	if (ao)
		opt.attn_overlap = ao;
	/* MK_ATTN_ROTATE=0|1: the attention tile's chunks from each CTA's own
	 * place on, or all from the first (1 off, 2 on, as attn_overlap) */
	const int ar = env_pick(d, "MK_ATTN_ROTATE", offon, "0 or 1");
	if (ar)
		opt.attn_rotate = ar;
	/* MK_A_HALVES=0|1: a bucket's tiles load A by 64-row halves, or
	 * whole (1 off, 2 on, as attn_overlap) */
	const int ah = env_pick(d, "MK_A_HALVES", offon, "0 or 1");
	if (ah)
		opt.a_halves = ah;
	/* MK_ATTN_BULK=0|1|rows: the 16-row attention tile's K and V by
	 * cp.async, by the copy engine (sm_90: the plan's, boxes of tensor
	 * maps where they fit) or by a bulk copy a row (1, 2, 3) */
	static const char *const bulks[] = {"0", "1", "rows", NULL};
	const int ab = env_pick(d, "MK_ATTN_BULK", bulks, "0, 1 or rows");
	if (ab)
		opt.attn_bulk = ab;
	/* MK_POOL_ORDER=cols|rows: a pool's tiles column by column (the
	 * plan's) or row by row (sched.c pool_key; A/B) */
	static const char *const porders[] = {"cols", "rows", NULL};
	if (env_pick(d, "MK_POOL_ORDER", porders, "cols or rows") == 2)
		opt.pool_rows = 1;
	if (env_on("MK_POOL_SKIP"))  /* a pool's tasks past the tokens signalled, not run */
		opt.pool_skip = 1;
	/* MK_CLUSTER=1|2: a pool's tiles on CTAs alone, or in pairs on 2-CTA
	 * clusters that share B's loads (plan.c mm_cluster; A/B) */
	static const char *const clusters[] = {"1", "2", NULL};
	opt.cluster = env_pick(d, "MK_CLUSTER", clusters, "1 or 2");
	/* MK_DISPATCH_CTAS=all: a dispatch beside a pool on every CTA, not on
	 * the plan's few (plan.c dispatch_ctas; A/B) */
	static const char *const dctas[] = {"all", NULL};
	if (env_pick(d, "MK_DISPATCH_CTAS", dctas, "all"))
		opt.dispatch_all = 1;
	/* MK_SCHED_AFFINITY=0: the list schedule's CTA where the cost model
	 * starts a task first, not one whose last task is its producer
	 * (sched.c affine_cta; A/B) */
	static const char *const zero[] = {"0", NULL};
	if (env_pick(d, "MK_SCHED_AFFINITY", zero, "0"))
		opt.no_affinity = 1;
	/* MK_SCHED_ORDER=ready|wave: the list schedule's order (sched.c) */
	static const char *const orders[] = {"ready", "wave", NULL};
	const int so = env_pick(d, "MK_SCHED_ORDER", orders, "ready or wave");
	if (so)
		opt.sched_order = so == 1 ? ORDER_READY : ORDER_WAVE;
	/* MK_WG_BN=128: 128-column engine tiles where the plan takes 256 (A/B) */
	static const char *const bns[] = {"128", NULL};
	if (env_pick(d, "MK_WG_BN", bns, "128"))
		opt.wg_bn128 = 1;
	/* MK_WG_TRADE=0: no setmaxnreg in the engine's wide tiles (A/B) */
	if (env_pick(d, "MK_WG_TRADE", offon, "0 or 1") == 1)
		opt.no_trade = 1;
	/* the engine's 128-row tiles store their epilogue through shared
	 * memory, 16-byte stores along C's rows (mkd_wgmma_tile::staged);
	 * MK_WG_STAGED=0: from the registers, pair by pair (A/B) */
	opt.wg_staged = env_pick(d, "MK_WG_STAGED", offon, "0 or 1") != 1;
	/* the staged epilogue's chunks go out as TMA stores where nothing in
	 * the kernel reads the result, and the consumers go on into the next
	 * tile while they run (plan.c mm_tma_store); MK_WG_TMA=0: the staged
	 * stores (A/B) */
	opt.wg_tma = env_pick(d, "MK_WG_TMA", offon, "0 or 1") != 1;
	/* MK_PREFETCH=1: a run starts with its CTA's rows of the tables kept
	 * in L2 (mkd/kernel.cuh, mkd_prefetch_tables; an opt-in: 1-2% on
	 * decode attention on an H100, docs/perf-notes.md) */
	if (env_on("MK_PREFETCH"))
		opt.prefetch = 1;
	if (env_on("MK_GATEUP"))  /* gate and up projections as one matmul */
		opt.gateup = 1;
	/* an rmsnorm of a few rows read only by matmuls, computed in their
	 * tiles (expand.c fuse_norms); MK_NORMFOLD=1 on, 0 off; off by
	 * default: on an H100 9-39% slower (docs/gemm.md) */
	opt.normfold = env_pick(d, "MK_NORMFOLD", offon, "0 or 1");
	if (!a->limit)
		a->limit = (size_t)(opt.max_mem > 0 ? opt.max_mem : COMPILE_MAX_MEM);

	double t0 = now_ms();
	int rc;
	out->ast = parse_source(src, file, d, a);
	if ((rc = done(out, file, PASS_PARSE, &t0, !out->ast, d, a)) || upto == PASS_PARSE)
		return rc;
	out->prog = sema_check(out->ast, &opt, d, a);
	if ((rc = done(out, file, PASS_CHECK, &t0, !out->prog, d, a)) || upto == PASS_CHECK)
		return rc;
	rc = expand_run(out->prog, &opt, d, a);
	if ((rc = done(out, file, PASS_EXPAND, &t0, rc, d, a)) || upto == PASS_EXPAND)
		return rc;
	rc = plan_run(out->prog, &opt, d, a);
	if ((rc = done(out, file, PASS_PLAN, &t0, rc, d, a)) || upto == PASS_PLAN)
		return rc;
	out->sched = lower_run(out->prog, &opt, d, a);
	if ((rc = done(out, file, PASS_LOWER, &t0, !out->sched, d, a)) || upto == PASS_LOWER)
		return rc;
	rc = sched_run(out->sched, &opt, d, a);
	if ((rc = done(out, file, PASS_SCHEDULE, &t0, rc, d, a)) || upto == PASS_SCHEDULE)
		return rc;
	rc = verify_run(out->sched, d, a);
	return done(out, file, PASS_VERIFY, &t0, rc, d, a);
}
