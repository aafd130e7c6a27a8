/* lower_moe.c - the tasks of MoE dispatch and combine (mkd/moe.cuh).
 *
 * dispatch(X, idx, E, C): one route task per rank builds the rank's routing
 * table (the expansion's idx__route: offsets per expert, entries sorted by
 * expert, each entry's place); then one dispatch task per local expert and
 * block of slots, on the expert's owner, reads every rank's table and pulls
 * the rows routed to it from every rank's X (NVLink loads), in (rank,
 * token, choice) order, and zeroes the slots left.  A matmul tile of an
 * expert waits only for its own slots.  combine(Ye, idx, gate): per block
 * of token rows on the tokens' rank, the gate-weighted sum of the rows
 * their experts' owners computed (NVLink loads); it waits for every expert
 * tile of every rank.
 *
 * Between nodes (nodes > 1) a rank also packs, for each other node j, the
 * rows of its tokens with a choice there (pack tasks), sends them by RDMA to
 * the GPU of the same index on node j, and routes what it receives from
 * each node (one more route task per node); the experts' owners then pull
 * from every rank of their node both its own rows and what it received.
 * The combine sums, on the experts' node, each received token's rows of
 * that node's experts (combine tasks writing Y__part), sends the sums back
 * by RDMA (into the sender's Y__back), and each token's own combine adds
 * its node's experts and the sums returned.  Sources, the order every
 * bucket fills in: node offset s (0: this node's own tokens) major, GPU
 * minor.  The hidden tensors are the expansion's (expand.c, section 4).
 */
#include "tiles.h"

typedef struct moe_nodes {
	int pack, recv, rroute;   /* hidden tensors; -1 on one node */
} moe_nodes;

static moe_nodes nodes_of(const ir_op *op)
{
	return (moe_nodes){op->pack1 - 1, op->recv1 - 1, op->rroute1 - 1};
}

/* Slice s (index along dim 0) of hidden tensor t on rank q. */
static ir_region moe_slice(const ir_prog *p, int t, int q, int s)
{
	ir_region g = lower_full(p, t, q);
	g.lo[0] = s;
	g.hi[0] = s + 1;
	return g;
}

/* The RDMA write of slice j - 1 of `from` (what is meant for node +j) to
 * the GPU of the same index on node +j, where it is slice (nodes - j) - 1
 * of `to` (what came from node -j).  At run time only the count's rows go
 * (row 0 holds the count: the emitter's RDMA stage). */
static void moe_rdma_slice(lower *L, int oi, int from, int to, int j, double bytes)
{
	const ir_prog *p = L->p;
	ir_task *t = lower_task(L, TASK_RDMA, oi);
	if (!t)
		return;
	lower_read(L, t, moe_slice(p, from, 0, j - 1));
	t->write = moe_slice(p, to, j * p->gpus, p->nodes - j - 1);
	t->transport = TR_RDMA;
	t->bytes = bytes;
}

/* Reads of every source's routing table (and with `rows`, its rows) in
 * source order, on the ranks of this node. */
static void moe_source_reads(lower *L, ir_task *t, int R, int X, const moe_nodes *mn, int rows)
{
	const ir_prog *p = L->p;
	for (int s = 0; s < p->nodes; s++)
		for (int g = 0; g < p->gpus; g++) {
			if (s == 0) {
				lower_read(L, t, lower_full(p, R, g));
				if (rows)
					lower_read(L, t, lower_full(p, X, g));
				continue;
			}
			lower_read(L, t, moe_slice(p, mn->rroute, g, s - 1));
			if (rows)
				lower_read(L, t, moe_slice(p, mn->recv, g, s - 1));
		}
}

/* Between nodes: per other node, pack tasks (column blocks of 1024 words,
 * each choosing the same rows) and the RDMA of the packed slice; then the
 * routing table of what each node sent. */
static void dispatch_nodes(lower *L, int oi, const moe_nodes *mn)
{
	const ir_prog *p = L->p;
	const ir_op *op = &p->ops[oi];
	const int X = op->in[0], I = op->in[1];
	const ir_tensor *ix = &p->tensors[I];
	const int J = p->nodes - 1;
	const int64_t Tl = ix->local[0], N = ix->local[0] * ix->local[1];
	const int64_t W = p->tensors[mn->pack].local[2];
	const int gate = op->gate1 - 1;
	const int64_t cb = 1024;
	for (int j = 1; j <= J && !L->err; j++) {
		for (int64_t c0 = 0; c0 < W; c0 += cb) {
			ir_task *t = lower_task(L, TASK_PACK, oi);
			if (!t)
				return;
			lower_read(L, t, lower_full(p, I, 0));
			lower_read(L, t, lower_full(p, X, 0));
			if (gate >= 0)
				lower_read(L, t, lower_full(p, gate, 0));
			ir_region w = moe_slice(p, mn->pack, 0, j - 1);
			w.lo[2] = c0;
			w.hi[2] = c0 + cb < W ? c0 + cb : W;
			t->write = w;
			t->bytes = (double)Tl * (double)(w.hi[2] - w.lo[2]) * 4 / p->nodes * 2 +
				   (double)N * 4;
			t->transport = TR_LOCAL;
		}
		/* uniform routing: a node's share of the rows */
		moe_rdma_slice(L, oi, mn->pack, mn->recv, j, (double)Tl * (double)W * 4 / p->nodes);
	}
	for (int s2 = 1; s2 <= J && !L->err; s2++) {
		ir_task *t = lower_task(L, TASK_ROUTE, oi);
		if (!t)
			return;
		lower_read(L, t, moe_slice(p, mn->recv, 0, s2 - 1));
		t->write = moe_slice(p, mn->rroute, 0, s2 - 1);
		t->bytes = (double)N * 4 * 4;
		t->transport = TR_LOCAL;
	}
}

void lower_dispatch(lower *L, int oi)
{
	const ir_prog *p = L->p;
	const ir_op *op = &p->ops[oi];
	const int X = op->in[0], I = op->in[1], Xe = op->out, R = op->route1 - 1;
	const ir_tensor *ix = &p->tensors[I], *xe = &p->tensors[Xe];
	const int64_t E = xe->shape[0], C = xe->shape[1], H = xe->shape[2], El = xe->local[0];
	const int64_t N = ix->local[0] * ix->local[1];

	ir_task *t = lower_task(L, TASK_ROUTE, oi);
	if (!t)
		return;
	lower_read(L, t, lower_full(p, I, 0));
	t->write = lower_full(p, R, 0);
	t->bytes = (double)N * 4 * 4;
	t->transport = TR_LOCAL;

	const moe_nodes mn = nodes_of(op);
	if (p->nodes > 1)
		dispatch_nodes(L, oi, &mn);

	/* one task per expert and block of slots (the plan's block) */
	const double rows = (double)N * p->world / (double)E;  /* per expert, uniform routing */
	const int es = ir_dtype_size(xe->dtype);
	const int64_t step = op->plan.moe.block;
	ir_region w0 = lower_full(p, Xe, 0);
	for (int64_t e = 0; e < El && !L->err; e++)
		for (int64_t s0 = 0; s0 < C; s0 += step) {
			int64_t s1 = s0 + step < C ? s0 + step : C;
			t = lower_task(L, TASK_DISPATCH, oi);
			if (!t)
				return;
			moe_source_reads(L, t, R, X, &mn, 1);
			ir_region w = w0;
			w.lo[0] = w0.lo[0] + e;
			w.hi[0] = w.lo[0] + 1;
			w.lo[1] = s0;
			w.hi[1] = s1;
			t->write = w;
			t->transport = p->world > 1 ? TR_NVLINK : TR_LOCAL;
			double full = rows > (double)s1 ? (double)(s1 - s0)
				      : rows > (double)s0 ? rows - (double)s0 : 0;
			t->bytes = (2 * full + ((double)(s1 - s0) - full)) * (double)H * es;
		}
}

/* A combine task for this rank's tokens [t0, t1) (local rows): reads 0 and
 * 1 their ids and gates, the write their rows of the output. */
static ir_task *combine_block(lower *L, int oi, int64_t t0, int64_t t1)
{
	const ir_prog *p = L->p;
	const ir_op *op = &p->ops[oi];
	ir_task *t = lower_task(L, TASK_COMBINE, oi);
	if (!t)
		return NULL;
	ir_region a = lower_full(p, op->in[1], 0), g = lower_full(p, op->in[2], 0);
	ir_region w = lower_full(p, op->out, 0);
	const int64_t y0 = w.lo[0];
	a.lo[0] = g.lo[0] = w.lo[0] = y0 + t0;
	a.hi[0] = g.hi[0] = w.hi[0] = y0 + t1;
	lower_read(L, t, a);
	lower_read(L, t, g);
	t->write = w;
	return t;
}

/* combine between nodes: partial sums of the received rows on the
 * experts' node, sent back by RDMA, then each token block's own sum adds
 * them. */
static void combine_nodes(lower *L, int oi, int64_t step)
{
	const ir_prog *p = L->p;
	const ir_op *op = &p->ops[oi];
	const int Ye = op->in[0], I = op->in[1], Y = op->out, R = op->route1 - 1;
	const int part = op->part1 - 1, back = op->back1 - 1;
	const moe_nodes mn = nodes_of(op);
	const int J = p->nodes - 1;
	const int64_t Tl = p->tensors[I].local[0], k = p->tensors[I].local[1];
	const int64_t H = p->tensors[Y].shape[p->tensors[Y].ndim - 1];
	const int64_t F = p->tensors[Ye].shape[2];
	const int es = ir_dtype_size(p->tensors[Ye].dtype);
	/* (1) per received slice and block of its rows: the sums over this
	 * node's experts (row 0, with the first block: the count) */
	for (int s2 = 1; s2 <= J && !L->err; s2++)
		for (int64_t b0 = 0; b0 < Tl; b0 += step) {
			int64_t b1 = b0 + step < Tl ? b0 + step : Tl;
			ir_task *t = lower_task(L, TASK_COMBINE, oi);
			if (!t)
				return;
			lower_read(L, t, moe_slice(p, mn.recv, 0, s2 - 1));
			moe_source_reads(L, t, R, -1, &mn, 0);
			for (int g = 0; g < p->gpus; g++)
				lower_read(L, t, lower_full(p, Ye, g));
			ir_region w = moe_slice(p, part, 0, s2 - 1);
			w.lo[1] = b0 ? 1 + b0 : 0;
			w.hi[1] = 1 + b1;
			t->write = w;
			t->transport = TR_NVLINK;
			t->bytes = (double)(b1 - b0) / p->nodes * (double)(k * F * es + H * 4);
		}
	/* (2) each slice back to the node it came from (node +s sent slice
	 * s - 1; it lands in that node's slice for node -s) */
	for (int s2 = 1; s2 <= J && !L->err; s2++)
		moe_rdma_slice(L, oi, part, back, s2, (double)Tl * (double)H * 4 / p->nodes);
	/* (3) per block of this rank's tokens: this node's experts, plus the
	 * sums every other node returned */
	for (int64_t t0 = 0; t0 < Tl && !L->err; t0 += step) {
		int64_t t1 = t0 + step < Tl ? t0 + step : Tl;
		ir_task *t = combine_block(L, oi, t0, t1);
		if (!t)
			return;
		for (int gg = 0; gg < p->gpus; gg++)
			lower_read(L, t, lower_full(p, R, gg));
		for (int gg = 0; gg < p->gpus; gg++)
			lower_read(L, t, lower_full(p, Ye, gg));
		lower_read(L, t, lower_full(p, mn.pack, 0));
		lower_read(L, t, lower_full(p, back, 0));
		t->transport = TR_NVLINK;
		t->bytes = (double)(t1 - t0) * (double)(k * F * es / p->nodes + H * 4 * J +
							 H * ir_dtype_size(p->tensors[Y].dtype));
	}
}

void lower_combine(lower *L, int oi)
{
	const ir_prog *p = L->p;
	const ir_op *op = &p->ops[oi];
	const int Ye = op->in[0], I = op->in[1], Y = op->out, R = op->route1 - 1;
	const ir_tensor *ye = &p->tensors[Ye], *ix = &p->tensors[I];
	const int64_t Tl = ix->local[0], k = ix->local[1], F = ye->shape[2];
	const int64_t step = op->plan.moe.block;
	if (p->nodes > 1) {
		combine_nodes(L, oi, step);
		return;
	}
	for (int64_t t0 = 0; t0 < Tl && !L->err; t0 += step) {
		int64_t t1 = t0 + step < Tl ? t0 + step : Tl;
		ir_task *t = combine_block(L, oi, t0, t1);
		if (!t)
			return;
		lower_read(L, t, lower_full(p, R, 0));
		for (int q = 0; q < p->world; q++)
			lower_read(L, t, lower_full(p, Ye, q));
		t->transport = p->world > 1 ? TR_NVLINK : TR_LOCAL;
		t->bytes = (double)(t1 - t0) * (double)(k * F * ir_dtype_size(ye->dtype) +
							 F * ir_dtype_size(p->tensors[Y].dtype));
	}
}
