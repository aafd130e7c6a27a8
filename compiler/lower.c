/* lower.c - the lowering pass: the expanded, planned program becomes the
 * tile graph, rank 0's tasks (tiles.h says how a task reads and writes).
 *
 * Every op is cut into tasks (a matmul tile, an elementwise box, a chunk to
 * copy from a peer, an RDMA write, a reduction of a box, an attention query
 * tile, MoE routing, dispatch and combine blocks), each with the exact
 * regions it reads and the one it writes, in program order; op by op the
 * work is each kind's lowering (lower_compute.c, lower_xchg.c,
 * lower_moe.c).  The program is read-only here: what the lowering needs
 * from it was decided before, by the expansion (hidden tensors, rotations)
 * and the plan (tiles, engines, blocks, views: a layout op whose result is
 * a view makes no task).  The only errors left to it are a
 * tile graph too large to build (more cuts of a dimension than IR_MAXCUTS,
 * or more memory than the compile's bound) and what is not lowered yet,
 * each at its op.
 */
#include "tiles.h"

#include "costmodel.h"

typedef void (*lower_fn)(lower *L, int oi);

/* The lowering of each op kind (NULL: not lowered yet). */
static const lower_fn lower_op[OP_COUNT] = {
	[OP_MATMUL] = lower_matmul,
	[OP_ADD] = lower_elementwise,
	[OP_MUL] = lower_elementwise,
	[OP_SCALE] = lower_elementwise,
	[OP_CAST] = lower_elementwise,
	[OP_RELU] = lower_elementwise,
	[OP_SILU] = lower_elementwise,
	[OP_GELU] = lower_elementwise,
	[OP_RMSNORM] = lower_elementwise,
	[OP_GELU_TANH] = lower_elementwise,
	[OP_LAYERNORM] = lower_elementwise,
	[OP_ROPE] = lower_elementwise,
	[OP_HEADS] = lower_layout,
	[OP_MERGE_HEADS] = lower_layout,
	[OP_SLICE] = lower_view,
	[OP_CONCAT] = lower_view,
	[OP_TRANSPOSE] = lower_view,
	[OP_RESHAPE] = lower_view,
	[OP_SOFTMAX] = lower_elementwise,
	[OP_SUM] = lower_sum,
	[OP_ATTENTION] = lower_attention,
	[OP_ALLGATHER] = lower_gather,
	[OP_PUT] = lower_gather,
	[OP_REDUCE_SCATTER] = lower_reduce,
	[OP_ALLREDUCE] = lower_reduce,  /* world 1: a local copy; otherwise expanded */
	[OP_RING_SHIFT] = lower_ring_shift,
	[OP_DISPATCH] = lower_dispatch,
	[OP_COMBINE] = lower_combine,
};

ir_sched *lower_run(const ir_prog *p, const compile_opts *o, diags *d, arena *a)
{
	lower L = {.p = p, .o = o, .d = d, .a = a};
	L.s = arena_alloc(a, sizeof *L.s);
	L.cut_lo = arena_alloc(a, IR_MAXCUTS * sizeof(int64_t));
	L.cut_hi = arena_alloc(a, IR_MAXCUTS * sizeof(int64_t));
	if (!L.s || !L.cut_lo || !L.cut_hi)
		return NULL;
	L.s->prog = p;
	L.s->dev = o && o->dev ? *o->dev : costmodel_h200();
	L.s->ranks_per_gpu = o && o->ranks_per_gpu > 0 ? o->ranks_per_gpu : 1;
	int i;
	for (i = 0; i < p->nops; i++) {
		const ir_op *op = &p->ops[i];
		if (op->plan.view)
			continue;  /* its result is a view: no task (plan_view.c) */
		if (lower_op[op->kind]) {
			lower_op[op->kind](&L, i);
			lower_index_writers(&L);
		} else {
			diag_error(d, op->where, "'%s' cannot be lowered to tiles yet",
				   ir_op_name(op->kind));
			L.err = 1;
		}
		if (L.err)
			break;
	}
	if (L.err && a->over) {  /* the compile's bound on memory, at op i */
		const size_t held = a->held, limit = a->limit;
		arena_lift(a);
		diag_error(d, p->ops[i].where,
			   "program too large: %d tasks, %zu MB of compile memory when lowering "
			   "'%s' (the bound is %zu MB; mkc --max-memory=MB)", L.s->ntasks,
			   held >> 20, p->ops[i].stage, limit >> 20);
		return NULL;
	}
	if (L.err) {  /* errors are reported at their op; out of memory here */
		if (!diag_has_errors(d))
			diag_error(d, i < p->nops ? p->ops[i].where : p->where,
				   "lowering '%s' failed: out of memory",
				   i < p->nops ? p->ops[i].stage : p->name);
		return NULL;
	}
	return L.s;
}
