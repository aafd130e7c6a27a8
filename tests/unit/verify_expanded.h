/* verify_expanded.h - the oracle of test_verify: the verifier as it was
 * before it proved its checks by symmetry (compiler/verify.c at b0761c6).
 * It expands every rank's tasks (ir_task_shift) and checks the expanded
 * schedule itself, at a cost of ranks x template; test_verify plants
 * faults and asks that both verifiers agree.  Included by one test only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "compiler/pass.h"

typedef struct vtask {
	ir_task t;
	int node;         /* graph node */
} vtask;

typedef struct ver {
	const ir_sched *s;
	const ir_prog *p;
	diags *d;
	arena *a;
	int world, n;     /* expanded task count */
	ir_region *w;     /* expanded tasks' writes: rank-major (the tasks
	                     themselves are expanded when needed) */
	int nnodes;       /* tasks, then flag instances */
	int *head, *next, *to, nedges, capedges;
	int *indeg;
	int err;
	/* room for an expanded task's reads and waits: slot 0 for the task
	 * being checked, slot 1 for one it is compared with */
	ir_region *rbuf[2];
	ir_flagref *wbuf[2];
	/* pools: each expanded task's node in check 2's graph (a pooled
	 * task's: its pool's first task on its rank), and whether pooled */
	int *node;
	char *pooled;
} ver;

static int flag_node(const ver *V, int rank, int index)
{
	return V->n + rank * V->s->nflags + index;
}

static void edge(ver *V, int a, int b)
{
	if (V->nedges == V->capedges) {
		int nc = V->capedges ? V->capedges * 2 : 4096;
		int *nt = arena_alloc(V->a, (size_t)nc * sizeof(int));
		int *nn = arena_alloc(V->a, (size_t)nc * sizeof(int));
		if (!nt || !nn) {
			V->err = 1;
			return;
		}
		if (V->nedges) {
			memcpy(nt, V->to, (size_t)V->nedges * sizeof(int));
			memcpy(nn, V->next, (size_t)V->nedges * sizeof(int));
		}
		V->to = nt;
		V->next = nn;
		V->capedges = nc;
	}
	V->to[V->nedges] = b;
	V->next[V->nedges] = V->head[a];
	V->head[a] = V->nedges++;
	V->indeg[b]++;
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

/* writers of one (tensor, rank), sorted by lo[0] */
typedef struct wlist {
	int *v;
	int n;
	int64_t maxlen;
} wlist;

/* a qsort_r comparator over writer indices; arg: the verifier */
static int by_lo0(const void *a, const void *b, void *arg)
{
	const ver *V = arg;
	const ir_region *x = &V->w[*(const int *)a], *y = &V->w[*(const int *)b];
	return (x->lo[0] > y->lo[0]) - (x->lo[0] < y->lo[0]);
}

/* Expanded task k: template task k % ntasks run by rank k / ntasks; its
 * reads and waits in buffer slot `slot`. */
static ir_task xtask(const ver *V, int k, int slot)
{
	ir_task u = ir_task_shift(V->s, &V->s->tasks[k % V->s->ntasks], k / V->s->ntasks,
				  V->rbuf[slot], V->wbuf[slot]);
	u.id = k;
	return u;
}

static int reaches(ver *V, int from, int target, int *mark, int stamp, int *stack)
{
	int sp = 0;
	stack[sp++] = from;
	mark[from] = stamp;
	while (sp) {
		int u = stack[--sp];
		if (u == target)
			return 1;
		for (int e = V->head[u]; e >= 0; e = V->next[e]) {
			int v = V->to[e];
			if (mark[v] != stamp) {
				mark[v] = stamp;
				stack[sp++] = v;
			}
		}
	}
	return 0;
}

/* Check 4's graph, after check 2: waits and signals, and program order
 * only between tasks no pool holds (any CTA holding a pool may run any of
 * its tasks); no pool contracted. */
static void order_graph(ver *V)
{
	const ir_sched *s = V->s;
	const ir_prog *p = V->p;
	for (int i = 0; i < V->nnodes; i++) {
		V->head[i] = -1;
		V->indeg[i] = 0;
	}
	V->nedges = 0;
	for (int k = 0; k < V->n && !V->err; k++) {
		const ir_task *tt = &s->tasks[k % s->ntasks];
		const int rr = k / s->ntasks, i = k % s->ntasks;
		for (int w = 0; w < tt->nwaits; w++)
			edge(V, flag_node(V, ir_rank_shift(tt->waits[w].rank, rr, p->nodes, p->gpus),
					  tt->waits[w].index), k);
		for (int g = 0; g < tt->nsignals; g++)
			edge(V, k, flag_node(V, ir_rank_shift(tt->signals[g].rank, rr, p->nodes, p->gpus),
					     tt->signals[g].index));
		if (i + 1 < s->ntasks && s->tasks[i + 1].cta == tt->cta && !V->pooled[k] &&
		    !V->pooled[k + 1])
			edge(V, k, k + 1);
	}
}

/* Does op `op` write nothing on any rank?  An empty output, or a put stage
 * for the remote peers of a one-node mesh (it has none). */
static int writes_nothing(const ir_prog *p, const ir_op *op)
{
	const ir_tensor *y = &p->tensors[op->out];
	return y->folded || ir_tensor_elems(y) == 0 ||
	       (op->kind == OP_PUT && op->peers == PEERS_REMOTE && p->nodes == 1);
}

static int has_tasks(ver *V)
{
	const ir_prog *p = V->p;
	char *any = arena_alloc(V->a, (size_t)p->nops + 1);
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

static int verify_expanded(const ir_sched *s, diags *d, arena *a)
{
	ver V = {.s = s, .p = s->prog, .d = d, .a = a};
	const ir_prog *p = s->prog;
	V.world = p->world;
	V.n = V.world * s->ntasks;

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
	}

	/* 7. work: an op with a non-empty output has tasks (an unwritten output
	 * would pass checks 1-6: nothing reads a pipeline output) */
	if (has_tasks(&V))
		return 1;

	/* 6. written flags (the template's kinds and indices are every rank's) */
	for (int f = 0; f < s->nflags; f++)
		if (s->flags[f].written && s->flags[f].expected != 1) {
			char what[120];
			snprintf(what, sizeof what, "flag %d is written by RDMA but expects %d signals",
				 f, s->flags[f].expected);
			fail(&V, NULL, NULL, what);
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
				fail(&V, t, NULL, "a flag written by RDMA is also signalled by a task that adds");
				return 1;
			}
			if (f.rank != t->write.rank) {
				fail(&V, t, &t->write, "an RDMA task writes a flag on a rank it does not write");
				return 1;
			}
		}
		if (t->kind == TASK_RDMA && (t->nsignals != 1 || nwritten != 1)) {
			fail(&V, t, &t->write, "an RDMA task must signal exactly one flag, written with "
			     "its data");
			return 1;
		}
	}

	V.w = arena_alloc(a, (size_t)(V.n ? V.n : 1) * sizeof *V.w);
	V.nnodes = V.n + V.world * s->nflags;
	V.head = arena_alloc(a, (size_t)(V.nnodes + 1) * sizeof(int));
	V.indeg = arena_alloc(a, (size_t)(V.nnodes + 1) * sizeof(int));
	int *count = arena_alloc(a, (size_t)(V.world * s->nflags + 1) * sizeof(int));
	if (!V.w || !V.head || !V.indeg || !count)
		return 1;
	for (int i = 0; i < V.nnodes; i++)
		V.head[i] = -1;
	for (int r = 0; r < V.world; r++)
		for (int i = 0; i < s->ntasks; i++)
			V.w[r * s->ntasks + i] = ir_region_shift(p, s->tasks[i].write, r);
	int maxr = 1, maxw = 1;
	for (int i = 0; i < s->ntasks; i++) {
		if (s->tasks[i].nreads > maxr)
			maxr = s->tasks[i].nreads;
		if (s->tasks[i].nwaits > maxw)
			maxw = s->tasks[i].nwaits;
	}
	for (int b = 0; b < 2; b++) {
		V.rbuf[b] = arena_alloc(a, (size_t)maxr * sizeof(ir_region));
		V.wbuf[b] = arena_alloc(a, (size_t)maxw * sizeof(ir_flagref));
		if (!V.rbuf[b] || !V.wbuf[b])
			return 1;
	}

	/* 10. pools: every pooled op's tasks in its pool once; a pooled
	 * task's node is its pool's first on its rank */
	V.node = arena_alloc(a, (size_t)(V.n + 1) * sizeof(int));
	V.pooled = arena_alloc(a, (size_t)V.n + 1);
	if (!V.node || !V.pooled)
		return 1;
	for (int k = 0; k < V.n; k++) {
		V.node[k] = k;
		V.pooled[k] = 0;
	}
	for (int q = 0; q < s->npools; q++)
		for (int j = 0; j < s->pools[q].n; j++) {
			const int i = s->pool_order[s->pools[q].first + j];
			if (i < 0 || i >= s->ntasks || V.pooled[i] || s->tasks[i].op != s->pools[q].op) {
				fail(&V, NULL, NULL, "a pool lists a task of another op, or one twice");
				return 1;
			}
			for (int r = 0; r < V.world; r++) {
				V.pooled[r * s->ntasks + i] = 1;
				V.node[r * s->ntasks + i] = r * s->ntasks + s->pool_order[s->pools[q].first];
			}
		}
	for (int i = 0; i < s->ntasks; i++)
		if (p->ops[s->tasks[i].op].plan.pool && !V.pooled[i]) {
			fail(&V, &s->tasks[i], NULL, "a task of a pooled op is in no pool");
			return 1;
		}

	/* 1. flag references and counts; graph edges (a pool one node) */
	for (int k = 0; k < V.n && !V.err; k++) {
		const ir_task *tt = &s->tasks[k % s->ntasks];
		int rr = k / s->ntasks;
		ir_task xt;
		const ir_task *t = &xt;
		xt.waits = V.wbuf[0];
		xt.nwaits = tt->nwaits;
		xt.nsignals = tt->nsignals;
		for (int i = 0; i < tt->nwaits; i++)
			xt.waits[i] = (ir_flagref){ir_rank_shift(tt->waits[i].rank, rr, p->nodes, p->gpus),
						   tt->waits[i].index};
		for (int i = 0; i < tt->nsignals; i++)
			xt.signals[i] = (ir_flagref){ir_rank_shift(tt->signals[i].rank, rr, p->nodes, p->gpus),
						     tt->signals[i].index};
		for (int i = 0; i < t->nwaits; i++) {
			ir_flagref f = t->waits[i];
			if (f.rank < 0 || f.rank >= V.world || f.index < 0 || f.index >= s->nflags) {
				ir_task u = xtask(&V, k, 1);
				fail(&V, &u, NULL, "wait on a flag out of range");
				break;
			}
			edge(&V, flag_node(&V, f.rank, f.index), V.node[k]);
		}
		for (int i = 0; i < t->nsignals; i++) {
			ir_flagref f = t->signals[i];
			if (f.rank < 0 || f.rank >= V.world || f.index < 0 || f.index >= s->nflags) {
				ir_task u = xtask(&V, k, 1);
				fail(&V, &u, NULL, "signal of a flag out of range");
				break;
			}
			count[f.rank * s->nflags + f.index]++;
			edge(&V, V.node[k], flag_node(&V, f.rank, f.index));
		}
		/* program order: the next task of the same CTA (none inside a
		 * pool's entries, which are one node) */
		int i = k % s->ntasks;
		if (i + 1 < s->ntasks && s->tasks[i + 1].cta == s->tasks[i].cta &&
		    V.node[k] != V.node[k + 1])
			edge(&V, V.node[k], V.node[k + 1]);
	}
	if (V.err)
		return 1;
	for (int r = 0; r < V.world; r++)
		for (int f = 0; f < s->nflags; f++)
			if (count[r * s->nflags + f] != s->flags[f].expected) {
				char what[160];
				snprintf(what, sizeof what,
					 "flag %d of rank %d gets %d signals per run, expects %d",
					 f, r, count[r * s->nflags + f], s->flags[f].expected);
				fail(&V, NULL, NULL, what);
				return 1;
			}

	/* 2. acyclic (Kahn) */
	int *q = arena_alloc(a, (size_t)(V.nnodes + 1) * sizeof(int));
	int *deg = arena_alloc(a, (size_t)(V.nnodes + 1) * sizeof(int));
	if (!q || !deg)
		return 1;
	memcpy(deg, V.indeg, (size_t)V.nnodes * sizeof(int));
	int qh = 0, qt = 0;
	for (int i = 0; i < V.nnodes; i++)
		if (!deg[i])
			q[qt++] = i;
	while (qh < qt) {
		int u = q[qh++];
		for (int e = V.head[u]; e >= 0; e = V.next[e])
			if (--deg[V.to[e]] == 0)
				q[qt++] = V.to[e];
	}
	if (qt != V.nnodes) {
		for (int k = 0; k < V.n; k++)
			if (deg[k]) {
				ir_task u = xtask(&V, k, 1);
				fail(&V, &u, NULL,
				     "in-order CTA loops can deadlock (a cycle of waits passes through)");
				return 1;
			}
		fail(&V, NULL, NULL, "a cycle of waits among flags");
		return 1;
	}
	order_graph(&V);
	if (V.err)
		return 1;

	/* 4, 5. writers per (tensor, rank) */
	int nt = p->ntensors;
	wlist *wl = arena_alloc(a, (size_t)(nt * V.world + 1) * sizeof *wl);
	if (!wl)
		return 1;
	for (int k = 0; k < V.n; k++)
		wl[V.w[k].tensor * V.world + V.w[k].rank].n++;
	for (int i = 0; i < nt * V.world; i++) {
		wl[i].v = arena_alloc(a, (size_t)(wl[i].n + 1) * sizeof(int));
		if (!wl[i].v)
			return 1;
		wl[i].n = 0;
	}
	for (int k = 0; k < V.n; k++) {
		wlist *w = &wl[V.w[k].tensor * V.world + V.w[k].rank];
		w->v[w->n++] = k;
		int64_t len = V.w[k].hi[0] - V.w[k].lo[0];
		if (len > w->maxlen)
			w->maxlen = len;
	}
	for (int i = 0; i < nt * V.world; i++)
		qsort_r(wl[i].v, (size_t)wl[i].n, sizeof(int), by_lo0, &V);

	/* 5. no overlapping writes */
	for (int i = 0; i < nt * V.world && !V.err; i++) {
		int nd = p->tensors[i / V.world].ndim;
		for (int j = 0; j < wl[i].n && !V.err; j++) {
			const ir_region *tw = &V.w[wl[i].v[j]];
			for (int k = j + 1; k < wl[i].n; k++) {
				const ir_region *uw = &V.w[wl[i].v[k]];
				if (uw->lo[0] >= tw->hi[0])
					break;
				if (inter(tw, uw, nd)) {
					ir_task u = xtask(&V, wl[i].v[k], 1);
					fail(&V, &u, &u.write, "two tasks write the same elements");
					break;
				}
			}
		}
	}
	if (V.err)
		return 1;

	/* 4. reads covered and ordered */
	int *mark = arena_alloc(a, (size_t)(V.nnodes + 1) * sizeof(int));
	int *stack = arena_alloc(a, (size_t)(V.nnodes + V.nedges + 1) * sizeof(int));
	if (!mark || !stack)
		return 1;
	int stamp = 0;
	/* reads already proven: the same box under the same waits, every
	 * writer ordered by a signal of one of those waits (many tasks read
	 * one box under one flag: a combine reads every expert tile) */
	enum { NSEEN = 1 << 16 };
	uint64_t *seen = arena_alloc(a, 2 * NSEEN * sizeof *seen);
	if (!seen)
		return 1;
	memset(seen, 0, 2 * NSEEN * sizeof *seen);
	int nseen = 0;
	for (int k = 0; k < V.n && !V.err; k++) {
		const ir_task xt = xtask(&V, k, 0);
		const ir_task *t = &xt;
		for (int ri = 0; ri < t->nreads && !V.err; ri++) {
			const ir_region *g = &t->reads[ri];
			const ir_tensor *x = &p->tensors[g->tensor];
			if (x->kind == TK_IN && x->nwriters == 0)
				continue;
			uint64_t h1 = 1469598103934665603ull, h2 = 0x9e3779b97f4a7c15ull;
#define MIX(v) (h1 = (h1 ^ (uint64_t)(v)) * 1099511628211ull, \
		h2 = (h2 ^ (uint64_t)(v)) * 0xff51afd7ed558ccdull + 0x2545f4914f6cdd1dull)
			MIX(g->tensor), MIX(g->rank);
			for (int dd = 0; dd < x->ndim; dd++)
				MIX(g->lo[dd]), MIX(g->hi[dd]);
			for (int b1 = 0; b1 < t->nwaits; b1++)
				MIX(t->waits[b1].rank), MIX(t->waits[b1].index);
#undef MIX
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
			int direct = 1;  /* every writer so far ordered by a wait's signal */
			const wlist *w = &wl[g->tensor * V.world + g->rank];
			int64_t covered = 0;
			/* writers with lo[0] < g->hi[0]: binary search the end */
			int lo = 0, hi = w->n;
			while (lo < hi) {
				int mid = (lo + hi) / 2;
				if (V.w[w->v[mid]].lo[0] < g->hi[0])
					lo = mid + 1;
				else
					hi = mid;
			}
			for (int j = lo - 1; j >= 0; j--) {
				const ir_region *uw = &V.w[w->v[j]];
				if (uw->lo[0] + w->maxlen <= g->lo[0])
					break;
				int64_t c = inter(uw, g, x->ndim);
				if (!c)
					continue;
				/* the writer's image, signals and place only (copying
				 * whole tasks here dominated large schedules) */
				const ir_task *ut = &s->tasks[w->v[j] % s->ntasks];
				const int ur = w->v[j] / s->ntasks;
				covered += c;
				int ok = 0;
				for (int a1 = 0; a1 < ut->nsignals && !ok; a1++) {
					int sr = ir_rank_shift(ut->signals[a1].rank, ur, p->nodes, p->gpus);
					for (int b1 = 0; b1 < t->nwaits && !ok; b1++)
						ok = sr == t->waits[b1].rank &&
						     ut->signals[a1].index == t->waits[b1].index;
				}
				if (!ok)
					direct = 0;
				if (!ok && ir_rank_shift(ut->rank, ur, p->nodes, p->gpus) == t->rank &&
				    ut->cta == t->cta && ut->order < t->order && !V.pooled[w->v[j]] &&
				    !V.pooled[k])
					ok = 1;
				if (!ok)
					ok = reaches(&V, w->v[j], k, mark, ++stamp, stack);
				if (!ok) {
					const ir_task ux = xtask(&V, w->v[j], 1);
					const ir_task *u = &ux;
					strbuf sb;
					sb_init(&sb);
					sb_puts(&sb, "it reads what ");
					describe(&V, u, &sb);
					sb_puts(&sb, " writes, with nothing ordering the two");
					fail(&V, t, g, sb_str(&sb));
					sb_free(&sb);
				}
			}
			if (!V.err && covered != volume(g, x->ndim))
				fail(&V, t, g, "it reads elements that no task writes");
			else if (!V.err && direct && nseen < NSEEN / 2) {
				seen[2 * slot] = h1;
				seen[2 * slot + 1] = h2;
				nseen++;
			}
		}
	}
	return V.err;
}
