/* lower_compute.c - the tasks of compute ops: matmul tiles, attention
 * query tiles, elementwise and row-wise boxes, sums over any dimension.  Sizes come from
 * each op's plan (plan.c). */
#include "plan.h"
#include "tiles.h"

/* Slice s of a split-K workspace [S, rows, cols] for the 2-D box c. */
static ir_region ksplit_slice(ir_region c, int work, int s)
{
	ir_region w = {.tensor = work, .rank = c.rank};
	w.lo[0] = s;
	w.hi[0] = s + 1;
	for (int d = 0; d < 2; d++) {
		w.lo[d + 1] = c.lo[d];
		w.hi[d + 1] = c.hi[d];
	}
	return w;
}

/* What a tile c of a matmul reads of its epilogue's operand x (an add or
 * mul fused into it): c's box of x, or of a bias (1-D) c's columns. */
static ir_region epi2_box(const ir_prog *p, int x, ir_region c)
{
	const ir_tensor *t = &p->tensors[x], *y = &p->tensors[c.tensor];
	ir_region g = c;
	g.tensor = x;
	if (t->ndim == 1) {
		g.lo[0] = c.lo[y->ndim - 1];
		g.hi[0] = c.hi[y->ndim - 1];
		for (int d = 1; d < IR_MAXDIM; d++)
			g.lo[d] = g.hi[d] = 0;
	}
	return g;
}

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
	const int cw = mp->tiles_n, S = mp->ksplit > 1 ? mp->ksplit : 1;
	const int es = ir_dtype_size(p->tensors[op->in[0]].dtype);
	/* device memory: A, B and C once (L2 serves the tiles that share a
	 * band of A or a slab of B), the workspace written and read back */
	const int xi = op->nin > 2 ? op->in[2] : -1;  /* the epilogue's operand */
	const int gw = op->gate - 1;  /* a gate-up tile's second weight (expand.c), -1 */
	const int nw = op->norm_w - 1;  /* the weight of an rmsnorm in the tile, -1 */
	const double hbm = ((double)ir_tensor_bytes(&p->tensors[op->in[0]]) +
			    (nw >= 0 ? (double)ir_tensor_bytes(&p->tensors[nw]) : 0) +
			    (double)ir_tensor_bytes(&p->tensors[op->in[1]]) +
			    (gw >= 0 ? (double)ir_tensor_bytes(&p->tensors[gw]) : 0) +
			    (double)ir_tensor_bytes(C) +
			    (xi >= 0 ? (double)ir_tensor_bytes(&p->tensors[xi]) : 0) +
			    (S > 1 ? 2.0 * (double)ir_tensor_bytes(&p->tensors[mp->work]) : 0)) /
			   ((double)nb * ntask * S);
	/* split-K: every tile's partials first (slice s of the workspace), then
	 * the sums, which the scheduler places once their partials are done */
	for (int pass = 0; pass < (S > 1 ? 2 : 1); pass++)
	for (int64_t e = 0; e < nb; e++)
		for (int q = 0; q < ntask; q++) {
			int i = order[2 * q] / nn, j = order[2 * q] % nn, ie = order[2 * q + 1] - 1;
			int je = j + cw - 1 < nn - 1 ? j + cw - 1 : nn - 1;
			ir_region a = ar, bb = br, c = cr;
			if (b) {
				a.lo[0] = bb.lo[0] = c.lo[0] = cr.lo[0] + e;
				a.hi[0] = bb.hi[0] = c.hi[0] = cr.lo[0] + e + 1;
			}
			a.lo[b] = c.lo[b] = ml[i];
			a.hi[b] = c.hi[b] = mh[ie];
			bb.lo[b + 1] = c.lo[b + 1] = nl[j];
			bb.hi[b + 1] = c.hi[b + 1] = nh[je];
			const double rows = (double)(mh[ie] - ml[i]), cols = (double)(nh[je] - nl[j]);
			if (pass == 1) {  /* the sum of this tile's partials */
				ir_task *t = lower_task(L, TASK_SUMK, oi);
				if (!t)
					return;
				ir_region all = ksplit_slice(c, mp->work, 0);
				all.hi[0] = S;  /* every slice: one wait for the S partials */
				lower_read(L, t, all);
				if (xi >= 0)  /* the epilogue's operand, the tile's box */
					lower_read(L, t, epi2_box(p, xi, c));
				t->write = c;
				t->bytes = rows * cols * (4.0 * S + ir_dtype_size(C->dtype) +
							  (xi >= 0 ? ir_dtype_size(p->tensors[xi].dtype) : 0));
				t->flops = rows * cols * S;
				continue;
			}
			for (int s = 0; s < S; s++) {
				ir_task *t = lower_task(L, S > 1 ? TASK_MMPART : TASK_MATMUL, oi);
				if (!t)
					return;
				ir_region as = a, bs = bb;
				int64_t k0 = ar.lo[b + 1] + s * mp->kstep, k1 = k0 + mp->kstep;
				if (S > 1) {
					if (k1 > ar.hi[b + 1])
						k1 = ar.hi[b + 1];
					as.lo[b + 1] = bs.lo[b] = k0;
					as.hi[b + 1] = bs.hi[b] = k1;
				}
				lower_read(L, t, as);
				lower_read(L, t, bs);
				if (xi >= 0 && S == 1)  /* the epilogue's operand */
					lower_read(L, t, epi2_box(p, xi, c));
				if (gw >= 0) {  /* the gate's weight, B's box of it (no split-K) */
					bs.tensor = gw;
					lower_read(L, t, bs);
				}
				if (nw >= 0)  /* the rmsnorm's weight: all of it (no split-K) */
					lower_read(L, t, lower_full(p, nw, 0));
				t->write = S > 1 ? ksplit_slice(c, mp->work, s) : c;
				const double kk = S > 1 ? (double)(k1 - k0) : (double)K, nwt = gw >= 0 ? 2 : 1;
				t->flops = 2.0 * rows * cols * kk * nwt;
				t->bytes = (rows + nwt * cols + (nw >= 0 ? 1 : 0)) * kk * es;
				t->hbm = hbm;
			}
		}
}

/* Under causal masking the row at position x sees the keys at 0..x: the
 * number of keys of [r0, r0 + n) that rows x0 .. x0 + rows - 1 see. */
static double causal_keys(double x0, double rows, double r0, double n)
{
	double a = x0 + 1 - r0, b = a + rows - 1;  /* the first and last row's count */
	double lo = a < 1 ? 1 : a, hi = b > n ? n : b;
	double sum = lo <= hi ? (lo + hi) * (hi - lo + 1) / 2 : 0;
	if (b > n)  /* rows past the range see all of it */
		sum += (b - (a > n ? a - 1 : n)) * n;
	return sum;
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
	const ir_attn_plan *ap = &op->plan.attn;
	const int NS = ap->kvsplit > 1 ? ap->kvsplit : 1;  /* split-KV ranges */
	const int64_t Sq = tq->shape[sd];  /* whole: the plan splits only then */
	/* causal: the tiles of later queries see more keys; they come first, so
	 * that the list scheduler places the long tasks before the short ones.
	 * Split-KV: every tile's partials first, then the merges. */
	for (int pass = 0; pass < (NS > 1 ? 2 : 1); pass++)
	for (int ii = 0; ii < nc && !L->err; ii++)
		for (int64_t h = 0; h < heads && !L->err; h++) {
			int i = op->causal ? nc - 1 - ii : ii;
			ir_region q = qfull;
			if (sd) {
				q.lo[0] = qfull.lo[0] + h;
				q.hi[0] = q.lo[0] + 1;
			}
			q.lo[sd] = L->cut_lo[i];
			q.hi[sd] = L->cut_hi[i];
			const double rows = (double)(q.hi[sd] - q.lo[sd]);
			/* the tile's rows of the workspace [S, heads x queries, D + 2]
			 * (logical: head times queries plus the query) */
			ir_region wk = {.tensor = ap->work, .rank = 0};
			wk.lo[1] = (sd ? q.lo[0] : 0) * Sq + q.lo[sd];
			wk.hi[1] = wk.lo[1] + (q.hi[sd] - q.lo[sd]);
			wk.hi[2] = D + 2;
			if (pass == 1) {
				ir_task *t = lower_task(L, TASK_ATTNSUM, oi);
				if (!t)
					return;
				wk.hi[0] = NS;
				lower_read(L, t, wk);
				t->write = lower_retarget(q, O);
				t->bytes = rows * (double)(D + 2) * 4 * NS + rows * (double)D *
					   ir_dtype_size(p->tensors[O].dtype);
				t->flops = rows * (double)D * 3 * NS;
				continue;
			}
			for (int s = 0; s < NS; s++) {
				ir_task *t = lower_task(L, NS > 1 ? TASK_ATTNPART : TASK_ATTN, oi);
				if (!t)
					return;
				lower_read(L, t, q);
				/* key blocks in arrival order: own shard first, then the rest
				 * (the order the allgather pulls them in); split-KV: one range
				 * of the local keys */
				int64_t k0 = kfull.lo[sd], k1 = kfull.hi[sd];
				if (NS > 1) {
					k0 = kfull.lo[sd] + s * ap->kvstep;
					k1 = k0 + ap->kvstep < kfull.hi[sd] ? k0 + ap->kvstep : kfull.hi[sd];
				}
				for (int b = 0; b < (NS > 1 ? 1 : G); b++) {
					ir_region kb = kfull;
					if (sd) {
						kb.lo[0] = q.lo[0];
						kb.hi[0] = q.hi[0];
					}
					kb.lo[sd] = NS > 1 ? k0 : kfull.lo[sd] + b * blk;
					kb.hi[sd] = NS > 1 ? k1 : kb.lo[sd] + blk;
					lower_read(L, t, kb);
					kb.tensor = V;
					lower_read(L, t, kb);
				}
				if (NS > 1) {
					ir_region w = wk;
					w.lo[0] = s;
					w.hi[0] = s + 1;
					t->write = w;
				} else {
					t->write = lower_retarget(q, O);
				}
				/* keys the rows see: all of [k0, k1), or under causal those
				 * up to each row's position */
				const double nk = (double)(k1 - k0);
				const double keys = op->causal ? causal_keys((double)(q.lo[sd] - kfull.lo[sd]),
									   rows, (double)(k0 - kfull.lo[sd]), nk)
							       : rows * nk;
				t->flops = 4.0 * keys * (double)D;
				t->bytes = 2.0 * nk * D * ir_dtype_size(tk->dtype);
				/* K and V of the range once for the head's nc query tiles
				 * (the L2 serves the others, as a matmul's B slab: at
				 * S = 16384 the causal tiles of 8 heads hit it 85%, device
				 * memory 4% busy), the tile's Q rows, and its output
				 * (split-KV: fp32 with the max and sum) */
				t->hbm = t->bytes / nc + rows * (double)D * ir_dtype_size(tq->dtype) +
					 rows * (NS > 1 ? (double)(D + 2) * 4
							: (double)D * ir_dtype_size(p->tensors[O].dtype));
			}
		}
}

/* Elementwise and row-wise ops: the tiles of whichever operand is tiled,
 * so each box waits on one producer; else row blocks (elementwise: 128 KB;
 * row ops: the rows a task their plan says, plan.c plan_rows). */
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
		n = cls == 'R' ? lower_row_boxes(L, op->out, 0, op->plan.rows, boxes, IR_MAXCUTS)
			       : lower_row_boxes(L, op->out, 128 * 1024, 1, boxes, IR_MAXCUTS);
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
			if (x->ndim == to->ndim && op->kind != OP_ROPE)
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

/* Y = sum(X, d).  Over the last dimension: a row-wise task per block of
 * rows.  Over another: a task per box of Y (a block of Y's rows and of its
 * columns, each index of the dims before them apart), reading X's box of
 * the same coordinates with all of this rank's dim d. */
void lower_sum(lower *L, int oi)
{
	const ir_prog *p = L->p;
	const ir_op *op = &p->ops[oi];
	const ir_tensor *x = &p->tensors[op->in[0]], *y = &p->tensors[op->out];
	const int d = op->dim;
	ir_region *boxes = lower_boxes(L);
	if (!boxes)
		return;
	int n;
	if (d == x->ndim - 1)
		n = lower_row_boxes(L, op->in[0], 64 * 1024, 1, boxes, IR_MAXCUTS);
	else {
		/* Y's boxes: about 64 KB of X each, at most 256 columns wide */
		const int cd = y->ndim - 1;
		int64_t cols = y->local[cd] < 256 ? y->local[cd] : 256;
		int64_t rows = 64 * 1024 / (cols * x->local[d] * ir_dtype_size(x->dtype));
		n = lower_grid_boxes(L, op->out, rows < 1 ? 1 : rows, cols, boxes, IR_MAXCUTS);
	}
	if (n < 0) {
		diag_error(L->d, op->where, "'%s' has too many tiles (more than %d %sblocks)",
			   op->stage, IR_MAXCUTS, d == x->ndim - 1 ? "row " : "");
		L->err = 1;
		return;
	}
	const ir_region xf = lower_full(p, op->in[0], 0);
	for (int i = 0; i < n; i++) {
		ir_task *t = lower_task(L, TASK_ROW, oi);
		if (!t)
			return;
		ir_region r, w;
		if (d == x->ndim - 1) {
			r = boxes[i];
			w = lower_retarget(boxes[i], op->out);
			for (int k = x->ndim - 1; k < IR_MAXDIM; k++)
				w.lo[k] = w.hi[k] = 0;
		} else {
			w = boxes[i];
			r = lower_retarget(w, op->in[0]);
			for (int k = 0; k < x->ndim; k++) {
				int j = k < d ? k : k - 1;   /* Y's dim of X's dim k */
				r.lo[k] = k == d ? xf.lo[d] : w.lo[j];
				r.hi[k] = k == d ? xf.hi[d] : w.hi[j];
			}
		}
		lower_read(L, t, r);
		t->write = w;
		t->bytes = lower_volume(&r, x->ndim) * ir_dtype_size(x->dtype);
	}
}
