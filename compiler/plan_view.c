/* plan_view.c - views: the layout ops whose result needs no copy.
 *
 * slice, transpose (of two dimensions before the last), heads and reshape
 * move no element when their result can be addressed inside the input's
 * storage with strides.  The plan then makes the result a view (ir_tensor:
 * view, root, off, st) and the op makes no task.  Readers address a view
 * through its strides (mkd_at; the row stride st[nd - 2] as the leading
 * dimension; tensor maps over its root); the scheduler and the verifier
 * map each read of a view to the box of its root it lies in
 * (lower_view_root).  A chain of layout ops composes: a slice of a view of
 * heads is a view of the matmul result underneath.
 *
 * Still a copy:
 *   - an output (its storage is the caller's) and every op of a CPU plan;
 *   - a result that an exchange or MoE op reads (their transfers name
 *     whole rows of a tensor's own storage and run on other ranks too);
 *   - a result whose rows are not 16-byte aligned (the tiles' vector and
 *     TMA loads), or that a matmul reads but is not one matrix of rows
 *     (its tensor maps flatten the leading dimensions), or that attention
 *     reads but whose heads are not whole rows of its root (reader_ok:
 *     measured slower than a copy);
 *   - a transpose of the last dimension, a merge of the last two
 *     dimensions whose rows are not contiguous, merge_heads and concat
 *     (their results interleave elements of different rows or inputs).
 */
#include "plan.h"

#include <string.h>

/* A tensor in storage of its own: row-major strides of its local piece. */
static void own_storage(ir_prog *p, int t)
{
	ir_tensor *x = &p->tensors[t];
	x->view = false;
	x->root = t;
	x->off = 0;
	int64_t s = 1;
	for (int d = x->ndim - 1; d >= 0; d--) {
		x->st[d] = s;
		s *= x->local[d] > 0 ? x->local[d] : 1;
	}
}

/* The strides and offset of op's result inside the storage of its input
 * (itself a view, or not); 0 when the result cannot be one. */
static int view_map(const ir_prog *p, const ir_op *op, int64_t *st, int64_t *off)
{
	const ir_tensor *x = &p->tensors[op->in[0]], *y = &p->tensors[op->out];
	const int nx = x->ndim, ny = y->ndim;
	*off = x->off;
	switch (op->kind) {
	case OP_SLICE:
		/* the cut dimension whole on the rank: local index = logical */
		if (x->local[op->dim] != x->shape[op->dim])
			return 0;
		memcpy(st, x->st, sizeof x->st);
		*off = x->off + op->lo * x->st[op->dim];
		break;
	case OP_TRANSPOSE:
		if (op->dim == nx - 1 || op->dim2 == nx - 1)
			return 0;
		memcpy(st, x->st, sizeof x->st);
		st[op->dim] = x->st[op->dim2];
		st[op->dim2] = x->st[op->dim];
		break;
	case OP_HEADS:  /* [T, H*D] -> [H, T, D]: head h at column h*D */
		if (nx != 2 || ny != 3 || y->local[0] * y->local[2] != x->local[1])
			return 0;
		st[0] = y->local[2] * x->st[1];
		st[1] = x->st[0];
		st[2] = x->st[1];
		break;
	case OP_RESHAPE:
		if (nx == ny) {
			memcpy(st, x->st, sizeof x->st);
		} else if (nx + 1 == ny) {  /* [.., A*B] -> [.., A, B] */
			memcpy(st, x->st, sizeof x->st);
			st[ny - 2] = y->local[ny - 1] * x->st[nx - 1];
			st[ny - 1] = x->st[nx - 1];
		} else if (nx == ny + 1) {  /* [.., A, B] -> [.., A*B]: rows back to back */
			if (x->st[nx - 2] != x->local[nx - 1] * x->st[nx - 1])
				return 0;
			memcpy(st, x->st, sizeof x->st);
			st[ny - 1] = x->st[nx - 1];
		} else {
			return 0;
		}
		break;
	default:
		return 0;
	}
	/* the local pieces correspond one for one (a split on a paired
	 * dimension only), and the last dimension stays contiguous */
	int64_t nxe = 1, nye = 1;
	for (int d = 0; d < nx; d++)
		nxe *= x->local[d];
	for (int d = 0; d < ny; d++)
		nye *= y->local[d];
	if (op->kind != OP_SLICE && nxe != nye)
		return 0;
	for (int d = 0; d < ny; d++) {
		int dx = ir_layout_dim(p, op, 0, d);
		if (dx >= 0 && y->local[d] != x->local[dx])
			return 0;
	}
	return st[ny - 1] == 1;
}

/* Can op read tensor t (its input k) as a view with these strides? */
static int reader_ok(const ir_prog *p, const ir_op *op, const ir_tensor *t, const int64_t *st,
		     int64_t off)
{
	const int nd = t->ndim, es = ir_dtype_size(t->dtype);
	/* rows 16-byte aligned: every tile loads 16-byte vectors */
	if ((off * es) % 16)
		return 0;
	for (int d = 0; d + 1 < nd; d++)
		if ((st[d] * es) % 16)
			return 0;
	const char c = ir_op_class(op->kind);
	switch (op->kind) {
	case OP_MATMUL:  /* one matrix of rows: [batch x rows] flattened */
		return nd < 3 || st[0] == t->local[1] * st[1];
	case OP_ATTENTION:
		/* [heads, rows, D]: each head's rows whole rows of the root, one
		 * head below the other.  Heads side by side in the root's rows
		 * (V of a fused QKV projection: D of each head's 3D columns) work
		 * too (the tiles' maps take a column offset), but the tile
		 * streams such rows, D elements a whole root row apart, slower:
		 * the Llama layer ran 2593-2608 us with that V a view, 2516 with
		 * it copied (H200, docs/perf-notes.md, 2026-12-04), so it is
		 * copied. */
		return nd < 3 || t->local[0] == 1 || st[0] % st[1] == 0;
	default:
		return c == 'E' || c == 'R' || c == 'L';
	}
}

static int view_ok(const ir_prog *p, int oi, const int64_t *st, int64_t off)
{
	const ir_op *op = &p->ops[oi];
	const ir_tensor *y = &p->tensors[op->out];
	if (y->kind != TK_TEMP || y->folded || y->nwriters != 1)
		return 0;
	for (int j = 0; j < p->nops; j++) {
		const ir_op *r = &p->ops[j];
		for (int k = 0; k < r->nin; k++)
			if (r->in[k] == op->out && !reader_ok(p, r, y, st, off))
				return 0;
	}
	return 1;
}

void plan_views(ir_prog *p, int gpu)
{
	for (int t = 0; t < p->ntensors; t++)
		own_storage(p, t);
	for (int i = 0; i < p->nops && gpu; i++) {
		ir_op *op = &p->ops[i];
		if (ir_op_class(op->kind) != 'L')
			continue;
		int64_t st[IR_MAXDIM] = {0}, off = 0;
		if (!view_map(p, op, st, &off) || !view_ok(p, i, st, off))
			continue;
		ir_tensor *y = &p->tensors[op->out];
		const ir_tensor *x = &p->tensors[op->in[0]];
		op->plan.view = 1;
		y->view = true;
		y->root = x->root;
		y->off = off;
		memcpy(y->st, st, sizeof y->st);
	}
}
