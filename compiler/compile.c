/* compile.c - the passes, in order, on one page.
 *
 *   text --parse_source--> AST --sema_check--> ir_prog --lower_run--> tile
 *   graph --sched_run--> schedule --verify_run--> verified schedule
 *
 * Each pass reports through the diagnostics and returns NULL / non-zero on
 * failure; compile_run stops at the first pass that fails or at `upto`.  A
 * verifier failure is the compiler's bug, not the user's: exit code 3.
 */
#include "compile.h"

#include <string.h>
#include <time.h>

#include "../grammar/ast.h"

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* the time since *t0 into pass slot k (when asked for); *t0 = now */
static void lap(const compile_opts *o, int k, double *t0)
{
	double t = now_ms();
	if (o->pass_ms)
		o->pass_ms[k] = t - *t0;
	*t0 = t;
}

int compile_run(srcset *src, int file, const compile_opts *o,
		compile_pass upto, diags *d, arena *a, compile_out *out)
{
	memset(out, 0, sizeof *out);
	compile_opts dflt = {0};
	if (!o)
		o = &dflt;

	double t0 = now_ms();
	if (o->pass_ms)
		memset(o->pass_ms, 0, 5 * sizeof *o->pass_ms);
	out->ast = parse_source(src, file, d, a);
	lap(o, 0, &t0);
	if (a->failed)
		return 3;
	if (!out->ast || diag_has_errors(d))
		return 1;
	if (upto == PASS_PARSE)
		return 0;

	out->prog = sema_check(out->ast, o, d, a);
	lap(o, 1, &t0);
	if (a->failed)
		return 3;
	if (!out->prog || diag_has_errors(d))
		return 1;
	if (upto == PASS_CHECK)
		return 0;

	out->sched = lower_run(out->prog, o, d, a);
	lap(o, 2, &t0);
	if (a->failed)
		return 3;
	if (!out->sched || diag_has_errors(d))
		return 1;
	if (upto == PASS_LOWER)
		return 0;

	int sr = sched_run(out->sched, o, d, a);
	lap(o, 3, &t0);
	if (sr != 0 || diag_has_errors(d))
		return a->failed ? 3 : 1;
	if (upto == PASS_SCHEDULE)
		return 0;

	int vr = verify_run(out->sched, d, a);
	lap(o, 4, &t0);
	if (vr != 0)
		return 3;
	return 0;
}
