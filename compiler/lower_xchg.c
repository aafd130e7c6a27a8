/* lower_xchg.c - the tasks of exchange ops: gathers and explicit put
 * stages (copies over NVLink, RDMA writes between nodes), reductions, ring
 * shifts.
 *
 * Collectives expand by the mesh: NVLink (loads from the peer's memory)
 * among the GPUs of a node, RDMA only between nodes, and each byte crosses
 * the network once per node pair and GPU index: a shard goes to the GPU of
 * the same index on every other node, and that GPU's node peers pull it
 * from there over NVLink.
 */
#include "tiles.h"

/* Rows of one copy chunk of `box` (bytes from the op's chunk hint, else
 * dflt), aligned to the row tiles of a matmul that reads the result. */
static int64_t chunk_rows(const lower *L, const ir_op *op, const ir_region *box,
			  int elem, int64_t dflt)
{
	int64_t bytes = op->hints.chunk > 0 ? op->hints.chunk : dflt;
	int64_t rowb = elem;
	for (int d = 1; d < IR_MAXDIM && box->hi[d] > box->lo[d]; d++)
		rowb *= box->hi[d] - box->lo[d];
	int64_t rows = bytes / rowb;
	if (rows < 1)
		rows = 1;
	const ir_prog *p = L->p;
	for (int i = 0; i < p->nops; i++) {
		const ir_op *c = &p->ops[i];
		if (c->kind == OP_MATMUL && c->in[0] == op->out) {
			const int64_t bm = c->plan.mm.bm;
			if (rows >= bm)
				rows -= rows % bm;
			else
				while (bm % rows)
					rows--;
			break;
		}
	}
	return rows;
}

/* Cuts [dst.lo[0], dst.hi[0]) into chunks of `rows` rows; their count, or
 * -1 (reported) when there are too many. */
static int chunks(lower *L, const ir_op *op, const ir_region *dst, int64_t rows)
{
	const ir_tensor *x = &L->p->tensors[dst->tensor];
	int k = ir_cut(x, 0, dst->lo[0], dst->hi[0], rows, L->cut_lo, L->cut_hi, IR_MAXCUTS);
	if (k < 0) {
		diag_error(L->d, op->where, "'%s' has too many chunks; use a larger chunk",
			   op->stage);
		L->err = 1;
	}
	return k;
}

/* Chunks of `src` (region on rank `from`) copied into `dst` (on rank `to`),
 * run by rank 0. */
static void copy_chunks(lower *L, int oi, ir_taskkind kind, ir_transport tr,
			ir_region src, ir_region dst, int64_t dflt_chunk)
{
	const ir_prog *p = L->p;
	const ir_op *op = &p->ops[oi];
	const ir_tensor *x = &p->tensors[dst.tensor];
	int elem = ir_dtype_size(x->dtype);
	int k = chunks(L, op, &dst, chunk_rows(L, op, &dst, elem, dflt_chunk));
	for (int i = 0; i < k; i++) {
		ir_task *t = lower_task(L, kind, oi);
		if (!t)
			return;
		ir_region s = src, w = dst;
		int64_t off = L->cut_lo[i] - dst.lo[0];
		s.lo[0] = src.lo[0] + off;
		s.hi[0] = s.lo[0] + (L->cut_hi[i] - L->cut_lo[i]);
		w.lo[0] = L->cut_lo[i];
		w.hi[0] = L->cut_hi[i];
		lower_read(L, t, s);
		t->write = w;
		t->transport = tr;
		t->bytes = lower_volume(&w, x->ndim) * elem;
	}
}

/* Y = allgather(X, d), or an explicit put stage for a set of peers. */
void lower_gather(lower *L, int oi)
{
	const ir_prog *p = L->p;
	const ir_op *op = &p->ops[oi];
	int X = op->in[0], Y = op->out;
	const ir_tensor *tx = &p->tensors[X];
	ir_group g = tx->place.group;
	int d = tx->place.dim;
	int G = ir_group_size(p, g);
	ir_peers peers = op->kind == OP_PUT ? op->peers : PEERS_ALL;
	const int64_t nv_chunk = 256 * 1024, rd_chunk = 1024 * 1024;

	for (int s = 0; s < G && !L->err; s++) {
		int q = lower_shard_owner(p, g, s);
		int qn = q / p->gpus, qg = q % p->gpus;
		int remote = qn != 0;
		if ((peers == PEERS_NODE && remote) || (peers == PEERS_REMOTE && !remote))
			continue;
		ir_region dst = lower_full(p, Y, 0);
		dst.lo[d] = s * tx->local[d];
		dst.hi[d] = dst.lo[d] + tx->local[d];
		ir_region src = lower_full(p, X, q);
		if (!remote) {
			copy_chunks(L, oi, TASK_COPY, q == 0 ? TR_LOCAL : TR_NVLINK, src, dst,
				    nv_chunk);
			continue;
		}
		if (op->kind == OP_PUT) {
			/* explicit rdma stage: q writes its shard into everyone's Y */
			continue;
		}
		/* shard s arrived by RDMA at (0, qg); pull it from there */
		if (qg != 0) {
			ir_region via = dst;
			via.rank = qg;
			copy_chunks(L, oi, TASK_COPY, TR_NVLINK, via, dst, nv_chunk);
		}
	}
	/* RDMA: rank 0 sends its own shard to the GPU of the same index of every
	 * other node (allgather), or to every remote rank (explicit put). */
	if (p->nodes > 1 && peers != PEERS_NODE && g != GRP_GPUS) {
		ir_region src = lower_full(p, X, 0);
		for (int n = 1; n < p->nodes && !L->err; n++)
			for (int gg = 0; gg < p->gpus; gg++) {
				if (op->kind != OP_PUT && gg != 0)
					continue;
				ir_region dst = lower_full(p, Y, n * p->gpus + gg);
				dst.lo[d] = 0;
				dst.hi[d] = tx->local[d];
				copy_chunks(L, oi, TASK_RDMA, TR_RDMA, src, dst, rd_chunk);
			}
	}
}

/* The ranks of rank 0's group, in the order their partial sums of rank 0's
 * shard become ready (rank p computes shard s at position s - p in its own
 * shard-rotated order): 0, world-1, world-2, ... */
static int group_members(const ir_prog *p, ir_group g, int *m)
{
	int G = ir_group_size(p, g);
	for (int k = 0; k < G; k++) {
		int s = (G - k) % G;
		m[k] = lower_shard_owner(p, g, s);
		if (g == GRP_GPUS)
			m[k] = s;
	}
	return G;
}

/* Output boxes of a reduction: the producer's tiles of the input restricted
 * to rank 0's shard of the output, else row chunks. */
static int reduce_boxes(lower *L, int X, int Y, ir_region *out, int max)
{
	ir_region mine = lower_full(L->p, Y, 0);
	const ir_tensor *x = &L->p->tensors[X];
	int n = 0;
	for (int i = lower_writer(L, X, -1); i >= 0; i = lower_writer(L, X, i)) {
		const ir_task *k = &L->s->tasks[i];
		if (k->kind != TASK_MATMUL && k->kind != TASK_SUMK)
			continue;
		int inside = 1;
		for (int d = 0; d < x->ndim; d++)
			inside &= k->write.lo[d] >= mine.lo[d] && k->write.hi[d] <= mine.hi[d];
		if (!inside)
			continue;
		if (n == max)
			return -1;
		out[n] = lower_retarget(k->write, Y);
		n++;
	}
	if (n > 0)
		return n;
	return lower_row_boxes(L, Y, 64 * 1024, 1, out, max);
}

static ir_task *reduce_task(lower *L, int oi, ir_region box, int out, const int *src_rank,
			    const int *src_tensor, const ir_region *src_box, int nsrc)
{
	ir_task *t = lower_task(L, TASK_REDUCE, oi);
	if (!t)
		return NULL;
	t->write = lower_retarget(box, out);
	for (int k = 0; k < nsrc; k++) {
		ir_region g = src_box ? src_box[k] : box;
		g.tensor = src_tensor[k];
		g.rank = src_rank[k];
		lower_read(L, t, g);
	}
	double elems = lower_volume(&box, L->p->tensors[out].ndim);
	t->bytes = elems * ir_dtype_size(L->p->tensors[src_tensor[0]].dtype) * nsrc;
	t->flops = elems * nsrc;
	t->transport = nsrc > 1 ? TR_NVLINK : TR_LOCAL;
	return t;
}

/* Y = reduce_scatter(X, d): rank 0 sums its shard of X over its group.
 * One node: each reduce task pulls the same box from every member.
 * Several nodes (world group): (1) each rank sums, over its node, the
 * shards of every node's GPU of its own index into a node-partial T; (2)
 * RDMA sends T's shard of node n to that GPU of node n, into slot
 * (sender - receiver) mod nodes of a staging tensor S; (3) the owner adds
 * its own node-partial and the slots.  Each byte crosses the network once
 * per node pair.  T and S are the expansion's (ir_op.stage1, stage2); the
 * plan bounds the fan-in. */
void lower_reduce(lower *L, int oi)
{
	const ir_prog *p = L->p;
	const ir_op *op = &p->ops[oi];
	int X = op->in[0], Y = op->out;
	const ir_tensor *ty = &p->tensors[Y];
	ir_group g = ty->place.kind == PL_SPLIT ? ty->place.group : GRP_WORLD;
	ir_region *boxes = lower_boxes(L);
	int m[IR_MAXRANKS], st[IR_MAXRANKS];
	if (!boxes)
		return;
	int n = reduce_boxes(L, X, Y, boxes, IR_MAXCUTS);
	if (n < 0) {
		diag_error(L->d, op->where, "'%s' has too many chunks", op->stage);
		L->err = 1;
		return;
	}
	if (!op->stage1) {  /* one node, or a group of one node's GPUs */
		int G = group_members(p, g, m);
		for (int k = 0; k < G; k++)
			st[k] = X;
		for (int i = 0; i < n && !L->err; i++)
			reduce_task(L, oi, boxes[i], Y, m, st, NULL, G);
		return;
	}
	int d = ty->place.dim, N = p->nodes, Gp = p->gpus;
	int64_t u = ty->local[d];
	const int T = op->stage1 - 1, S = op->stage2 - 1;
	ir_region mine = lower_full(p, Y, 0);
	for (int k = 0; k < Gp; k++) {
		m[k] = (Gp - k) % Gp;
		st[k] = X;
	}
	/* (1) node-partials of the shard of GPU 0 on every node, own node last */
	for (int nn = 1; nn <= N && !L->err; nn++) {
		int node = nn % N;
		for (int i = 0; i < n; i++) {
			ir_region b = boxes[i];
			b.lo[d] += (int64_t)node * Gp * u - mine.lo[d];
			b.hi[d] += (int64_t)node * Gp * u - mine.lo[d];
			reduce_task(L, oi, b, T, m, st, NULL, Gp);
		}
	}
	/* (2) RDMA the node-partials to their owners' slots */
	for (int node = 1; node < N && !L->err; node++) {
		int dst = node * Gp, slot = (N - node) % N;
		for (int i = 0; i < n; i++) {
			ir_region src = boxes[i];
			src.tensor = T;
			src.rank = 0;
			src.lo[d] += (int64_t)node * Gp * u - mine.lo[d];
			src.hi[d] += (int64_t)node * Gp * u - mine.lo[d];
			ir_region w = boxes[i];
			w.tensor = S;
			w.rank = dst;
			w.lo[d] = boxes[i].lo[d] - mine.lo[d] + (int64_t)slot * u;
			w.hi[d] = boxes[i].hi[d] - mine.lo[d] + (int64_t)slot * u;
			ir_task *t = lower_task(L, TASK_RDMA, oi);
			if (!t)
				return;
			lower_read(L, t, src);
			t->write = w;
			t->transport = TR_RDMA;
			t->bytes = lower_volume(&w, ty->ndim) * ir_dtype_size(ty->dtype);
		}
	}
	/* (3) own node-partial + every other node's slot */
	int sr[IR_MAXRANKS], stt[IR_MAXRANKS];
	ir_region sb[IR_MAXREDUCE];
	for (int i = 0; i < n && !L->err; i++) {
		int k = 0;
		sr[k] = 0;
		stt[k] = T;
		sb[k++] = boxes[i];
		for (int slot = 1; slot < N; slot++) {
			sr[k] = 0;
			stt[k] = S;
			sb[k] = boxes[i];
			sb[k].lo[d] = boxes[i].lo[d] - mine.lo[d] + (int64_t)slot * u;
			sb[k].hi[d] = boxes[i].hi[d] - mine.lo[d] + (int64_t)slot * u;
			k++;
		}
		reduce_task(L, oi, boxes[i], Y, sr, stt, sb, k);
	}
}

/* Y = ring_shift(X): rank r receives rank r-1's piece. */
void lower_ring_shift(lower *L, int oi)
{
	const ir_prog *p = L->p;
	const ir_op *op = &p->ops[oi];
	if (p->nodes > 1 && p->gpus > 1) {
		diag_error(L->d, op->where,
			   "ring_shift over a %d x %d mesh: the ring by rank number is not symmetric "
			   "under the mesh's shifts; use a 1 x N or N x 1 mesh", p->nodes, p->gpus);
		L->err = 1;
		return;
	}
	int prev = p->world - 1;
	ir_region src = lower_full(p, op->in[0], prev);
	ir_region dst = lower_full(p, op->out, 0);
	const ir_tensor *x = &p->tensors[op->out];
	int k = chunks(L, op, &dst, chunk_rows(L, op, &dst, ir_dtype_size(x->dtype), 256 * 1024));
	ir_transport tr = p->world == 1 ? TR_LOCAL : p->nodes > 1 ? TR_RDMA : TR_NVLINK;
	for (int i = 0; i < k; i++) {
		ir_task *t = lower_task(L, tr == TR_RDMA ? TASK_RDMA : TASK_COPY, oi);
		if (!t)
			return;
		ir_region s2 = src, w = dst;
		s2.lo[0] = src.lo[0] + (L->cut_lo[i] - dst.lo[0]);
		s2.hi[0] = s2.lo[0] + (L->cut_hi[i] - L->cut_lo[i]);
		w.lo[0] = L->cut_lo[i];
		w.hi[0] = L->cut_hi[i];
		if (tr == TR_RDMA) {
			/* RDMA is posted by the sender: rank 0 writes its piece to rank 1
			 * (every dim moved: the split one need not be the rows) */
			const ir_region s0 = lower_full(p, op->in[0], 0);
			s2.rank = 0;
			w.rank = 1 % p->world;
			const ir_region d1 = lower_full(p, op->out, w.rank);
			for (int d = 0; d < x->ndim; d++) {
				s2.lo[d] -= src.lo[d] - s0.lo[d];
				s2.hi[d] -= src.lo[d] - s0.lo[d];
				w.lo[d] += d1.lo[d] - dst.lo[d];
				w.hi[d] += d1.lo[d] - dst.lo[d];
			}
		}
		lower_read(L, t, s2);
		t->write = w;
		t->transport = tr;
		t->bytes = lower_volume(&w, x->ndim) * ir_dtype_size(x->dtype);
	}
}
