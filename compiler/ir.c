/* ir.c - the tables of ir.h, the rank-symmetry map sigma_r, and how a
 * dimension is cut into pieces that never cross a shard. */
#include "ir.h"

#include <stdio.h>
#include <string.h>

static const struct { const char *name; int size; } dtypes[] = {
#define X(id, name, size) {name, size},
	IR_DTYPES(X)
#undef X
};

const char *ir_dtype_name(ir_dtype t) { return dtypes[t].name; }
int ir_dtype_size(ir_dtype t) { return dtypes[t].size; }

static int lookup(const char *const *names, int n, const char *s, int len)
{
	for (int i = 0; i < n; i++)
		if ((int)strlen(names[i]) == len && !memcmp(names[i], s, (size_t)len))
			return i;
	return -1;
}

int ir_dtype_lookup(const char *name, int len)
{
	static const char *const names[] = {
#define X(id, name, size) name,
		IR_DTYPES(X)
#undef X
	};
	return lookup(names, DT_COUNT, name, len);
}

static const struct { const char *name; char cls; } ops[] = {
#define X(id, name, cls, lo, hi) {name, cls},
	IR_OPS(X)
#undef X
};

const char *ir_op_name(ir_opkind k) { return ops[k].name; }

const char *ir_epilogue_text(const ir_prog *p, const ir_op *op, char *buf, int n)
{
	char gate[160] = "";
	if (op->gate)  /* mul silu(N Wg) */
		snprintf(gate, sizeof gate, "mul %s%s%s %s%s", op->gate_epi ?
			 ir_op_name((ir_opkind)(op->gate_epi - 1)) : "", op->gate_epi ? "(" : "",
			 p->tensors[op->in[0]].name, p->tensors[op->gate - 1].name,
			 op->gate_epi ? ")" : "");
	snprintf(buf, (size_t)n, "%s%s%s%s%s%s%s%s",
		 op->epi ? ir_op_name((ir_opkind)(op->epi - 1)) : "",
		 op->epi && (op->epi2 || op->gate) ? " then " : "", gate,
		 op->epi2 ? ir_op_name((ir_opkind)(op->epi2 - 1)) : "",
		 op->epi2 ? " " : "", op->epi2 ? p->tensors[op->in[2]].name : "",
		 op->epi3 ? " then " : "", op->epi3 ? ir_op_name((ir_opkind)(op->epi3 - 1)) : "");
	return buf;
}

int ir_has_epilogue(const ir_op *op) { return op->epi || op->epi2 || op->gate; }
int ir_next_known(const ir_op *op) { return !op->plan.pool; }
int ir_mm_a_rows(const ir_mm_plan *m) { return m->wg_cols ? 64 : m->bm; }

int ir_op_nmaps(const ir_op *op)
{
	if (op->kind == OP_MATMUL)
		return !op->plan.mm.wgmma ? 0 : op->gate || op->plan.mm.tma_store ? 3 : 2;
	if (op->kind == OP_ATTENTION)
		return op->plan.attn.engine == IR_ATTN_WGMMA ? 3
		       : op->plan.attn.bulk == IR_ATTN_MAPS ? 2 : 0;
	return 0;
}
char ir_op_class(ir_opkind k) { return ops[k].cls; }

int ir_op_lookup(const char *name, int len)
{
	static const char *const names[] = {
#define X(id, name, cls, lo, hi) name,
		IR_OPS(X)
#undef X
	};
	return lookup(names, OP_COUNT, name, len);
}

static const char *const role_names[] = {
#define X(id, name) name,
	IR_ROLES(X)
#undef X
};

const char *ir_role_name(ir_rolekind k) { return role_names[k]; }
int ir_role_lookup(const char *name, int len)
{
	return lookup(role_names, ROLE_COUNT, name, len);
}

static const char *const task_names[] = {
#define X(id, name) name,
	IR_TASKS(X)
#undef X
};

const char *ir_task_name(ir_taskkind k) { return task_names[k]; }

int ir_wait_late(const ir_prog *p, const ir_task *t, int w)
{
	if ((t->kind != TASK_MATMUL && t->kind != TASK_MMPART) || !p->ops[t->op].plan.mm.late)
		return 0;
	return !(t->nreads > 1 && (t->read_wait[1] == w || t->read_wait[1] == -3));
}

int ir_find_tensor(const ir_prog *p, const char *name)
{
	for (int i = 0; i < p->ntensors; i++)
		if (!strcmp(p->tensors[i].name, name))
			return i;
	return -1;
}

const char *ir_group_name(ir_group g)
{
	return g == GRP_GPUS ? "gpus" : g == GRP_NODES ? "nodes" : "world";
}

const char *ir_place_name(ir_place pl, char *buf, int n)
{
	switch (pl.kind) {
	case PL_LOCAL: snprintf(buf, (size_t)n, "local"); break;
	case PL_PARTIAL: snprintf(buf, (size_t)n, "partial"); break;
	case PL_SPLIT:
		if (pl.group == GRP_WORLD)
			snprintf(buf, (size_t)n, "split(%d)", pl.dim);
		else
			snprintf(buf, (size_t)n, "split(%d, %s)", pl.dim, ir_group_name(pl.group));
		break;
	}
	return buf;
}

int ir_group_size(const ir_prog *p, ir_group g)
{
	return g == GRP_GPUS ? p->gpus : g == GRP_NODES ? p->nodes : p->world;
}

int64_t ir_tensor_elems(const ir_tensor *t)
{
	int64_t n = 1;
	for (int d = 0; d < t->ndim; d++)
		n *= t->local[d];
	return n;
}

int64_t ir_tensor_bytes(const ir_tensor *t)
{
	return ir_tensor_elems(t) * ir_dtype_size(t->dtype);
}

int ir_row_dim(const ir_tensor *t)
{
	return t->ndim >= 2 ? t->ndim - 2 : 0;
}

int64_t ir_row_bytes(const ir_tensor *t)
{
	int64_t b = ir_dtype_size(t->dtype);
	for (int d = ir_row_dim(t) + 1; d < t->ndim; d++)
		b *= t->local[d];
	return b;
}

/* The shard a rank holds in a group. */
static int shard_of(ir_group g, int rank, int gpus)
{
	switch (g) {
	case GRP_GPUS: return rank % gpus;
	case GRP_NODES: return rank / gpus;
	default: return rank;
	}
}

int64_t ir_shard_base(const ir_tensor *t, int d, int rank, int nodes, int gpus)
{
	(void)nodes;
	if (t->place.kind != PL_SPLIT || t->place.dim != d)
		return 0;
	return (int64_t)shard_of(t->place.group, rank, gpus) * t->local[d];
}

int ir_rank_shift(int x, int r, int nodes, int gpus)
{
	int xn = x / gpus, xg = x % gpus;
	int rn = r / gpus, rg = r % gpus;
	return ((xn + rn) % nodes) * gpus + (xg + rg) % gpus;
}

/* sigma_r on a shard index of a group. */
static int64_t shard_shift(ir_group g, int64_t s, int r, int nodes, int gpus)
{
	switch (g) {
	case GRP_GPUS: return (s + r % gpus) % gpus;
	case GRP_NODES: return (s + r / gpus) % nodes;
	default: return ir_rank_shift((int)s, r, nodes, gpus);
	}
}

int ir_rot_whole(const ir_prog *p, const ir_tensor *x, int d, int64_t lo, int64_t hi)
{
	int64_t u = x->rot[d].unit;
	return u > 0 && lo == 0 && hi == u * ir_group_size(p, x->rot[d].group);
}

int ir_layout_dim(const ir_prog *p, const ir_op *op, int k, int dy)
{
	const ir_tensor *x = &p->tensors[op->in[k]], *y = &p->tensors[op->out];
	switch (op->kind) {
	case OP_HEADS:        /* [T, H*D] -> [H, T, D]: the tokens */
		return k == 0 && dy == 1 ? 0 : -1;
	case OP_MERGE_HEADS:  /* [H, T, D] -> [T, H*D] */
		return dy == 0 ? 1 : -1;
	case OP_SLICE:
		return k == 0 && dy != op->dim ? dy : -1;
	case OP_CONCAT:
		return dy != op->dim ? dy : -1;
	case OP_TRANSPOSE:
		return k != 0 ? -1 : dy == op->dim ? op->dim2 : dy == op->dim2 ? op->dim : dy;
	case OP_RESHAPE: {    /* the same shape, or the last dimension(s) differ */
		if (k != 0)
			return -1;
		int lead = x->ndim == y->ndim ? y->ndim
			   : (x->ndim < y->ndim ? x->ndim : y->ndim) - 1;
		return dy < lead ? dy : -1;
	}
	default:
		return -1;
	}
}

ir_region ir_region_shift(const ir_prog *p, ir_region g, int r)
{
	if (g.tensor < 0)
		return g;
	const ir_tensor *t = &p->tensors[g.tensor];
	g.rank = ir_rank_shift(g.rank, r, p->nodes, p->gpus);
	for (int d = 0; d < t->ndim; d++) {
		int64_t u = t->rot[d].unit;
		if (u <= 0 || ir_rot_whole(p, t, d, g.lo[d], g.hi[d]))
			continue;
		int64_t s = g.lo[d] / u, off = g.lo[d] % u;
		int64_t ns = shard_shift(t->rot[d].group, s, r, p->nodes, p->gpus);
		int64_t len = g.hi[d] - g.lo[d];
		g.lo[d] = ns * u + off;
		g.hi[d] = g.lo[d] + len;
	}
	return g;
}

ir_task ir_task_shift(const ir_sched *s, const ir_task *t, int r, ir_region *reads,
		      ir_flagref *waits)
{
	const ir_prog *p = s->prog;
	ir_task u = *t;
	u.rank = ir_rank_shift(t->rank, r, p->nodes, p->gpus);
	u.reads = reads;
	u.maxreads = t->nreads;
	for (int i = 0; i < t->nreads; i++)
		u.reads[i] = ir_region_shift(p, t->reads[i], r);
	u.write = ir_region_shift(p, t->write, r);
	u.waits = waits;
	u.maxwaits = t->nwaits;
	for (int i = 0; i < t->nwaits; i++)
		u.waits[i] = (ir_flagref){ir_rank_shift(t->waits[i].rank, r, p->nodes, p->gpus),
					  t->waits[i].index};
	for (int i = 0; i < t->nsignals; i++)
		u.signals[i].rank = ir_rank_shift(t->signals[i].rank, r, p->nodes, p->gpus);
	return u;
}

int ir_cut(const ir_tensor *x, int d, int64_t lo, int64_t hi, int64_t step, int64_t *cl,
	   int64_t *ch, int max)
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
			if (cl)
				cl[n] = a;
			if (ch)
				ch[n] = a + step < s1 ? a + step : s1;
			n++;
		}
	}
	return n;
}
