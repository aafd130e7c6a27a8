/* test_verify.c - the verifier catches what it claims to (verify.c).
 *
 * Faults planted in verified schedules of the samples must each fail
 * verify_run with the message of the check that owns them: an op with work
 * left without a task (7), a flag expecting one signal more (1), a wait
 * closing a cycle through a CTA's list (2), a write shrunk (4: a read not
 * covered), two tasks writing one box (5), a CTA's first task without its
 * waits (4: nothing orders it after its producers), a whole-tile matmul
 * given a box of part tiles (11; FULL, and stored by TMA), and the premises of the proof by
 * symmetry (a template task off rank 0, a box across a shard).  A read whose own wait is dropped but whose producer is ordered
 * before it through other tasks must still pass (the path search).  Then
 * random faults (boxes moved by one, waits and signals dropped or moved to
 * another rank, counts changed) on each schedule: verify_run must agree
 * with the oracle that expands every rank (verify_expanded.h), except that
 * it may also refuse for its premises, a cycle up to symmetry, or a box of
 * part tiles for a matmul that stores whole ones (check 11: the oracle
 * sees boxes, not what the engine stores) -- stricter, never looser.  The restored schedule must verify again.  Run from the
 * repository root (tests/run.sh does).  Exit 0 = pass.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compiler/compile.h"
#include "sample_sched.h"
#include "verify_expanded.h"

static int failures, checks;

static void check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(int ok, const char *fmt, ...)
{
	checks++;
	if (ok)
		return;
	failures++;
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "FAIL: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
}

/* Compiles a sample through the verifier; NULL on failure. */
static ir_sched *compile(const char *path, const mk_define *defs, int ndefs, srcset *src,
			 arena *a)
{
	compile_opts o = {.defs = defs, .ndefs = ndefs, .ranks_per_gpu = 1};
	return sample_sched(path, &o, src, a);
}

/* 0 when s verifies; else 1, with the first message in msg. */
static int verify_msg(const ir_sched *s, char *msg, size_t n)
{
	arena a;
	arena_init(&a);
	diags d;
	diag_init(&d, NULL, &a);
	int rc = verify_run(s, &d, &a);
	msg[0] = 0;
	if (d.n > 0)
		snprintf(msg, n, "%s", d.v[0].msg);
	arena_free(&a);
	return rc != 0;
}

/* The planted fault must fail with a message holding `want`. */
static void expect_fail(const char *name, const ir_sched *s, const char *fault, const char *want)
{
	char msg[512];
	int failed = verify_msg(s, msg, sizeof msg);
	check(failed, "%s: %s passed", name, fault);
	if (failed)
		check(strstr(msg, want) != NULL, "%s: %s: message \"%s\" lacks \"%s\"", name, fault,
		      msg, want);
}

static int verifies(const ir_sched *s)
{
	char msg[512];
	int failed = verify_msg(s, msg, sizeof msg);
	if (failed)
		fprintf(stderr, "  %s\n", msg);
	return !failed;
}

/* Check 7: every task of the last op moved to the first one. */
static void fault_no_task(const char *name, ir_sched *s)
{
	const int last = s->prog->nops - 1;
	int *saved = malloc((size_t)s->ntasks * sizeof *saved);
	if (!saved || last < 1)
		return free(saved);
	for (int i = 0; i < s->ntasks; i++) {
		saved[i] = s->tasks[i].op;
		if (s->tasks[i].op == last)
			s->tasks[i].op = 0;
	}
	expect_fail(name, s, "an op without a task", "but has no task");
	for (int i = 0; i < s->ntasks; i++)
		s->tasks[i].op = saved[i];
	free(saved);
}

static int expanded_verifies(const ir_sched *s)
{
	arena a;
	arena_init(&a);
	diags d;
	diag_init(&d, NULL, &a);
	int rc = verify_expanded(s, &d, &a);
	arena_free(&a);
	return rc == 0;
}

/* A task copy that can be restored, with room for one more wait. */
typedef struct saved {
	ir_task t;
	ir_flagref *waits;
} saved;

static void save(saved *sv, const ir_task *t)
{
	sv->t = *t;
	sv->waits = malloc((size_t)(t->nwaits + 1) * sizeof *sv->waits);
	if (sv->waits && t->nwaits)
		memcpy(sv->waits, t->waits, (size_t)t->nwaits * sizeof *sv->waits);
}

static void restore(saved *sv, ir_task *t)
{
	*t = sv->t;
	if (sv->waits && t->nwaits)
		memcpy(t->waits, sv->waits, (size_t)t->nwaits * sizeof *sv->waits);
	free(sv->waits);
}

/* Some task reads exactly the box g. */
static int is_read(const ir_sched *s, const ir_region *g)
{
	for (int i = 0; i < s->ntasks; i++)
		for (int k = 0; k < s->tasks[i].nreads; k++)
			if (!memcmp(&s->tasks[i].reads[k], g, sizeof *g))
				return 1;
	return 0;
}

static void planted(const char *name, ir_sched *s)
{
	const ir_prog *p = s->prog;
	saved sv;

	/* 1: a flag expecting one more signal (a counter: written flags are
	 * check 6's) */
	for (int f = s->nflags - 1; f >= 0; f--)
		if (!s->flags[f].written) {
			s->flags[f].expected++;
			expect_fail(name, s, "a flag expecting one more", "signals per run, expects");
			s->flags[f].expected--;
			break;
		}

	/* 2: the first task of a CTA waits on what the CTA's last task signals */
	for (int c = 0; c < s->ctas; c++) {
		int a = s->cta_first[c], b = s->cta_first[c + 1];
		if (b - a < 2 || s->tasks[b - 1].nsignals == 0)
			continue;
		ir_task *t = &s->tasks[a];
		save(&sv, t);
		ir_flagref *w = malloc((size_t)(t->nwaits + 1) * sizeof *w);
		if (!w)
			break;
		if (t->nwaits)
			memcpy(w, t->waits, (size_t)t->nwaits * sizeof *w);
		w[t->nwaits] = s->tasks[b - 1].signals[0];
		t->waits = w;
		t->nwaits++;
		expect_fail(name, s, "a wait closing a cycle", "may deadlock");
		restore(&sv, t);
		free(w);
		break;
	}

	/* 11: a whole-tile matmul (mm.full; then one stored by TMA that is
	 * not FULL, mm.tma_store: chain's, with its relu) given a box of part
	 * tiles */
	for (int tma = 0; tma < 2; tma++)
		for (int i = 0; i < s->ntasks; i++) {
			ir_task *t = &s->tasks[i];
			int nd = p->tensors[t->write.tensor].ndim;
			const ir_mm_plan *m = t->kind == TASK_MATMUL ? &p->ops[t->op].plan.mm : NULL;
			if (!m || !(tma ? m->tma_store && !m->full : m->full))
				continue;
			t->write.hi[nd - 2]--;
			expect_fail(name, s, tma ? "a box of part tiles stored by TMA" : "a box of part tiles",
				    "a box of part tiles for an engine");
			t->write.hi[nd - 2]++;
			break;
		}

	/* 4: a write shrunk along its last dimension leaves a read uncovered
	 * (not a whole-tile matmul's: check 11 refuses its box first) */
	for (int i = 0; i < s->ntasks; i++) {
		ir_task *t = &s->tasks[i];
		int nd = p->tensors[t->write.tensor].ndim;
		if (t->kind == TASK_RDMA || t->write.hi[nd - 1] - t->write.lo[nd - 1] < 2 ||
		    !is_read(s, &t->write) ||
		    (t->kind == TASK_MATMUL &&
		     (p->ops[t->op].plan.mm.full || p->ops[t->op].plan.mm.tma_store)))
			continue;
		t->write.hi[nd - 1]--;
		expect_fail(name, s, "a shrunk write", "no task writes");
		t->write.hi[nd - 1]++;
		break;
	}

	/* 5: two tasks writing one box */
	for (int i = 1; i < s->ntasks; i++) {
		ir_task *t = &s->tasks[i];
		int j = i - 1;
		if (s->tasks[j].write.tensor != t->write.tensor || t->kind == TASK_RDMA)
			continue;
		ir_region keep = t->write;
		t->write = s->tasks[j].write;
		expect_fail(name, s, "two tasks writing one box", "write the same elements");
		t->write = keep;
		break;
	}

	/* 4: the first task of a CTA, whose waits all go */
	for (int c = 0; c < s->ctas; c++) {
		ir_task *t = &s->tasks[s->cta_first[c]];
		if (s->cta_first[c] == s->cta_first[c + 1] || t->nwaits == 0)
			continue;
		int n = t->nwaits;
		t->nwaits = 0;
		expect_fail(name, s, "a first task without its waits", "with nothing ordering the two");
		t->nwaits = n;
		break;
	}

	/* 0: a template task off rank 0; a read across a shard */
	s->tasks[0].rank = 1 % p->world;
	if (p->world > 1)
		expect_fail(name, s, "a template task on rank 1", "does not run on rank 0");
	s->tasks[0].rank = 0;
	for (int i = 0; i < s->ntasks; i++) {
		ir_task *t = &s->tasks[i];
		int k, d = -1;
		for (k = 0; k < t->nreads && d < 0; k++)
			for (int e = 0; e < p->tensors[t->reads[k].tensor].ndim && d < 0; e++)
				if (p->tensors[t->reads[k].tensor].rot[e].unit > 0)
					d = e;
		if (d < 0)
			continue;
		k--;
		const int64_t u = p->tensors[t->reads[k].tensor].rot[d].unit;
		ir_region keep = t->reads[k];
		t->reads[k].lo[d] = keep.lo[d] / u * u + u / 2;
		t->reads[k].hi[d] = t->reads[k].lo[d] + u;
		expect_fail(name, s, "a read across a shard", "across a shard boundary");
		t->reads[k] = keep;
		break;
	}
}

/* mlp_chain: R2 = add(R1, S2) (fused into the matmul M2's epilogue, which
 * reads R1) without its wait on R1's flag is still ordered (R1 -> N2 ->
 * ... -> G2 -> M2): the path search proves it. */
static void transitive(const char *name, ir_sched *s)
{
	const ir_prog *p = s->prog;
	int R1 = ir_find_tensor(p, "R1"), R2 = ir_find_tensor(p, "R2"), found = 0;
	for (int i = 0; i < s->ntasks && !found; i++) {
		ir_task *t = &s->tasks[i];
		if (p->ops[t->op].out != R2)
			continue;
		for (int k = 0; k < t->nreads && !found; k++) {
			int w = t->read_wait[k];
			if (t->reads[k].tensor != R1 || w < 0)
				continue;
			found = 1;
			ir_flagref keep = t->waits[w];
			t->waits[w] = t->waits[t->nwaits - 1];
			t->nwaits--;
			check(verifies(s), "%s: a read ordered through other tasks failed", name);
			check(expanded_verifies(s), "%s: the oracle refuses a read ordered through "
			      "other tasks", name);
			t->nwaits++;
			t->waits[t->nwaits - 1] = t->waits[w];
			t->waits[w] = keep;
		}
	}
	check(found, "%s: no read of R1 by R2 with a wait of its own", name);
}

static uint64_t rng = 0x243f6a8885a308d3ull;
static int rnd(int n)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return n > 0 ? (int)((rng >> 33) % (uint64_t)n) : 0;
}

/* Random faults: both verifiers must agree, or only verify_run refuse, for
 * its premises, a cycle up to symmetry, or part tiles (check 11). */
static void random_faults(const char *name, ir_sched *s, int n)
{
	const ir_prog *p = s->prog;
	int caught = 0;
	clock_t t0 = clock();
	for (int f = 0; f < n; f++) {
		int i = rnd(s->ntasks);
		ir_task *t = &s->tasks[i];
		saved sv;
		save(&sv, t);
		ir_region keep_r;
		int kind = rnd(6), k = -1, keep_e = 0, fl = 0;
		switch (kind) {
		case 0:  /* a write box moved by one */
		case 1: {  /* a read box moved by one */
			ir_region *g = &t->write;
			if (kind == 1 && t->nreads) {
				k = rnd(t->nreads);
				g = &t->reads[k];
			}
			keep_r = *g;
			int d = rnd(p->tensors[g->tensor].ndim);
			int64_t *e = rnd(2) ? &g->lo[d] : &g->hi[d];
			*e += rnd(2) ? 1 : -1;
			break;
		}
		case 2:  /* a wait dropped */
			if (t->nwaits) {
				int w = rnd(t->nwaits);
				t->waits[w] = t->waits[t->nwaits - 1];
				t->nwaits--;
			}
			break;
		case 3:  /* a wait on another rank */
			if (t->nwaits)
				t->waits[rnd(t->nwaits)].rank = (t->waits[0].rank + 1 + rnd(p->world)) % p->world;
			break;
		case 4:  /* a signal dropped or moved to another rank */
			if (t->nsignals) {
				if (rnd(2))
					t->nsignals--;
				else
					t->signals[rnd(t->nsignals)].rank = rnd(p->world);
			}
			break;
		case 5:  /* a count changed */
			if (s->nflags) {
				fl = rnd(s->nflags);
				keep_e = s->flags[fl].expected;
				s->flags[fl].expected += rnd(2) ? 1 : -1;
			}
			break;
		}
		char msg[512];
		int ours = !verify_msg(s, msg, sizeof msg), theirs = expanded_verifies(s);
		int stricter = !ours && theirs &&
			       (strstr(msg, "may deadlock") || strstr(msg, "across a shard") ||
				strstr(msg, "does not move whole") ||
				strstr(msg, "a box of part tiles"));
		check(ours == theirs || stricter,
		      "%s: random fault %d (kind %d, task %d): verify_run %s, the oracle %s%s%s", name,
		      f, kind, i, ours ? "passes" : "fails", theirs ? "passes" : "fails",
		      ours ? "" : ": ", ours ? "" : msg);
		caught += !theirs;
		if (kind == 0)
			t->write = keep_r;
		else if (kind == 1 && k >= 0)
			t->reads[k] = keep_r;
		if (kind == 5 && s->nflags)
			s->flags[fl].expected = keep_e;
		restore(&sv, t);
	}
	printf("%s: %d random faults, %d caught by both (%.0f ms)\n", name, n, caught,
	       (double)(clock() - t0) * 1e3 / CLOCKS_PER_SEC);
}

/* Check 9: the first RDMA write's destination taken for a view. */
static void fault_rdma_view(const char *name, ir_sched *s)
{
	for (int i = 0; i < s->ntasks; i++) {
		if (s->tasks[i].kind != TASK_RDMA)
			continue;
		ir_tensor *x = &s->prog->tensors[s->tasks[i].write.tensor];
		x->view = true;
		expect_fail(name, s, "an RDMA write of a view", "an RDMA write of a view");
		x->view = false;
		return;
	}
}

/* Rotates CTA positions a..b by one: a's task to b, the others up (ids,
 * orders and pool references follow the positions). */
static void rotate(ir_sched *s, int a, int b, int back)
{
	ir_task t = s->tasks[back ? b : a];
	if (back)
		memmove(&s->tasks[a + 1], &s->tasks[a], (size_t)(b - a) * sizeof t);
	else
		memmove(&s->tasks[a], &s->tasks[a + 1], (size_t)(b - a) * sizeof t);
	s->tasks[back ? a : b] = t;
	const int n = s->npools ? s->pools[s->npools - 1].first + s->pools[s->npools - 1].n : 0;
	for (int j = 0; j < n; j++) {
		int *x = &s->pool_order[j];
		if (*x >= a && *x <= b)
			*x = back ? (*x == b ? a : *x + 1) : (*x == a ? b : *x - 1);
	}
	for (int i = a; i <= b; i++) {
		s->tasks[i].id = i;
		s->tasks[i].order = i - s->cta_first[s->tasks[i].cta];
	}
}

/* Check 10 and check 2 through a pool: broken tables, and a task a pool
 * needs put after the pool's entries on its CTA. */
static void pool_faults(const char *name, ir_sched *s)
{
	if (!s->npools)
		return;
	ir_pool *pl = &s->pools[0];
	pl->ctas++;
	expect_fail(name, s, "a pool counting one CTA more", "count of CTAs");
	pl->ctas--;
	if (pl->n >= 2) {
		int *x = &s->pool_order[pl->first + 1], keep = *x;
		*x = s->pool_order[pl->first];
		expect_fail(name, s, "a pool listing a task twice", "one twice");
		*x = keep;
	}
	/* a task just before a pool's entries on its CTA, moved after them */
	for (int i = 0; i + 1 < s->ntasks; i++) {
		const ir_task *t = &s->tasks[i];
		if (s->tasks[i + 1].cta != t->cta || s->tasks[i + 1].op != pl->op || t->op == pl->op)
			continue;
		int b = i + 1;
		while (b + 1 < s->cta_first[t->cta + 1] && s->tasks[b + 1].op == pl->op)
			b++;
		rotate(s, i, b, 0);
		expect_fail(name, s, "a task a pool needs after the pool", "may deadlock");
		rotate(s, i, b, 1);
		break;
	}
	/* another op's task between two entries of a pool */
	for (int c = 0; c < s->ctas; c++) {
		int a = s->cta_first[c], e = s->cta_first[c + 1], i = a;
		while (i < e && s->tasks[i].op != pl->op)
			i++;
		int b = i;
		while (b + 1 < e && s->tasks[b + 1].op == pl->op)
			b++;
		if (b - i < 1 || b + 1 >= e)
			continue;
		rotate(s, i + 1, b + 1, 1);
		expect_fail(name, s, "a pool's entries apart", "not contiguous");
		rotate(s, i + 1, b + 1, 0);
		break;
	}
	check(verifies(s), "%s: the schedule does not verify after the pool faults", name);
}

int main(void)
{
	static const struct {
		const char *sample;
		int nodes, gpus;
	} cases[] = {
		{"chain", 1, 1}, {"mlp_chain", 1, 2}, {"ag_gemm", 2, 4}, {"gemm_rs", 2, 2},
		{"gemm_ar", 2, 2}, {"tp_mlp", 1, 4}, {"ring_attention_causal", 2, 4},
		{"moe_dispatch_gemm", 2, 2},
	};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		char path[256], name[128];
		snprintf(path, sizeof path, "samples/%s.mk", cases[k].sample);
		snprintf(name, sizeof name, "%s %dx%d", cases[k].sample, cases[k].nodes, cases[k].gpus);
		mk_define defs[] = {{"nodes", cases[k].nodes}, {"gpus", cases[k].gpus},
				    {"T", 1024}, {"E", 8}};
		int ndefs = strcmp(cases[k].sample, "moe_dispatch_gemm") ? 2 : 4;
		srcset src;
		arena a;
		arena_init(&a);
		ir_sched *s = compile(path, defs, ndefs, &src, &a);
		check(s != NULL, "%s: does not compile (run from the repository root)", name);
		if (s) {
			check(verifies(s), "%s: the schedule does not verify", name);
			check(expanded_verifies(s), "%s: the oracle refuses the schedule", name);
			if (!strcmp(cases[k].sample, "chain")) {  /* check 11's second case has its task */
				int tma = 0;
				for (int i = 0; i < s->ntasks; i++)
					tma |= s->tasks[i].kind == TASK_MATMUL &&
					       s->prog->ops[s->tasks[i].op].plan.mm.tma_store &&
					       !s->prog->ops[s->tasks[i].op].plan.mm.full;
				check(tma, "%s: no matmul stored by TMA that is not FULL", name);
			}
			fault_no_task(name, s);
			fault_rdma_view(name, s);
			pool_faults(name, s);
			planted(name, s);
			if (!strcmp(cases[k].sample, "mlp_chain"))
				transitive(name, s);
			random_faults(name, s, 150);
			check(verifies(s), "%s: the restored schedule does not verify", name);
		}
		arena_free(&a);
		src_free(&src);
	}
	printf("test_verify: %d checks, %d failed\n", checks, failures);
	return failures != 0;
}
