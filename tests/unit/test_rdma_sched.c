/* test_rdma_sched.c - flags written by RDMA, in the scheduler, the verifier
 * and the codegen layout.
 *
 * For every sample that has RDMA tasks on 2 x 2, 2 x 8 and 4 x 2 meshes:
 * every RDMA task has a flag of its own (written, expects 1, first in the
 * array) that it alone signals, on the rank it writes to; every other flag
 * is a counter no RDMA task signals; cg_rdma_layout agrees.  Then faults
 * planted in a verified schedule (an RDMA task that also adds to a counter,
 * a counter signalling a written flag, a written flag expecting 2) must be
 * caught by verify_run.  Exit 0 = pass.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/emit.h"
#include "compiler/compile.h"
#include "sample_sched.h"

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
static ir_sched *compile(const char *path, int nodes, int gpus, srcset *src, arena *a)
{
	mk_define defs[] = {{"nodes", nodes}, {"gpus", gpus}};
	compile_opts o = {.defs = defs, .ndefs = 2, .ranks_per_gpu = 1};
	return sample_sched(path, &o, src, a);
}

static int verifies(const ir_sched *s)
{
	arena a;
	arena_init(&a);
	diags d;
	diag_init(&d, NULL, &a);
	int rc = verify_run(s, &d, &a);
	arena_free(&a);
	return rc == 0;
}

static void properties(const char *name, const ir_sched *s)
{
	int nrdma = 0, nwritten = 0;
	for (int f = 0; f < s->nflags; f++)
		if (s->flags[f].written) {
			nwritten++;
			check(f == nwritten - 1, "%s: written flag %d is not among the first", name, f);
			check(s->flags[f].expected == 1, "%s: written flag %d expects %d", name, f,
			      s->flags[f].expected);
		}
	for (int i = 0; i < s->ntasks; i++) {
		const ir_task *t = &s->tasks[i];
		for (int k = 0; k < t->nsignals; k++) {
			const ir_flag *f = &s->flags[t->signals[k].index];
			if (t->kind == TASK_RDMA) {
				check(f->written, "%s: task %d (rdma) adds to counter %d", name, i, f->index);
				check(t->signals[k].rank == t->write.rank,
				      "%s: task %d writes rank %d, signals on rank %d", name, i, t->write.rank,
				      t->signals[k].rank);
			} else {
				check(!f->written, "%s: task %d (%s) signals written flag %d", name, i,
				      ir_task_name(t->kind), f->index);
			}
		}
		if (t->kind == TASK_RDMA) {
			nrdma++;
			check(t->nsignals == 1, "%s: task %d (rdma) signals %d flags", name, i, t->nsignals);
		}
	}
	check(nrdma > 0, "%s: no RDMA tasks", name);
	check(nwritten == nrdma, "%s: %d RDMA tasks, %d written flags", name, nrdma, nwritten);
	cg_rdma rl;
	check(cg_rdma_layout(s, &rl, NULL, 0) == 0, "%s: cg_rdma_layout refuses", name);
	check(rl.tasks == nrdma && rl.nflags == nwritten && rl.ndst > 0 &&
	      rl.area == rl.nflags + rl.ndst + 1 && rl.tensors != 0,
	      "%s: layout tasks %d flags %d dst %d area %d", name, rl.tasks, rl.nflags, rl.ndst, rl.area);
}

/* Plants faults in a copy of the task array; each must fail verification. */
static void faults(const char *name, ir_sched *s)
{
	int r = -1, c = -1, cf = -1;
	for (int i = 0; i < s->ntasks; i++) {
		if (s->tasks[i].kind == TASK_RDMA && r < 0)
			r = i;
		for (int k = 0; k < s->tasks[i].nsignals && c < 0; k++)
			if (!s->flags[s->tasks[i].signals[k].index].written) {
				c = i;
				cf = s->tasks[i].signals[k].index;
			}
	}
	if (r < 0 || c < 0)
		return;
	ir_task saved_r = s->tasks[r], saved_c = s->tasks[c];
	check(verifies(s), "%s: the schedule does not verify", name);

	/* an RDMA task that also adds to a counter */
	s->tasks[r].signals[s->tasks[r].nsignals++] = (ir_flagref){0, cf};
	check(!verifies(s), "%s: an RDMA task adding to a counter passed", name);
	s->tasks[r] = saved_r;

	/* a non-RDMA task signalling a written flag (instead of its counter) */
	s->tasks[c].signals[0] = s->tasks[r].signals[0];
	check(!verifies(s), "%s: a counter task writing an RDMA flag passed", name);
	s->tasks[c] = saved_c;

	/* a written flag that expects two */
	int f = s->tasks[r].signals[0].index;
	s->flags[f].expected = 2;
	check(!verifies(s), "%s: a written flag expecting 2 passed", name);
	s->flags[f].expected = 1;
	check(verifies(s), "%s: the restored schedule does not verify", name);
}

int main(void)
{
	static const char *const samples[] = {"ag_gemm", "gemm_rs", "gemm_ar", "ag_gemm_explicit", "tp_mlp"};
	static const int meshes[][2] = {{2, 2}, {2, 8}, {4, 2}};
	for (size_t k = 0; k < sizeof samples / sizeof samples[0]; k++)
		for (size_t m = 0; m < sizeof meshes / sizeof meshes[0]; m++) {
			char path[256], name[128];
			snprintf(path, sizeof path, "samples/%s.mk", samples[k]);
			snprintf(name, sizeof name, "%s %dx%d", samples[k], meshes[m][0], meshes[m][1]);
			srcset src;
			arena a;
			arena_init(&a);
			ir_sched *s = compile(path, meshes[m][0], meshes[m][1], &src, &a);
			check(s != NULL, "%s: does not compile (run from the repository root)", name);
			if (s) {
				properties(name, s);
				faults(name, s);
			}
			arena_free(&a);
			src_free(&src);
		}
	printf("test_rdma_sched: %d checks, %d failed\n", checks, failures);
	return failures != 0;
}
