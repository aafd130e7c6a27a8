/* verify.c - static proofs on the schedule of every rank, run on every
 * compile.
 *
 * The scheduler builds rank 0's tasks, the template; rank r runs their
 * images under sigma_r (ir.h).  This pass proves, of the tasks of every
 * rank, from the tasks alone:
 *   1. every flag reference is in range, and every flag of every rank gets
 *      exactly `expected` signals per run;
 *   2. the graph of program order (each CTA runs its list in order) and
 *      signal -> wait edges is acyclic: then in-order role loops cannot
 *      deadlock under any timing, given that all CTAs are resident;
 *   3. all CTAs are resident: CTAs x ranks per GPU <= SMs, shared memory
 *      and threads within one SM's limits (one CTA per SM);
 *   4. every read of a tensor written in the kernel is covered by writes,
 *      and each such write is ordered before the read (a flag the reader
 *      waits on, program order, or a path in the graph);
 *   5. no two writes of one tensor on one rank overlap;
 *   6. flags written by RDMA (an RDMA write cannot add): each such flag
 *      expects 1, only RDMA tasks signal them, and an RDMA task signals
 *      exactly one flag, a written one, on the rank its data goes to (the
 *      count of 1 then follows from check 1, a signal counting one);
 *   7. every op whose output has elements has at least one task (a
 *      lowering that made none would leave its output unwritten);
 *   8. what a task reads moves with what it writes: where an op pairs an
 *      input's coordinate with the output's one for one (elementwise and
 *      row ops on every dimension of a same-shaped input; heads and
 *      merge_heads on the tokens), the two boxes move alike under every
 *      sigma_r (the same shard unit and group, or neither moves).  Checks
 *      1-7 hold of a schedule whose rank r pairs the wrong elements (the
 *      coverage is the same); this one does not, from the task boxes and
 *      the op's meaning alone, not from rotate.c's table it checks;
 *   9. no RDMA write reads or writes a view (its commands name byte
 *      offsets of a tensor's row-major piece);
 *  10. pools (ir_pool: tasks taken at run time by whichever of the CTAs
 *      holding them asks first): each pooled op's tasks are its pool's,
 *      each once, a CTA's entries of a pool are contiguous, and the pool
 *      counts the CTAs that hold them.  For check 2 a pool is one node
 *      (its tasks' waits into it, their signals out of it) standing in
 *      every holding CTA's list where its entries are: a CTA in the pool
 *      waits for any of its tasks, so acyclic, nothing the pool needs
 *      waits for it in any list.  For check 4 a pooled task has no
 *      program order (any CTA may run it): only flags order it;
 *  11. a matmul whose engine stores whole tiles without bounds tests
 *      (ir_mm_plan.full) or by TMA stores of whole boxes
 *      (ir_mm_plan.tma_store) writes boxes whose sides are multiples of its
 *      tile's, so that what it stores is its box (check 5 sees only the
 *      box: a whole tile past a box of 64 rows wrote into the next
 *      tensor).
 * It does not expand the ranks: it checks the template, and the images of
 * its writes on one rank, which is enough by the symmetry below; the cost
 * is that of the template, not ranks x template.  A failure is the
 * compiler's bug: an error naming the task and region.
 *
 * Why the template is enough.  The ranks of a nodes x gpus mesh form the
 * group A = Z_nodes x Z_gpus, and sigma_r(x) = x + r (ir_rank_shift).  On a
 * region sigma_r moves the rank, and in each dimension tied to a shard
 * (rot[d], unit u) the shard s = lo / u to s + r in the shard's group
 * (a quotient of A), offset and length kept (ir_region_shift).  Check 0
 * makes sure first that every template task runs on rank 0, every rank
 * named is in range, and every box lies inside one shard of each moved
 * dimension (0 <= lo, lo / u < the group's size, lo / u = (hi - 1) / u)
 * or spans the whole dimension, every shard (which sigma_r keeps).
 * For such boxes:
 *   (a) sigma_0 is the identity and sigma_a(sigma_b(g)) = sigma_a+b(g),
 *       and the image is again such a box;
 *   (b) for ranks x and y exactly one r has sigma_r(x) = y (r = y - x);
 *   (c) sigma_r translates a box as a whole and permutes the shards, so
 *       images of two boxes of one tensor meet exactly as the boxes do:
 *       |sigma_r(g) n sigma_r(h)| = |g n h|.
 * Every rank's schedule is E = {(r, t)}: template task t run by rank r,
 * reading sigma_r of t's reads, writing sigma_r of its write, waiting on
 * and signalling sigma_r of its flag references (x, f) -> (x + r, f).  By
 * (a), the shift S_a: (r, t) -> (r + a, t), (y, f) -> (y + a, f) maps E's
 * graph (program order, signal -> flag -> wait) onto itself.  Then:
 *   1. flag (y, f) gets a signal from (r, t) for each reference (x, f) of
 *      t with x + r = y: by (b) one per reference, whatever y.  Every rank's
 *      flag f gets the template's count of references to f.
 *   2. Projecting E's graph onto the template's (nodes: tasks and flag
 *      indices; (r, t) -> t, (y, f) -> f) maps each edge to an edge and a
 *      cycle to a closed walk: if the template's graph is acyclic, so is
 *      E's.  (Not the converse; but the scheduler's one global order makes
 *      every edge of the template's graph go forward, and only such
 *      schedules pass.)
 *   5. Writer (a, j) of template task j writes on rank 0 for exactly one a
 *      (b): rank 0's writes are one box per writing task, W0, and rank y's
 *      are S_y of them.  By (c) two boxes of rank y meet iff their S_-y
 *      preimages in W0 do: W0 is checked.
 *   4. S_r carries the template's task t to (r, t), each writer of one of
 *      t's reads to a writer of its image (coverage kept, by (c)), and
 *      whatever orders the two (a shared flag, program order, a path) to
 *      the same between the images.  So the template's reads are checked,
 *      each against the writers of its rank y: S_y of W0.
 * The path search of check 4 (when no wait of the reader is signalled by
 * the writer and program order does not decide) walks E's graph itself,
 * without building it, only through tasks and flags the template's order
 * puts before the reader.
 */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "pass.h"

/* writers of one tensor on rank 0 (W0), sorted by lo[kd] */
typedef struct wlist {
	int *v;           /* template tasks */
	int n;
	int kd;           /* the dimension their boxes differ in most */
	int64_t maxlen;   /* the longest write along kd */
} wlist;

typedef struct ver {
	const ir_sched *s;
	const ir_prog *p;
	diags *d;
	arena *a;
	int world, nt, nf;
	int err;
	/* W0: template task j's write moved to rank 0, and the shift a_j that
	 * does it (sigma_{a_j}(write) = w0[j], on rank 0) */
	ir_region *w0;
	int *a0;
	wlist *wl;        /* per tensor */
	int sortdim;      /* by_lo's dimension */
	/* the template's graph: tasks [0, nt), then flags [nt, nt + nf); CSR */
	int *first, *to;
	int *pos;         /* place in a topological order */
	/* each task's node: itself, or for a pooled task its pool's first */
	int *node;
	char *pooled;
	/* waiters of each flag index (CSR): template task and wait rank */
	int *wfirst, *wtask, *wrank;
	/* the reader's waits, sorted keys rank * nf + index */
	int64_t *wkeys;
	int nwkeys;
	/* path search in E: a set of visited nodes (open addressing, one stamp
	 * per search) and a stack; made on first use */
	int64_t *hkey;
	int *hstamp;
	int hcap, hn, stamp;
	int64_t *stack;
	int sp, capstack;
	/* room for an expanded task's reads and waits (for messages) */
	ir_region *rbuf;
	ir_flagref *wbuf;
} ver;

static int neg(const ver *V, int r)
{
	const int N = V->p->nodes, G = V->p->gpus;
	return ((N - r / G) % N) * G + (G - r % G) % G;
}

static int add(const ver *V, int x, int r)
{
	return ir_rank_shift(x, r, V->p->nodes, V->p->gpus);
}

static void describe(const ver *V, const ir_task *t, strbuf *sb)
{
	const ir_op *op = &V->p->ops[t->op];
	sb_printf(sb, "task %d (%s of stage '%s', rank %d, CTA %d)", t->id,
		  ir_task_name(t->kind), op->stage, t->rank, t->cta);
}

static void region_str(const ver *V, const ir_region *g, strbuf *sb)
{
	const ir_tensor *x = &V->p->tensors[g->tensor];
	sb_printf(sb, "%s@%d[", x->name, g->rank);
	for (int d = 0; d < x->ndim; d++)
		sb_printf(sb, "%s%lld:%lld", d ? ", " : "", (long long)g->lo[d], (long long)g->hi[d]);
	sb_puts(sb, "]");
}

static void fail(ver *V, const ir_task *t, const ir_region *g, const char *what)
{
	strbuf sb;
	sb_init(&sb);
	if (t)
		describe(V, t, &sb);
	if (g) {
		sb_puts(&sb, t ? ", region " : "region ");
		region_str(V, g, &sb);
	}
	diag_error(V->d, t ? V->p->ops[t->op].where : V->p->where,
		   "internal: schedule verification failed: %s%s%s", what,
		   sb.len ? ": " : "", sb_str(&sb));
	sb_free(&sb);
	V->err = 1;
}

/* Rank r's image of template task j (its reads and waits in V's buffers),
 * for messages: the id is its place in the expanded list. */
static ir_task xtask(const ver *V, int r, int j)
{
	ir_task u = ir_task_shift(V->s, &V->s->tasks[j], r, V->rbuf, V->wbuf);
	u.id = r * V->nt + j;
	return u;
}

static int64_t volume(const ir_region *g, int nd)
{
	int64_t v = 1;
	for (int d = 0; d < nd; d++)
		v *= g->hi[d] > g->lo[d] ? g->hi[d] - g->lo[d] : 0;
	return v;
}

static int64_t inter(const ir_region *a, const ir_region *b, int nd)
{
	if (a->tensor != b->tensor || a->rank != b->rank)
		return 0;
	int64_t v = 1;
	for (int d = 0; d < nd; d++) {
		int64_t lo = a->lo[d] > b->lo[d] ? a->lo[d] : b->lo[d];
		int64_t hi = a->hi[d] < b->hi[d] ? a->hi[d] : b->hi[d];
		if (hi <= lo)
			return 0;
		v *= hi - lo;
	}
	return v;
}

static void *alloc(ver *V, size_t n)
{
	void *q = arena_alloc(V->a, n ? n : 1);
	if (!q)
		V->err = 1;
	return q;
}

/* ---- 0. the symmetry's premises -------------------------------------------- */

/* Is g a region sigma_r moves as a box: its tensor and rank in range, and
 * inside one shard of each dimension tied to a shard, or spanning all of
 * its shards (ir_rot_whole: sigma_r keeps such a range, so (a)-(c) below
 * hold for it too)? */
static int shard_box(const ver *V, const ir_region *g)
{
	const ir_prog *p = V->p;
	if (g->tensor < 0 || g->tensor >= p->ntensors || g->rank < 0 || g->rank >= V->world)
		return 0;
	const ir_tensor *x = &p->tensors[g->tensor];
	for (int d = 0; d < x->ndim; d++) {
		int64_t u = x->rot[d].unit;
		if (u <= 0 || g->hi[d] <= g->lo[d] || ir_rot_whole(p, x, d, g->lo[d], g->hi[d]))
			continue;
		if (g->lo[d] < 0 || g->lo[d] / u >= ir_group_size(p, x->rot[d].group) ||
		    g->lo[d] / u != (g->hi[d] - 1) / u)
			return 0;
	}
	return 1;
}

static int premises(ver *V)
{
	const ir_sched *s = V->s;
	for (int i = 0; i < V->nt; i++) {
		const ir_task *t = &s->tasks[i];
		if (t->rank != 0 || t->op < 0 || t->op >= V->p->nops) {
			fail(V, NULL, NULL, "a template task does not run on rank 0 or serves no op");
			return 1;
		}
		if (!shard_box(V, &t->write)) {
			fail(V, t, t->write.tensor >= 0 && t->write.tensor < V->p->ntensors
				   ? &t->write : NULL,
			     "its write is not a box that sigma_r moves whole (a rank out of range, "
			     "or across a shard boundary)");
			return 1;
		}
		for (int k = 0; k < t->nreads; k++)
			if (!shard_box(V, &t->reads[k])) {
				fail(V, t, t->reads[k].tensor >= 0 && t->reads[k].tensor < V->p->ntensors
					   ? &t->reads[k] : NULL,
				     "it reads a region that sigma_r does not move whole (a rank out of "
				     "range, or across a shard boundary)");
				return 1;
			}
	}
	return 0;
}

/* ---- 1. flags ------------------------------------------------------------------ */

static int flag_counts(ver *V)
{
	const ir_sched *s = V->s;
	int *count = alloc(V, (size_t)(V->nf + 1) * sizeof(int));
	if (!count)
		return 1;
	for (int i = 0; i < V->nt; i++) {
		const ir_task *t = &s->tasks[i];
		for (int k = 0; k < t->nwaits + t->nsignals; k++) {
			int sig = k >= t->nwaits;
			ir_flagref f = sig ? t->signals[k - t->nwaits] : t->waits[k];
			if (f.rank < 0 || f.rank >= V->world || f.index < 0 || f.index >= V->nf) {
				fail(V, t, NULL, sig ? "signal of a flag out of range"
					       : "wait on a flag out of range");
				return 1;
			}
			count[f.index] += sig;
		}
	}
	for (int f = 0; f < V->nf; f++)
		if (count[f] != s->flags[f].expected) {
			char what[160];
			snprintf(what, sizeof what,
				 "flag %d of every rank gets %d signals per run, expects %d", f, count[f],
				 s->flags[f].expected);
			fail(V, NULL, NULL, what);
			return 1;
		}
	return 0;
}

/* ---- 10. pools ----------------------------------------------------------------- */

/* Each task's node (V->node), after the pools' tables are checked. */
static int pools(ver *V)
{
	const ir_sched *s = V->s;
	const ir_prog *p = V->p;
	V->node = alloc(V, (size_t)(V->nt + 1) * sizeof(int));
	V->pooled = alloc(V, (size_t)V->nt + 1);
	int *seen = alloc(V, (size_t)p->nops * sizeof(int));
	char *held = alloc(V, (size_t)s->ctas + 1);
	if (V->err)
		return 1;
	for (int i = 0; i < V->nt; i++) {
		V->node[i] = i;
		V->pooled[i] = 0;
	}
	for (int o = 0; o < p->nops; o++)
		seen[o] = -1;
	for (int k = 0; k < s->npools; k++) {
		const ir_pool *pl = &s->pools[k];
		if (pl->op < 0 || pl->op >= p->nops || !p->ops[pl->op].plan.pool || seen[pl->op] >= 0 ||
		    pl->n < 1 || pl->first < 0 || (k && pl->first != s->pools[k - 1].first + s->pools[k - 1].n)) {
			fail(V, NULL, NULL, "a pool's table names no pooled op, one twice, or no tasks");
			return 1;
		}
		seen[pl->op] = k;
		memset(held, 0, (size_t)s->ctas);
		int ctas = 0;
		for (int j = 0; j < pl->n; j++) {
			const int i = s->pool_order[pl->first + j];
			if (i < 0 || i >= V->nt || s->tasks[i].op != pl->op || V->pooled[i]) {
				fail(V, i >= 0 && i < V->nt ? &s->tasks[i] : NULL, NULL,
				     "a pool lists a task of another op, or one twice");
				return 1;
			}
			V->pooled[i] = 1;
			V->node[i] = s->pool_order[pl->first];
			ctas += !held[s->tasks[i].cta];
			held[s->tasks[i].cta] = 1;
		}
		if (ctas != pl->ctas) {
			fail(V, &s->tasks[s->pool_order[pl->first]], NULL,
			     "a pool's count of CTAs is not the CTAs that hold its tasks (a run would "
			     "take another number of tickets)");
			return 1;
		}
	}
	for (int i = 0; i < V->nt; i++) {
		const ir_task *t = &s->tasks[i];
		if (p->ops[t->op].plan.pool && !V->pooled[i]) {
			fail(V, t, NULL, "a task of a pooled op is in no pool");
			return 1;
		}
		/* contiguous: an entry of the pool after another op's task
		 * that follows one of the pool's on the same CTA */
		if (V->pooled[i] && i > 0 && s->tasks[i - 1].cta == t->cta && s->tasks[i - 1].op != t->op)
			for (int j = i - 2; j >= s->cta_first[t->cta] && j >= 0; j--)
				if (s->tasks[j].op == t->op) {
					fail(V, t, NULL, "a CTA's entries of a pool are not contiguous");
					return 1;
				}
	}
	return 0;
}

/* Does task i's CTA successor follow it in check 2's graph (a pool's
 * entries are one node: no edge among them)? */
static int cta_next(const ver *V, int i)
{
	const ir_task *t = &V->s->tasks[i];
	return i + 1 < V->nt && V->s->tasks[i + 1].cta == t->cta && V->node[i + 1] != V->node[i];
}

/* ---- 2. the template's graph is acyclic ---------------------------------------- */

static int acyclic(ver *V)
{
	const ir_sched *s = V->s;
	const int nt = V->nt, nf = V->nf, nn = nt + nf;
	int ne = 0, nw = 0;
	for (int i = 0; i < nt; i++) {
		ne += s->tasks[i].nsignals + s->tasks[i].nwaits + 1;
		nw += s->tasks[i].nwaits;
	}
	V->first = alloc(V, (size_t)(nn + 1) * sizeof(int));
	V->to = alloc(V, (size_t)ne * sizeof(int));
	V->pos = alloc(V, (size_t)nn * sizeof(int));
	V->wfirst = alloc(V, (size_t)(nf + 1) * sizeof(int));
	V->wtask = alloc(V, (size_t)nw * sizeof(int));
	V->wrank = alloc(V, (size_t)nw * sizeof(int));
	int *deg = alloc(V, (size_t)nn * sizeof(int));
	int *fill = alloc(V, (size_t)(nn + 1) * sizeof(int));
	int *q = alloc(V, (size_t)nn * sizeof(int));
	if (V->err)
		return 1;
	/* out-degrees: a task's signals and its CTA successor; a flag's waiters
	 * (a pooled task's edges are its pool's node's) */
	const int *nd = V->node;
	for (int i = 0; i < nt; i++) {
		const ir_task *t = &s->tasks[i];
		V->first[nd[i] + 1] += t->nsignals + cta_next(V, i);
		for (int k = 0; k < t->nwaits; k++) {
			V->first[nt + t->waits[k].index + 1]++;
			V->wfirst[t->waits[k].index + 1]++;
		}
	}
	for (int u = 0; u < nn; u++)
		V->first[u + 1] += V->first[u];
	for (int f = 0; f < nf; f++)
		V->wfirst[f + 1] += V->wfirst[f];
	memcpy(fill, V->first, (size_t)(nn + 1) * sizeof(int));
	int *wfill = q;  /* free until Kahn's queue */
	memcpy(wfill, V->wfirst, (size_t)nf * sizeof(int));
	for (int i = 0; i < nt; i++) {
		const ir_task *t = &s->tasks[i];
		for (int k = 0; k < t->nsignals; k++)
			V->to[fill[nd[i]]++] = nt + t->signals[k].index;
		if (cta_next(V, i))
			V->to[fill[nd[i]]++] = nd[i + 1];
		for (int k = 0; k < t->nwaits; k++) {
			int f = t->waits[k].index;
			V->to[fill[nt + f]++] = nd[i];
			V->wtask[wfill[f]] = i;
			V->wrank[wfill[f]++] = t->waits[k].rank;
		}
	}
	for (int u = 0; u < nn; u++)
		for (int e = V->first[u]; e < V->first[u + 1]; e++)
			deg[V->to[e]]++;
	int qh = 0, qt = 0;
	for (int u = 0; u < nn; u++)
		if (!deg[u])
			q[qt++] = u;
	while (qh < qt) {
		int u = q[qh];
		V->pos[u] = qh++;
		for (int e = V->first[u]; e < V->first[u + 1]; e++)
			if (--deg[V->to[e]] == 0)
				q[qt++] = V->to[e];
	}
	if (qt == nn)
		return 0;
	for (int i = 0; i < nt; i++)
		if (deg[nd[i]]) {
			fail(V, &s->tasks[i], NULL,
			     V->pooled[i] ? "in-order CTA loops may deadlock (a cycle of waits and program "
					    "order passes through its pool, up to the rank symmetry)"
					  : "in-order CTA loops may deadlock (a cycle of waits and program order "
					    "passes through it, up to the rank symmetry)");
			return 1;
		}
	fail(V, NULL, NULL, "a cycle of waits among flags");
	return 1;
}

/* ---- 5. W0, and no overlapping writes ------------------------------------------ */

/* a qsort_r comparator over template task indices; arg: the verifier */
static int by_lo(const void *a, const void *b, void *arg)
{
	const ver *V = arg;
	const int d = V->sortdim;
	const ir_region *x = &V->w0[*(const int *)a], *y = &V->w0[*(const int *)b];
	return (x->lo[d] > y->lo[d]) - (x->lo[d] < y->lo[d]);
}

/* Sorts w by the dimension with the most distinct lo among its boxes (an
 * attention's key blocks all start at head 0: sorted by dim 0, a lookup
 * would walk every block). */
static void sort_writers(ver *V, wlist *w, int nd)
{
	int best = 0, most = 0;
	for (int d = 0; d < nd && w->n > 1; d++) {
		V->sortdim = d;
		qsort_r(w->v, (size_t)w->n, sizeof(int), by_lo, V);
		int distinct = 1;
		for (int k = 1; k < w->n; k++)
			distinct += V->w0[w->v[k]].lo[d] != V->w0[w->v[k - 1]].lo[d];
		if (distinct > most) {
			most = distinct;
			best = d;
		}
	}
	V->sortdim = w->kd = best;
	qsort_r(w->v, (size_t)w->n, sizeof(int), by_lo, V);
	for (int k = 0; k < w->n; k++) {
		const ir_region *g = &V->w0[w->v[k]];
		if (g->hi[best] - g->lo[best] > w->maxlen)
			w->maxlen = g->hi[best] - g->lo[best];
	}
}

static int disjoint_writes(ver *V)
{
	const ir_prog *p = V->p;
	const ir_sched *s = V->s;
	V->w0 = alloc(V, (size_t)V->nt * sizeof *V->w0);
	V->a0 = alloc(V, (size_t)V->nt * sizeof(int));
	V->wl = alloc(V, (size_t)p->ntensors * sizeof *V->wl);
	if (V->err)
		return 1;
	for (int j = 0; j < V->nt; j++) {
		V->a0[j] = neg(V, s->tasks[j].write.rank);
		V->w0[j] = ir_region_shift(p, s->tasks[j].write, V->a0[j]);
		V->wl[V->w0[j].tensor].n++;
	}
	for (int x = 0; x < p->ntensors; x++) {
		V->wl[x].v = alloc(V, (size_t)V->wl[x].n * sizeof(int));
		V->wl[x].n = 0;
	}
	if (V->err)
		return 1;
	for (int j = 0; j < V->nt; j++) {
		wlist *w = &V->wl[V->w0[j].tensor];
		w->v[w->n++] = j;
	}
	for (int x = 0; x < p->ntensors; x++) {
		wlist *w = &V->wl[x];
		int nd = p->tensors[x].ndim;
		sort_writers(V, w, nd);
		const int kd = w->kd;
		for (int j = 0; j < w->n; j++) {
			const ir_region *tw = &V->w0[w->v[j]];
			for (int k = j + 1; k < w->n; k++) {
				const ir_region *uw = &V->w0[w->v[k]];
				if (uw->lo[kd] >= tw->hi[kd])
					break;
				if (inter(tw, uw, nd)) {
					/* the second writer's image that writes on rank 0 */
					const ir_task u = xtask(V, V->a0[w->v[k]], w->v[k]);
					fail(V, &u, &u.write, "two tasks write the same elements");
					return 1;
				}
			}
		}
	}
	return 0;
}

/* ---- 4. reads covered and ordered ----------------------------------------------- */

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* The reader's waits, for has_wait. */
static void reader_waits(ver *V, const ir_task *t)
{
	for (int k = 0; k < t->nwaits; k++)
		V->wkeys[k] = (int64_t)t->waits[k].rank * V->nf + t->waits[k].index;
	qsort(V->wkeys, (size_t)t->nwaits, sizeof(int64_t), cmp_i64);
	V->nwkeys = t->nwaits;
}

static int has_wait(const ver *V, int rank, int index)
{
	int64_t key = (int64_t)rank * V->nf + index;
	int lo = 0, hi = V->nwkeys;
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (V->wkeys[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < V->nwkeys && V->wkeys[lo] == key;
}

/* Node ids of E's graph: task (r, t) and flag (y, f). */
static int64_t tnode(const ver *V, int r, int t) { return (int64_t)r * V->nt + t; }
static int64_t fnode(const ver *V, int y, int f)
{
	return (int64_t)V->world * V->nt + (int64_t)y * V->nf + f;
}

/* Marks node u visited in this search; 0 when it was already. */
static int visit(ver *V, int64_t u)
{
	if (2 * (V->hn + 1) > V->hcap) {
		int nc = V->hcap ? 2 * V->hcap : 4096;
		int64_t *nk = alloc(V, (size_t)nc * sizeof *nk);
		int *ns = alloc(V, (size_t)nc * sizeof *ns);
		if (V->err)
			return 0;
		for (int i = 0; i < V->hcap; i++)
			if (V->hstamp[i] == V->stamp) {
				size_t h = (size_t)((uint64_t)V->hkey[i] * 0x9e3779b97f4a7c15ull >> 20) &
					   (size_t)(nc - 1);
				while (ns[h] == V->stamp)
					h = (h + 1) & (size_t)(nc - 1);
				nk[h] = V->hkey[i];
				ns[h] = V->stamp;
			}
		V->hkey = nk;
		V->hstamp = ns;
		V->hcap = nc;
	}
	size_t h = (size_t)((uint64_t)u * 0x9e3779b97f4a7c15ull >> 20) & (size_t)(V->hcap - 1);
	while (V->hstamp[h] == V->stamp) {
		if (V->hkey[h] == u)
			return 0;
		h = (h + 1) & (size_t)(V->hcap - 1);
	}
	V->hkey[h] = u;
	V->hstamp[h] = V->stamp;
	V->hn++;
	return 1;
}

static void push(ver *V, int64_t u)
{
	if (V->sp == V->capstack) {
		int nc = V->capstack ? 2 * V->capstack : 4096;
		int64_t *ns = alloc(V, (size_t)nc * sizeof *ns);
		if (V->err)
			return;
		if (V->sp)
			memcpy(ns, V->stack, (size_t)V->sp * sizeof *ns);
		V->stack = ns;
		V->capstack = nc;
	}
	V->stack[V->sp++] = u;
}

/* Is there a path in E from task (r, j) to task (0, i)?  Every edge of E
 * goes forward in the template's order (pos), so only nodes before i can
 * be on one. */
static int reaches(ver *V, int r, int j, int i)
{
	const ir_sched *s = V->s;
	const int64_t target = tnode(V, 0, i), ntn = (int64_t)V->world * V->nt;
	const int *nd = V->node;
	const int lim = V->pos[nd[i]];
	if (V->pos[nd[j]] >= lim)
		return 0;
	V->stamp++;
	V->hn = 0;
	V->sp = 0;
	visit(V, tnode(V, r, j));
	push(V, tnode(V, r, j));
	while (V->sp && !V->err) {
		int64_t u = V->stack[--V->sp];
		if (u == target)
			return 1;
		if (u < ntn) {  /* task (ur, t): its signals, its CTA successor */
			int ur = (int)(u / V->nt), t = (int)(u % V->nt);
			const ir_task *k = &s->tasks[t];
			for (int e = 0; e < k->nsignals; e++) {
				int f = k->signals[e].index;
				if (V->pos[V->nt + f] < lim &&
				    visit(V, fnode(V, add(V, k->signals[e].rank, ur), f)))
					push(V, fnode(V, add(V, k->signals[e].rank, ur), f));
			}
			if (t + 1 < V->nt && s->tasks[t + 1].cta == k->cta && !V->pooled[t] &&
			    !V->pooled[t + 1] && V->pos[t + 1] <= lim && visit(V, tnode(V, ur, t + 1)))
				push(V, tnode(V, ur, t + 1));
		} else {  /* flag (y, f): its waiters (w, x) run by rank y - x */
			int y = (int)((u - ntn) / V->nf), f = (int)((u - ntn) % V->nf);
			for (int e = V->wfirst[f]; e < V->wfirst[f + 1]; e++) {
				int w = V->wtask[e];
				int64_t v = tnode(V, add(V, y, neg(V, V->wrank[e])), w);
				if (V->pos[nd[w]] <= lim && visit(V, v))
					push(V, v);
			}
		}
	}
	return 0;
}

/* Is writer (r, j) ordered before the template's task t? */
static int ordered(ver *V, int r, int j, const ir_task *t)
{
	const ir_task *u = &V->s->tasks[j];
	for (int k = 0; k < u->nsignals; k++)
		if (has_wait(V, add(V, u->signals[k].rank, r), u->signals[k].index))
			return 2;  /* directly: a flag t waits on */
	if (r == 0 && u->cta == t->cta && u->order < t->order && !V->pooled[j] && !V->pooled[t->id])
		return 1;
	return reaches(V, r, j, t->id);
}

static int reads_covered(ver *V)
{
	const ir_prog *p = V->p;
	const ir_sched *s = V->s;
	int maxw = 1;
	for (int i = 0; i < V->nt; i++)
		if (s->tasks[i].nwaits > maxw)
			maxw = s->tasks[i].nwaits;
	V->wkeys = alloc(V, (size_t)maxw * sizeof(int64_t));
	if (V->err)
		return 1;
	/* reads already proven: the same box under the same waits, every
	 * writer ordered by a signal of one of those waits (many tasks read
	 * one box under one flag: a combine reads every expert tile) */
	enum { NSEEN = 1 << 16 };
	uint64_t *seen = alloc(V, 2 * NSEEN * sizeof *seen);
	if (!seen)
		return 1;
	int nseen = 0;
	for (int i = 0; i < V->nt && !V->err; i++) {
		const ir_task *t = &s->tasks[i];
		reader_waits(V, t);
		uint64_t h1, h2, w1 = 1469598103934665603ull, w2 = 0x9e3779b97f4a7c15ull;
#define MIX(v) (h1 = (h1 ^ (uint64_t)(v)) * 1099511628211ull, \
		h2 = (h2 ^ (uint64_t)(v)) * 0xff51afd7ed558ccdull + 0x2545f4914f6cdd1dull)
		h1 = w1, h2 = w2;
		for (int b1 = 0; b1 < t->nwaits; b1++)  /* the waits, once per task */
			MIX(t->waits[b1].rank), MIX(t->waits[b1].index);
		w1 = h1, w2 = h2;
		for (int ri = 0; ri < t->nreads && !V->err; ri++) {
			/* a view's writers: its root's (plan_view.c) */
			const ir_region root = lower_view_root(p, t->reads[ri]);
			const ir_region *g = &root;
			const ir_tensor *x = &p->tensors[g->tensor];
			if (x->kind == TK_IN && x->nwriters == 0)
				continue;
			h1 = w1, h2 = w2;
			MIX(g->tensor), MIX(g->rank);
			for (int dd = 0; dd < x->ndim; dd++)
				MIX(g->lo[dd]), MIX(g->hi[dd]);
			h1 |= 1;
			size_t slot = (size_t)(h1 >> 3) & (NSEEN - 1);
			int known = 0;
			while (seen[2 * slot]) {  /* at most half full: probes end */
				if (seen[2 * slot] == h1 && seen[2 * slot + 1] == h2) {
					known = 1;
					break;
				}
				slot = (slot + 1) & (NSEEN - 1);
			}
			if (known)
				continue;
			/* rank y's writers are S_y of W0: compare sigma_-y(g) with W0 */
			const int y = g->rank;
			const ir_region q = ir_region_shift(p, *g, neg(V, y));
			const wlist *w = &V->wl[g->tensor];
			const int kd = w->kd;
			int direct = 1;  /* every writer so far ordered by a wait's signal */
			int64_t covered = 0;
			/* writers with lo[kd] < q.hi[kd]: binary search the end */
			int lo = 0, hi = w->n;
			while (lo < hi) {
				int mid = (lo + hi) / 2;
				if (V->w0[w->v[mid]].lo[kd] < q.hi[kd])
					lo = mid + 1;
				else
					hi = mid;
			}
			for (int k = lo - 1; k >= 0 && !V->err; k--) {
				const int j = w->v[k];
				const ir_region *uw = &V->w0[j];
				if (uw->lo[kd] + w->maxlen <= q.lo[kd])
					break;
				int64_t c = inter(uw, &q, x->ndim);
				if (!c)
					continue;
				covered += c;
				/* the writer: template task j run by rank a_j + y */
				int ok = ordered(V, add(V, V->a0[j], y), j, t);
				if (ok != 2)
					direct = 0;
				if (!ok && !V->err) {
					const ir_task u = xtask(V, add(V, V->a0[j], y), j);
					strbuf sb;
					sb_init(&sb);
					sb_puts(&sb, "it reads what ");
					describe(V, &u, &sb);
					sb_puts(&sb, " writes, with nothing ordering the two");
					fail(V, t, g, sb_str(&sb));
					sb_free(&sb);
				}
			}
			if (!V->err && covered != volume(g, x->ndim))
				fail(V, t, g, "it reads elements that no task writes");
			else if (!V->err && direct && nseen < NSEEN / 2) {
				seen[2 * slot] = h1;
				seen[2 * slot + 1] = h2;
				nseen++;
			}
		}
	}
#undef MIX
	return V->err;
}

/* ---- 6. flags written by RDMA ---------------------------------------------------- */

static int written_flags(ver *V)
{
	const ir_sched *s = V->s;
	for (int f = 0; f < s->nflags; f++)
		if (s->flags[f].written && s->flags[f].expected != 1) {
			char what[120];
			snprintf(what, sizeof what, "flag %d is written by RDMA but expects %d signals",
				 f, s->flags[f].expected);
			fail(V, NULL, NULL, what);
			return 1;
		}
	for (int i = 0; i < s->ntasks; i++) {
		const ir_task *t = &s->tasks[i];
		int nwritten = 0;
		for (int k = 0; k < t->nsignals; k++) {
			ir_flagref f = t->signals[k];
			if (f.index < 0 || f.index >= s->nflags || !s->flags[f.index].written)
				continue;
			nwritten++;
			if (t->kind != TASK_RDMA) {
				fail(V, t, NULL, "a flag written by RDMA is also signalled by a task that adds");
				return 1;
			}
			if (f.rank != t->write.rank) {
				fail(V, t, &t->write, "an RDMA task writes a flag on a rank it does not write");
				return 1;
			}
		}
		if (t->kind == TASK_RDMA && (t->nsignals != 1 || nwritten != 1)) {
			fail(V, t, &t->write, "an RDMA task must signal exactly one flag, written with "
			     "its data");
			return 1;
		}
	}
	return 0;
}

/* ---- 7. every op with work has tasks --------------------------------------------- */

/* Does op `op` write nothing on any rank?  An empty output, a view (its
 * elements are its root's), or a put stage for the remote peers of a
 * one-node mesh (it has none). */
static int writes_nothing(const ir_prog *p, const ir_op *op)
{
	const ir_tensor *y = &p->tensors[op->out];
	return y->folded || y->view || ir_tensor_elems(y) == 0 ||
	       (op->kind == OP_PUT && op->peers == PEERS_REMOTE && p->nodes == 1);
}

static int has_tasks(ver *V)
{
	const ir_prog *p = V->p;
	char *any = alloc(V, (size_t)p->nops + 1);
	if (!any)
		return 1;
	for (int i = 0; i < V->s->ntasks; i++)
		if (V->s->tasks[i].op >= 0 && V->s->tasks[i].op < p->nops)
			any[V->s->tasks[i].op] = 1;
	for (int i = 0; i < p->nops; i++) {
		const ir_tensor *y = &p->tensors[p->ops[i].out];
		if (any[i] || writes_nothing(p, &p->ops[i]))
			continue;
		diag_error(V->d, p->ops[i].where,
			   "internal: schedule verification failed: '%s' writes %lld elements of '%s' "
			   "per rank but has no task", p->ops[i].stage, (long long)ir_tensor_elems(y),
			   y->name);
		V->err = 1;
		return 1;
	}
	return 0;
}

/* ---- 8. reads move with the write -------------------------------------------- */

/* How sigma_r moves dimension d of the box [lo, hi) of x: not at all (0),
 * or by shards of rot[d] (1). */
static int moved(const ir_prog *p, const ir_tensor *x, int d, int64_t lo, int64_t hi)
{
	return x->rot[d].unit > 0 && ir_group_size(p, x->rot[d].group) > 1 &&
	       !ir_rot_whole(p, x, d, lo, hi);
}

/* Do dimension dr of read g and dimension dw of write w move alike? */
static int alike(const ir_prog *p, const ir_region *g, int dr, const ir_region *w, int dw)
{
	const ir_tensor *x = &p->tensors[g->tensor], *y = &p->tensors[w->tensor];
	int mr = moved(p, x, dr, g->lo[dr], g->hi[dr]), mw = moved(p, y, dw, w->lo[dw], w->hi[dw]);
	if (!mr && !mw)
		return 1;
	return mr && mw && x->rot[dr].unit == y->rot[dw].unit && x->rot[dr].group == y->rot[dw].group;
}

static int reads_move(ver *V)
{
	const ir_prog *p = V->p;
	for (int i = 0; i < V->nt; i++) {
		const ir_task *t = &V->s->tasks[i];
		const ir_op *op = &p->ops[t->op];
		char c = ir_op_class(op->kind);
		if (t->write.tensor != op->out || (c != 'E' && c != 'R' && c != 'L') ||
		    op->kind == OP_SUM)
			continue;
		const ir_tensor *y = &p->tensors[op->out];
		for (int k = 0; k < t->nreads; k++) {
			const ir_region *g = &t->reads[k];
			const ir_tensor *x = &p->tensors[g->tensor];
			int ok = 1;
			if (c == 'L') {  /* the dimensions paired one for one */
				for (int in = 0; in < op->nin; in++) {
					if (g->tensor != op->in[in])
						continue;
					for (int d = 0; d < y->ndim && ok; d++) {
						int dx = ir_layout_dim(p, op, in, d);
						if (dx >= 0)
							ok = alike(p, g, dx, &t->write, d);
					}
				}
			} else {
				if (x->ndim != y->ndim || (c == 'R' && g->tensor != op->in[0]))
					continue;
				for (int d = 0; d < y->ndim && ok; d++)
					if (x->shape[d] == y->shape[d])
						ok = alike(p, g, d, &t->write, d);
			}
			if (!ok) {
				fail(V, t, g, "what it reads does not move with what it writes under "
				     "sigma_r (another rank would pair other elements)");
				return 1;
			}
		}
	}
	return 0;
}

/* ---- the pass ---------------------------------------------------------------------- */

int verify_run(const ir_sched *s, diags *d, arena *a)
{
	ver V = {.s = s, .p = s->prog, .d = d, .a = a};
	const ir_prog *p = s->prog;
	V.world = p->world;
	V.nt = s->ntasks;
	V.nf = s->nflags;

	/* 7. work: an op with a non-empty output has tasks (an unwritten output
	 * would pass checks 1-6: nothing reads a pipeline output) */
	if (has_tasks(&V))
		return 1;

	/* 3. residency */
	/* one CTA per SM: the CTAs of every rank sharing the GPU side by side */
	if (s->ctas * s->ranks_per_gpu > s->dev.sms || s->smem > s->dev.smem_per_sm ||
	    s->threads > 1024 || s->threads > s->dev.max_threads_per_sm) {
		diag_error(d, p->where,
			   "internal: %d CTAs x %d ranks per GPU (%d B shared memory, %d threads each) "
			   "cannot all be resident on %d SMs",
			   s->ctas, s->ranks_per_gpu, s->smem, s->threads, s->dev.sms);
		return 1;
	}
	for (int i = 0; i < s->ntasks; i++) {
		const ir_task *t = &s->tasks[i];
		if (t->cta < 0 || t->cta >= s->ctas || t->role < 0 || t->role >= s->nroles ||
		    t->cta < s->roles[t->role].first_cta ||
		    t->cta >= s->roles[t->role].first_cta + s->roles[t->role].ctas) {
			fail(&V, t, NULL, "task outside its role's CTAs");
			return 1;
		}
		/* 9. an RDMA write names byte offsets of row-major pieces
		 * (mkd/proxy.cuh, mkd_offset): never a view's (plan_view.c keeps
		 * what an exchange reads a copy) */
		if (t->kind == TASK_RDMA) {
			const ir_region *g = t->nreads ? &t->reads[0] : NULL;
			if (p->tensors[t->write.tensor].view || (g && p->tensors[g->tensor].view)) {
				fail(&V, t, p->tensors[t->write.tensor].view ? &t->write : g,
				     "an RDMA write of a view (its bytes are not a row-major piece)");
				return 1;
			}
		}
		/* 11. whole tiles: the box is what the engine stores (FULL, or
		 * a TMA store of the whole box) */
		const ir_op *op = t->op >= 0 && t->op < p->nops ? &p->ops[t->op] : NULL;
		if (t->kind == TASK_MATMUL && op && op->kind == OP_MATMUL &&
		    (op->plan.mm.full || op->plan.mm.tma_store)) {
			const int nd = p->tensors[t->write.tensor].ndim;
			if ((t->write.hi[nd - 2] - t->write.lo[nd - 2]) % op->plan.mm.bm ||
			    (t->write.hi[nd - 1] - t->write.lo[nd - 1]) % op->plan.mm.bn) {
				fail(&V, t, &t->write,
				     "a box of part tiles for an engine that stores whole ones");
				return 1;
			}
		}
	}

	/* 6. written flags (the template's kinds and indices are every rank's) */
	if (written_flags(&V))
		return 1;

	/* 0. the premises of the symmetry; room for messages */
	if (premises(&V))
		return 1;
	int maxr = 1, maxw = 1;
	for (int i = 0; i < s->ntasks; i++) {
		if (s->tasks[i].nreads > maxr)
			maxr = s->tasks[i].nreads;
		if (s->tasks[i].nwaits > maxw)
			maxw = s->tasks[i].nwaits;
	}
	V.rbuf = alloc(&V, (size_t)maxr * sizeof(ir_region));
	V.wbuf = alloc(&V, (size_t)maxw * sizeof(ir_flagref));
	if (V.err)
		return 1;

	/* 1, 10, 2, 5, 4, 8 */
	if (flag_counts(&V) || pools(&V) || acyclic(&V) || disjoint_writes(&V) || reads_covered(&V) ||
	    reads_move(&V))
		return 1;
	return V.err;
}
