/* tiles.c - the helpers of tiles.h: tasks, their regions, and the boxes a
 * tensor is cut into. */
#include "tiles.h"

#include <string.h>

ir_task *lower_task(lower *L, ir_taskkind k, int op)
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

ir_region lower_full(const ir_prog *p, int t, int rank)
{
	const ir_tensor *x = &p->tensors[t];
	ir_region g = {.tensor = t, .rank = rank};
	for (int d = 0; d < x->ndim; d++) {
		g.lo[d] = ir_shard_base(x, d, rank, p->nodes, p->gpus);
		g.hi[d] = g.lo[d] + x->local[d];
	}
	return g;
}

void lower_read(lower *L, ir_task *t, ir_region g)
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

ir_region lower_retarget(ir_region g, int tensor)
{
	g.tensor = tensor;
	return g;
}

int lower_shard_owner(const ir_prog *p, ir_group g, int s)
{
	return g == GRP_NODES ? s * p->gpus : s;
}

double lower_volume(const ir_region *g, int ndim)
{
	double v = 1;
	for (int d = 0; d < ndim; d++)
		v *= (double)(g->hi[d] - g->lo[d]);
	return v;
}

ir_region *lower_boxes(lower *L)
{
	if (!L->boxes) {
		L->boxes = arena_alloc(L->a, IR_MAXCUTS * sizeof *L->boxes);
		if (!L->boxes)
			L->err = 1;
	}
	return L->boxes;
}

void lower_index_writers(lower *L)
{
	const ir_sched *s = L->s;
	if (!L->whead) {
		int n = L->p->ntensors;
		L->whead = arena_alloc(L->a, (size_t)(n + 1) * sizeof(int));
		L->wtail = arena_alloc(L->a, (size_t)(n + 1) * sizeof(int));
		if (!L->whead || !L->wtail) {
			L->err = 1;
			return;
		}
		for (int t = 0; t < n; t++)
			L->whead[t] = L->wtail[t] = -1;
	}
	if (s->ntasks > L->capnext) {
		int nc = L->capnext ? L->capnext : 256;
		while (nc < s->ntasks)
			nc *= 2;
		int *nn = arena_alloc(L->a, (size_t)nc * sizeof(int));
		if (!nn) {
			L->err = 1;
			return;
		}
		if (L->nindexed)
			memcpy(nn, L->wnext, (size_t)L->nindexed * sizeof(int));
		L->wnext = nn;
		L->capnext = nc;
	}
	for (int i = L->nindexed; i < s->ntasks; i++) {
		const ir_task *k = &s->tasks[i];
		L->wnext[i] = -1;
		if (k->write.tensor < 0 || k->write.rank != 0 ||
		    (k->kind != TASK_MATMUL && k->kind != TASK_SUMK && k->kind != TASK_EW))
			continue;
		int t = k->write.tensor;
		if (L->wtail[t] >= 0)
			L->wnext[L->wtail[t]] = i;
		else
			L->whead[t] = i;
		L->wtail[t] = i;
	}
	L->nindexed = s->ntasks;
}

int lower_writer(const lower *L, int t, int after)
{
	if (!L->whead)
		return -1;
	return after < 0 ? L->whead[t] : L->wnext[after];
}

int lower_producer_boxes(lower *L, int t, ir_region *out, int max)
{
	int n = 0;
	for (int i = lower_writer(L, t, -1); i >= 0; i = lower_writer(L, t, i)) {
		if (n == max)
			return -1;
		out[n++] = L->s->tasks[i].write;
	}
	return n;
}

int lower_row_boxes(lower *L, int t, int64_t bytes, int64_t minrows, ir_region *out, int max)
{
	const ir_prog *p = L->p;
	const ir_tensor *x = &p->tensors[t];
	ir_region full = lower_full(p, t, 0);
	const int rd = ir_row_dim(x);
	const int64_t rowb = ir_row_bytes(x);
	int64_t rows = bytes / (rowb ? rowb : 1);
	if (rows < minrows)
		rows = minrows;
	int64_t outer = 1;
	for (int d = 0; d < rd; d++)
		outer *= x->local[d];
	int n = 0;
	for (int64_t e = 0; e < outer; e++) {
		int k = ir_cut(x, rd, full.lo[rd], full.hi[rd], rows, L->cut_lo, L->cut_hi, IR_MAXCUTS);
		if (k < 0 || n + k > max)
			return -1;
		for (int i = 0; i < k; i++) {
			ir_region g = full;
			if (rd == 1) {
				g.lo[0] = full.lo[0] + e;
				g.hi[0] = g.lo[0] + 1;
			}
			g.lo[rd] = L->cut_lo[i];
			g.hi[rd] = L->cut_hi[i];
			out[n++] = g;
		}
	}
	return n;
}

int lower_grid_boxes(lower *L, int t, int64_t rows, int64_t cols, ir_region *out, int max)
{
	const ir_prog *p = L->p;
	const ir_tensor *x = &p->tensors[t];
	const ir_region full = lower_full(p, t, 0);
	const int cd = x->ndim - 1, rd = x->ndim - 2;  /* rd < 0: a 1-D tensor */
	int64_t outer = 1;
	for (int k = 0; k < rd; k++)
		outer *= x->local[k];
	int nr = 1;
	int64_t *rl = NULL, *rh = NULL;
	if (rd >= 0) {
		nr = ir_cut(x, rd, full.lo[rd], full.hi[rd], rows, NULL, NULL, IR_MAXCUTS);
		if (nr < 0 || nr > max)
			return -1;
		rl = arena_alloc(L->a, 2 * (size_t)nr * sizeof *rl);
		if (!rl) {
			L->err = 1;
			return -1;
		}
		rh = rl + nr;
		ir_cut(x, rd, full.lo[rd], full.hi[rd], rows, rl, rh, nr);
	}
	int nc = ir_cut(x, cd, full.lo[cd], full.hi[cd], cols, L->cut_lo, L->cut_hi, IR_MAXCUTS);
	if (nc < 0 || (double)outer * nr * nc > max)
		return -1;
	int n = 0;
	for (int64_t e = 0; e < outer; e++) {
		ir_region g = full;
		int64_t q = e;   /* index e of the dims before the rows */
		for (int k = rd - 1; k >= 0; k--) {
			g.lo[k] = full.lo[k] + q % x->local[k];
			g.hi[k] = g.lo[k] + 1;
			q /= x->local[k];
		}
		for (int i = 0; i < nr; i++) {
			if (rd >= 0) {
				g.lo[rd] = rl[i];
				g.hi[rd] = rh[i];
			}
			for (int j = 0; j < nc; j++) {
				g.lo[cd] = L->cut_lo[j];
				g.hi[cd] = L->cut_hi[j];
				out[n++] = g;
			}
		}
	}
	return n;
}
