/* compile.h - the driver: the whole compiler on one page.  compile.c runs
 * the passes (pass.h) in order and can stop after any one; mkc's --emit=
 * and the runtime's loader both go through compile_run.  Included by the
 * drivers (cmd/, runtime/) and tests, never by a pass.
 */
#ifndef MK_COMPILE_H
#define MK_COMPILE_H

#include "pass.h"

/* X(id, name): the passes, in order; --emit=NAME stops after the pass. */
#define COMPILE_PASSES(X)          \
	X(PARSE, "ast")            \
	X(CHECK, "check")          \
	X(EXPAND, "expand")        \
	X(PLAN, "plan")            \
	X(LOWER, "graph")          \
	X(SCHEDULE, "schedule")    \
	X(VERIFY, "verify")

typedef enum compile_pass {
#define X(id, name) PASS_##id,
	COMPILE_PASSES(X)
#undef X
	PASS_COUNT
} compile_pass;

/* The pass's name in --time-passes: "parse", "check", "expand", ... */
const char *compile_pass_name(compile_pass k);

typedef struct compile_out {
	struct ast_pipeline *ast;
	ir_prog *prog;          /* checked; from PASS_EXPAND on, expanded and
	                           then planned in place */
	ir_sched *sched;
	double pass_ms[PASS_COUNT];  /* wall time of each pass run */
} compile_out;

/* The compile's memory when compile_opts.max_mem is 0: 4 GiB of arena. */
#define COMPILE_MAX_MEM ((int64_t)4 << 30)

/* Runs the passes up to and including `upto`.  Diagnostics go to d; every
 * result is allocated in a, bounded by o->max_mem unless a has a limit of
 * its own.  Returns 0 on success, 1 when the input has errors (a program
 * too large for the bound among them: "program too large: N tasks, M MB"),
 * 3 on an internal error (a verifier failure or out of memory), matching
 * mkc's exit codes. */
int compile_run(srcset *src, int file, const compile_opts *o,
		compile_pass upto, diags *d, arena *a, compile_out *out);

#endif
