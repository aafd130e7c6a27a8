/* lower.c - the tile graph: a checked pipeline becomes rank 0's tasks.
 *
 * Every op is cut into tasks (a matmul tile, an elementwise box, a chunk to
 * copy from a peer, an RDMA write), each with the exact regions it reads and
 * the one it writes.  Only rank 0's tasks are made; rank r runs their image
 * under sigma_r (ir.h).  For that to be right, every coordinate tied to a
 * rank's shard must move with the rank: assign_rotations() finds those
 * dimensions (a union-find over tensor dimensions that ops identify, seeded
 * by the splits) and records them in ir_tensor.rot.
 *
 * Collectives expand by the mesh: NVLink (loads from the peer's memory)
 * among the GPUs of a node, RDMA only between nodes, and each byte crosses
 * the network once per node pair and GPU index: a shard goes to the GPU of
 * the same index on every other node, and that GPU's node peers pull it
 * from there over NVLink.
 */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "compile.h"
#include "costmodel.h"

typedef struct lower {
	ir_prog *p;
	const compile_opts *o;
	diags *d;
	arena *a;
	ir_sched *s;
	int cap;
	int err;
} lower;

/* ---- rotations ---------------------------------------------------------- */

typedef struct uf {
	int *parent;
	ir_rot *seed;
	int *seeded;
} uf;

static int uf_find(uf *u, int x)
{
	while (u->parent[x] != x) {
		u->parent[x] = u->parent[u->parent[x]];
		x = u->parent[x];
	}
	return x;
}

static void uf_union(uf *u, int a, int b)
{
	a = uf_find(u, a);
	b = uf_find(u, b);
	if (a != b)
		u->parent[a] = b;
}

#define DIMNODE(t, d) ((t) * IR_MAXDIM + (d))

static void tie_all(uf *u, const ir_prog *p, int a, int b)
{
	const ir_tensor *ta = &p->tensors[a], *tb = &p->tensors[b];
	if (ta->ndim != tb->ndim)
		return;
	for (int d = 0; d < ta->ndim; d++)
		uf_union(u, DIMNODE(a, d), DIMNODE(b, d));
}

static const char *group_name(ir_group g)
{
	return g == GRP_GPUS ? "gpus" : g == GRP_NODES ? "nodes" : "world";
}

static int group_size(const ir_prog *p, ir_group g)
{
	return g == GRP_GPUS ? p->gpus : g == GRP_NODES ? p->nodes : p->world;
}

static void seed(lower *L, uf *u, int t, int d, ir_rot r, span where)
{
	int c = uf_find(u, DIMNODE(t, d));
	if (!u->seeded[c]) {
		u->seeded[c] = 1;
		u->seed[c] = r;
	} else if (u->seed[c].unit != r.unit || u->seed[c].group != r.group) {
		diag_error(L->d, where,
			   "dimension %d of '%s' is tied to shards of %lld over %s and of %lld over %s; "
			   "mkc needs one shard layout per dimension",
			   d, L->p->tensors[t].name, (long long)u->seed[c].unit,
			   group_name(u->seed[c].group), (long long)r.unit, group_name(r.group));
		L->err = 1;
	}
}

static void assign_rotations(lower *L)
{
	ir_prog *p = L->p;
	int n = p->ntensors * IR_MAXDIM;
	uf u = {arena_alloc(L->a, (size_t)n * sizeof(int)),
		arena_alloc(L->a, (size_t)n * sizeof(ir_rot)),
		arena_alloc(L->a, (size_t)n * sizeof(int))};
	if (!u.parent || !u.seed || !u.seeded)
		return;
	for (int i = 0; i < n; i++)
		u.parent[i] = i;

	for (int i = 0; i < p->nops; i++) {
		const ir_op *op = &p->ops[i];
		int o = op->out;
		const ir_tensor *to = &p->tensors[o];
		switch (op->kind) {
		case OP_MATMUL: {
			int A = op->in[0], B = op->in[1];
			int b = to->ndim == 3;  /* batched: dim 0 is the batch */
			if (b) {
				uf_union(&u, DIMNODE(A, 0), DIMNODE(o, 0));
				uf_union(&u, DIMNODE(B, 0), DIMNODE(o, 0));
			}
			uf_union(&u, DIMNODE(A, b + 0), DIMNODE(o, b + 0));
			uf_union(&u, DIMNODE(B, b + 1), DIMNODE(o, b + 1));
			uf_union(&u, DIMNODE(A, b + 1), DIMNODE(B, b + 0));
			break;
		}
		case OP_ADD:
		case OP_MUL:
		case OP_RMSNORM:
			tie_all(&u, p, op->in[0], o);
			if (op->nin > 1) {
				const ir_tensor *t1 = &p->tensors[op->in[1]];
				if (t1->ndim == to->ndim)
					tie_all(&u, p, op->in[1], o);
				else if (t1->ndim == 1)
					uf_union(&u, DIMNODE(op->in[1], 0), DIMNODE(o, to->ndim - 1));
			}
			break;
		case OP_SUM:
			break;
		case OP_DISPATCH:  /* tokens with their routing */
			uf_union(&u, DIMNODE(op->in[0], 0), DIMNODE(op->in[1], 0));
			break;
		case OP_COMBINE:   /* routing, gates and result share the tokens */
			uf_union(&u, DIMNODE(op->in[1], 0), DIMNODE(o, 0));
			uf_union(&u, DIMNODE(op->in[2], 0), DIMNODE(o, 0));
			break;
		default:
			for (int k = 0; k < op->nin; k++)
				tie_all(&u, p, op->in[k], o);
			break;
		}
	}
	for (int t = 0; t < p->ntensors; t++) {
		const ir_tensor *x = &p->tensors[t];
		if (x->place.kind == PL_SPLIT && group_size(p, x->place.group) > 1)
			seed(L, &u, t, x->place.dim,
			     (ir_rot){x->local[x->place.dim], x->place.group}, x->where);
	}
	/* allreduce: rank r reduces and gathers chunk r of dim 0 */
	for (int i = 0; i < p->nops; i++) {
		const ir_op *op = &p->ops[i];
		if (op->kind != OP_ALLREDUCE || p->world == 1)
			continue;
		const ir_tensor *t = &p->tensors[op->out];
		if (t->shape[0] % p->world) {
			diag_error(L->d, op->where,
				   "allreduce splits dimension 0 of '%s' (%lld) over world (%d) ranks: "
				   "it must be divisible",
				   t->name, (long long)t->shape[0], p->world);
			L->err = 1;
			continue;
		}
		int c = uf_find(&u, DIMNODE(op->out, 0));
		if (!u.seeded[c])
			seed(L, &u, op->out, 0, (ir_rot){t->shape[0] / p->world, GRP_WORLD}, op->where);
	}
	for (int t = 0; t < p->ntensors; t++)
		for (int d = 0; d < p->tensors[t].ndim; d++) {
			int c = uf_find(&u, DIMNODE(t, d));
			if (u.seeded[c])
				p->tensors[t].rot[d] = u.seed[c];
		}
}

/* ---- tasks -------------------------------------------------------------- */

static ir_task *new_task(lower *L, ir_taskkind k, int op)
{
	ir_sched *s = L->s;
	if (s->ntasks == L->cap) {
		int nc = L->cap ? L->cap * 2 : 256;
		ir_task *nt = arena_alloc(L->a, (size_t)nc * sizeof *nt);
		if (!nt) {
			L->err = 1;
			return NULL;
		}
		if (s->ntasks)
			memcpy(nt, s->tasks, (size_t)s->ntasks * sizeof *nt);
		s->tasks = nt;
		L->cap = nc;
	}
	ir_task *t = &s->tasks[s->ntasks];
	memset(t, 0, sizeof *t);
	t->id = s->ntasks++;
	t->kind = k;
	t->op = op;
	t->role = -1;
	t->cta = -1;
	t->write.tensor = -1;
	return t;
}

/* Rank 0's whole local piece of tensor t (its shard starts at 0). */
static ir_region full_region(const ir_prog *p, int t, int rank)
{
	const ir_tensor *x = &p->tensors[t];
	ir_region g = {.tensor = t, .rank = rank};
	for (int d = 0; d < x->ndim; d++) {
		g.lo[d] = ir_shard_base(x, d, rank, p->nodes, p->gpus);
		g.hi[d] = g.lo[d] + x->local[d];
	}
	return g;
}

static void add_read(lower *L, ir_task *t, ir_region g)
{
	if (t->nreads == t->maxreads) {
		int nc = t->maxreads ? 2 * t->maxreads : 4;
		ir_region *r = arena_alloc(L->a, (size_t)nc * sizeof *r);
		int *w = arena_alloc(L->a, (size_t)nc * sizeof *w);
		if (!r || !w) {
			L->err = 1;
			return;
		}
		if (t->nreads) {
			memcpy(r, t->reads, (size_t)t->nreads * sizeof *r);
			memcpy(w, t->read_wait, (size_t)t->nreads * sizeof *w);
		}
		t->reads = r;
		t->read_wait = w;
		t->maxreads = nc;
	}
	t->read_wait[t->nreads] = -1;
	t->reads[t->nreads++] = g;
}

/* Cuts [lo, hi) of dimension d of tensor t into pieces of at most `step`,
 * never across a shard boundary of a rotated dimension.  Returns the count;
 * cuts[] gets count+... pairs. */
static int cut_dim(const ir_tensor *x, int d, int64_t lo, int64_t hi, int64_t step,
		   int64_t *cl, int64_t *ch, int max)
{
	int64_t unit = x->rot[d].unit > 0 ? x->rot[d].unit : (hi - lo);
	if (step <= 0)
		step = hi - lo;
	int n = 0;
	for (int64_t s0 = lo; s0 < hi; s0 += unit) {
		int64_t s1 = s0 + unit < hi ? s0 + unit : hi;
		for (int64_t a = s0; a < s1; a += step) {
			if (n == max)
				return -1;
			cl[n] = a;
			ch[n] = a + step < s1 ? a + step : s1;
			n++;
		}
	}
	return n;
}

#define MAXCUTS 65536

static int64_t *cut_lo, *cut_hi;   /* scratch, per lowering */

static int elem_bytes(const ir_prog *p, int t) { return ir_dtype_size(p->tensors[t].dtype); }

/* Tiles per task of a matmul with nb x nm x nn tiles (batch, rows,
 * columns) and at most cap tasks: cw column tiles first, then rb row
 * tiles. */
static void mm_group(int64_t cap, int64_t nb, int64_t nm, int64_t nn, int64_t *rb, int64_t *cw)
{
	*rb = *cw = 1;
	if (nb * nm * nn <= cap)
		return;
	int64_t c = (nb * nm * nn + cap - 1) / cap;
	*cw = c < nn ? c : nn;
	int64_t left = nb * nm * ((nn + *cw - 1) / *cw);
	if (left > cap) {
		int64_t r = (left + cap - 1) / cap;
		*rb = r < nm ? r : nm;
	}
}

/* matmul: C[m0:m1, n0:n1] = A[m0:m1, :] @ B[:, n0:n1], batched over dim 0
 * when the operands are 3-D. */
static void lower_matmul(lower *L, int oi)
{
	ir_prog *p = L->p;
	const ir_op *op = &p->ops[oi];
	const ir_tensor *C = &p->tensors[op->out];
	int b = C->ndim == 3;
	ir_region cr = full_region(p, op->out, 0);
	ir_region ar = full_region(p, op->in[0], 0);
	ir_region br = full_region(p, op->in[1], 0);
	int64_t K = ar.hi[b + 1] - ar.lo[b + 1];
	ir_mm_plan mp;
	ir_mm_plan_of(p, op, L->s->dev.smem_per_sm, &mp);
	int64_t bm = mp.bm, bn = mp.bn;
	int64_t nb = b ? cr.hi[0] - cr.lo[0] : 1;
	int64_t *ml = cut_lo, *mh = cut_hi;
	int nm = cut_dim(C, b, cr.lo[b], cr.hi[b], bm, ml, mh, MAXCUTS / 2);
	int64_t *nl = cut_lo + MAXCUTS / 2, *nh = cut_hi + MAXCUTS / 2;
	int nn = cut_dim(C, b + 1, cr.lo[b + 1], cr.hi[b + 1], bn, nl, nh, MAXCUTS / 2);
	if (nm < 0 || nn < 0) {
		diag_error(L->d, op->where, "matmul '%s' has too many tiles; use a larger tile",
			   op->stage);
		L->err = 1;
		return;
	}
	/* A task covers rb row tiles by cw column tiles when the op would
	 * otherwise make more tasks than its `tasks` hint allows (default
	 * IR_MM_TASKS: the task tables are compiled into the kernel): whole rows of
	 * column tiles first, then several row tiles.  The stage walks its box
	 * tile by tile. */
	enum { GROUP = 8 };
	if ((int64_t)nm * nn > (1 << 22)) {
		diag_error(L->d, op->where, "matmul '%s' has %lld tiles; use a larger tile", op->stage,
			   (long long)nm * nn);
		L->err = 1;
		return;
	}
	int64_t cap = op->hints.tasks ? op->hints.tasks : IR_MM_TASKS, rb, cw;
	mm_group(cap, nb, nm, nn, &rb, &cw);
	p->ops[oi].tiles_m = (int)rb;
	p->ops[oi].tiles_n = (int)cw;
	/* L2-friendly order: bands of GROUP row tiles (or of rb), column by
	 * column inside a band, so the CTAs busy at once share a few row blocks
	 * of A and a few column blocks of B.  Bands never cross a shard
	 * boundary, so the rows that arrive first (the rank's own shard) still
	 * come first.  A row group never crosses a band. */
	const int64_t group = rb > GROUP ? rb : GROUP;
	int *order = arena_alloc(L->a, (size_t)(nm * nn > 0 ? nm * nn : 1) * 2 * sizeof(int));
	if (!order) {
		L->err = 1;
		return;
	}
	int64_t unit = C->rot[b].unit > 0 ? C->rot[b].unit : INT64_MAX;
	int ntask = 0;  /* (first row tile, last row tile + 1), first column tile */
	for (int i0 = 0; i0 < nm;) {
		int i1 = i0;
		while (i1 < nm && i1 - i0 < group && (ml[i1] - cr.lo[b]) / unit == (ml[i0] - cr.lo[b]) / unit)
			i1++;
		for (int j = 0; j < nn; j += (int)cw)
			for (int i = i0; i < i1; i += (int)rb) {
				order[2 * ntask] = i * nn + j;
				order[2 * ntask + 1] = (int)(i + rb < i1 ? i + rb : i1);
				ntask++;
			}
		i0 = i1;
	}
	if (nb * ntask > cap) {
		diag_error(L->d, op->hints.tasks ? op->hints.tasks_where : op->where,
			   "matmul '%s' needs at least %lld tasks (one per row band%s), over "
			   "its bound of %lld", op->stage, (long long)(nb * ntask),
			   b ? " and batch entry" : "", (long long)cap);
		L->err = 1;
		return;
	}
	for (int64_t e = 0; e < nb; e++)
		for (int q = 0; q < ntask; q++) {
			int i = order[2 * q] / nn, j = order[2 * q] % nn, ie = order[2 * q + 1] - 1;
			int je = j + (int)cw - 1 < nn - 1 ? j + (int)cw - 1 : nn - 1;
			ir_task *t = new_task(L, TASK_MATMUL, oi);
			if (!t)
				return;
			{
				ir_region a = ar, bb = br, c = cr;
				if (b) {
					a.lo[0] = bb.lo[0] = c.lo[0] = cr.lo[0] + e;
					a.hi[0] = bb.hi[0] = c.hi[0] = cr.lo[0] + e + 1;
				}
				a.lo[b] = c.lo[b] = ml[i];
				a.hi[b] = c.hi[b] = mh[ie];
				bb.lo[b + 1] = c.lo[b + 1] = nl[j];
				bb.hi[b + 1] = c.hi[b + 1] = nh[je];
				add_read(L, t, a);
				add_read(L, t, bb);
				t->write = c;
				t->flops = 2.0 * (double)(mh[ie] - ml[i]) * (double)(nh[je] - nl[j]) * (double)K;
				t->bytes = (double)((mh[ie] - ml[i]) + (nh[je] - nl[j])) * (double)K *
					   elem_bytes(p, op->in[0]);
			}
		}
}

/* The boxes that tile tensor t's rank-0 piece when its producer is tiled:
 * reuse the producer's write boxes, so a consumer waits on one producer. */
static int producer_boxes(lower *L, int t, ir_region *out, int max)
{
	int n = 0;
	for (int i = 0; i < L->s->ntasks; i++) {
		const ir_task *k = &L->s->tasks[i];
		if (k->write.tensor == t && k->write.rank == 0 &&
		    (k->kind == TASK_MATMUL || k->kind == TASK_EW)) {
			if (n == max)
				return -1;
			out[n++] = k->write;
		}
	}
	return n;
}

/* Row blocks of about `bytes` each over tensor t's rank-0 piece. */
static int row_boxes(lower *L, int t, int64_t bytes, int64_t minrows, ir_region *out, int max)
{
	const ir_prog *p = L->p;
	const ir_tensor *x = &p->tensors[t];
	ir_region full = full_region(p, t, 0);
	int rd = x->ndim >= 2 ? x->ndim - 2 : 0;   /* the row dimension */
	int64_t rowb = ir_dtype_size(x->dtype);
	for (int d = rd + 1; d < x->ndim; d++)
		rowb *= x->local[d];
	int64_t rows = bytes / (rowb ? rowb : 1);
	if (rows < minrows)
		rows = minrows;
	int64_t outer = 1;
	for (int d = 0; d < rd; d++)
		outer *= x->local[d];
	int n = 0;
	for (int64_t e = 0; e < outer; e++) {
		int k = cut_dim(x, rd, full.lo[rd], full.hi[rd], rows, cut_lo, cut_hi, MAXCUTS);
		if (k < 0 || n + k > max)
			return -1;
		for (int i = 0; i < k; i++) {
			ir_region g = full;
			if (rd == 1) {
				g.lo[0] = full.lo[0] + e;
				g.hi[0] = g.lo[0] + 1;
			}
			g.lo[rd] = cut_lo[i];
			g.hi[rd] = cut_hi[i];
			out[n++] = g;
		}
	}
	return n;
}

static ir_region retarget(ir_region g, int tensor)
{
	g.tensor = tensor;
	return g;
}

static void lower_elementwise(lower *L, int oi)
{
	ir_prog *p = L->p;
	const ir_op *op = &p->ops[oi];
	char cls = ir_op_class(op->kind);
	ir_region *boxes = arena_alloc(L->a, MAXCUTS * sizeof *boxes);
	if (!boxes) {
		L->err = 1;
		return;
	}
	/* the tiles of whichever operand is tiled, so each box waits on one
	 * producer; else row blocks (row ops: 16 KB, many CTAs at once) */
	int n = 0;
	for (int k = 0; cls == 'E' && k < op->nin && n <= 0; k++)
		if (p->tensors[op->in[k]].ndim == p->tensors[op->out].ndim)
			n = producer_boxes(L, op->in[k], boxes, MAXCUTS);
	if (n <= 0)
		n = row_boxes(L, op->out, cls == 'R' ? 16 * 1024 : 128 * 1024,
			      cls == 'R' ? 8 : 1, boxes, MAXCUTS);
	if (n < 0) {
		diag_error(L->d, op->where, "'%s' has too many tiles", op->stage);
		L->err = 1;
		return;
	}
	const ir_tensor *to = &p->tensors[op->out];
	for (int i = 0; i < n; i++) {
		ir_task *t = new_task(L, cls == 'R' ? TASK_ROW : TASK_EW, oi);
		if (!t)
			return;
		t->write = retarget(boxes[i], op->out);
		add_read(L, t, retarget(boxes[i], op->in[0]));
		for (int k = 1; k < op->nin; k++) {
			const ir_tensor *x = &p->tensors[op->in[k]];
			if (x->ndim == to->ndim)
				add_read(L, t, retarget(boxes[i], op->in[k]));
			else
				add_read(L, t, full_region(p, op->in[k], 0));
		}
		double elems = 1;
		for (int d = 0; d < to->ndim; d++)
			elems *= (double)(t->write.hi[d] - t->write.lo[d]);
		t->bytes = elems * (ir_dtype_size(to->dtype) +
				    op->nin * ir_dtype_size(p->tensors[op->in[0]].dtype));
		t->flops = elems * 4;
	}
}

/* The rank that holds shard s of group g, in rank 0's view. */
static int shard_owner(const ir_prog *p, ir_group g, int s)
{
	return g == GRP_NODES ? s * p->gpus : s;
}

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
	/* align to the consumer's matmul rows where they exist */
	const ir_prog *p = L->p;
	for (int i = 0; i < p->nops; i++) {
		const ir_op *c = &p->ops[i];
		if (c->kind == OP_MATMUL && c->in[0] == op->out) {
			ir_mm_plan mp;
			ir_mm_plan_of(p, c, L->s->dev.smem_per_sm, &mp);
			int64_t bm = mp.bm;
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

/* Chunks of `src` (region on rank `from`) copied into `dst` (on rank `to`),
 * run by rank 0. */
static void copy_chunks(lower *L, int oi, ir_taskkind kind, ir_transport tr,
			ir_region src, ir_region dst, int64_t dflt_chunk)
{
	const ir_prog *p = L->p;
	const ir_op *op = &p->ops[oi];
	const ir_tensor *x = &p->tensors[dst.tensor];
	int elem = ir_dtype_size(x->dtype);
	int64_t rows = chunk_rows(L, op, &dst, elem, dflt_chunk);
	int k = cut_dim(x, 0, dst.lo[0], dst.hi[0], rows, cut_lo, cut_hi, MAXCUTS);
	if (k < 0) {
		diag_error(L->d, op->where, "'%s' has too many chunks; use a larger chunk",
			   op->stage);
		L->err = 1;
		return;
	}
	for (int i = 0; i < k; i++) {
		ir_task *t = new_task(L, kind, oi);
		if (!t)
			return;
		ir_region s = src, w = dst;
		int64_t off = cut_lo[i] - dst.lo[0];
		s.lo[0] = src.lo[0] + off;
		s.hi[0] = s.lo[0] + (cut_hi[i] - cut_lo[i]);
		w.lo[0] = cut_lo[i];
		w.hi[0] = cut_hi[i];
		add_read(L, t, s);
		t->write = w;
		t->transport = tr;
		double elems = 1;
		for (int d = 0; d < x->ndim; d++)
			elems *= (double)(w.hi[d] - w.lo[d]);
		t->bytes = elems * elem;
	}
}

/* Y = allgather(X, d), or an explicit put stage for a set of peers. */
static void lower_gather(lower *L, int oi)
{
	ir_prog *p = L->p;
	const ir_op *op = &p->ops[oi];
	int X = op->in[0], Y = op->out;
	const ir_tensor *tx = &p->tensors[X];
	ir_group g = tx->place.group;
	int d = tx->place.dim;
	int G = group_size(p, g);
	ir_peers peers = op->kind == OP_PUT ? op->peers : PEERS_ALL;
	const int64_t nv_chunk = 256 * 1024, rd_chunk = 1024 * 1024;

	for (int s = 0; s < G; s++) {
		int q = shard_owner(p, g, s);
		int qn = q / p->gpus, qg = q % p->gpus;
		int remote = qn != 0;
		if ((peers == PEERS_NODE && remote) || (peers == PEERS_REMOTE && !remote))
			continue;
		ir_region dst = full_region(p, Y, 0);
		dst.lo[d] = s * tx->local[d];
		dst.hi[d] = dst.lo[d] + tx->local[d];
		ir_region src = full_region(p, X, q);
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
		ir_region src = full_region(p, X, 0);
		for (int n = 1; n < p->nodes; n++)
			for (int gg = 0; gg < p->gpus; gg++) {
				if (op->kind != OP_PUT && gg != 0)
					continue;
				ir_region dst = full_region(p, Y, n * p->gpus + gg);
				dst.lo[d] = 0;
				dst.hi[d] = tx->local[d];
				copy_chunks(L, oi, TASK_RDMA, TR_RDMA, src, dst, rd_chunk);
			}
	}
	p->tensors[X].peer_access = true;
	p->tensors[Y].peer_access = true;
}

/* ---- expansion: collectives written in terms of others ------------------ */

static int add_tensor(lower *L, const ir_tensor *proto, const char *base, const char *suffix)
{
	ir_prog *p = L->p;
	ir_tensor *nt = arena_alloc(L->a, (size_t)(p->ntensors + 1) * sizeof *nt);
	if (!nt) {
		L->err = 1;
		return -1;
	}
	memcpy(nt, p->tensors, (size_t)p->ntensors * sizeof *nt);
	ir_tensor t = *proto;
	/* a C identifier no user name can take: names cannot hold "__" and a
	 * digit-led suffix both */
	t.name = arena_printf(L->a, "%s__%s", base, suffix);
	for (int k = 2; ir_find_tensor(p, t.name) >= 0; k++)
		t.name = arena_printf(L->a, "%s__%s%d", base, suffix, k);
	t.kind = TK_TEMP;
	t.producer = -1;
	t.nwriters = 0;
	t.nuses = 0;
	t.peer_access = false;
	memset(t.rot, 0, sizeof t.rot);
	nt[p->ntensors] = t;
	p->tensors = nt;
	return p->ntensors++;
}

/* Inserts op before index `at`; producer indices after it shift. */
static void insert_op(lower *L, int at, ir_op op)
{
	ir_prog *p = L->p;
	ir_op *no = arena_alloc(L->a, (size_t)(p->nops + 1) * sizeof *no);
	if (!no) {
		L->err = 1;
		return;
	}
	memcpy(no, p->ops, (size_t)at * sizeof *no);
	no[at] = op;
	memcpy(no + at + 1, p->ops + at, (size_t)(p->nops - at) * sizeof *no);
	p->ops = no;
	p->nops++;
	for (int t = 0; t < p->ntensors; t++)
		if (p->tensors[t].producer >= at)
			p->tensors[t].producer++;
}

/* A tensor no op reads or writes any more: no storage (ir_tensor.folded). */
static void fold_tensor(ir_tensor *t)
{
	t->folded = true;
	t->producer = -1;
	t->nwriters = 0;
	t->nuses = 0;
}

/* Removes op `at`; producer indices after it shift down. */
static void remove_op(lower *L, int at)
{
	ir_prog *p = L->p;
	memmove(p->ops + at, p->ops + at + 1, (size_t)(p->nops - at - 1) * sizeof *p->ops);
	p->nops--;
	for (int t = 0; t < p->ntensors; t++)
		if (p->tensors[t].producer > at)
			p->tensors[t].producer--;
}

/* In a world of one rank a collective is the identity: allgather,
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

static void fold_identity_collectives(lower *L)
{
	ir_prog *p = L->p;
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
			fold_tensor(b);
		} else if (a->kind == TK_TEMP && a->nwriters == 1 && a->nuses == 1 &&
			   a->producer >= 0 && a->producer < i) {
			ir_op *w = &p->ops[a->producer];
			w->out = bi;
			b->producer = a->producer;
			fold_tensor(a);
		} else {
			continue;
		}
		remove_op(L, i);
		i--;
	}
}

/* relu, silu, gelu or scale of a matmul's result that nothing else reads
 * runs in the matmul's epilogue, on the fp32 accumulator: one pass over
 * memory fewer, and the tile's output is stored once. */
static void fuse_epilogues(lower *L)
{
	ir_prog *p = L->p;
	for (int i = 0; i < p->nops; i++) {
		const ir_op *u = &p->ops[i];
		if (u->kind != OP_RELU && u->kind != OP_SILU && u->kind != OP_GELU &&
		    u->kind != OP_SCALE)
			continue;
		int ti = u->in[0];
		ir_tensor *t = &p->tensors[ti], *y = &p->tensors[u->out];
		if (t->kind != TK_TEMP || t->nwriters != 1 || t->nuses != 1 || t->producer < 0 ||
		    t->producer >= i || y->nwriters != 1 || t->dtype != y->dtype ||
		    t->place.kind != y->place.kind || t->ndim != y->ndim)
			continue;
		ir_op *m = &p->ops[t->producer];
		if (m->kind != OP_MATMUL || m->epi)
			continue;
		m->out = u->out;
		m->epi = 1 + (int)u->kind;
		m->epi_scalar = u->scalar;
		y->producer = t->producer;
		fold_tensor(t);
		remove_op(L, i);
		i--;
	}
}

/* allreduce(X) = allgather(reduce_scatter(X, 0), 0): rank r reduces rows
 * r*M/world..., then everyone gathers the reduced rows.  attention(Q, K, V)
 * with K and V split over the ranks: K and V are gathered block by block
 * (the ring), and each query tile waits on each key block just before it
 * needs it. */
static void expand_ops(lower *L)
{
	ir_prog *p = L->p;
	for (int i = 0; i < p->nops && !L->err; i++) {
		ir_op *op = &p->ops[i];
		if (op->kind == OP_ALLREDUCE && p->world > 1) {
			const ir_tensor *y = &p->tensors[op->out];
			if (y->shape[0] % p->world) {
				diag_error(L->d, op->where,
					   "allreduce splits dimension 0 of '%s' (%lld) over world (%d) ranks: "
					   "it must be divisible",
					   y->name, (long long)y->shape[0], p->world);
				L->err = 1;
				return;
			}
			ir_tensor proto = *y;
			proto.place = (ir_place){PL_SPLIT, 0, GRP_WORLD};
			proto.local[0] = y->shape[0] / p->world;
			int r = add_tensor(L, &proto, y->name, "rs");
			if (r < 0)
				return;
			op = &p->ops[i];
			ir_op ag = *op;
			ag.kind = OP_ALLGATHER;
			ag.in[0] = r;
			ag.nin = 1;
			ag.dim = 0;
			ag.stage = arena_printf(L->a, "%s__ag", op->stage);
			op->kind = OP_REDUCE_SCATTER;
			op->out = r;
			op->dim = 0;
			op->stage = arena_printf(L->a, "%s__rs", op->stage);
			p->tensors[r].producer = i;
			insert_op(L, i + 1, ag);
			i++;
		} else if (op->kind == OP_ATTENTION && p->world > 1 &&
			   p->tensors[op->in[1]].place.kind == PL_SPLIT &&
			   p->tensors[op->in[1]].place.dim == p->tensors[op->in[1]].ndim - 2) {
			/* split along the sequence: ring attention (split heads stay local) */
			for (int k = 1; k <= 2 && !L->err; k++) {
				op = &p->ops[i];
				const ir_tensor *x = &p->tensors[op->in[k]];
				ir_tensor proto = *x;
				proto.place = (ir_place){PL_LOCAL, 0, GRP_WORLD};
				for (int d = 0; d < x->ndim; d++)
					proto.local[d] = x->shape[d];
				int g = add_tensor(L, &proto, x->name, "ring");
				if (g < 0)
					return;
				op = &p->ops[i];
				ir_op ag = *op;
				ag.kind = OP_ALLGATHER;
				ag.out = g;
				ag.in[0] = op->in[k];
				ag.nin = 1;
				ag.dim = x->place.dim;
				ag.hints = (ir_hints){0};
				ag.stage = arena_printf(L->a, "%s__%s", op->stage, x->name);
				op->in[k] = g;
				insert_op(L, i, ag);
				p->tensors[g].producer = i;
				i++;
			}
		}
	}
}

/* The ranks of rank 0's group, in the order their partial sums of rank 0's
 * shard become ready (rank p computes shard s at position s - p in its own
 * shard-rotated order): 0, world-1, world-2, ... */
static int group_members(const ir_prog *p, ir_group g, int *m)
{
	int G = group_size(p, g);
	for (int k = 0; k < G; k++) {
		int s = (G - k) % G;
		m[k] = shard_owner(p, g, s);
		if (g == GRP_GPUS)
			m[k] = s;
	}
	return G;
}

/* Output boxes of a reduction: the producer's tiles of the input restricted
 * to rank 0's shard of the output, else row chunks. */
static int reduce_boxes(lower *L, int X, int Y, ir_region *out, int max)
{
	ir_region mine = full_region(L->p, Y, 0);
	const ir_tensor *x = &L->p->tensors[X];
	int n = 0;
	for (int i = 0; i < L->s->ntasks; i++) {
		const ir_task *k = &L->s->tasks[i];
		if (k->write.tensor != X || k->write.rank != 0 || k->kind != TASK_MATMUL)
			continue;
		int inside = 1;
		for (int d = 0; d < x->ndim; d++)
			inside &= k->write.lo[d] >= mine.lo[d] && k->write.hi[d] <= mine.hi[d];
		if (!inside)
			continue;
		if (n == max)
			return -1;
		out[n] = k->write;
		out[n++].tensor = Y;
	}
	if (n > 0)
		return n;
	return row_boxes(L, Y, 64 * 1024, 1, out, max);
}

static ir_task *reduce_task(lower *L, int oi, ir_region box, int out, const int *src_rank,
			    const int *src_tensor, const ir_region *src_box, int nsrc)
{
	ir_task *t = new_task(L, TASK_REDUCE, oi);
	if (!t)
		return NULL;
	t->write = box;
	t->write.tensor = out;
	for (int k = 0; k < nsrc; k++) {
		ir_region g = src_box ? src_box[k] : box;
		g.tensor = src_tensor[k];
		g.rank = src_rank[k];
		add_read(L, t, g);
	}
	double elems = 1;
	for (int d = 0; d < IR_MAXDIM && box.hi[d] > box.lo[d]; d++)
		elems *= (double)(box.hi[d] - box.lo[d]);
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
 * per node pair. */
static void lower_reduce(lower *L, int oi)
{
	ir_prog *p = L->p;
	ir_op *op = &p->ops[oi];
	int X = op->in[0], Y = op->out;
	const ir_tensor *ty = &p->tensors[Y];
	ir_group g = ty->place.kind == PL_SPLIT ? ty->place.group : GRP_WORLD;
	ir_region *boxes = arena_alloc(L->a, MAXCUTS * sizeof *boxes);
	int m[IR_MAXRANKS], st[IR_MAXRANKS];
	if (!boxes) {
		L->err = 1;
		return;
	}
	if (p->nodes == 1 || g != GRP_WORLD) {
		int G = group_members(p, g, m);
		if (G > IR_MAXREDUCE) {
			diag_error(L->d, op->where, "reduce over %d ranks at once is not supported "
				   "(at most %d)", G, IR_MAXREDUCE);
			L->err = 1;
			return;
		}
		for (int k = 0; k < G; k++)
			st[k] = X;
		int n = reduce_boxes(L, X, Y, boxes, MAXCUTS);
		for (int i = 0; i < n && !L->err; i++)
			reduce_task(L, oi, boxes[i], Y, m, st, NULL, G);
		if (n < 0) {
			diag_error(L->d, op->where, "'%s' has too many chunks", op->stage);
			L->err = 1;
		}
		p->tensors[X].peer_access = true;
		return;
	}
	/* several nodes */
	int d = ty->place.dim, N = p->nodes, Gp = p->gpus;
	if (N > IR_MAXREDUCE || Gp > IR_MAXREDUCE) {
		diag_error(L->d, op->where, "reduce over %d nodes of %d GPUs is not supported "
			   "(at most %d of each)", N, Gp, IR_MAXREDUCE);
		L->err = 1;
		return;
	}
	int64_t u = ty->local[d];
	ir_tensor proto = p->tensors[X];
	proto.place = (ir_place){PL_LOCAL, 0, GRP_WORLD};
	int T = add_tensor(L, &proto, ty->name, "node");
	proto = p->tensors[Y];
	proto.place = (ir_place){PL_LOCAL, 0, GRP_WORLD};
	proto.shape[d] = proto.local[d] = u * N;
	int S = add_tensor(L, &proto, ty->name, "slots");
	if (T < 0 || S < 0)
		return;
	op = &p->ops[oi];
	X = op->in[0];
	p->tensors[T].producer = p->tensors[S].producer = oi;
	p->tensors[T].nwriters = p->tensors[S].nwriters = 1;
	ir_region mine = full_region(p, Y, 0);
	int n = reduce_boxes(L, X, Y, boxes, MAXCUTS);
	if (n < 0) {
		L->err = 1;
		return;
	}
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
			ir_task *t = new_task(L, TASK_RDMA, oi);
			if (!t)
				return;
			add_read(L, t, src);
			t->write = w;
			t->transport = TR_RDMA;
			double el = 1;
			for (int dd = 0; dd < ty->ndim; dd++)
				el *= (double)(w.hi[dd] - w.lo[dd]);
			t->bytes = el * ir_dtype_size(ty->dtype);
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
	p->tensors[X].peer_access = true;
	p->tensors[S].peer_access = true;
}

/* Y = ring_shift(X): rank r receives rank r-1's piece. */
static void lower_ring_shift(lower *L, int oi)
{
	ir_prog *p = L->p;
	const ir_op *op = &p->ops[oi];
	if (p->nodes > 1 && p->gpus > 1) {
		diag_error(L->d, op->where,
			   "ring_shift over a %d x %d mesh: the ring by rank number is not symmetric "
			   "under the mesh's shifts; use a 1 x N or N x 1 mesh", p->nodes, p->gpus);
		L->err = 1;
		return;
	}
	int prev = p->world - 1;
	ir_region src = full_region(p, op->in[0], prev);
	ir_region dst = full_region(p, op->out, 0);
	const ir_tensor *x = &p->tensors[op->out];
	int64_t rows = chunk_rows(L, op, &dst, ir_dtype_size(x->dtype), 256 * 1024);
	int k = cut_dim(x, 0, dst.lo[0], dst.hi[0], rows, cut_lo, cut_hi, MAXCUTS);
	ir_transport tr = p->world == 1 ? TR_LOCAL : p->nodes > 1 ? TR_RDMA : TR_NVLINK;
	for (int i = 0; i < k; i++) {
		ir_task *t = new_task(L, tr == TR_RDMA ? TASK_RDMA : TASK_COPY, oi);
		if (!t)
			return;
		ir_region s2 = src, w = dst;
		s2.lo[0] = src.lo[0] + (cut_lo[i] - dst.lo[0]);
		s2.hi[0] = s2.lo[0] + (cut_hi[i] - cut_lo[i]);
		w.lo[0] = cut_lo[i];
		w.hi[0] = cut_hi[i];
		if (tr == TR_RDMA) {
			/* RDMA is posted by the sender: rank 0 writes its piece to rank 1 */
			s2.rank = 0;
			s2.lo[0] -= src.lo[0] - full_region(p, op->in[0], 0).lo[0];
			s2.hi[0] -= src.lo[0] - full_region(p, op->in[0], 0).lo[0];
			w.rank = 1 % p->world;
			ir_region d1 = full_region(p, op->out, w.rank);
			w.lo[0] += d1.lo[0] - dst.lo[0];
			w.hi[0] += d1.lo[0] - dst.lo[0];
		}
		add_read(L, t, s2);
		t->write = w;
		t->transport = tr;
		double el = 1;
		for (int d = 0; d < x->ndim; d++)
			el *= (double)(w.hi[d] - w.lo[d]);
		t->bytes = el * ir_dtype_size(x->dtype);
	}
	p->tensors[op->in[0]].peer_access = true;
}

/* O = attention(Q, K, V): one task per tile of query rows (per head; 128
 * rows for 16-bit inputs, 64 for fp32: ir_attn_plan_of),
 * reading the keys and values block by block: after expansion K and V are
 * the gathered copies, and each block of one rank's shard is a read of its
 * own, waited on just before the tile uses it. */
static void lower_attention(lower *L, int oi)
{
	ir_prog *p = L->p;
	const ir_op *op = &p->ops[oi];
	int Q = op->in[0], K = op->in[1], V = op->in[2], O = op->out;
	const ir_tensor *tq = &p->tensors[Q], *tk = &p->tensors[K];
	int sd = tq->ndim - 2;  /* the sequence dimension */
	ir_region qfull = full_region(p, Q, 0), kfull = full_region(p, K, 0);
	int64_t S = kfull.hi[sd] - kfull.lo[sd];
	int G = 1;
	int64_t blk = S;
	const ir_op *ag = NULL;
	for (int i = 0; i < oi; i++)
		if (p->ops[i].kind == OP_ALLGATHER && p->ops[i].out == K)
			ag = &p->ops[i];
	if (ag) {
		const ir_tensor *src = &p->tensors[ag->in[0]];
		G = group_size(p, src->place.group);
		blk = src->local[sd];
	}
	int64_t heads = sd ? qfull.hi[0] - qfull.lo[0] : 1;
	int64_t D = tq->shape[tq->ndim - 1];
	const int64_t BQ = ir_attn_plan_of(p, op).rows;
	int nc = cut_dim(tq, sd, qfull.lo[sd], qfull.hi[sd], BQ, cut_lo, cut_hi, MAXCUTS);
	/* causal: the tiles of later queries see more keys; they come first, so
	 * that the list scheduler places the long tasks before the short ones */
	for (int ii = 0; ii < nc && !L->err; ii++)
		for (int64_t h = 0; h < heads && !L->err; h++) {
			int i = op->causal ? nc - 1 - ii : ii;
			ir_task *t = new_task(L, TASK_ATTN, oi);
			if (!t)
				return;
			ir_region q = qfull;
			if (sd) {
				q.lo[0] = qfull.lo[0] + h;
				q.hi[0] = q.lo[0] + 1;
			}
			q.lo[sd] = cut_lo[i];
			q.hi[sd] = cut_hi[i];
			add_read(L, t, q);
			/* key blocks in arrival order: own shard first, then the rest */
			for (int b = 0; b < G; b++) {
				int s = b;  /* the order the allgather pulls them in */
				ir_region kb = kfull;
				if (sd) {
					kb.lo[0] = q.lo[0];
					kb.hi[0] = q.hi[0];
				}
				kb.lo[sd] = kfull.lo[sd] + s * blk;
				kb.hi[sd] = kb.lo[sd] + blk;
				add_read(L, t, kb);
				kb.tensor = V;
				add_read(L, t, kb);
			}
			t->write = q;
			t->write.tensor = O;
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

/* Y = sum(X, last dim): a row-wise task per block of rows. */
static void lower_sum(lower *L, int oi)
{
	ir_prog *p = L->p;
	const ir_op *op = &p->ops[oi];
	const ir_tensor *x = &p->tensors[op->in[0]];
	if (op->dim != x->ndim - 1) {
		diag_error(L->d, op->where, "sum over dimension %d is not lowered yet; only the last "
			   "dimension (%d)", op->dim, x->ndim - 1);
		L->err = 1;
		return;
	}
	ir_region *boxes = arena_alloc(L->a, MAXCUTS * sizeof *boxes);
	if (!boxes) {
		L->err = 1;
		return;
	}
	int n = row_boxes(L, op->in[0], 64 * 1024, 1, boxes, MAXCUTS);
	for (int i = 0; i < n; i++) {
		ir_task *t = new_task(L, TASK_ROW, oi);
		if (!t)
			return;
		add_read(L, t, boxes[i]);
		ir_region w = boxes[i];
		w.tensor = op->out;
		for (int d = x->ndim - 1; d < IR_MAXDIM; d++)
			w.lo[d] = w.hi[d] = 0;
		t->write = w;
		t->bytes = 1;
		for (int d = 0; d < x->ndim; d++)
			t->bytes *= (double)(boxes[i].hi[d] - boxes[i].lo[d]);
		t->bytes *= ir_dtype_size(x->dtype);
	}
}

/* ---- MoE: dispatch and combine (mkd/moe.cuh) ------------------------------
 * dispatch(X, idx, E, C): one route task per rank builds the rank's routing
 * table (the hidden tensor idx__route: offsets per expert, entries sorted by
 * expert, each entry's place); then one dispatch task per local expert, on
 * the expert's owner, reads every rank's table and pulls the rows routed to
 * it from every rank's X (NVLink loads), in (rank, token, choice) order,
 * and zeroes the slots left.  A matmul tile of an expert waits only for that
 * expert's task.  combine(Ye, idx, gate): per block of token rows on the
 * tokens' rank, the gate-weighted sum of the rows their experts' owners
 * computed (NVLink loads); it waits for every expert tile of every rank. */

/* The ranks a dispatch reads from: every rank of its node (pulls by
 * loads), and what the same GPU of each other node sent it. */
static int moe_mesh_ok(lower *L, const ir_op *op, const ir_tensor *tok, const ir_tensor *ex)
{
	ir_prog *p = L->p;
	if (p->world == 1)
		return 1;
	if (p->nodes > 1 && (tok->shape[tok->ndim - 1] * ir_dtype_size(tok->dtype)) % 16) {
		diag_error(L->d, op->where, "'%s' between nodes sends rows of '%s' in 16-byte "
			   "words; a row of %lld x %d bytes is not a multiple of 16", ir_op_name(op->kind), tok->name,
			   (long long)tok->shape[tok->ndim - 1], ir_dtype_size(tok->dtype));
		L->err = 1;
		return 0;
	}
	const ir_tensor *t2[2] = {tok, ex};
	for (int k = 0; k < 2; k++)
		if (t2[k]->place.kind != PL_SPLIT || t2[k]->place.dim != 0 ||
		    group_size(p, t2[k]->place.group) != p->world) {
			diag_error(L->d, op->where, "'%s' needs '%s' split(0) over all %d ranks",
				   ir_op_name(op->kind), t2[k]->name, p->world);
			L->err = 1;
			return 0;
		}
	return 1;
}

/* The dispatch before op `before` that routes by indices `idx`, or -1. */
static int dispatch_of(const ir_prog *p, int idx, int before)
{
	for (int j = 0; j < before; j++)
		if (p->ops[j].kind == OP_DISPATCH && p->ops[j].in[1] == idx)
			return j;
	return -1;
}

/* Between nodes (nodes > 1) a rank also packs, for each other node j, the
 * rows of its tokens with a choice there (pack tasks), sends them by RDMA to
 * the GPU of the same index on node j, and routes what it receives from
 * each node (one more route task per node); the experts' owners then pull
 * from every rank of their node both its own rows and what it received.
 * The hidden tensors, per rank, J = nodes - 1 slices each:
 *   X__pack  i32 [J, 1 + T, W]  slice j-1: rows for node +j: row 0 holds
 *                               the count, then each row the token's
 *                               data words, its k ids, k gates, its index
 *   X__recv  i32 [J, 1 + T, W]  slice s-1: what node +s sent
 *   idx__rroute [J, len]        slice s-1: the routing table of that
 * The combine sums, on the experts' node, each received token's rows of
 * that node's experts (combine tasks writing Y__part [J, 1 + T, H] f32),
 * sends the sums back by RDMA (into the sender's Y__back), and each token's
 * own combine adds its node's experts and the sums returned.
 * Sources, the order every bucket fills in: node offset s (0: this node's
 * own tokens) major, GPU minor. */
typedef struct moe_nodes {
	int pack, recv, rroute;   /* hidden tensors; -1 on one node */
} moe_nodes;

/* Slice s (index along dim 0) of hidden tensor t on rank q. */
static ir_region moe_slice(const ir_prog *p, int t, int q, int s)
{
	ir_region g = full_region(p, t, q);
	g.lo[0] = s;
	g.hi[0] = s + 1;
	return g;
}

/* The RDMA write of slice j - 1 of `from` (what is meant for node +j) to
 * the GPU of the same index on node +j, where it is slice (nodes - j) - 1
 * of `to` (what came from node -j).  At run time only the count's rows go
 * (row 0 holds the count: emit_cu.c, stage_rdma). */
static void moe_rdma_slice(lower *L, int oi, int from, int to, int j, double bytes)
{
	ir_prog *p = L->p;
	ir_task *t = new_task(L, TASK_RDMA, oi);
	if (!t)
		return;
	add_read(L, t, moe_slice(p, from, 0, j - 1));
	t->write = moe_slice(p, to, j * p->gpus, p->nodes - j - 1);
	t->transport = TR_RDMA;
	t->bytes = bytes;
}

/* The width in words of a packed row of H elements of `es` bytes and k
 * choices (data, ids, gates, index; a multiple of 4 words). */
static int64_t moe_width(int64_t H, int es, int64_t k)
{
	return (H * es / 4 + 2 * k + 1 + 3) / 4 * 4;
}

/* Reads of every source's routing table (and with `rows`, its rows) in
 * source order, on the ranks of this node. */
static void moe_source_reads(lower *L, ir_task *t, int R, int X, const moe_nodes *mn, int rows)
{
	ir_prog *p = L->p;
	for (int s = 0; s < p->nodes; s++)
		for (int g = 0; g < p->gpus; g++) {
			if (s == 0) {
				add_read(L, t, full_region(p, R, g));
				if (rows)
					add_read(L, t, full_region(p, X, g));
				continue;
			}
			add_read(L, t, moe_slice(p, mn->rroute, g, s - 1));
			if (rows)
				add_read(L, t, moe_slice(p, mn->recv, g, s - 1));
		}
}

static int moe_hidden(lower *L, int base, ir_dtype dt, int64_t d0, int64_t d1, int64_t d2,
		      const char *suffix, int producer)
{
	ir_prog *p = L->p;
	ir_tensor proto = p->tensors[base];
	proto.dtype = dt;
	proto.ndim = d2 ? 3 : 2;
	proto.shape[0] = proto.local[0] = d0;
	proto.shape[1] = proto.local[1] = d1;
	proto.shape[2] = proto.local[2] = d2;
	proto.place = (ir_place){PL_LOCAL, 0, GRP_WORLD};
	int t = add_tensor(L, &proto, p->tensors[base].name, suffix);
	if (t >= 0) {
		p->tensors[t].producer = producer;
		p->tensors[t].nwriters = 1;
		p->tensors[t].peer_access = true;
	}
	return t;
}

static void lower_dispatch(lower *L, int oi)
{
	ir_prog *p = L->p;
	const ir_op *op = &p->ops[oi];
	int X = op->in[0], I = op->in[1], Xe = op->out;
	if (!moe_mesh_ok(L, op, &p->tensors[X], &p->tensors[Xe]))
		return;
	const ir_tensor *ix = &p->tensors[I], *xe = &p->tensors[Xe];
	int64_t E = xe->shape[0], C = xe->shape[1], H = xe->shape[2], El = xe->local[0];
	int64_t N = ix->local[0] * ix->local[1];
	int64_t len = E + 1 + 2 * N;
	if (len >= INT32_MAX / 2 || C * H >= INT32_MAX) {
		diag_error(L->d, op->where, "dispatch of %lld entries into %lld x %lld slots is too "
			   "large for 32-bit routing tables", (long long)N, (long long)E, (long long)C);
		L->err = 1;
		return;
	}
	if (dispatch_of(p, I, oi) >= 0) {
		diag_error(L->d, op->where, "'%s' is dispatched twice; dispatch it once and reuse "
			   "the result", ix->name);
		L->err = 1;
		return;
	}
	ir_tensor proto = *ix;
	proto.dtype = DT_I32;
	proto.ndim = 1;
	proto.shape[0] = proto.local[0] = len;
	proto.place = (ir_place){PL_LOCAL, 0, GRP_WORLD};
	int R = add_tensor(L, &proto, ix->name, "route");
	if (R < 0)
		return;
	op = &p->ops[oi];
	p->ops[oi].route1 = R + 1;
	p->tensors[R].producer = oi;
	p->tensors[R].nwriters = 1;
	p->tensors[R].peer_access = p->world > 1;
	p->tensors[X].peer_access |= p->world > 1;

	ir_task *t = new_task(L, TASK_ROUTE, oi);
	if (!t)
		return;
	add_read(L, t, full_region(p, I, 0));
	t->write = full_region(p, R, 0);
	t->bytes = (double)N * 4 * 4;
	t->transport = TR_LOCAL;

	moe_nodes mn = {-1, -1, -1};
	if (p->nodes > 1) {
		const int J = p->nodes - 1;
		const int64_t Tl = ix->local[0], k = ix->local[1];
		const int64_t W = moe_width(H, ir_dtype_size(xe->dtype), k);
		mn.pack = moe_hidden(L, X, DT_I32, J, 1 + Tl, W, "pack", oi);
		mn.recv = moe_hidden(L, X, DT_I32, J, 1 + Tl, W, "recv", oi);
		mn.rroute = moe_hidden(L, I, DT_I32, J, len, 0, "rroute", oi);
		if (mn.pack < 0 || mn.recv < 0 || mn.rroute < 0)
			return;
		p->ops[oi].pack1 = mn.pack + 1;
		p->ops[oi].recv1 = mn.recv + 1;
		p->ops[oi].rroute1 = mn.rroute + 1;
		op = &p->ops[oi];
		/* the gates travel with the rows: the combine's, when there is one */
		const int gate = ir_moe_gate(p, oi);
		/* packing: per node, column blocks of 1024 words, each block
		 * choosing the same rows */
		const int64_t cb = 1024;
		for (int j = 1; j <= J && !L->err; j++) {
			for (int64_t c0 = 0; c0 < W; c0 += cb) {
				t = new_task(L, TASK_PACK, oi);
				if (!t)
					return;
				add_read(L, t, full_region(p, I, 0));
				add_read(L, t, full_region(p, X, 0));
				if (gate >= 0)
					add_read(L, t, full_region(p, gate, 0));
				ir_region w = moe_slice(p, mn.pack, 0, j - 1);
				w.lo[2] = c0;
				w.hi[2] = c0 + cb < W ? c0 + cb : W;
				t->write = w;
				t->bytes = (double)Tl * (double)(w.hi[2] - w.lo[2]) * 4 / p->nodes * 2 +
					   (double)N * 4;
				t->transport = TR_LOCAL;
			}
			/* uniform routing: a node's share of the rows */
			moe_rdma_slice(L, oi, mn.pack, mn.recv, j, (double)Tl * (double)W * 4 / p->nodes);
		}
		/* the routing table of what each node sent */
		for (int s2 = 1; s2 <= J && !L->err; s2++) {
			t = new_task(L, TASK_ROUTE, oi);
			if (!t)
				return;
			add_read(L, t, moe_slice(p, mn.recv, 0, s2 - 1));
			t->write = moe_slice(p, mn.rroute, 0, s2 - 1);
			t->bytes = (double)N * 4 * 4;
			t->transport = TR_LOCAL;
		}
	}

	/* one task per expert and block of slots (a matmul tile's rows): the
	 * expert's first tiles start while its last slots are filled */
	double rows = (double)N * p->world / (double)E;  /* per expert, uniform routing */
	int es = ir_dtype_size(xe->dtype);
	ir_mm_plan mp = {0};
	int64_t step = 128;
	for (int j = 0; j < p->nops; j++)
		if (p->ops[j].kind == OP_MATMUL && p->ops[j].in[0] == Xe &&
		    ir_mm_plan_of(p, &p->ops[j], L->s->dev.smem_per_sm, &mp)) {
			/* as many rows as one task of that matmul takes */
			const ir_op *mm = &p->ops[j];
			const ir_tensor *y = &p->tensors[mm->out];
			int64_t rb, cw, n = y->local[y->ndim - 1];
			mm_group(mm->hints.tasks ? mm->hints.tasks : IR_MM_TASKS, El,
				 (C + mp.bm - 1) / mp.bm, (n + mp.bn - 1) / mp.bn, &rb, &cw);
			step = mp.bm * rb;
		}
	ir_region w0 = full_region(p, Xe, 0);
	for (int64_t e = 0; e < El; e++)
		for (int64_t s0 = 0; s0 < C; s0 += step) {
			int64_t s1 = s0 + step < C ? s0 + step : C;
			t = new_task(L, TASK_DISPATCH, oi);
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
	ir_prog *p = L->p;
	const ir_op *op = &p->ops[oi];
	ir_task *t = new_task(L, TASK_COMBINE, oi);
	if (!t)
		return NULL;
	ir_region a = full_region(p, op->in[1], 0), g = full_region(p, op->in[2], 0);
	ir_region w = full_region(p, op->out, 0);
	const int64_t y0 = w.lo[0];
	a.lo[0] = g.lo[0] = w.lo[0] = y0 + t0;
	a.hi[0] = g.hi[0] = w.hi[0] = y0 + t1;
	add_read(L, t, a);
	add_read(L, t, g);
	t->write = w;
	return t;
}

/* combine between nodes (see moe_nodes): partial sums of the received
 * rows on the experts' node, sent back by RDMA, then each token block's own
 * sum adds them. */
static void lower_combine_nodes(lower *L, int oi, int D, int64_t step)
{
	ir_prog *p = L->p;
	const ir_op *op = &p->ops[oi];
	const ir_op *dop = &p->ops[D];
	int Ye = op->in[0], I = op->in[1], Y = op->out, R = op->route1 - 1;
	moe_nodes mn = {dop->pack1 - 1, dop->recv1 - 1, dop->rroute1 - 1};
	if (mn.pack < 0 || mn.recv < 0 || mn.rroute < 0) {
		diag_error(L->d, op->where, "internal: combine between nodes without its dispatch's "
			   "packed rows");
		L->err = 1;
		return;
	}
	const int J = p->nodes - 1;
	const int64_t Tl = p->tensors[I].local[0], k = p->tensors[I].local[1];
	const int64_t H = p->tensors[Y].shape[p->tensors[Y].ndim - 1];
	const int64_t F = p->tensors[Ye].shape[2];
	int part = moe_hidden(L, Y, DT_F32, J, 1 + Tl, H, "part", oi);
	int back = moe_hidden(L, Y, DT_F32, J, 1 + Tl, H, "back", oi);
	if (part < 0 || back < 0)
		return;
	p->ops[oi].pack1 = mn.pack + 1;
	p->ops[oi].recv1 = mn.recv + 1;
	p->ops[oi].rroute1 = mn.rroute + 1;
	p->ops[oi].part1 = part + 1;
	p->ops[oi].back1 = back + 1;
	const int es = ir_dtype_size(p->tensors[Ye].dtype);
	/* (1) per received slice and block of its rows: the sums over this
	 * node's experts (row 0, with the first block: the count) */
	for (int s2 = 1; s2 <= J && !L->err; s2++)
		for (int64_t b0 = 0; b0 < Tl; b0 += step) {
			int64_t b1 = b0 + step < Tl ? b0 + step : Tl;
			ir_task *t = new_task(L, TASK_COMBINE, oi);
			if (!t)
				return;
			add_read(L, t, moe_slice(p, mn.recv, 0, s2 - 1));
			moe_source_reads(L, t, R, -1, &mn, 0);
			for (int g = 0; g < p->gpus; g++)
				add_read(L, t, full_region(p, Ye, g));
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
			add_read(L, t, full_region(p, R, gg));
		for (int gg = 0; gg < p->gpus; gg++)
			add_read(L, t, full_region(p, Ye, gg));
		add_read(L, t, full_region(p, mn.pack, 0));
		add_read(L, t, full_region(p, back, 0));
		t->transport = TR_NVLINK;
		t->bytes = (double)(t1 - t0) * (double)(k * F * es / p->nodes + H * 4 * J +
							 H * ir_dtype_size(p->tensors[Y].dtype));
	}
}

static void lower_combine(lower *L, int oi)
{
	ir_prog *p = L->p;
	const ir_op *op = &p->ops[oi];
	int Ye = op->in[0], I = op->in[1], Y = op->out;
	int D = dispatch_of(p, I, oi);
	int R = D >= 0 ? p->ops[D].route1 - 1 : -1;
	if (R < 0) {
		diag_error(L->d, op->where, "combine needs the routing '%s' dispatched before it "
			   "(dispatch(X, %s, E, C))", p->tensors[I].name, p->tensors[I].name);
		L->err = 1;
		return;
	}
	if (!moe_mesh_ok(L, op, &p->tensors[Y], &p->tensors[Ye]))
		return;
	p->ops[oi].route1 = R + 1;
	const ir_tensor *ye = &p->tensors[Ye], *ix = &p->tensors[I];
	int64_t E = ye->shape[0], Tl = ix->local[0], k = ix->local[1], F = ye->shape[2];
	if (p->tensors[R].shape[0] != E + 1 + 2 * Tl * k) {
		diag_error(L->d, op->where, "combine's expert outputs '%s' have %lld experts; the "
			   "dispatch of '%s' routed to another number", ye->name, (long long)E,
			   ix->name);
		L->err = 1;
		return;
	}
	if (k > 32) {
		diag_error(L->d, op->where, "combine of more than 32 choices per token is not lowered "
			   "yet ('%s' has %lld)", ix->name, (long long)k);
		L->err = 1;
		return;
	}
	p->tensors[Ye].peer_access |= p->world > 1;
	int64_t step = Tl >= 4096 ? 64 : 16;
	if (p->nodes > 1) {
		lower_combine_nodes(L, oi, D, step);
		return;
	}
	for (int64_t t0 = 0; t0 < Tl; t0 += step) {
		int64_t t1 = t0 + step < Tl ? t0 + step : Tl;
		ir_task *t = combine_block(L, oi, t0, t1);
		if (!t)
			return;
		add_read(L, t, full_region(p, R, 0));
		for (int q = 0; q < p->world; q++)
			add_read(L, t, full_region(p, Ye, q));
		t->transport = p->world > 1 ? TR_NVLINK : TR_LOCAL;
		t->bytes = (double)(t1 - t0) * (double)(k * F * ir_dtype_size(ye->dtype) +
							 F * ir_dtype_size(p->tensors[Y].dtype));
	}
}

ir_sched *lower_run(ir_prog *p, const compile_opts *o, diags *d, arena *a)
{
	lower L = {.p = p, .o = o, .d = d, .a = a};
	L.s = arena_alloc(a, sizeof *L.s);
	cut_lo = arena_alloc(a, MAXCUTS * sizeof(int64_t));
	cut_hi = arena_alloc(a, MAXCUTS * sizeof(int64_t));
	if (!L.s || !cut_lo || !cut_hi)
		return NULL;
	L.s->prog = p;
	L.s->dev = o && o->dev ? *o->dev : costmodel_h200();
	L.s->ranks_per_gpu = o && o->ranks_per_gpu > 0 ? o->ranks_per_gpu : 1;

	fold_identity_collectives(&L);
	fuse_epilogues(&L);
	expand_ops(&L);
	if (L.err)
		return NULL;
	assign_rotations(&L);
	if (L.err)
		return NULL;
	for (int i = 0; i < p->nops && !L.err; i++) {
		const ir_op *op = &p->ops[i];
		switch (op->kind) {
		case OP_MATMUL:
			if (p->tensors[op->out].ndim > 3) {
				diag_error(d, op->where, "matmul of more than 3 dimensions is not supported");
				L.err = 1;
			} else {
				lower_matmul(&L, i);
			}
			break;
		case OP_ADD:
		case OP_MUL:
		case OP_SCALE:
		case OP_CAST:
		case OP_RELU:
		case OP_SILU:
		case OP_GELU:
		case OP_RMSNORM:
		case OP_SOFTMAX:
			lower_elementwise(&L, i);
			break;
		case OP_ALLGATHER:
		case OP_PUT:
			lower_gather(&L, i);
			break;
		case OP_REDUCE_SCATTER:
		case OP_ALLREDUCE:  /* world 1: a local copy; otherwise expanded */
			lower_reduce(&L, i);
			break;
		case OP_RING_SHIFT:
			lower_ring_shift(&L, i);
			break;
		case OP_ATTENTION:
			lower_attention(&L, i);
			break;
		case OP_SUM:
			lower_sum(&L, i);
			break;
		case OP_DISPATCH:
			lower_dispatch(&L, i);
			break;
		case OP_COMBINE:
			lower_combine(&L, i);
			break;
		default:
			diag_error(d, op->where, "'%s' cannot be lowered to tiles yet",
				   ir_op_name(op->kind));
			L.err = 1;
			break;
		}
	}
	if (L.err) {
		if (!diag_has_errors(d))
			diag_error(d, p->where, "lowering failed (too many reads in one task)");
		return NULL;
	}
	return L.s;
}
