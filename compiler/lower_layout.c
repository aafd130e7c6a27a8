/* lower_layout.c - layout ops: heads(X, H) ([T, H*D] -> [H, T, D]) and
 * merge_heads ([H, T, D] -> [T, H*D]) here first; slice, concat,
 * transpose and reshape (lower_view) below.  Where the plan made the result
 * a view (plan_view.c) the op makes no task (lower.c) and lower_view_root
 * maps reads of the view to its root.  A copy of heads is one task per
 * head of the rank and block of about 64 KB of its rows, reading exactly
 * the columns of that head.  The rank's heads are its own (sema keeps the
 * split on the heads), so nothing crosses ranks. */
#include "tiles.h"

void lower_layout(lower *L, int oi)
{
	const ir_prog *p = L->p;
	const ir_op *op = &p->ops[oi];
	const ir_tensor *x = &p->tensors[op->in[0]], *y = &p->tensors[op->out];
	int heads = op->kind == OP_HEADS;
	const ir_tensor *h3 = heads ? y : x;         /* the [H, T, D] side */
	int64_t Hl = h3->local[0], T = h3->shape[1], D = h3->shape[2];
	int64_t esz = ir_dtype_size(y->dtype);
	int64_t rows = D * esz > 0 ? 64 * 1024 / (D * esz) : T;
	if (rows < 1)
		rows = 1;
	/* token blocks never cross a unit of a shard rotation on either side
	 * (the verifier's premise: sigma_r moves every box whole) */
	const ir_tensor *f2 = heads ? x : y;
	int64_t u = 0, us[2] = {h3->rot[1].unit, f2->rot[0].unit};
	for (int k = 0; k < 2; k++)
		if (us[k] > 0 && (u == 0 || us[k] < u))
			u = us[k];
	ir_region f3 = lower_full(p, heads ? op->out : op->in[0], 0);
	for (int64_t h = f3.lo[0]; h < f3.lo[0] + Hl; h++)
		for (int64_t t0 = 0, t1; t0 < T; t0 = t1) {
			t1 = t0 + rows < T ? t0 + rows : T;
			if (u > 0 && t1 > (t0 / u + 1) * u)
				t1 = (t0 / u + 1) * u;
			ir_task *t = lower_task(L, TASK_EW, oi);
			if (!t)
				return;
			ir_region a = {.tensor = heads ? op->out : op->in[0]};
			a.lo[0] = h, a.hi[0] = h + 1;
			a.lo[1] = t0, a.hi[1] = t1;
			a.lo[2] = 0, a.hi[2] = D;
			ir_region b = {.tensor = heads ? op->in[0] : op->out};
			b.lo[0] = t0, b.hi[0] = t1;
			b.lo[1] = h * D, b.hi[1] = (h + 1) * D;
			t->write = heads ? a : b;
			lower_read(L, t, heads ? b : a);
			t->bytes = 2.0 * (double)((t1 - t0) * D * esz);
		}
}

/* ---- slice, concat, transpose, reshape ---------------------------------- */

/* Does dimension d of x move with the ranks under sigma_r? */
static int moves(const ir_prog *p, const ir_tensor *x, int d)
{
	return x->rot[d].unit > 0 && ir_group_size(p, x->rot[d].group) > 1;
}

/* A reshape's last dimensions where both sides are split alike: the split
 * dimension k of the result ([.., A, B] from [.., A * B], or back) holds
 * whole rows of the other side's, so a box of one shard reads one shard
 * and sigma_r moves both by the same shard (sema keeps the split on k). */
static int reshape_moves_alike(const ir_prog *p, const ir_op *op)
{
	const ir_tensor *x = &p->tensors[op->in[0]], *y = &p->tensors[op->out];
	if (op->kind != OP_RESHAPE || x->ndim == y->ndim)
		return 0;
	int k = (x->ndim < y->ndim ? x->ndim : y->ndim) - 1;
	return moves(p, x, k) && moves(p, y, k) && x->rot[k].group == y->rot[k].group;
}

/* The box of input k that write box w of op reads (a copy's task, or a
 * reader of a view): the op's preimage of w, widened to the input's whole
 * (local) extent on a dimension that is not paired one for one with the
 * result's (ir_layout_dim) where either side moves it -- then rank r's
 * write box lies elsewhere than rank 0's, and a dependency on the whole
 * stays a superset (sema keeps such dimensions unsplit, so the whole is on
 * the rank).  heads: the columns of the box's heads (its tokens and heads
 * move alike with the ranks).  Empty (hi <= lo) when w takes nothing from
 * input k (a concat's other part). */
static ir_region view_read(const ir_prog *p, const ir_op *op, int k, const ir_region *w)
{
	const ir_tensor *x = &p->tensors[op->in[k]], *y = &p->tensors[op->out];
	ir_region full = lower_full(p, op->in[k], 0), r = full;
	int d = op->dim, moving = 0;
	for (int dy = 0; dy < y->ndim; dy++) {
		int dx = ir_layout_dim(p, op, k, dy);
		if (dx >= 0) {
			r.lo[dx] = w->lo[dy];
			r.hi[dx] = w->hi[dy];
		} else if (moves(p, y, dy)) {
			moving = 1;
		}
	}
	for (int dx = 0; dx < x->ndim; dx++) {
		int paired = 0;
		for (int dy = 0; dy < y->ndim; dy++)
			paired |= ir_layout_dim(p, op, k, dy) == dx;
		if (!paired && moves(p, x, dx))
			moving = 1;
	}
	if (op->kind == OP_HEADS) {  /* [T, H*D] -> [H, T, D]: head h's columns */
		const int64_t D = y->shape[2];
		r.lo[1] = w->lo[0] * D + w->lo[2];
		r.hi[1] = (w->hi[0] - 1) * D + w->hi[2];
		return r;
	}
	if (moving && !reshape_moves_alike(p, op))
		return r;  /* the unpaired dimensions whole */
	switch (op->kind) {
	case OP_SLICE:
		r.lo[d] = w->lo[d] + op->lo;
		r.hi[d] = w->hi[d] + op->lo;
		break;
	case OP_CONCAT: {
		int64_t off = k ? p->tensors[op->in[0]].shape[d] : 0;
		int64_t lo = w->lo[d] - off, hi = w->hi[d] - off;
		r.lo[d] = lo > 0 ? lo : 0;
		r.hi[d] = hi < x->shape[d] ? hi : x->shape[d];
		break;
	}
	case OP_RESHAPE:
		if (x->ndim + 1 == y->ndim) {  /* [.., A * B] -> [.., A, B] */
			int j = x->ndim - 1;
			int64_t B = y->shape[j + 1];
			r.lo[j] = w->lo[j] * B + w->lo[j + 1];
			r.hi[j] = (w->hi[j] - 1) * B + w->hi[j + 1];
		} else if (x->ndim == y->ndim + 1) {  /* [.., A, B] -> [.., A * B] */
			int j = y->ndim - 1;
			int64_t B = x->shape[j + 1];
			r.lo[j] = w->lo[j] / B;
			r.hi[j] = (w->hi[j] + B - 1) / B;
			r.lo[j + 1] = 0;
			r.hi[j + 1] = B;
		}
		break;
	default:
		break;
	}
	return r;
}

ir_region lower_view_root(const ir_prog *p, ir_region g)
{
	while (g.tensor >= 0 && p->tensors[g.tensor].view) {
		const int rank = g.rank;
		g = view_read(p, &p->ops[p->tensors[g.tensor].producer], 0, &g);
		g.rank = rank;
	}
	return g;
}

/* The end of a block of dimension dy of the result that starts at lo and
 * would end at hi: no block crosses a shard unit of a dimension that
 * moves, on the result or on the input dimension paired with it, or a
 * concat's seam. */
static int64_t view_clip(const ir_prog *p, const ir_op *op, int dy, int64_t lo, int64_t hi)
{
	const ir_tensor *y = &p->tensors[op->out];
	int64_t u[IR_MAXIN + 2];
	int nu = 0;
	if (y->rot[dy].unit > 0)
		u[nu++] = y->rot[dy].unit;
	for (int k = 0; k < op->nin; k++) {
		int dx = ir_layout_dim(p, op, k, dy);
		if (dx >= 0 && p->tensors[op->in[k]].rot[dx].unit > 0)
			u[nu++] = p->tensors[op->in[k]].rot[dx].unit;
	}
	for (int i = 0; i < nu; i++) {
		int64_t e = (lo / u[i] + 1) * u[i];
		if (hi > e)
			hi = e;
	}
	if (op->kind == OP_CONCAT && dy == op->dim) {
		int64_t seam = p->tensors[op->in[0]].shape[dy];
		if (lo < seam && hi > seam)
			hi = seam;
	}
	return hi;
}

/* Blocks of about 64 KB of the rank's result: its leading dimensions cut,
 * never the last (whole rows, one contiguous run on both sides for all but
 * a transpose of the last dimension), except a 1-D result's and at a
 * concat's seam.  A task per block, reading view_read of each input it
 * takes from. */
void lower_view(lower *L, int oi)
{
	const ir_prog *p = L->p;
	const ir_op *op = &p->ops[oi];
	const ir_tensor *y = &p->tensors[op->out];
	int nd = y->ndim;
	int64_t esz = ir_dtype_size(y->dtype), target = 64 * 1024;
	ir_region f = lower_full(p, op->out, 0);
	/* the dimensions cut: 0 .. nd - 2 (dim 0 of a 1-D result), the steps
	 * so that a block is about target bytes */
	int64_t step[IR_MAXDIM], inner = esz;
	for (int d = nd - 1; d >= 0; d--) {
		int64_t ext = f.hi[d] - f.lo[d];
		if (ext < 1)
			return;  /* nothing on the rank */
		step[d] = ext;
		if (d < nd - 1 || nd == 1) {
			int64_t s = target / (inner > 0 ? inner : 1);
			step[d] = s < 1 ? 1 : s < ext ? s : ext;
		}
		inner *= step[d];
	}
	int64_t lo[IR_MAXDIM], hi[IR_MAXDIM];
	for (int d = 0; d < nd; d++)
		lo[d] = f.lo[d];
	for (;;) {
		ir_region w = {.tensor = op->out};
		for (int d = 0; d < nd; d++) {
			int64_t h = lo[d] + step[d] < f.hi[d] ? lo[d] + step[d] : f.hi[d];
			hi[d] = view_clip(p, op, d, lo[d], h);
			w.lo[d] = lo[d];
			w.hi[d] = hi[d];
		}
		ir_task *t = lower_task(L, TASK_EW, oi);
		if (!t)
			return;
		t->write = w;
		double vol = lower_volume(&w, nd);
		for (int k = 0; k < op->nin; k++) {
			ir_region r = view_read(p, op, k, &w);
			if (lower_volume(&r, p->tensors[op->in[k]].ndim) > 0)
				lower_read(L, t, r);
		}
		t->bytes = 2.0 * vol * (double)esz;
		/* the next block: the last dimension fastest */
		int d = nd - 1;
		for (; d >= 0; d--) {
			lo[d] = hi[d];
			if (lo[d] < f.hi[d])
				break;
			lo[d] = f.lo[d];
		}
		if (d < 0)
			return;
	}
}
