/* expand.c - the rewrite pass: the checked program becomes the program the
 * rest of the compiler builds tiles for.  The only pass after the checks
 * that edits the program; everything after it (plan, lowering, schedule,
 * emission, runtime) reads it.
 *
 * In order:
 *   1. identity collectives folded (a world of one rank);
 *   2. elementwise epilogues fused into the matmul that feeds them;
 *   3. collectives written in terms of others: allreduce = allgather of a
 *      reduce_scatter; attention over keys split along the sequence gathers
 *      K and V (ring attention);
 *   4. hidden tensors the lowering and the device library use (MoE routing
 *      tables and packed rows, node-partials of a reduction between nodes),
 *      and the links of each MoE op to them;
 *   5. shard rotations of every tensor dimension (rotate.c, ir_rotate).
 */
#include <string.h>

#include "pass.h"

typedef struct expand {
	ir_prog *p;
	diags *d;
	arena *a;
	int err;
} expand;

static int add_tensor(expand *X, const ir_tensor *proto, const char *base, const char *suffix)
{
	int t = ir_add_tensor(X->p, X->a, proto, base, suffix);
	if (t < 0)
		X->err = 1;
	return t;
}

/* ---- 1. identity collectives ---------------------------------------------
 * In a world of one rank a collective is the identity: allgather,
 * reduce_scatter, allreduce and ring_shift copy their operand unchanged.
 * Copying would cost a pass over memory that the layered way does not pay,
 * so the copy goes when it can:
 *   - the result is not a pipeline output: its readers read the operand;
 *   - it is one, and the operand is a temporary written by one op and read
 *     only here: that op writes the output directly.
 * Otherwise (an input gathered into an output) the copy stays. */
static int is_identity_collective(const ir_prog *p, const ir_op *op)
{
	if (p->world != 1 || op->nin < 1)
		return 0;
	switch (op->kind) {
	case OP_ALLGATHER: case OP_REDUCE_SCATTER: case OP_ALLREDUCE: case OP_RING_SHIFT:
		break;
	default:
		return 0;
	}
	const ir_tensor *a = &p->tensors[op->in[0]], *b = &p->tensors[op->out];
	if (a->dtype != b->dtype || a->ndim != b->ndim || b->nwriters != 1)
		return 0;
	for (int d = 0; d < a->ndim; d++)
		if (a->local[d] != b->local[d])
			return 0;
	return 1;
}

static void fold_identity_collectives(expand *X)
{
	ir_prog *p = X->p;
	for (int i = 0; i < p->nops; i++) {
		const ir_op *op = &p->ops[i];
		if (!is_identity_collective(p, op))
			continue;
		int ai = op->in[0], bi = op->out;
		ir_tensor *a = &p->tensors[ai], *b = &p->tensors[bi];
		if (b->kind != TK_OUT) {
			for (int j = i + 1; j < p->nops; j++)
				for (int k = 0; k < p->ops[j].nin; k++)
					if (p->ops[j].in[k] == bi) {
						p->ops[j].in[k] = ai;
						a->nuses++;
					}
			a->nuses--;  /* the removed collective's read */
			ir_fold_tensor(b);
		} else if (a->kind == TK_TEMP && a->nwriters == 1 && a->nuses == 1 &&
			   a->producer >= 0 && a->producer < i) {
			ir_op *w = &p->ops[a->producer];
			w->out = bi;
			b->producer = a->producer;
			ir_fold_tensor(a);
		} else {
			continue;
		}
		ir_remove_op(p, i);
		i--;
	}
}

/* ---- 2. epilogues ----------------------------------------------------------
 * relu, silu, gelu or scale of a matmul's result that nothing else reads
 * runs in the matmul's epilogue, on the fp32 accumulator: one pass over
 * memory fewer, and the tile's output is stored once.  So does an add or
 * a mul of that result (after such an op, if fused) with a tensor of its
 * shape and placement (a residual, silu(gate) * up) or a bias over its
 * columns, and a unary op after that: the matmul reads the
 * other operand's box of each tile it stores (after a split-K, the sums
 * do), and one stage, its pass over memory and its flag hop go. */

/* On one rank a partial is its value (the expansion folded the reduction
 * that read it): placements that differ only so are the same. */
static int same_place(const ir_prog *p, ir_place a, ir_place b)
{
	if (p->world == 1 && (a.kind == PL_PARTIAL || b.kind == PL_PARTIAL))
		return (a.kind == PL_PARTIAL || a.kind == PL_LOCAL) &&
		       (b.kind == PL_PARTIAL || b.kind == PL_LOCAL);
	return a.kind == b.kind && (a.kind != PL_SPLIT || (a.dim == b.dim && a.group == b.group));
}

/* Matmul t's result (held in temp t, read once, by op i) fused into. */
static ir_op *fusable_matmul(ir_prog *p, int i, int ti)
{
	const ir_op *u = &p->ops[i];
	const ir_tensor *t = &p->tensors[ti], *y = &p->tensors[u->out];
	if (t->kind != TK_TEMP || t->nwriters != 1 || t->nuses != 1 || t->producer < 0 ||
	    t->producer >= i || y->nwriters != 1 || t->dtype != y->dtype ||
	    !same_place(p, t->place, y->place) || t->ndim != y->ndim)
		return NULL;
	ir_op *m = &p->ops[t->producer];
	return m->kind == OP_MATMUL ? m : NULL;
}

/* The other operand x of a binary op fused into matmul m (at mi): an
 * element type the epilogue loads, produced before m (or an input), and
 * either the result's shape, placement and storage split, or a bias: 1-D
 * over the result's last dimension, whole on every rank. */
static int epi2_operand_ok(const ir_prog *p, int x, const ir_tensor *y, int mi)
{
	const ir_tensor *t = &p->tensors[x];
	if ((t->place.kind == PL_PARTIAL && p->world > 1) || t->folded || t->nwriters > 1 ||
	    (t->dtype != DT_BF16 && t->dtype != DT_F16 && t->dtype != DT_F32) ||
	    (t->producer >= mi && t->kind != TK_IN))
		return 0;
	const int last = y->ndim - 1;
	if (t->ndim == 1 && y->ndim > 1)  /* whole on every rank, as check wants */
		return t->shape[0] == y->shape[last] && t->place.kind == PL_LOCAL;
	if (t->ndim != y->ndim || !same_place(p, t->place, y->place))
		return 0;
	for (int d = 0; d < y->ndim; d++)
		if (t->shape[d] != y->shape[d] || t->local[d] != y->local[d])
			return 0;
	return 1;
}

static void fuse_epilogues(expand *X, int binary)
{
	ir_prog *p = X->p;
	for (int i = 0; i < p->nops; i++) {
		const ir_op *u = &p->ops[i];
		ir_tensor *y = &p->tensors[u->out];
		if (u->kind == OP_RELU || u->kind == OP_SILU || u->kind == OP_GELU ||
		    u->kind == OP_GELU_TANH || u->kind == OP_SCALE) {
			int ti = u->in[0];
			ir_op *m = fusable_matmul(p, i, ti);
			if (!m || (m->epi2 ? m->epi3 : m->epi))
				continue;
			m->out = u->out;
			if (m->epi2) {  /* after the add or mul: gelu(x W + b) */
				m->epi3 = 1 + (int)u->kind;
				m->epi3_scalar = u->scalar;
			} else {
				m->epi = 1 + (int)u->kind;
				m->epi_scalar = u->scalar;
			}
			y->producer = (int)(m - p->ops);
			ir_fold_tensor(&p->tensors[ti]);
		} else if (binary && (u->kind == OP_ADD || u->kind == OP_MUL) && u->nin == 2 &&
			   (y->place.kind != PL_PARTIAL || p->world == 1)) {
			/* the matmul result produced last, so that the other
			 * operand is there before it (both commute) */
			ir_op *m = NULL;
			int ti = -1, x = -1;
			for (int k = 0; k < 2; k++) {
				ir_op *c = fusable_matmul(p, i, u->in[k]);
				if (c && !c->epi2 && epi2_operand_ok(p, u->in[1 - k], y, (int)(c - p->ops)) &&
				    (!m || c > m)) {
					m = c;
					ti = u->in[k];
					x = u->in[1 - k];
				}
			}
			if (!m)
				continue;
			m->out = u->out;
			m->epi2 = 1 + (int)u->kind;
			m->in[2] = x;
			m->nin = 3;
			y->producer = (int)(m - p->ops);
			ir_fold_tensor(&p->tensors[ti]);
		} else {
			continue;
		}
		ir_remove_op(p, i);
		i--;
	}
}

/* ---- 2b. gate and up projections ------------------------------------------
 * U = matmul(A, Wu) with the epilogue `mul S`, where S = act(matmul(A, Wg))
 * (act unary or none) is read by nothing else, A the same, Wg of Wu's
 * shape, placement and type: one matmul whose tiles compute both products
 * for the same columns (the Hopper engine's two consumer warpgroups one
 * weight each, codegen/mkd/wgmma.cuh), so a tile of the result depends on
 * nothing but A.  Only for a few rows (decode: at most 64 a rank, where
 * the warpgroups split the columns anyway); 2-D operands; neither matmul
 * with a hint. */
static void fuse_gates(expand *X)
{
	ir_prog *p = X->p;
	for (int i = 0; i < p->nops; i++) {
		ir_op *u = &p->ops[i];
		if (u->kind != OP_MATMUL || u->epi2 != 1 + (int)OP_MUL || u->epi3 || u->gate ||
		    u->nin != 3)
			continue;
		const int si = u->in[2];
		const ir_tensor *s = &p->tensors[si], *y = &p->tensors[u->out],
				*wu = &p->tensors[u->in[1]];
		if (s->kind != TK_TEMP || s->nuses != 1 || s->nwriters != 1 || s->producer < 0 ||
		    s->producer >= i || y->ndim != 2 || y->local[0] > 64 ||
		    (y->dtype != DT_BF16 && y->dtype != DT_F16) || s->dtype != y->dtype)
			continue;
		const int gi = s->producer;
		const ir_op *g = &p->ops[gi];
		if (g->kind != OP_MATMUL || g->in[0] != u->in[0] || g->epi2 || g->gate || g->nin != 2)
			continue;
		/* hints shape one matmul's tiles; the pair's would have to agree */
		if (u->hints.ntile || u->hints.split || u->hints.tasks || g->hints.ntile ||
		    g->hints.split || g->hints.tasks)
			continue;
		const ir_tensor *wg = &p->tensors[g->in[1]];
		if (wg->ndim != 2 || wu->ndim != 2 || wg->dtype != wu->dtype ||
		    !same_place(p, wg->place, wu->place) || wg->shape[0] != wu->shape[0] ||
		    wg->shape[1] != wu->shape[1] || wg->local[0] != wu->local[0] ||
		    wg->local[1] != wu->local[1])
			continue;
		u->gate = 1 + g->in[1];
		u->gate_epi = g->epi;
		u->gate_scalar = g->epi_scalar;
		u->epi2 = 0;
		u->in[2] = 0;
		u->nin = 2;
		ir_fold_tensor(&p->tensors[si]);
		ir_remove_op(p, gi);
		i--;  /* u moved down one */
	}
}

/* ---- 2c. an rmsnorm in the tiles that read it --------------------------------
 * N = rmsnorm(X, g) (or rmsnorm(X)) of a few rows (at most 128 a rank: one
 * row tile of the Hopper engine), read by nothing but matmuls as their A:
 * each of them reads X instead and computes N in its tile (A's stages
 * scaled by g as they land, the rows by their 1/rms in the epilogue,
 * codegen/mkd/wgmma.cuh NORM), so no tile waits for an rmsnorm stage.
 * X, N and g of one 16-bit type, whole rows on every rank (the mean runs
 * over the row), 2-D results; no reader with a split hint (a piece of K
 * cannot know the row's mean) or already fused (gate, norm). */
static int norm_reader(const ir_prog *p, const ir_op *u, int n)
{
	if (u->kind != OP_MATMUL || u->nin < 2 || u->in[0] != n || u->in[1] == n ||
	    (u->nin > 2 && u->in[2] == n) || u->gate || u->norm || u->hints.split > 1)
		return 0;
	const ir_tensor *c = &p->tensors[u->out], *b = &p->tensors[u->in[1]];
	return c->ndim == 2 && b->ndim == 2;
}

static void fuse_norms(expand *X)
{
	ir_prog *p = X->p;
	for (int i = 0; i < p->nops; i++) {
		const ir_op *op = &p->ops[i];
		if (op->kind != OP_RMSNORM)
			continue;
		const int ni = op->out, xi = op->in[0], gi = op->nin > 1 ? op->in[1] : -1;
		const ir_tensor *n = &p->tensors[ni], *x = &p->tensors[xi];
		const ir_tensor *g = gi >= 0 ? &p->tensors[gi] : NULL;
		if (n->kind != TK_TEMP || n->nwriters != 1 || n->nuses < 1 || n->ndim != 2 ||
		    x->ndim != 2 || n->local[0] > 128 || (n->dtype != DT_BF16 && n->dtype != DT_F16) ||
		    x->dtype != n->dtype || x->local[0] != n->local[0] || x->local[1] != n->local[1] ||
		    x->local[1] != x->shape[1] || n->local[1] != n->shape[1] ||
		    !same_place(p, x->place, n->place))
			continue;
		if (g && (g->ndim != 1 || g->dtype != n->dtype || g->local[0] != x->local[1]))
			continue;
		int readers = 0, ok = 1;
		for (int j = 0; j < p->nops && ok; j++) {
			const ir_op *u = &p->ops[j];
			int reads = 0;
			for (int k = 0; k < u->nin; k++)
				reads += u->in[k] == ni;
			if (!reads)
				continue;
			if (j > i && norm_reader(p, u, ni))
				readers++;
			else
				ok = 0;
		}
		if (!ok || readers != n->nuses)
			continue;
		for (int j = i + 1; j < p->nops; j++) {
			ir_op *u = &p->ops[j];
			if (u->kind != OP_MATMUL || u->in[0] != ni)
				continue;
			u->in[0] = xi;
			u->norm = 1 + ni;
			u->norm_w = gi >= 0 ? 1 + gi : 0;
		}
		/* the rmsnorm's read of X (and g) becomes the readers' */
		p->tensors[xi].nuses += readers - 1;
		if (gi >= 0)
			p->tensors[gi].nuses += readers - 1;
		ir_fold_tensor(&p->tensors[ni]);
		ir_remove_op(p, i);
		i--;
	}
}

/* ---- 3. collectives in terms of others -------------------------------------
 * allreduce(X) = allgather(reduce_scatter(X, 0), 0): rank r reduces rows
 * r*M/world..., then everyone gathers the reduced rows.  attention(Q, K, V)
 * with K and V split over the ranks along the sequence: K and V are
 * gathered block by block (the ring), and each query tile waits on each key
 * block just before it needs it (split heads stay local). */
static void split_allreduce(expand *X, int i)
{
	ir_prog *p = X->p;
	ir_op *op = &p->ops[i];
	const ir_tensor *y = &p->tensors[op->out];
	if (y->shape[0] % p->world) {
		diag_error(X->d, op->where,
			   "allreduce splits dimension 0 of '%s' (%lld) over world (%d) ranks: "
			   "it must be divisible",
			   y->name, (long long)y->shape[0], p->world);
		X->err = 1;
		return;
	}
	ir_tensor proto = *y;
	proto.place = (ir_place){PL_SPLIT, 0, GRP_WORLD};
	proto.local[0] = y->shape[0] / p->world;
	int r = add_tensor(X, &proto, y->name, "rs");
	if (r < 0)
		return;
	op = &p->ops[i];
	ir_op ag = *op;
	ag.kind = OP_ALLGATHER;
	ag.in[0] = r;
	ag.nin = 1;
	ag.dim = 0;
	ag.stage = arena_printf(X->a, "%s__ag", op->stage);
	op->kind = OP_REDUCE_SCATTER;
	op->out = r;
	op->dim = 0;
	op->stage = arena_printf(X->a, "%s__rs", op->stage);
	p->tensors[r].producer = i;
	if (ir_insert_op(p, X->a, i + 1, ag) != 0)
		X->err = 1;
}

/* K and V of attention op *i gathered; *i moves to the attention op. */
static void ring_gathers(expand *X, int *i)
{
	ir_prog *p = X->p;
	for (int k = 1; k <= 2 && !X->err; k++) {
		const ir_op *op = &p->ops[*i];
		const ir_tensor *x = &p->tensors[op->in[k]];
		ir_tensor proto = *x;
		proto.place = (ir_place){PL_LOCAL, 0, GRP_WORLD};
		for (int d = 0; d < x->ndim; d++)
			proto.local[d] = x->shape[d];
		int g = add_tensor(X, &proto, x->name, "ring");
		if (g < 0)
			return;
		op = &p->ops[*i];
		ir_op ag = *op;
		ag.kind = OP_ALLGATHER;
		ag.out = g;
		ag.in[0] = op->in[k];
		ag.nin = 1;
		ag.dim = p->tensors[op->in[k]].place.dim;
		ag.hints = (ir_hints){0};
		ag.stage = arena_printf(X->a, "%s__%s", op->stage, p->tensors[op->in[k]].name);
		p->ops[*i].in[k] = g;
		if (ir_insert_op(p, X->a, *i, ag) != 0) {
			X->err = 1;
			return;
		}
		p->tensors[g].producer = *i;
		(*i)++;
	}
}

static void expand_collectives(expand *X)
{
	ir_prog *p = X->p;
	for (int i = 0; i < p->nops && !X->err; i++) {
		const ir_op *op = &p->ops[i];
		const ir_tensor *k = op->nin > 1 ? &p->tensors[op->in[1]] : NULL;
		if (op->kind == OP_ALLREDUCE && p->world > 1) {
			split_allreduce(X, i);
			i++;
		} else if (op->kind == OP_ATTENTION && p->world > 1 && k->place.kind == PL_SPLIT &&
			   k->place.dim == k->ndim - 2) {
			ring_gathers(X, &i);
		}
	}
}

/* ---- 4. hidden tensors -------------------------------------------------------
 * A reduce_scatter between nodes over the world (lower_reduce) sums each
 * node's GPUs into node-partials T (`__node`) and receives the other
 * nodes' partials into slots S (`__slots`).
 *
 * MoE (mkd/moe.cuh, lower_moe.c): a dispatch's routing table `idx__route`
 * (i32 [E + 1 + 2N]: offsets per expert, entries sorted by expert, each
 * entry's place).  Between nodes also, per rank, J = nodes - 1 slices of
 *   X__pack    i32 [J, 1 + T, W]  slice j-1: rows for node +j: row 0 holds
 *                                 the count, then each row the token's
 *                                 data words, its k ids, k gates, its index
 *   X__recv    i32 [J, 1 + T, W]  slice s-1: what node +s sent
 *   idx__rroute [J, len]          slice s-1: the routing table of that
 * and for the combine Y__part, Y__back f32 [J, 1 + T, H]: the partial sums
 * of received rows over this node's experts, and those other nodes
 * returned. */

/* The dispatch before op `before` that routes by indices `idx`, or -1. */
static int dispatch_of(const ir_prog *p, int idx, int before)
{
	for (int j = 0; j < before; j++)
		if (p->ops[j].kind == OP_DISPATCH && p->ops[j].in[1] == idx)
			return j;
	return -1;
}

/* The width in words of a packed row of H elements of `es` bytes and k
 * choices (data, ids, gates, index; a multiple of 4 words). */
static int64_t moe_width(int64_t H, int es, int64_t k)
{
	return (H * es / 4 + 2 * k + 1 + 3) / 4 * 4;
}

/* A hidden local tensor written by op `producer`; 1 + its index, 0 on
 * failure. */
static int hidden(expand *X, int base, ir_dtype dt, int ndim, const int64_t *shape,
		  const char *suffix, int producer)
{
	ir_prog *p = X->p;
	ir_tensor proto = p->tensors[base];
	proto.dtype = dt;
	proto.ndim = ndim;
	for (int d = 0; d < IR_MAXDIM; d++)
		proto.shape[d] = proto.local[d] = d < ndim ? shape[d] : 0;
	proto.place = (ir_place){PL_LOCAL, 0, GRP_WORLD};
	int t = add_tensor(X, &proto, p->tensors[base].name, suffix);
	if (t < 0)
		return 0;
	p->tensors[t].producer = producer;
	p->tensors[t].nwriters = 1;
	return t + 1;
}

static void reduce_stages(expand *X, int oi)
{
	ir_prog *p = X->p;
	const ir_op *op = &p->ops[oi];
	const ir_tensor *ty = &p->tensors[op->out];
	ir_group g = ty->place.kind == PL_SPLIT ? ty->place.group : GRP_WORLD;
	if (p->nodes == 1 || g != GRP_WORLD)
		return;
	const int d = ty->place.dim;
	const int64_t u = ty->local[d];
	ir_tensor proto = p->tensors[op->in[0]];
	proto.place = (ir_place){PL_LOCAL, 0, GRP_WORLD};
	int T = add_tensor(X, &proto, p->tensors[op->out].name, "node");
	proto = p->tensors[op->out];
	proto.place = (ir_place){PL_LOCAL, 0, GRP_WORLD};
	proto.shape[d] = proto.local[d] = u * p->nodes;
	int S = add_tensor(X, &proto, p->tensors[op->out].name, "slots");
	if (T < 0 || S < 0)
		return;
	p->tensors[T].producer = p->tensors[S].producer = oi;
	p->tensors[T].nwriters = p->tensors[S].nwriters = 1;
	p->ops[oi].stage1 = T + 1;
	p->ops[oi].stage2 = S + 1;
}

static void dispatch_tables(expand *X, int oi)
{
	ir_prog *p = X->p;
	const ir_op *op = &p->ops[oi];
	const int I = op->in[1];
	if (dispatch_of(p, I, oi) >= 0) {
		diag_error(X->d, op->where, "'%s' is dispatched twice; dispatch it once and reuse "
			   "the result", p->tensors[I].name);
		X->err = 1;
		return;
	}
	const ir_tensor *ix = &p->tensors[I], *xe = &p->tensors[op->out];
	const int64_t N = ix->local[0] * ix->local[1], E = xe->shape[0], H = xe->shape[2];
	const int64_t len = E + 1 + 2 * N, Tl = ix->local[0], k = ix->local[1];
	const int es = ir_dtype_size(xe->dtype), X0 = op->in[0];
	int R = hidden(X, I, DT_I32, 1, &len, "route", oi);
	if (!R)
		return;
	p->ops[oi].route1 = R;
	if (p->nodes == 1)
		return;
	/* the gates travel with the rows: those of the last combine routing
	 * by the same indices, when there is one */
	for (int j = oi + 1; j < p->nops; j++)
		if (p->ops[j].kind == OP_COMBINE && p->ops[j].in[1] == I)
			p->ops[oi].gate1 = p->ops[j].in[2] + 1;
	const int64_t J = p->nodes - 1, W = moe_width(H, es, k);
	const int64_t rows[3] = {J, 1 + Tl, W}, tables[2] = {J, len};
	int pk = hidden(X, X0, DT_I32, 3, rows, "pack", oi);
	int rk = hidden(X, X0, DT_I32, 3, rows, "recv", oi);
	int rr = hidden(X, I, DT_I32, 2, tables, "rroute", oi);
	p->ops[oi].pack1 = pk;
	p->ops[oi].recv1 = rk;
	p->ops[oi].rroute1 = rr;
}

static void combine_links(expand *X, int oi)
{
	ir_prog *p = X->p;
	const ir_op *op = &p->ops[oi];
	const int Ye = op->in[0], I = op->in[1];
	const int D = dispatch_of(p, I, oi);
	if (D < 0 || !p->ops[D].route1) {
		diag_error(X->d, op->where, "combine needs the routing '%s' dispatched before it "
			   "(dispatch(X, %s, E, C))", p->tensors[I].name, p->tensors[I].name);
		X->err = 1;
		return;
	}
	const ir_op *dop = &p->ops[D];
	const ir_tensor *ye = &p->tensors[Ye], *ix = &p->tensors[I];
	const int64_t E = ye->shape[0], Tl = ix->local[0], k = ix->local[1];
	if (p->tensors[dop->route1 - 1].shape[0] != E + 1 + 2 * Tl * k) {
		diag_error(X->d, op->where, "combine's expert outputs '%s' have %lld experts; the "
			   "dispatch of '%s' routed to another number", ye->name, (long long)E,
			   ix->name);
		X->err = 1;
		return;
	}
	p->ops[oi].route1 = dop->route1;
	if (p->nodes == 1)
		return;
	const int Y = op->out;
	const int64_t H = p->tensors[Y].shape[p->tensors[Y].ndim - 1];
	const int64_t sums[3] = {p->nodes - 1, 1 + Tl, H};
	int part = hidden(X, Y, DT_F32, 3, sums, "part", oi);
	int back = hidden(X, Y, DT_F32, 3, sums, "back", oi);
	p->ops[oi].pack1 = dop->pack1;
	p->ops[oi].recv1 = dop->recv1;
	p->ops[oi].rroute1 = dop->rroute1;
	p->ops[oi].part1 = part;
	p->ops[oi].back1 = back;
}

static void hidden_tensors(expand *X)
{
	ir_prog *p = X->p;
	for (int i = 0; i < p->nops && !X->err; i++)
		switch (p->ops[i].kind) {
		case OP_REDUCE_SCATTER: reduce_stages(X, i); break;
		case OP_DISPATCH: dispatch_tables(X, i); break;
		case OP_COMBINE: combine_links(X, i); break;
		default: break;
		}
}

int expand_run(ir_prog *p, const compile_opts *o, diags *d, arena *a)
{
	expand X = {.p = p, .d = d, .a = a};
	fold_identity_collectives(&X);
	fuse_epilogues(&X, !o || !o->no_epi2);
	if (o && o->gateup)
		fuse_gates(&X);
	if (o && o->normfold == 2)
		fuse_norms(&X);
	expand_collectives(&X);
	if (!X.err)
		hidden_tensors(&X);
	if (!X.err && ir_rotate(p, d, a) != 0)
		X.err = 1;
	return X.err || a->failed ? 1 : 0;
}
