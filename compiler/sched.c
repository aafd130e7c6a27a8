/* sched.c - roles, CTA split, task order and flags for rank 0's tile graph.
 *
 * 1. Dependencies from region overlap, across ranks: a task depends on every
 *    task image (template task t run by rank r) whose write overlaps one of
 *    its reads.  Writers of a region on rank x are found per template task:
 *    exactly one r puts t's write on rank x.
 * 2. Flags: the producers a consumer needs from one rank's memory form a
 *    group; each distinct group is one flag (an epoch counter) in that
 *    rank's flag array, expected = the group's size.  Every producer image
 *    signals the groups it belongs to, so "one flag per produced region"
 *    holds with regions as coarse as the consumers read them.  RDMA tasks
 *    are the exception: an RDMA write cannot add, so each RDMA task has a
 *    flag of its own that it alone signals by writing the epoch (expected
 *    1, ir_flag.written), and consumers wait on it beside the group flag of
 *    the other producers.  Those flags come first in the array.
 * 3. Roles and split: compute, nvlink (copies), rdma (posting RDMA writes);
 *    CTAs per role from the `roles` hint or from the cost model (each role
 *    gets a share of the rank's CTAs proportional to its work, copies capped
 *    at what the link can carry).
 * 4. Order: list scheduling on the cost model (the ready task with the
 *    earliest possible start goes to the CTA of its role that frees first;
 *    of those free by then, one whose last task is its producer).
 *    Every CTA's list is thus in one global order that also respects every
 *    dependency, which is what makes the in-order role loops deadlock-free
 *    (verify.c proves it again on the expanded graph).
 * 5. Pools (ir_plan.pool, ir_pool): the tasks of a pooled op are taken at
 *    run time, by whichever CTA holding some of them asks first, so the
 *    lists must be deadlock-free whichever CTA runs which: the list
 *    schedule places the tasks in phases (pool_phases), so that in every
 *    CTA's list what a pool needs comes before its entries and what needs
 *    the pool after them, and a CTA's entries of a pool are contiguous;
 *    then the pool's order (pool_key) and its CTAs (build_pools).
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pass.h"
#include "costmodel.h"

typedef struct dep {
	int task;   /* template task */
	int r;      /* the rank shift of its image */
	unsigned reads;  /* the reads that need it: bit k for read k (31: 31 on) */
} dep;

typedef struct sched {
	ir_sched *s;
	const ir_prog *p;
	diags *d;
	arena *a;
	int err;
	/* per template task */
	dep **deps;
	int *ndeps;
	/* writers of each tensor, in groups by the rank they write (rank 0's
	 * view), each sorted by lo[0]: wg[t] .. wg[t + 1] in groups[] */
	int **writers;
	int *nwriters;
	struct wgroup {
		int rank;        /* write.rank of its tasks */
		int *v, n;       /* task ids by lo[0] */
		int64_t maxlen;  /* longest write along dim 0 */
	} *groups;
	int *wg;
	/* flags: producer groups */
	int nflags, capflags;
	ir_flag *flags;
	dep **fprod;      /* the group of each flag */
	int *nfprod;
	int *frank;       /* data rank of each flag, rank 0's view */
	int *rflag;       /* per template task: its written flag (RDMA), else -1 */
	int *hbucket;     /* hash: flag index + 1, 0 = empty */
	int hcap;
	int *phase;       /* per template task: list_order's first key; NULL
	                     without pools (pool_phases) */
	int no_affinity;  /* MK_SCHED_AFFINITY=0: list_order's plain pick */
} sched;

static int shift_inverse(int r, int nodes, int gpus)
{
	int rn = r / gpus, rg = r % gpus;
	return ((nodes - rn) % nodes) * gpus + (gpus - rg) % gpus;
}

/* the r with sigma_r(x) = y */
static int shift_between(int x, int y, int nodes, int gpus)
{
	return ir_rank_shift(y, shift_inverse(x, nodes, gpus), nodes, gpus);
}

static int overlap(const ir_region *a, const ir_region *b, int ndim)
{
	if (a->tensor != b->tensor || a->rank != b->rank)
		return 0;
	for (int d = 0; d < ndim; d++)
		if (a->hi[d] <= b->lo[d] || b->hi[d] <= a->lo[d])
			return 0;
	return 1;
}

/* qsort_r comparators over task indices; arg: the task array (no file
 * state: compiles may run on several threads at once) */
static int by_lo0(const void *a, const void *b, void *arg)
{
	const ir_task *tasks = arg;
	const ir_task *x = &tasks[*(const int *)a], *y = &tasks[*(const int *)b];
	if (x->write.rank != y->write.rank)
		return x->write.rank < y->write.rank ? -1 : 1;
	return (x->write.lo[0] > y->write.lo[0]) - (x->write.lo[0] < y->write.lo[0]);
}

static void index_writers(sched *S)
{
	const ir_prog *p = S->p;
	ir_sched *s = S->s;
	S->writers = arena_alloc(S->a, (size_t)p->ntensors * sizeof(int *));
	S->nwriters = arena_alloc(S->a, (size_t)p->ntensors * sizeof(int));
	S->wg = arena_alloc(S->a, (size_t)(p->ntensors + 1) * sizeof(int));
	S->groups = arena_alloc(S->a, (size_t)(s->ntasks + 1) * sizeof *S->groups);
	if (!S->writers || !S->nwriters || !S->wg || !S->groups) {
		S->err = 1;
		return;
	}
	for (int i = 0; i < s->ntasks; i++)
		S->nwriters[s->tasks[i].write.tensor]++;
	for (int t = 0; t < p->ntensors; t++) {
		S->writers[t] = arena_alloc(S->a, (size_t)(S->nwriters[t] + 1) * sizeof(int));
		if (!S->writers[t]) {
			S->err = 1;
			return;
		}
		S->nwriters[t] = 0;
	}
	for (int i = 0; i < s->ntasks; i++) {
		int t = s->tasks[i].write.tensor;
		S->writers[t][S->nwriters[t]++] = i;
	}
	int ng = 0;
	for (int t = 0; t < p->ntensors; t++) {
		qsort_r(S->writers[t], (size_t)S->nwriters[t], sizeof(int), by_lo0, s->tasks);
		S->wg[t] = ng;
		for (int k = 0; k < S->nwriters[t]; k++) {
			const ir_task *w = &s->tasks[S->writers[t][k]];
			if (ng == S->wg[t] || S->groups[ng - 1].rank != w->write.rank)
				S->groups[ng++] = (struct wgroup){w->write.rank, &S->writers[t][k], 0, 0};
			struct wgroup *g = &S->groups[ng - 1];
			g->n++;
			if (w->write.hi[0] - w->write.lo[0] > g->maxlen)
				g->maxlen = w->write.hi[0] - w->write.lo[0];
		}
	}
	S->wg[p->ntensors] = ng;
}

static int dep_cmp(const void *a, const void *b)
{
	const dep *x = a, *y = b;
	if (x->task != y->task)
		return x->task < y->task ? -1 : 1;
	return (x->r > y->r) - (x->r < y->r);
}

/* Does box g lie inside one shard (or span all shards) of every dimension
 * tied to the rank?  Then sigma maps it to a box and can be undone. */
static int one_shard(const ir_prog *p, const ir_region *g)
{
	const ir_tensor *x = &p->tensors[g->tensor];
	for (int d = 0; d < x->ndim; d++) {
		int64_t u = x->rot[d].unit;
		if (u > 0 && g->hi[d] > g->lo[d] && g->lo[d] / u != (g->hi[d] - 1) / u &&
		    !ir_rot_whole(p, x, d, g->lo[d], g->hi[d]))
			return 0;
	}
	return 1;
}

/* Producers of region g (on rank g.rank), appended to out.  Template task t
 * run by rank r writes sigma_r(t.write); exactly one r puts it on g's rank,
 * and t overlaps g there exactly when t.write overlaps sigma_r^-1(g): undo
 * the shift once per group of writers, then binary-search the group. */
static int find_writers(sched *S, const ir_region *g, dep *out, int n, int max)
{
	const ir_prog *p = S->p;
	const ir_sched *s = S->s;
	int nd = p->tensors[g->tensor].ndim;
	int fast = one_shard(p, g);
	for (int gi = S->wg[g->tensor]; gi < S->wg[g->tensor + 1]; gi++) {
		const struct wgroup *grp = &S->groups[gi];
		int r = shift_between(grp->rank, g->rank, p->nodes, p->gpus);
		if (!fast) {
			for (int k = 0; k < grp->n; k++) {
				const ir_task *t = &s->tasks[grp->v[k]];
				ir_region w = ir_region_shift(p, t->write, r);
				if (overlap(&w, g, nd)) {
					if (n == max)
						return -1;
					out[n++] = (dep){t->id, r, 0};
				}
			}
			continue;
		}
		ir_region q = ir_region_shift(p, *g, shift_inverse(r, p->nodes, p->gpus));
		int lo = 0, hi = grp->n;
		while (lo < hi) {  /* first writer with lo[0] >= q.hi[0] */
			int mid = (lo + hi) / 2;
			if (s->tasks[grp->v[mid]].write.lo[0] < q.hi[0])
				lo = mid + 1;
			else
				hi = mid;
		}
		for (int k = lo - 1; k >= 0; k--) {
			const ir_task *t = &s->tasks[grp->v[k]];
			if (t->write.lo[0] + grp->maxlen <= q.lo[0])
				break;
			if (overlap(&t->write, &q, nd)) {
				if (n == max)
					return -1;
				out[n++] = (dep){t->id, r, 0};
			}
		}
	}
	return n;
}

/* ---- flag groups ---------------------------------------------------------- */

static unsigned group_hash(int rank, const dep *v, int n)
{
	unsigned h = 2166136261u ^ (unsigned)rank;
	for (int i = 0; i < n; i++) {
		h = (h ^ (unsigned)v[i].task) * 16777619u;
		h = (h ^ (unsigned)v[i].r) * 16777619u;
	}
	return h;
}

static int group_eq(sched *S, int f, int rank, const dep *v, int n)
{
	if (S->frank[f] != rank || S->nfprod[f] != n)
		return 0;
	return !memcmp(S->fprod[f], v, (size_t)n * sizeof *v);
}

static int new_flag(sched *S);

static int flag_for(sched *S, int rank, dep *v, int n, const ir_region *guards, int op)
{
	if (S->nflags * 2 >= S->hcap) {
		int nc = S->hcap ? S->hcap * 2 : 1024;
		int *nb = arena_alloc(S->a, (size_t)nc * sizeof(int));
		if (!nb) {
			S->err = 1;
			return -1;
		}
		for (int f = 0; f < S->nflags; f++) {
			if (S->flags[f].written)
				continue;  /* not a group: never looked up */
			unsigned h = group_hash(S->frank[f], S->fprod[f], S->nfprod[f]) & (unsigned)(nc - 1);
			while (nb[h])
				h = (h + 1) & (unsigned)(nc - 1);
			nb[h] = f + 1;
		}
		S->hbucket = nb;
		S->hcap = nc;
	}
	unsigned h = group_hash(rank, v, n) & (unsigned)(S->hcap - 1);
	while (S->hbucket[h]) {
		int f = S->hbucket[h] - 1;
		if (group_eq(S, f, rank, v, n))
			return f;
		h = (h + 1) & (unsigned)(S->hcap - 1);
	}
	int f = new_flag(S);
	if (f < 0)
		return -1;
	dep *copy = arena_alloc(S->a, (size_t)n * sizeof *copy);
	if (!copy) {
		S->err = 1;
		return -1;
	}
	memcpy(copy, v, (size_t)n * sizeof *v);
	S->fprod[f] = copy;
	S->nfprod[f] = n;
	S->frank[f] = rank;
	S->flags[f] = (ir_flag){.index = f, .expected = n, .op = op, .guards = *guards};
	S->hbucket[h] = f + 1;
	return f;
}

/* The next flag index, with room for it. */
static int new_flag(sched *S)
{
	if (S->nflags == S->capflags) {
		int nc = S->capflags ? S->capflags * 2 : 256;
		ir_flag *nf = arena_alloc(S->a, (size_t)nc * sizeof *nf);
		dep **np = arena_alloc(S->a, (size_t)nc * sizeof *np);
		int *nn = arena_alloc(S->a, (size_t)nc * sizeof *nn);
		int *nr = arena_alloc(S->a, (size_t)nc * sizeof *nr);
		if (!nf || !np || !nn || !nr) {
			S->err = 1;
			return -1;
		}
		if (S->nflags) {
			memcpy(nf, S->flags, (size_t)S->nflags * sizeof *nf);
			memcpy(np, S->fprod, (size_t)S->nflags * sizeof *np);
			memcpy(nn, S->nfprod, (size_t)S->nflags * sizeof *nn);
			memcpy(nr, S->frank, (size_t)S->nflags * sizeof *nr);
		}
		S->flags = nf;
		S->fprod = np;
		S->nfprod = nn;
		S->frank = nr;
		S->capflags = nc;
	}
	return S->nflags++;
}

/* Every RDMA task's own flag, written (not added) with the epoch after its
 * data, on the rank it writes: indices 0 .. (RDMA tasks - 1). */
static void rdma_flags(sched *S)
{
	ir_sched *s = S->s;
	S->rflag = arena_alloc(S->a, (size_t)(s->ntasks + 1) * sizeof(int));
	if (!S->rflag) {
		S->err = 1;
		return;
	}
	for (int i = 0; i < s->ntasks; i++) {
		const ir_task *t = &s->tasks[i];
		S->rflag[i] = -1;
		if (t->kind != TASK_RDMA)
			continue;
		int f = new_flag(S);
		if (f < 0)
			return;
		S->fprod[f] = NULL;
		S->nfprod[f] = 0;
		S->frank[f] = t->write.rank;
		S->flags[f] = (ir_flag){.index = f, .expected = 1, .written = 1, .op = t->op,
					.guards = t->write};
		S->rflag[i] = f;
	}
}

static void add_signal(sched *S, ir_task *t, ir_flagref fr)
{
	for (int i = 0; i < t->nsignals; i++)
		if (t->signals[i].rank == fr.rank && t->signals[i].index == fr.index)
			return;  /* cannot happen for distinct images; keep counts exact */
	if (t->nsignals == IR_MAXSIGNALS) {
		diag_error(S->d, S->p->ops[t->op].where,
			   "internal: task %d of '%s' would signal more than %d flags",
			   t->id, S->p->ops[t->op].stage, IR_MAXSIGNALS);
		S->err = 1;
		return;
	}
	t->signals[t->nsignals++] = fr;
}

/* Index of the wait (x, f) in t's list, appended when new; -1 when full. */
static int wait_on(sched *S, ir_task *t, int x, int f)
{
	int w;
	for (w = 0; w < t->nwaits; w++)
		if (t->waits[w].rank == x && t->waits[w].index == f)
			return w;
	if (t->nwaits == t->maxwaits) {
		int nc = t->maxwaits ? 2 * t->maxwaits : 4;
		ir_flagref *nw = arena_alloc(S->a, (size_t)nc * sizeof *nw);
		if (!nw) {
			S->err = 1;
			return -1;
		}
		if (t->nwaits)
			memcpy(nw, t->waits, (size_t)t->nwaits * sizeof *nw);
		t->waits = nw;
		t->maxwaits = nc;
	}
	t->waits[t->nwaits++] = (ir_flagref){x, f};
	return w;
}

/* For every template task: its producers, and the flags it waits on. */
static void build_deps(sched *S)
{
	ir_sched *s = S->s;
	const ir_prog *p = S->p;
	S->deps = arena_alloc(S->a, (size_t)s->ntasks * sizeof(dep *));
	S->ndeps = arena_alloc(S->a, (size_t)s->ntasks * sizeof(int));
	/* a task's producers, read by read: a combine waits on every expert
	 * tile.  The buffers grow (twice as large, from the arena) when a task
	 * has more; a read has at most one producer per template task. */
	int maxp = 65536;
	dep *buf = arena_alloc(S->a, (size_t)maxp * sizeof *buf);
	dep *grp = arena_alloc(S->a, (size_t)maxp * sizeof *grp);
	if (!S->deps || !S->ndeps || !buf || !grp) {
		S->err = 1;
		return;
	}
	for (int i = 0; i < s->ntasks && !S->err; i++) {
		ir_task *t = &s->tasks[i];
		int n = 0;
		for (int k = 0; k < t->nreads && n >= 0; k++) {
			const ir_region g = lower_view_root(p, t->reads[k]);
			const int n0 = n;
			n = find_writers(S, &g, buf, n, maxp);
			for (int q = n0; q < n; q++)
				buf[q].reads = 1u << (k < 31 ? k : 31);
		}
		if (n < 0) {
			if (maxp > INT_MAX / 2) {
				diag_error(S->d, p->ops[t->op].where,
					   "program too large: a task of '%s' waits on more than %d tasks",
					   p->ops[t->op].stage, maxp);
				S->err = 1;
				return;
			}
			maxp *= 2;
			buf = arena_alloc(S->a, (size_t)maxp * sizeof *buf);
			grp = arena_alloc(S->a, (size_t)maxp * sizeof *grp);
			if (!buf || !grp) {
				S->err = 1;
				return;
			}
			i--;  /* this task again */
			continue;
		}
		qsort(buf, (size_t)n, sizeof *buf, dep_cmp);
		int m = 0;
		for (int k = 0; k < n; k++)
			if (!m || dep_cmp(&buf[m - 1], &buf[k]))
				buf[m++] = buf[k];
			else
				buf[m - 1].reads |= buf[k].reads;
		S->deps[i] = arena_alloc(S->a, (size_t)(m + 1) * sizeof(dep));
		if (!S->deps[i]) {
			S->err = 1;
			return;
		}
		memcpy(S->deps[i], buf, (size_t)m * sizeof(dep));
		S->ndeps[i] = m;

		/* one flag group per read region: the producers of what that read
		 * needs.  Stages that consume reads one after another (reductions,
		 * attention over key blocks) wait on each just before using it. */
		for (int k = 0; k < t->nreads; k++)
			t->read_wait[k] = -1;
		for (int k = 0; k < t->nreads && !S->err; k++) {
			ir_region guards = lower_view_root(p, t->reads[k]);
			int ng = find_writers(S, &guards, grp, 0, maxp);  /* within n: fits */
			if (ng <= 0)
				continue;
			qsort(grp, (size_t)ng, sizeof *grp, dep_cmp);
			int x = guards.rank, w = -1, nw = 0, ne = 0;
			/* RDMA producers: each its own written flag (the image (q, r)
			 * writes on x and signals flag rflag[q] of x); the rest: one
			 * group counter */
			for (int j = 0; j < ng && !S->err; j++) {
				if (s->tasks[grp[j].task].kind != TASK_RDMA) {
					grp[ne++] = grp[j];
					continue;
				}
				w = wait_on(S, t, x, S->rflag[grp[j].task]);
				nw++;
			}
			if (ne > 0 && !S->err) {
				int f = flag_for(S, x, grp, ne, &guards, s->tasks[grp[0].task].op);
				if (f < 0)
					return;
				w = wait_on(S, t, x, f);
				nw++;
			}
			if (S->err)
				return;
			t->read_wait[k] = nw == 1 ? w : -3;
		}
	}
	/* signals: producer image (t, r) in group f on data rank x signals
	 * flag f on rank sigma_r^-1(x) in the template */
	for (int f = 0; f < S->nflags && !S->err; f++)
		for (int j = 0; j < S->nfprod[f]; j++) {
			dep q = S->fprod[f][j];
			int inv = shift_inverse(q.r, p->nodes, p->gpus);
			add_signal(S, &s->tasks[q.task],
				   (ir_flagref){ir_rank_shift(S->frank[f], inv, p->nodes, p->gpus), f});
		}
	/* an RDMA task writes its own flag, on the rank it writes to */
	for (int i = 0; i < s->ntasks && !S->err; i++)
		if (S->rflag[i] >= 0)
			add_signal(S, &s->tasks[i], (ir_flagref){s->tasks[i].write.rank, S->rflag[i]});
	s->flags = S->flags;
	s->nflags = S->nflags;
}

/* ---- roles ---------------------------------------------------------------- */

static ir_rolekind role_of(const ir_task *t)
{
	switch (t->kind) {
	case TASK_COPY: return ROLE_NVLINK;
	case TASK_RDMA: return ROLE_RDMA;
	case TASK_REDUCE: return ROLE_REDUCE;
	/* MoE dispatch and combine gate whole phases (the expert GEMMs wait for
	 * their buckets, the combine for every expert): every CTA takes them */
	default: return ROLE_COMPUTE;
	}
}

/* A tile's epilogue: its box stored from registers */
static double tile_store_us(const ir_sched *s, const ir_task *t)
{
	const ir_tensor *w = &s->prog->tensors[t->write.tensor];
	double out = 1;
	for (int d = 0; d < w->ndim; d++)
		out *= (double)(t->write.hi[d] - t->write.lo[d]);
	return cost_store_us(&s->dev, out * ir_dtype_size(w->dtype));
}

static double task_cost(const ir_sched *s, const ir_task *t, int role_ctas)
{
	switch (t->kind) {
	case TASK_COPY:
	case TASK_RDMA:
	case TASK_REDUCE:
	case TASK_DISPATCH:
	case TASK_COMBINE:
		return cost_copy_us(&s->dev, t->bytes, t->transport, role_ctas, s->ranks_per_gpu);
	case TASK_MATMUL:
	case TASK_MMPART:  /* and the epilogue's stores of the tile */
		return cost_tile_us(&s->dev, t->flops, t->hbm, s->ctas, s->ranks_per_gpu) +
		       tile_store_us(s, t);
	case TASK_ATTN:
	case TASK_ATTNPART:
		return cost_attn_us(&s->dev, t->flops,
				    cost_attn_eff(&s->dev, s->prog, &s->prog->ops[t->op]), t->hbm,
				    s->ctas, s->ranks_per_gpu) +
		       tile_store_us(s, t);
	default:
		return cost_stream_us(&s->dev, t->bytes);
	}
}

static void choose_roles(sched *S, const compile_opts *o)
{
	ir_sched *s = S->s;
	const ir_prog *p = S->p;
	double work[ROLE_COUNT] = {0};
	int used[ROLE_COUNT] = {0};
	int remote = 0;  /* copies that cross to another GPU */
	for (int i = 0; i < s->ntasks; i++) {
		ir_rolekind r = role_of(&s->tasks[i]);
		used[r] = 1;
		work[r] += task_cost(s, &s->tasks[i], 1);
		remote |= r != ROLE_RDMA && s->tasks[i].transport == TR_NVLINK;
	}
	int n[ROLE_COUNT] = {0};
	int C = s->ctas;
	if (p->nroles > 0) {
		int sum = 0;
		for (int i = 0; i < p->nroles; i++) {
			n[p->roles[i].role] = p->roles[i].ctas;
			sum += p->roles[i].ctas;
		}
		if (sum > C) {
			diag_error(S->d, p->roles_where,
				   "roles ask for %d CTAs per rank, but a rank has %d "
				   "(%d SMs, %d rank%s per GPU)",
				   sum, C, s->dev.sms, s->ranks_per_gpu, s->ranks_per_gpu > 1 ? "s" : "");
			S->err = 1;
			return;
		}
		for (int r = 0; r < ROLE_COUNT; r++)
			if (used[r] && n[r] == 0) {
				diag_error(S->d, p->roles_where,
					   "roles give no CTA to '%s', which has work", ir_role_name(r));
				S->err = 1;
			}
		if (S->err)
			return;
		C = sum;
	} else {
		/* comm roles: proportional to their work at the link's rate,
		 * at least one CTA, at most what saturates the link */
		int left = C;
		double wc = work[ROLE_COMPUTE];
		for (int r = ROLE_NVLINK; r <= ROLE_REDUCE; r++) {
			if (!used[r])
				continue;
			double link = r == ROLE_RDMA ? s->dev.nic_gbps :
				      s->ranks_per_gpu > 1 || !remote
					      ? s->dev.mem_gbps / 2 / s->ranks_per_gpu
					      : s->dev.nvlink_gbps;
			int cap = cost_copy_ctas(&s->dev, link);
			int k = (int)lround(C * work[r] / (wc + work[r] + 1e-9));
			if (k < 1)
				k = 1;
			if (k > cap)
				k = cap;
			if (k > left - used[ROLE_COMPUTE])
				k = left - used[ROLE_COMPUTE];
			n[r] = k;
			left -= k;
		}
		if (used[ROLE_COMPUTE])
			n[ROLE_COMPUTE] = left;
		(void)o;
	}
	/* lay out: comm roles first (CTA 0...), compute last */
	static const ir_rolekind order[] = {ROLE_NVLINK, ROLE_RDMA, ROLE_REDUCE, ROLE_COMPUTE};
	s->roles = arena_alloc(S->a, ROLE_COUNT * sizeof *s->roles);
	if (!s->roles) {
		S->err = 1;
		return;
	}
	int first = 0;
	for (size_t k = 0; k < sizeof order / sizeof order[0]; k++) {
		ir_rolekind r = order[k];
		if (n[r] <= 0 || !used[r])
			continue;
		s->roles[s->nroles++] = (ir_role){r, first, n[r]};
		first += n[r];
	}
	s->ctas = first;
}

/* ---- pools ---------------------------------------------------------------- */

/* The phases of the list schedule where some op is pooled.  An op's level
 * is the most pools on a chain of ops that leads to it (a pool counting
 * for the ops after it); list_order places the tasks by (phase, its own
 * key), the phase being
 *     level x (nops + 2)           an op that is not pooled
 *     level x (nops + 2) + 1 + op  a pooled op,
 * so that in each CTA's list the ops of one level come before that
 * level's pools, each pool's entries together, and then the next level.
 * Everything a pool's task needs is then before the first entry of that
 * pool in every list, and everything that needs it after the last, which
 * keeps the CTA loops deadlock-free whichever CTA takes which task
 * (verify.c, check 2, proves it of the lists).  A pooled op whose tasks
 * depend on each other, or on a cycle of ops, cannot be a pool: the
 * plan's error.  Without pools S->phase stays NULL: the schedule is the
 * list schedule's alone. */
static void pool_phases(sched *S)
{
	ir_sched *s = S->s;
	const ir_prog *p = S->p;
	int any = 0;
	for (int o = 0; o < p->nops; o++)
		any |= p->ops[o].plan.pool;
	if (!any)
		return;
	int *level = arena_alloc(S->a, (size_t)p->nops * sizeof(int));
	S->phase = arena_alloc(S->a, (size_t)s->ntasks * sizeof(int));
	if (!level || !S->phase) {
		S->err = 1;
		return;
	}
	memset(level, 0, (size_t)p->nops * sizeof(int));
	for (int round = 0, changed = 1; changed; round++) {
		if (round > p->nops) {
			diag_error(S->d, p->where, "internal: a pooled op on a cycle of ops");
			S->err = 1;
			return;
		}
		changed = 0;
		for (int i = 0; i < s->ntasks; i++) {
			const int oi = s->tasks[i].op;
			for (int k = 0; k < S->ndeps[i]; k++) {
				const int oq = s->tasks[S->deps[i][k].task].op;
				if (oq == oi && p->ops[oi].plan.pool) {
					diag_error(S->d, p->ops[oi].where,
						   "internal: the pooled op '%s' has a task that needs another of its tasks",
						   p->ops[oi].stage);
					S->err = 1;
					return;
				}
				const int v = level[oq] + (oq != oi && p->ops[oq].plan.pool);
				if (v > level[oi]) {
					level[oi] = v;
					changed = 1;
				}
			}
		}
	}
	for (int i = 0; i < s->ntasks; i++) {
		const int o = s->tasks[i].op;
		S->phase[i] = level[o] * (p->nops + 2) + (p->ops[o].plan.pool ? 1 + o : 0);
	}
}

/* A pool's order: batch by batch (an expert's tiles together), in each
 * column by column, and in a column row by row, so that the CTAs working
 * at once share an expert's rows and each column's weight slab (the
 * tiles of one slab one after another; rows past an expert's tokens are
 * empty tiles, done at once).  With `rows` (MK_POOL_ORDER=rows, A/B) row
 * by row, and in a row column by column: the tiles of one row panel one
 * after another. */
typedef struct pool_cmp {
	const ir_sched *s;
	int rows;
} pool_cmp;

static int pool_key(const void *a, const void *b, void *arg)
{
	const pool_cmp *c = arg;
	const ir_sched *s = c->s;
	const ir_task *x = &s->tasks[*(const int *)a], *y = &s->tasks[*(const int *)b];
	const int nd = s->prog->tensors[x->write.tensor].ndim;
	int64_t kx[IR_MAXDIM], ky[IR_MAXDIM];
	int n = 0;
	for (int d = 0; d + 2 < nd; d++, n++) {
		kx[n] = x->write.lo[d];
		ky[n] = y->write.lo[d];
	}
	for (int j = 0; j < 2 && j < nd; j++, n++) {
		const int d = c->rows ? nd - 2 + j : nd - 1 - j;
		if (d < 0)
			break;
		kx[n] = x->write.lo[d];
		ky[n] = y->write.lo[d];
	}
	for (int d = 0; d < n; d++)
		if (kx[d] != ky[d])
			return kx[d] < ky[d] ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

/* The pools of the final lists: each pooled op's tasks in pool_key order
 * and the CTAs that hold them. */
static void build_pools(sched *S, const compile_opts *opt)
{
	ir_sched *s = S->s;
	const ir_prog *p = S->p;
	int np = 0, nt = 0;
	for (int i = 0; i < s->ntasks; i++)
		nt += p->ops[s->tasks[i].op].plan.pool;
	for (int o = 0; o < p->nops; o++)
		np += p->ops[o].plan.pool;
	if (!np)
		return;
	s->pools = arena_alloc(S->a, (size_t)np * sizeof *s->pools);
	s->pool_order = arena_alloc(S->a, (size_t)(nt + 1) * sizeof(int));
	char *held = arena_alloc(S->a, (size_t)s->ctas);
	if (!s->pools || !s->pool_order || !held) {
		S->err = 1;
		return;
	}
	int first = 0, pairs = 0, apart = s->ctas % 2 || (opt && opt->pool_rows);
	for (int o = 0; o < p->nops; o++) {
		if (!p->ops[o].plan.pool)
			continue;
		ir_pool *pl = &s->pools[s->npools++];
		pl->op = o;
		pl->first = first;
		pl->n = 0;
		pl->ctas = 0;
		memset(held, 0, (size_t)s->ctas);
		for (int i = 0; i < s->ntasks; i++)
			if (s->tasks[i].op == o) {
				s->pool_order[first + pl->n++] = i;
				pl->ctas += !held[s->tasks[i].cta];
				held[s->tasks[i].cta] = 1;
			}
		if (!pl->n) {	/* no tasks here: nothing to take */
			s->npools--;
			continue;
		}
		pool_cmp c = {s, opt && opt->pool_rows};
		qsort_r(s->pool_order + first, (size_t)pl->n, sizeof(int), pool_key, &c);
		first += pl->n;
		/* clusters take a pool's tickets together: both CTAs of every
		 * cluster must hold the pool (the pools come in the same order
		 * in every list: pool_phases) */
		for (int k = 0; k + 1 < s->ctas; k += 2)
			apart |= held[k] != held[k + 1];
		pairs |= p->ops[o].plan.mm.cluster > 1;
	}
	/* the kernel runs in 2-CTA clusters where a pool pairs its tiles
	 * (plan.c mm_cluster: an even number of a bucket's row tiles, so the
	 * pool's order, row tile by row tile in a slab, holds them in pairs) */
	if (pairs && !apart)
		s->cluster = 2;
}

/* ---- list scheduling ------------------------------------------------------ */

typedef struct heap {
	int *v;
	double *key;
	int n;
	const int *phase;  /* a first key, or NULL */
} heap;

static int heap_less(const heap *h, int a, int b)
{
	if (h->phase && h->phase[a] != h->phase[b])
		return h->phase[a] < h->phase[b];
	if (h->key[a] != h->key[b])
		return h->key[a] < h->key[b];
	return a < b;
}

static void heap_push(heap *h, int x)
{
	int i = h->n++;
	h->v[i] = x;
	while (i > 0) {
		int pa = (i - 1) / 2;
		if (!heap_less(h, h->v[i], h->v[pa]))
			break;
		int tmp = h->v[i];
		h->v[i] = h->v[pa];
		h->v[pa] = tmp;
		i = pa;
	}
}

static int heap_pop(heap *h)
{
	int top = h->v[0];
	h->v[0] = h->v[--h->n];
	int i = 0;
	for (;;) {
		int l = 2 * i + 1, r = l + 1, m = i;
		if (l < h->n && heap_less(h, h->v[l], h->v[m]))
			m = l;
		if (r < h->n && heap_less(h, h->v[r], h->v[m]))
			m = r;
		if (m == i)
			break;
		int tmp = h->v[i];
		h->v[i] = h->v[m];
		h->v[m] = tmp;
		i = m;
	}
	return top;
}

static int task_order_cmp(const void *a, const void *b, void *arg)
{
	const ir_task *tasks = arg;
	const ir_task *x = &tasks[*(const int *)a], *y = &tasks[*(const int *)b];
	if (x->cta != y->cta)
		return x->cta < y->cta ? -1 : 1;
	return (x->order > y->order) - (x->order < y->order);
}

/* When a task needs what a producer writes (reads: the dep's mask): 0
 * before it starts; for a matmul tile whose engine waits per operand
 * (plan.c: late), 1 before A's first load (B's loads, the weights, go out
 * first) and 2 before its epilogue (the epilogue's operand only). */
static int need_at(const ir_sched *s, const ir_task *t, unsigned reads)
{
	if ((t->kind != TASK_MATMUL && t->kind != TASK_MMPART) || !s->prog->ops[t->op].plan.mm.late ||
	    reads & 2u)
		return 0;
	return reads & ~4u ? 1 : 2;
}

/* What a tile that waits per operand still needs once A's flags are set:
 * the rest of it after the B stages it loads before waiting for A (the
 * share of its k steps the ring holds), and its store. */
static double late_rest_us(const ir_sched *s, const ir_task *t)
{
	const ir_mm_plan *mp = &s->prog->ops[t->op].plan.mm;
	const ir_region *a = &t->reads[0];  /* A: rows x its K range */
	const int kd = s->prog->tensors[a->tensor].ndim - 1;
	const double nk = (double)((a->hi[kd] - a->lo[kd] + 63) / 64);
	const double early = nk > mp->wg_stages ? mp->wg_stages / nk : 1;
	return cost_tile_rest_us(&s->dev, t->flops, t->hbm, s->ctas, s->ranks_per_gpu, early) +
	       tile_store_us(s, t);
}

/* The order in which list_order takes the tasks that can start by the
 * time a CTA comes free.  ORDER_READY: the one ready first, then the
 * lower id (stage by stage).  ORDER_WAVE: the one furthest behind in its
 * stage (the share of its stage's tasks before it), so that the tiles of
 * stages that read the same operand interleave column by column and a
 * consumer's ranges complete wave by wave (the decode MLP: G and U tile
 * by tile, the down projection's k-ranges early).  list_schedule keeps
 * the order whose schedule the cost model predicts shorter. */
/* (ORDER_READY, ORDER_WAVE: pass.h, as MK_SCHED_ORDER sets them) */

/* The CTA for the next task of pool op o whose tiles go in pairs on 2-CTA
 * clusters (the CTAs 2k and 2k + 1; ir_mm_plan.cluster), where `best` is
 * the list schedule's pick among [first, first + nc): the pool's tickets
 * are taken by both CTAs of a cluster together, so both must hold
 * entries of it (sched.c build_pools; mkd_pool_take).  A pool's entries
 * say only who takes part: a CTA whose cluster's other CTA holds none yet
 * is followed by that CTA, and the last entry goes to a cluster that
 * holds the pool already.  left[o]: its tasks still to place; open[o]:
 * the CTA waiting for its other (-1: none); held[c]: CTA c holds it. */
static int pair_place(int o, int first, int nc, const double *cta_free, int best, int *left,
		      int *open, char *held)
{
	int c = best;
	if (open[o] >= 0) {
		c = open[o] ^ 1;
		open[o] = -1;
	} else {
		/* a new holder only where its cluster lies in the range, and
		 * not for the last entry (its other would hold none) */
		int pick = -1;
		for (int k = first; k < first + nc; k++) {
			const int in = (k ^ 1) >= first && (k ^ 1) < first + nc;
			if ((held[k] || (in && left[o] > 1)) && (pick < 0 || cta_free[k] < cta_free[pick]))
				pick = k;
		}
		c = pick >= 0 ? pick : best;
		if (!held[c])
			open[o] = c;
	}
	held[c] = 1;
	left[o]--;
	return c;
}

/* The CTA for task i where `best` (of [first, first + nc)) frees first:
 * of the CTAs free by the time i may start (ready: the same start to the
 * cost model), one whose last task so far is a producer of i on this
 * rank, the last of them to finish, so that no unrelated task stands
 * between the two.  A split-KV merge waited 0.6-2.9 us (median 2) past
 * its head's last range for its CTA's own range of another head (decode
 * attention, an H100: docs/perf-notes.md, thirty-seventh session). */
static int affine_cta(const sched *S, int i, int first, int nc, const double *cta_free,
		      const int *cta_last, double ready, int best)
{
	if (cta_free[best] > ready)
		return best;
	int pick = -1;
	for (int k = 0; k < S->ndeps[i]; k++) {
		const int q = S->deps[i][k].task, c = S->s->tasks[q].cta;
		/* a pool's task runs where it is taken, not where it is listed */
		if (S->deps[i][k].r || S->p->ops[S->s->tasks[q].op].plan.pool || c < first ||
		    c >= first + nc || cta_last[c] != q || cta_free[c] > ready)
			continue;
		if (pick < 0 || cta_free[c] > cta_free[pick] ||
		    (cta_free[c] == cta_free[pick] && c < pick))
			pick = c;
	}
	return pick >= 0 ? pick : best;
}

/* One list schedule in the given order: every task's role, CTA, order,
 * cost and predicted times.  Returns its end (us from the kernel's
 * start), -1 on an error (S->err set). */
static double list_order(sched *S, int how)
{
	ir_sched *s = S->s;
	const ir_prog *p = S->p;
	int n = s->ntasks;
	int *indeg = arena_alloc(S->a, (size_t)n * sizeof(int));
	int **succ = arena_alloc(S->a, (size_t)n * sizeof(int *));
	int *nsucc = arena_alloc(S->a, (size_t)n * sizeof(int));
	/* when each task may start, and (need_at 1, 2) when its A and its
	 * epilogue's operand are there */
	double *ready = arena_alloc(S->a, (size_t)n * sizeof(double));
	double *ready_a = arena_alloc(S->a, (size_t)n * sizeof(double));
	double *ready_x = arena_alloc(S->a, (size_t)n * sizeof(double));
	char **need = arena_alloc(S->a, (size_t)n * sizeof(char *));
	double *cta_free = arena_alloc(S->a, (size_t)s->ctas * sizeof(double));
	int *cta_n = arena_alloc(S->a, (size_t)s->ctas * sizeof(int));
	int *cta_last = arena_alloc(S->a, (size_t)s->ctas * sizeof(int));  /* -1: none yet */
	/* ORDER_WAVE: when each task could start at the earliest (its A
	 * there; a tile that waits per operand is not held back for its
	 * epilogue's operand), the time heap's key; and its place in its
	 * stage, the key of the heap of tasks that can start by then */
	const int wave = how == ORDER_WAVE;
	double *avail = wave ? arena_alloc(S->a, (size_t)n * sizeof(double)) : ready;
	double *wkey = wave ? arena_alloc(S->a, (size_t)n * sizeof(double)) : ready;
	int *per_op = arena_alloc(S->a, (size_t)(p->nops + 1) * 2 * sizeof(int));
	/* a pool whose tiles go in pairs (plan.c mm_cluster): the CTAs
	 * holding it come in clusters (2k, 2k + 1), see pair_place; by op,
	 * its tasks not placed yet and the holder whose other CTA holds none
	 * yet (-1), and by op and CTA whether the CTA holds its pool */
	int *pair_left = arena_alloc(S->a, (size_t)(p->nops + 1) * 2 * sizeof(int));
	char *holds = arena_alloc(S->a, (size_t)s->ctas * (size_t)(p->nops + 1));
	heap h = {arena_alloc(S->a, (size_t)n * sizeof(int)), avail, 0, S->phase};
	heap cand = {arena_alloc(S->a, (size_t)n * sizeof(int)), wkey, 0, S->phase};
	if (!indeg || !succ || !nsucc || !ready || !ready_a || !ready_x || !need || !cta_free ||
	    !cta_n || !cta_last || !h.v || !avail || !wkey || !per_op || !cand.v || !pair_left || !holds) {
		S->err = 1;
		return -1;
	}
	if (wave) {
		int *count = per_op, *seen = per_op + p->nops + 1;
		for (int i = 0; i < n; i++)
			count[s->tasks[i].op]++;
		for (int i = 0; i < n; i++) {
			const int op = s->tasks[i].op;
			wkey[i] = (seen[op]++ + 0.5) / count[op];
		}
	}
	/* template dependency graph: distinct producer template tasks */
	for (int i = 0; i < n; i++)
		for (int k = 0; k < S->ndeps[i]; k++) {
			int q = S->deps[i][k].task;
			if (q == i) {
				diag_error(S->d, p->ops[s->tasks[i].op].where,
					   "internal: task %d of '%s' depends on its own image on another rank",
					   i, p->ops[s->tasks[i].op].stage);
				S->err = 1;
				return -1;
			}
			if (k && S->deps[i][k - 1].task == q)
				continue;
			indeg[i]++;
			nsucc[q]++;
		}
	for (int i = 0; i < n; i++) {
		succ[i] = arena_alloc(S->a, (size_t)(nsucc[i] + 1) * sizeof(int));
		need[i] = arena_alloc(S->a, (size_t)(nsucc[i] + 1));
		if (!succ[i] || !need[i]) {
			S->err = 1;
			return -1;
		}
		nsucc[i] = 0;
	}
	for (int i = 0; i < n; i++)
		for (int k = 0; k < S->ndeps[i]; k++) {
			int q = S->deps[i][k].task;
			if (k + 1 < S->ndeps[i] && S->deps[i][k + 1].task == q)
				continue;  /* the last of q's images: their reads together */
			unsigned reads = 0;
			for (int k0 = k; k0 >= 0 && S->deps[i][k0].task == q; k0--)
				reads |= S->deps[i][k0].reads;
			need[q][nsucc[q]] = (char)need_at(s, &s->tasks[i], reads);
			succ[q][nsucc[q]++] = i;
		}
	int role_of_kind[ROLE_COUNT];
	for (int r = 0; r < ROLE_COUNT; r++)
		role_of_kind[r] = -1;
	for (int r = 0; r < s->nroles; r++)
		role_of_kind[s->roles[r].kind] = r;

	int *pair_open = pair_left + p->nops + 1;
	for (int o = 0; o <= p->nops; o++) {
		pair_left[o] = 0;
		pair_open[o] = -1;
	}
	for (int i = 0; i < n; i++)
		pair_left[s->tasks[i].op]++;
	memset(holds, 0, (size_t)s->ctas * (size_t)(p->nops + 1));
	for (int c = 0; c < s->ctas; c++)
		cta_last[c] = -1;
	for (int i = 0; i < n; i++)
		if (!indeg[i])
			heap_push(&h, i);
	int done = 0;
	double end = 0;
	double last_thr = 0;
	while (h.n || cand.n) {
		int i;
		if (wave) {
			/* the next start: a CTA free and a task there (cand's
			 * tasks were there by the last one); the first in cand
			 * of those there by then */
			double thr = cta_free[0];
			for (int c = 1; c < s->ctas; c++)
				if (cta_free[c] < thr)
					thr = cta_free[c];
			const double first = cand.n ? last_thr : avail[h.v[0]];
			if (thr < first)
				thr = first;
			while (h.n && avail[h.v[0]] <= thr)
				heap_push(&cand, heap_pop(&h));
			last_thr = thr;
			i = heap_pop(&cand);
		} else {
			i = heap_pop(&h);
		}
		ir_task *t = &s->tasks[i];
		int ri = role_of_kind[role_of(t)];
		const ir_role *ro = &s->roles[ri];
		/* the first ctas of the role where the plan bounds the op's */
		const int cap = p->ops[t->op].plan.ctas, nc = cap > 0 && cap < ro->ctas ? cap : ro->ctas;
		int best = ro->first_cta;
		for (int c = ro->first_cta; c < ro->first_cta + nc; c++)
			if (cta_free[c] < cta_free[best])
				best = c;
		const ir_op *top = &p->ops[t->op];
		if (top->plan.pool && top->plan.mm.cluster > 1)
			best = pair_place(t->op, ro->first_cta, nc, cta_free, best, pair_left, pair_open,
					  holds + (size_t)t->op * (size_t)s->ctas);
		else if (!top->plan.pool && !S->no_affinity)
			best = affine_cta(S, i, ro->first_cta, nc, cta_free, cta_last, ready[i], best);
		cta_last[best] = i;
		t->role = ri;
		t->cta = best;
		t->order = cta_n[best]++;
		t->cost_us = task_cost(s, t, ro->ctas);
		t->t0 = ready[i] > cta_free[best] ? ready[i] : cta_free[best];
		t->t1 = t->t0 + t->cost_us;
		if (ready_a[i] > t->t0 || ready_x[i] > t->t0) {  /* waits per operand */
			const double ea = ready_a[i] + late_rest_us(s, t), ex = ready_x[i] + tile_store_us(s, t);
			t->t1 = t->t1 > ea ? t->t1 : ea;
			t->t1 = t->t1 > ex ? t->t1 : ex;
		}
		cta_free[best] = t->t1;
		if (t->t1 > end)
			end = t->t1;
		done++;
		for (int k = 0; k < nsucc[i]; k++) {
			int j = succ[i][k];
			double lat = s->dev.flag_lat_us;
			if (t->transport == TR_RDMA)
				lat += s->dev.nic_lat_us;
			double *r = need[i][k] == 1 ? ready_a : need[i][k] == 2 ? ready_x : ready;
			if (t->t1 + lat > r[j])
				r[j] = t->t1 + lat;
			if (--indeg[j] == 0) {
				if (wave)
					avail[j] = ready_a[j] > ready[j] ? ready_a[j] : ready[j];
				/* a tile that waits per operand starts no earlier than
				 * lets it end when its A and epilogue operand allow */
				if (ready_a[j] > ready[j] || ready_x[j] > ready[j]) {
					const ir_task *u = &s->tasks[j];
					const double c = task_cost(s, u, s->roles[role_of_kind[role_of(u)]].ctas);
					const double sa = ready_a[j] + late_rest_us(s, u) - c,
						     sx = ready_x[j] + tile_store_us(s, u) - c;
					if (sa > ready[j])
						ready[j] = sa;
					if (sx > ready[j])
						ready[j] = sx;
				}
				heap_push(&h, j);
			}
		}
	}
	if (done != n) {
		diag_error(S->d, p->where,
			   "internal: the tile graph has a cycle (%d of %d tasks could be ordered)",
			   done, n);
		S->err = 1;
		return -1;
	}
	return end;
}

/* Pairs: tasks of one column block and batch, row tile after row tile
 * (the box each writes). */
static int pair_key(const void *a, const void *b, void *arg)
{
	const ir_sched *s = arg;
	const ir_task *x = &s->tasks[*(const int *)a], *y = &s->tasks[*(const int *)b];
	const int nd = s->prog->tensors[x->write.tensor].ndim;
	static const int dims[2][3] = {{1, 0, -1}, {0, 2, 1}};  /* 2-D: cols, rows; 3-D: batch, cols, rows */
	for (int k = 0; k < nd; k++) {
		const int d = dims[nd == 3][k];
		if (x->write.lo[d] != y->write.lo[d])
			return x->write.lo[d] < y->write.lo[d] ? -1 : 1;
	}
	return (x->id > y->id) - (x->id < y->id);
}

/* A matmul whose tiles go in pairs on 2-CTA clusters outside a pool
 * (plan.c mm_cluster: the kernel's only op, on the program's inputs, one
 * row of tiles a task): its tasks in pairs of the same columns (and
 * batch), the row tiles 2j and 2j + 1, pair k on cluster k % (ctas / 2)
 * at the same place in both CTAs' lists, in the order of the pairs'
 * first tasks (the plan's: tiles that share panels together).  So each
 * CTA's next task is the other's next task's pair: the engine's ring goes
 * on into it in both or in neither (no task waits for anything).  The
 * list schedule placed them the same way, a CTA at a time; returns the
 * new end (us), or -1 where the tasks do not pair (then every CTA runs
 * alone: ir_sched.cluster stays 1). */
static double static_pairs(sched *S)
{
	ir_sched *s = S->s;
	const ir_prog *p = S->p;
	const int n = s->ntasks;
	int op = -1;
	for (int o = 0; o < p->nops; o++)
		if (p->ops[o].kind == OP_MATMUL && !p->ops[o].plan.pool && p->ops[o].plan.mm.cluster > 1)
			op = o;
	if (op < 0 || n % 2 || s->ctas % 2 || s->nroles != 1 || s->roles[0].first_cta != 0 ||
	    s->roles[0].ctas != s->ctas)
		return -1;
	const int rd = s->prog->tensors[p->ops[op].out].ndim == 3;  /* the row dimension */
	int *v = arena_alloc(S->a, (size_t)n * sizeof(int));
	int *pos = arena_alloc(S->a, (size_t)n * sizeof(int));  /* task -> its place in v */
	double *cta_free = arena_alloc(S->a, (size_t)s->ctas * sizeof(double));
	if (!v || !pos || !cta_free) {
		S->err = 1;
		return -1;
	}
	for (int i = 0; i < n; i++) {
		if (s->tasks[i].op != op || S->ndeps[i])
			return -1;
		v[i] = i;
	}
	qsort_r(v, (size_t)n, sizeof(int), pair_key, s);
	for (int k = 0; k < n; k += 2) {
		const ir_region *a = &s->tasks[v[k]].write, *b = &s->tasks[v[k + 1]].write;
		for (int d = 0; d <= rd + 1; d++)
			if (d != rd && (a->lo[d] != b->lo[d] || a->hi[d] != b->hi[d]))
				return -1;  /* not the same columns (or batch) */
		if (a->hi[rd] != b->lo[rd])
			return -1;
		pos[v[k]] = k;
		pos[v[k + 1]] = k + 1;
	}
	for (int c = 0; c < s->ctas; c++)
		cta_free[c] = 0;
	double end = 0;
	const int nc = s->ctas / 2;
	/* the pairs in the order of their first tasks' ids (the plan's order) */
	for (int i = 0, q = 0; i < n; i++) {
		if (pos[i] % 2)
			continue;
		for (int h = 0; h < 2; h++) {
			ir_task *t = &s->tasks[v[pos[i] + h]];
			t->cta = 2 * (q % nc) + h;
			t->order = q / nc;
			t->t0 = cta_free[t->cta];
			t->t1 = t->t0 + t->cost_us;
			cta_free[t->cta] = t->t1;
			end = end > t->t1 ? end : t->t1;
		}
		q++;
	}
	return end;
}

/* The list schedule in the order asked for (MK_SCHED_ORDER), else in the
 * one the cost model predicts shorter by at least 1% (ORDER_READY when
 * they are within it: the schedules stay where they were), a matmul's
 * pairs on clusters (static_pairs), then the tasks in (cta, order) and
 * the floor. */
static void list_schedule(sched *S, const compile_opts *o)
{
	ir_sched *s = S->s;
	int n = s->ntasks;
	int how = o ? o->sched_order : 0;
	double end;
	s->other_us = 0;
	if (how) {
		end = list_order(S, how);
	} else {
		/* ready first last: the usual choice needs no third schedule */
		const double by_wave = list_order(S, ORDER_WAVE);
		const double by_ready = by_wave < 0 ? -1 : list_order(S, ORDER_READY);
		how = by_wave < 0.99 * by_ready ? ORDER_WAVE : ORDER_READY;
		end = by_ready < 0 || how == ORDER_READY ? by_ready : list_order(S, ORDER_WAVE);
		s->other_us = (how == ORDER_WAVE ? by_ready : by_wave) + s->dev.run_us;
	}
	if (end < 0)
		return;
	s->order_wave = how == ORDER_WAVE;
	/* a matmul's tiles in pairs on 2-CTA clusters (a pool's: build_pools) */
	s->cluster = 1;
	const double paired = static_pairs(S);
	if (paired >= 0) {
		s->cluster = 2;
		end = paired;
	}
	s->predicted_us = end + s->dev.run_us;

	/* tasks in (cta, order); ids follow.  Sort indices, then move each
	 * task once: the tasks are large. */
	int *idx = arena_alloc(S->a, (size_t)n * sizeof(int));
	ir_task *sorted = arena_alloc(S->a, (size_t)n * sizeof *sorted);
	if (!idx || !sorted) {
		S->err = 1;
		return;
	}
	for (int i = 0; i < n; i++)
		idx[i] = i;
	qsort_r(idx, (size_t)n, sizeof(int), task_order_cmp, s->tasks);
	for (int i = 0; i < n; i++) {
		sorted[i] = s->tasks[idx[i]];
		sorted[i].id = i;
	}
	s->tasks = sorted;
	s->cta_first = arena_alloc(S->a, (size_t)(s->ctas + 1) * sizeof(int));
	if (!s->cta_first) {
		S->err = 1;
		return;
	}
	for (int c = 0, i = 0; c <= s->ctas; c++) {
		while (i < n && s->tasks[i].cta < c)
			i++;
		s->cta_first[c] = i;
	}
	build_pools(S, o);

	/* the floor: all SMs computing, every link busy all the time */
	double comp = 0, nv = 0, rd = 0;
	for (int i = 0; i < n; i++) {
		const ir_task *t = &s->tasks[i];
		if (t->kind == TASK_COPY && t->transport == TR_NVLINK)
			nv += t->bytes;
		else if (t->kind == TASK_RDMA)
			rd += t->bytes;
		else if (t->kind != TASK_COPY)
			comp += task_cost(s, t, 1);
	}
	int all = s->dev.sms / s->ranks_per_gpu;
	s->compute_us = comp / all;
	double link = s->ranks_per_gpu > 1 ? s->dev.mem_gbps / 2 / s->ranks_per_gpu : s->dev.nvlink_gbps;
	double c1 = nv / (link * 1e9) * 1e6, c2 = rd / (s->dev.nic_gbps * 1e9) * 1e6;
	s->comm_us = c1 > c2 ? c1 : c2;
	s->bound_us = s->compute_us > s->comm_us ? s->compute_us : s->comm_us;
}

int sched_run(ir_sched *s, const compile_opts *o, diags *d, arena *a)
{
	sched S = {.s = s, .p = s->prog, .d = d, .a = a, .no_affinity = o && o->no_affinity};
	s->ctas = s->dev.sms / s->ranks_per_gpu;
	/* every CTA can run every task: the plan's threads and shared memory */
	s->threads = S.p->threads;
	s->smem = S.p->smem;
	if (s->ctas < 2) {
		diag_error(d, S.p->where, "%d ranks per GPU leave %d CTA per rank; need at least 2",
			   s->ranks_per_gpu, s->ctas);
		return 1;
	}
	index_writers(&S);
	if (!S.err)
		rdma_flags(&S);
	if (!S.err)
		build_deps(&S);
	if (!S.err)
		pool_phases(&S);
	if (!S.err)
		choose_roles(&S, o);
	if (!S.err)
		list_schedule(&S, o);
	return S.err || a->failed ? 1 : 0;
}
