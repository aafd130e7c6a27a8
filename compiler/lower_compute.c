/* lower_compute.c - the tasks of compute ops: matmul tiles, attention
 * query tiles, elementwise and row-wise boxes, row sums.  Sizes come from
 * each op's plan (plan.c). */
#include "plan.h"
#include "tiles.h"

/* matmul: C[m0:m1, n0:n1] = A[m0:m1, :] @ B[:, n0:n1], batched over dim 0
 * when the operands are 3-D; a task walks the plan's tiles_m x tiles_n
 * tiles, in the plan's order. */
void lower_matmul(lower *L, int oi)
{
	const ir_prog *p = L->p;
	const ir_op *op = &p->ops[oi];
	const ir_mm_plan *mp = &op->plan.mm;
	const ir_tensor *C = &p->tensors[op->out];
	int b = C->ndim == 3;
	ir_region cr = lower_full(p, op->out, 0);
	ir_region ar = lower_full(p, op->in[0], 0);
	ir_region br = lower_full(p, op->in[1], 0);
	int64_t K = ar.hi[b + 1] - ar.lo[b + 1];
	int64_t nb = b ? cr.hi[0] - cr.lo[0] : 1;
	int64_t *ml = L->cut_lo, *mh = L->cut_hi;
	int64_t *nl = L->cut_lo + IR_MAXCUTS / 2, *nh = L->cut_hi + IR_MAXCUTS / 2;
	int nm = ir_cut(C, b, cr.lo[b], cr.hi[b], mp->bm, ml, mh, IR_MAXCUTS / 2);
	int nn = ir_cut(C, b + 1, cr.lo[b + 1], cr.hi[b + 1], mp->bn, nl, nh, IR_MAXCUTS / 2);
	const int64_t unit = C->rot[b].unit > 0 ? C->rot[b].unit : INT64_MAX;
	if (nm < 0 || nn < 0) {  /* the plan checks the tile counts */
		diag_error(L->d, op->where, "matmul '%s' has too many tiles; use a larger tile",
			   op->stage);
		L->err = 1;
		return;
	}
	int *order = arena_alloc(L->a, (size_t)(nm * nn > 0 ? nm * nn : 1) * 2 * sizeof(int));
	if (!order) {
		L->err = 1;
		return;
	}
	const int ntask = plan_mm_order(op, ml, nm, nn, cr.lo[b], unit, order);
	const int cw = mp->tiles_n;
	for (int64_t e = 0; e < nb; e++)
		for (int q = 0; q < ntask; q++) {
			int i = order[2 * q] / nn, j = order[2 * q] % nn, ie = order[2 * q + 1] - 1;
			int je = j + cw - 1 < nn - 1 ? j + cw - 1 : nn - 1;
			ir_task *t = lower_task(L, TASK_MATMUL, oi);
			if (!t)
				return;
			ir_region a = ar, bb = br, c = cr;
			if (b) {
				a.lo[0] = bb.lo[0] = c.lo[0] = cr.lo[0] + e;
				a.hi[0] = bb.hi[0] = c.hi[0] = cr.lo[0] + e + 1;
			}
			a.lo[b] = c.lo[b] = ml[i];
			a.hi[b] = c.hi[b] = mh[ie];
			bb.lo[b + 1] = c.lo[b + 1] = nl[j];
			bb.hi[b + 1] = c.hi[b + 1] = nh[je];
			lower_read(L, t, a);
			lower_read(L, t, bb);
			t->write = c;
			t->flops = 2.0 * (double)(mh[ie] - ml[i]) * (double)(nh[je] - nl[j]) * (double)K;
			t->bytes = (double)((mh[ie] - ml[i]) + (nh[je] - nl[j])) * (double)K *
				   ir_dtype_size(p->tensors[op->in[0]].dtype);
		}
}

/* O = attention(Q, K, V): one task per tile of query rows (per head; the
 * plan's rows), reading the keys and values block by block: after the
 * expansion K and V are the gathered copies, and each block of one rank's
 * shard is a read of its own, waited on just before the tile uses it. */
void lower_attention(lower *L, int oi)
{
	const ir_prog *p = L->p;
	const ir_op *op = &p->ops[oi];
	int Q = op->in[0], K = op->in[1], V = op->in[2], O = op->out;
	const ir_tensor *tq = &p->tensors[Q], *tk = &p->tensors[K];
	int sd = tq->ndim - 2;  /* the sequence dimension */
	ir_region qfull = lower_full(p, Q, 0), kfull = lower_full(p, K, 0);
	int64_t S = kfull.hi[sd] - kfull.lo[sd];
	int G = 1;
	int64_t blk = S;
	const ir_op *ag = NULL;
	for (int i = 0; i < oi; i++)
		if (p->ops[i].kind == OP_ALLGATHER && p->ops[i].out == K)
			ag = &p->ops[i];
	if (ag) {
		const ir_tensor *src = &p->tensors[ag->in[0]];
		G = ir_group_size(p, src->place.group);
		blk = src->local[sd];
	}
	int64_t heads = sd ? qfull.hi[0] - qfull.lo[0] : 1;
	int64_t D = tq->shape[tq->ndim - 1];
	const int64_t BQ = op->plan.attn.rows;
	int nc = ir_cut(tq, sd, qfull.lo[sd], qfull.hi[sd], BQ, L->cut_lo, L->cut_hi, IR_MAXCUTS);
	if (nc < 0) {  /* the plan checks it */
		diag_error(L->d, op->where, "attention '%s' has more than %d query tiles of %lld rows",
			   op->stage, IR_MAXCUTS, (long long)BQ);
		L->err = 1;
		return;
	}
	/* causal: the tiles of later queries see more keys; they come first, so
	 * that the list scheduler places the long tasks before the short ones */
	for (int ii = 0; ii < nc && !L->err; ii++)
		for (int64_t h = 0; h < heads && !L->err; h++) {
			int i = op->causal ? nc - 1 - ii : ii;
			ir_task *t = lower_task(L, TASK_ATTN, oi);
			if (!t)
				return;
			ir_region q = qfull;
			if (sd) {
				q.lo[0] = qfull.lo[0] + h;
				q.hi[0] = q.lo[0] + 1;
			}
			q.lo[sd] = L->cut_lo[i];
			q.hi[sd] = L->cut_hi[i];
			lower_read(L, t, q);
			/* key blocks in arrival order: own shard first, then the rest */
			for (int s = 0; s < G; s++) {  /* the order the allgather pulls them in */
				ir_region kb = kfull;
				if (sd) {
					kb.lo[0] = q.lo[0];
					kb.hi[0] = q.hi[0];
				}
				kb.lo[sd] = kfull.lo[sd] + s * blk;
				kb.hi[sd] = kb.lo[sd] + blk;
				lower_read(L, t, kb);
				kb.tensor = V;
				lower_read(L, t, kb);
			}
			t->write = lower_retarget(q, O);
			double rows = (double)(q.hi[sd] - q.lo[sd]), keys = rows * (double)S;
			if (op->causal) {  /* row at position x sees keys 0..x */
				double first = (double)(q.lo[sd] - kfull.lo[sd]) + 1, last = first + rows - 1;
				if (last > (double)S)
					last = (double)S;
				keys = first <= last ? (first + last) * (last - first + 1) / 2 : 0;
			}
			t->flops = 4.0 * keys * (double)D;
			t->bytes = 2.0 * (double)S * D * ir_dtype_size(tk->dtype);
		}
}

/* Elementwise and row-wise ops: the tiles of whichever operand is tiled,
 * so each box waits on one producer; else row blocks (row ops: 16 KB, many
 * CTAs at once). */
void lower_elementwise(lower *L, int oi)
{
	const ir_prog *p = L->p;
	const ir_op *op = &p->ops[oi];
	char cls = ir_op_class(op->kind);
	ir_region *boxes = lower_boxes(L);
	if (!boxes)
		return;
	int n = 0;
	for (int k = 0; cls == 'E' && k < op->nin && n <= 0; k++)
		if (p->tensors[op->in[k]].ndim == p->tensors[op->out].ndim)
			n = lower_producer_boxes(L, op->in[k], boxes, IR_MAXCUTS);
	if (n <= 0)
		n = lower_row_boxes(L, op->out, cls == 'R' ? 16 * 1024 : 128 * 1024,
				    cls == 'R' ? 8 : 1, boxes, IR_MAXCUTS);
	if (n < 0) {
		diag_error(L->d, op->where, "'%s' has too many tiles", op->stage);
		L->err = 1;
		return;
	}
	const ir_tensor *to = &p->tensors[op->out];
	for (int i = 0; i < n; i++) {
		ir_task *t = lower_task(L, cls == 'R' ? TASK_ROW : TASK_EW, oi);
		if (!t)
			return;
		t->write = lower_retarget(boxes[i], op->out);
		lower_read(L, t, lower_retarget(boxes[i], op->in[0]));
		for (int k = 1; k < op->nin; k++) {
			const ir_tensor *x = &p->tensors[op->in[k]];
			if (x->ndim == to->ndim)
				lower_read(L, t, lower_retarget(boxes[i], op->in[k]));
			else
				lower_read(L, t, lower_full(p, op->in[k], 0));
		}
		double elems = lower_volume(&t->write, to->ndim);
		t->bytes = elems * (ir_dtype_size(to->dtype) +
				    op->nin * ir_dtype_size(p->tensors[op->in[0]].dtype));
		t->flops = elems * 4;
	}
}

/* Y = sum(X, last dim): a row-wise task per block of rows (the plan takes
 * sums over the last dimension only). */
void lower_sum(lower *L, int oi)
{
	const ir_prog *p = L->p;
	const ir_op *op = &p->ops[oi];
	const ir_tensor *x = &p->tensors[op->in[0]];
	ir_region *boxes = lower_boxes(L);
	if (!boxes)
		return;
	int n = lower_row_boxes(L, op->in[0], 64 * 1024, 1, boxes, IR_MAXCUTS);
	if (n < 0) {
		diag_error(L->d, op->where, "'%s' has too many tiles (more than %d row blocks)",
			   op->stage, IR_MAXCUTS);
		L->err = 1;
		return;
	}
	for (int i = 0; i < n; i++) {
		ir_task *t = lower_task(L, TASK_ROW, oi);
		if (!t)
			return;
		lower_read(L, t, boxes[i]);
		ir_region w = lower_retarget(boxes[i], op->out);
		for (int d = x->ndim - 1; d < IR_MAXDIM; d++)
			w.lo[d] = w.hi[d] = 0;
		t->write = w;
		t->bytes = lower_volume(&boxes[i], x->ndim) * ir_dtype_size(x->dtype);
	}
}
