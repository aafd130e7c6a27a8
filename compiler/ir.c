/* ir.c - the tables of ir.h, and the rank-symmetry map sigma_r. */
#include "ir.h"

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

int ir_find_tensor(const ir_prog *p, const char *name)
{
	for (int i = 0; i < p->ntensors; i++)
		if (!strcmp(p->tensors[i].name, name))
			return i;
	return -1;
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

ir_region ir_region_shift(const ir_prog *p, ir_region g, int r)
{
	if (g.tensor < 0)
		return g;
	const ir_tensor *t = &p->tensors[g.tensor];
	g.rank = ir_rank_shift(g.rank, r, p->nodes, p->gpus);
	for (int d = 0; d < t->ndim; d++) {
		int64_t u = t->rot[d].unit;
		if (u <= 0)
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

/* mkd_mma_tile: padded A [BM][BK+8] and B [BK][BN+8] per stage, 16-bit */
static int mma_smem(int bm, int bn, int bk, int stages)
{
	return stages * (bm * (bk + 8) + bk * (bn + 8)) * 2;
}

/* mkd_wgmma_tile::SMEM: 1 KB of alignment slack, per stage an A box of
 * BM x 64 and BN/64 B boxes of 64 x 64 (16-bit), two mbarriers */
static int wg_smem(int bm, int bn, int stages)
{
	return 1024 + stages * (bm * 64 * 2 + (bn / 64) * 64 * 64 * 2) + 2 * stages * 8;
}

static int wg_ok(const ir_prog *p, const ir_op *op)
{
	const ir_tensor *a = &p->tensors[op->in[0]], *b = &p->tensors[op->in[1]],
			*c = &p->tensors[op->out];
	if ((a->dtype != DT_BF16 && a->dtype != DT_F16) || b->dtype != a->dtype)
		return 0;
	if (c->dtype != DT_BF16 && c->dtype != DT_F16 && c->dtype != DT_F32)
		return 0;
	if (a->local[a->ndim - 1] % 8 || b->local[b->ndim - 1] % 8)  /* TMA: 16-byte rows */
		return 0;
	if ((op->hints.ntile >= 1 && op->hints.tile[0] != 128) ||
	    (op->hints.ntile >= 3 && op->hints.tile[2] != 64))
		return 0;
	return 1;
}

/* Whether a matmul of p with a default 128 x 256 tile would make more
 * tasks than its bound, so that its tasks walk several tiles.  Then every
 * default-tiled matmul of the kernel takes 128 x 128: a loop over 128 x 256
 * tiles, or one beside a 128 x 256 engine, leaves too few registers (the
 * kernel spills, measured with ptxas); 128 x 128 fits. */
static int walks_wide(const ir_prog *p)
{
	for (int i = 0; i < p->nops; i++) {
		const ir_op *op = &p->ops[i];
		if (op->kind != OP_MATMUL || op->hints.ntile >= 2 || !wg_ok(p, op))
			continue;
		const ir_tensor *c = &p->tensors[op->out];
		const int64_t nb = c->ndim == 3 ? c->local[0] : 1, rows = c->local[c->ndim - 2];
		const int64_t n = c->local[c->ndim - 1], bm = op->hints.ntile >= 1 ? op->hints.tile[0] : 128;
		const int64_t cap = op->hints.tasks ? op->hints.tasks : IR_MM_TASKS;
		if (n >= 256 && nb * ((rows + bm - 1) / bm) * ((n + 255) / 256) > cap)
			return 1;
	}
	return 0;
}

int ir_mm_plan_of(const ir_prog *p, const ir_op *op, int smem_limit, ir_mm_plan *m)
{
	const ir_tensor *c = &p->tensors[op->out];
	int64_t n = c->local[c->ndim - 1];
	m->wgmma = wg_ok(p, op);
	m->bm = op->hints.ntile >= 1 ? (int)op->hints.tile[0] : 128;
	m->bn = op->hints.ntile >= 2 ? (int)op->hints.tile[1]
				     : m->wgmma ? (n >= 256 ? 256 : n > 64 ? 128 : 64) : 128;
	if (m->wgmma && op->hints.ntile < 2 && m->bn == 256 && walks_wide(p))
		m->bn = 128;
	m->bk = op->hints.ntile >= 3 ? (int)op->hints.tile[2] : 64;
	if (m->wgmma && m->bn != 64 && m->bn != 128 && m->bn != 256)
		m->wgmma = 0;
	m->wg_stages = 0;
	if (m->wgmma) {
		for (m->wg_stages = 8; m->wg_stages > 2 && wg_smem(m->bm, m->bn, m->wg_stages) > smem_limit;
		     m->wg_stages--)
			;
		if (wg_smem(m->bm, m->bn, m->wg_stages) > smem_limit)
			m->wgmma = 0;
	}
	for (m->stages = 4; m->stages > 2 && mma_smem(m->bm, m->bn, m->bk, m->stages) > smem_limit;
	     m->stages--)
		;
	m->smem = mma_smem(m->bm, m->bn, m->bk, m->stages);
	if (m->wgmma && wg_smem(m->bm, m->bn, m->wg_stages) > m->smem)
		m->smem = wg_smem(m->bm, m->bn, m->wg_stages);
	return m->smem <= smem_limit;
}

ir_attn_plan ir_attn_plan_of(const ir_prog *p, const ir_op *op)
{
	const ir_tensor *q = &p->tensors[op->in[0]];
	int D = (int)q->shape[q->ndim - 1];
	ir_attn_plan a = {.tensor_cores = ir_dtype_size(q->dtype) == 2};
	if (a.tensor_cores) {
		/* keys per stage (mkd_fa's KEYS): two warpgroups of 32 keys up to
		 * D = 64, one of 64 up to 128, one of 32 above */
		int keys = D <= 128 ? 64 : 32;
		a.rows = 128;
		a.smem = (128 + 4 * keys) * (D + 8) * 2;
	} else {
		a.rows = 64;
		a.smem = 16 + 64 * 2 * 4 + 64 * D * 2 * 4;
	}
	return a;
}

int ir_moe_gate(const ir_prog *p, int dispatch)
{
	int gate = -1;
	for (int j = dispatch + 1; j < p->nops; j++)
		if (p->ops[j].kind == OP_COMBINE && p->ops[j].in[1] == p->ops[dispatch].in[1])
			gate = p->ops[j].in[2];
	return gate;
}
