/* pass.h - what the passes of the compiler share: the options of one
 * compile and the entry point of each pass, one file each.  The driver
 * (compile.h, compile.c) runs them in order; a pass includes this header,
 * never the driver's.
 *
 *   grammar/ast.h  parse_source()   text -> AST
 *   sema.c         sema_check()     AST -> ir_prog (checked)
 *   expand.c       expand_run()     ir_prog rewritten: collectives into
 *                                   their parts, identity collectives
 *                                   folded, epilogues fused, hidden
 *                                   tensors, shard rotations
 *   plan.c         plan_run()       a kernel plan on every op
 *   lower.c        lower_run()      ir_prog (read-only) -> tile graph
 *                                   (ir_sched: tasks, regions, costs)
 *   sched.c        sched_run()      roles, CTAs, order, flags
 *   verify.c       verify_run()     static proofs
 *
 * Each returns NULL / non-zero on failure, with the reasons in the
 * diagnostics, and allocates in the compile's arena.
 */
#ifndef MK_PASS_H
#define MK_PASS_H

#include <stdint.h>

#include "../grammar/diag.h"
#include "ir.h"

struct ast_pipeline;

/* -D NAME=VALUE: a parameter, or the mesh built-ins `nodes` and `gpus`. */
typedef struct mk_define {
	const char *name;
	int64_t value;
} mk_define;

/* The list schedule's two orders (compiler/sched.c list_order) */
enum { ORDER_READY = 1, ORDER_WAVE = 2 };

typedef struct compile_opts {
	const mk_define *defs;
	int ndefs;
	int ranks_per_gpu;      /* virtual ranks sharing one GPU (>= 1) */
	int world;              /* the job's rank count (0: none, as in mkc):
	                           fills the mesh's open sides (gpus first)
	                           and must agree with its fixed ones */
	const ir_device *dev;   /* NULL: the H200 defaults of costmodel.c */
	int cpu;                /* for the CPU reference executor only: the
	                           plan's GPU limits do not apply */
	int no_wgmma;           /* plan every matmul on the portable mma.sync
	                           tile (the driver also reads MK_NO_WGMMA=1),
	                           and every attention on the mma.sync tile */
	int attn_mma;           /* attention on the mma.sync tile (the driver
	                           reads MK_ATTN_ENGINE=mma) */
	int no_views;           /* every layout op a copy, none a view (the
	                           driver reads MK_NO_VIEWS=1) */
	int no_epi2;            /* no add or mul fused into a matmul's
	                           epilogue (the driver reads MK_NO_EPI2=1) */
	int no_carry;           /* no matmul's ring carried into the next task
	                           (the driver reads MK_NO_CARRY=1) */
	int no_pool;            /* every task where the list schedule puts it:
	                           no bucket matmul's tiles taken at run time
	                           (the driver reads MK_NO_POOL=1) */
	int pool_rows;          /* a pool's order row panel by row panel, not
	                           column by column (MK_POOL_ORDER=rows) */
	int pool_skip;          /* a pool's tasks past the tokens signalled, not
	                           run (ir_plan.signal_past; MK_POOL_SKIP=1) */
	int cluster;            /* 2: a pool's tiles in pairs on 2-CTA clusters
	                           (ir_mm_plan.cluster), 1: each CTA alone,
	                           0: the plan's (MK_CLUSTER=1|2) */
	int dispatch_all;       /* a dispatch on every CTA, also beside a pool
	                           (MK_DISPATCH_CTAS=all) */
	int zero_past;          /* rows past a bucket's tokens zeroed even where
	                           nothing reads them (MK_ZERO_PAST=1) */
	int no_late;            /* every matmul's flags waited for before its
	                           task starts (the driver reads MK_NO_LATE=1) */
	int all_late;           /* every tile that can waits per operand, not
	                           only those whose operand another rank
	                           delivers (MK_LATE=1) */
	int wg_stages;          /* the Hopper engine's ring depth where it fits
	                           (2..12; 0: the plan's, 12 for tiles of a
	                           few rows, else 8; MK_WG_STAGES=N) */
	int no_trade;           /* the Hopper engine's wide tiles trade no
	                           registers (MK_WG_TRADE=0) */
	int wg_staged;          /* the Hopper engine's 128-row tiles store
	                           through shared memory (the default;
	                           MK_WG_STAGED=0: from the registers) */
	int wg_tma;             /* the staged epilogue goes out by TMA stores
	                           where the plan can (ir_mm_plan.tma_store;
	                           the default, MK_WG_TMA=0: not) */
	int prefetch;           /* each run starts by keeping the rows of the
	                           tables its CTA's tasks read in L2
	                           (MKD_PREFETCH, MK_PREFETCH=1; an opt-in:
	                           1-2% on decode attention, an H100) */
	int wg_bn128;           /* the Hopper engine's tiles 128 columns wide
	                           where the plan would take 256 (MK_WG_BN=128) */
	int attn_keys;          /* the Hopper attention tile's keys a stage
	                           (64 or 128; 0: the plan's; MK_ATTN_KEYS=N) */
	int attn_overlap;       /* its S of one chunk beside P V of the last:
	                           0 the plan's, 1 off, 2 on (MK_ATTN_OVERLAP) */
	int attn_rotate;        /* its CTAs read a block's chunks each from its
	                           own place on, not causal: 0 the plan's (on),
	                           1 off, 2 on (MK_ATTN_ROTATE=0|1) */
	int a_halves;           /* a bucket's 128-row tiles load A by 64-row
	                           halves, the second only where tokens reach
	                           it (ir_mm_plan.a_box): 0 the plan's (on), 1
	                           off, 2 on (MK_A_HALVES=0|1) */
	int attn_bulk;          /* 16-row attention tiles' K and V by the copy
	                           engine on sm_90: 0 the plan's (on: maps
	                           where they fit), 1 off (cp.async), 2 on,
	                           3 a bulk copy a row (MK_ATTN_BULK=0|1|rows) */
	int no_affinity;        /* the list schedule puts a task where the cost
	                           model starts it first, never by its
	                           producers' CTAs (MK_SCHED_AFFINITY=0) */
	int sched_order;        /* the list schedule's order: 0 the cost
	                           model's choice, else ORDER_READY or
	                           ORDER_WAVE (MK_SCHED_ORDER=ready|wave) */
	int gateup;             /* fuse a gate and up projection of a few rows
	                           into one matmul (expand.c; the driver reads
	                           MK_GATEUP=1) */
	int normfold;           /* an rmsnorm of a few rows read only by
	                           matmuls computed in their tiles (expand.c
	                           fuse_norms): 0 the default (off), 1 off, 2 on
	                           (MK_NORMFOLD=0|1) */
	int64_t max_mem;        /* bytes the compile's arena may hold (0: the
	                           driver's COMPILE_MAX_MEM); past it the compile
	                           ends with "program too large" */
} compile_opts;

ir_prog *sema_check(const struct ast_pipeline *ast, const compile_opts *o,
		    diags *d, arena *a);
int expand_run(ir_prog *p, const compile_opts *o, diags *d, arena *a);
int plan_run(ir_prog *p, const compile_opts *o, diags *d, arena *a);
ir_sched *lower_run(const ir_prog *p, const compile_opts *o, diags *d,
		    arena *a);
int sched_run(ir_sched *s, const compile_opts *o, diags *d, arena *a);
int verify_run(const ir_sched *s, diags *d, arena *a);

/* The box of its root that a read g of a view lies in (g itself when its
 * tensor is not a view): where the scheduler and the verifier look for
 * its writers (lower_layout.c, from the layout ops' maps). */
ir_region lower_view_root(const ir_prog *p, ir_region g);

#endif
