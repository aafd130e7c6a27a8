/* compile.h - the whole compiler on one page: parse, check, lower, schedule,
 * verify.  compile.c calls the passes in order and can stop after any one;
 * mkc's --emit= and the runtime's loader both go through compile_run.
 */
#ifndef MK_COMPILE_H
#define MK_COMPILE_H

#include <stdint.h>

#include "../grammar/diag.h"
#include "ir.h"

struct ast_pipeline;

/* -D NAME=VALUE: a parameter, or the mesh built-ins `nodes` and `gpus`. */
typedef struct mk_define {
	const char *name;
	int64_t value;
} mk_define;

/* X(id, name): the passes, in order; --emit=NAME stops after the pass. */
#define COMPILE_PASSES(X)          \
	X(PARSE, "ast")            \
	X(CHECK, "check")          \
	X(LOWER, "graph")          \
	X(SCHEDULE, "schedule")    \
	X(VERIFY, "verify")

typedef enum compile_pass {
#define X(id, name) PASS_##id,
	COMPILE_PASSES(X)
#undef X
	PASS_COUNT
} compile_pass;

typedef struct compile_opts {
	const mk_define *defs;
	int ndefs;
	int ranks_per_gpu;      /* virtual ranks sharing one GPU (>= 1) */
	const ir_device *dev;   /* NULL: the H200 defaults of costmodel.c */
	double *pass_ms;        /* if set: [5] wall ms of parse, check, lower,
	                           schedule, verify */
} compile_opts;

typedef struct compile_out {
	struct ast_pipeline *ast;
	ir_prog *prog;
	ir_sched *sched;
} compile_out;

/* ---- the passes: one file, one entry point each -------------------------
 * grammar/ast.h:  parse_source()                 text -> AST
 * sema.c:         sema_check()                   AST -> ir_prog
 * lower.c:        lower_run()                    ir_prog -> tile graph
 *                 (ir_sched with tasks, regions and costs, no CTAs yet;
 *                 it also fills the tensors' rot[] and peer_access)
 * sched.c:        sched_run()                    roles, CTAs, order, flags
 * verify.c:       verify_run()                   static proofs */
ir_prog *sema_check(const struct ast_pipeline *ast, const compile_opts *o,
		    diags *d, arena *a);
ir_sched *lower_run(ir_prog *p, const compile_opts *o, diags *d,
		    arena *a);
int sched_run(ir_sched *s, const compile_opts *o, diags *d, arena *a);
int verify_run(const ir_sched *s, diags *d, arena *a);

/* Runs the passes up to and including `upto`.  Diagnostics go to d; every
 * result is allocated in a.  Returns 0 on success, 1 when the input has
 * errors, 3 on an internal error (a verifier failure or out of memory),
 * matching mkc's exit codes. */
int compile_run(srcset *src, int file, const compile_opts *o,
		compile_pass upto, diags *d, arena *a, compile_out *out);

#endif
