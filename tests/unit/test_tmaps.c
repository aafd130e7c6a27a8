/* test_tmaps.c - the TMA tensor maps a kernel's Hopper tiles read through
 * (codegen cg_tmaps) against the plan that sizes their boxes.
 *
 * For every sample on 1 x 1 and 1 x 8, and for the MoE with its bucket
 * tiles loading A whole (MK_A_HALVES=0's option): every matmul on the
 * Hopper engine has A's map at plan.mm.tmap and B's after it; A's box is
 * the plan's a_box rows x 64 columns, B's 64 x 64; a_box is 64 where the
 * warpgroups split the columns (wg_cols) and for a bucket's 128-row tiles
 * (unless the option says whole), else the tile's rows; every map lies
 * inside its tensor's storage (rows x ld from its offset).  Attention:
 * the Hopper tile has Q's map (128 x 64) then K's and V's (its keys x 64)
 * at plan.attn.tmap; a 16-row tile whose K and V come by maps
 * (IR_ATTN_MAPS) has K's and V's there, boxes of its keys x 64, and only
 * where D is a multiple of 64; other attention tiles have none.  Every
 * map index belongs to exactly one op.  Also checks that the MoE sample
 * has bucket tiles and the decode attention sample a tile by maps at all,
 * so that the rules are tested.  Exit 0 = pass.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/emit.h"
#include "compiler/compile.h"

#include "check.h"
#include "sample_sched.h"

static int checks;

#define check(ok, ...)             \
	do {                       \
		checks++;          \
		CHECK(ok, __VA_ARGS__); \
	} while (0)

/* Compiles a sample through the scheduler and the verifier; NULL on
 * failure. */
static ir_sched *compile(const char *path, int gpus, int a_halves, srcset *src, arena *a)
{
	mk_define defs[] = {{"nodes", 1}, {"gpus", gpus}};
	compile_opts o = {.defs = defs, .ndefs = 2, .ranks_per_gpu = 1, .a_halves = a_halves};
	return sample_sched(path, &o, src, a);
}

static int decode_maps;  /* 16-row attention tiles by maps, every sample */

/* One op's maps at k: tensors and boxes (rows x 64) in order; marks them
 * owned in `owner` (-1: none yet). */
static void maps_at(const char *name, const ir_op *op, const cg_tmap *tm, int n, int k,
		    const int *tensors, const int *rows, int count, int *owner, int opi)
{
	check(k >= 0 && k + count <= n, "%s: op %s's %d maps at %d of %d", name, op->stage, count, k,
	      n);
	if (k < 0 || k + count > n)
		return;
	for (int j = 0; j < count; j++) {
		check(tm[k + j].tensor == tensors[j] && tm[k + j].box_rows == rows[j] &&
			      tm[k + j].box_cols == 64,
		      "%s: op %s's map %d: tensor %d box %d x %d, not %d, %d x 64", name, op->stage,
		      k + j, tm[k + j].tensor, tm[k + j].box_rows, tm[k + j].box_cols, tensors[j],
		      rows[j]);
		check(owner[k + j] < 0, "%s: map %d is op %d's and op %d's", name, k + j,
		      owner[k + j], opi);
		owner[k + j] = opi;
	}
}

/* The maps of one schedule against its plans; returns the number of bucket
 * matmuls on the Hopper engine. */
static int properties(const char *name, const ir_sched *s, int a_halves)
{
	const ir_prog *p = s->prog;
	const int n = cg_tmaps(s, NULL, 0);
	check(n == p->ntmaps, "%s: cg_tmaps counts %d maps, the program %d", name, n, p->ntmaps);
	cg_tmap *tm = calloc((size_t)(n > 0 ? n : 1), sizeof *tm);
	if (!tm)
		return 0;
	cg_tmaps(s, tm, n);
	int *owner = malloc((size_t)(n > 0 ? n : 1) * sizeof *owner);
	if (!owner) {
		free(tm);
		return 0;
	}
	for (int k = 0; k < n; k++)
		owner[k] = -1;
	int buckets = 0;
	for (int i = 0; i < p->nops; i++) {
		const ir_op *op = &p->ops[i];
		const ir_mm_plan *m = &op->plan.mm;
		if (op->kind != OP_MATMUL || !m->wgmma)
			continue;
		const int k = m->tmap, nm = op->gate || m->tma_store ? 3 : 2;
		check(k >= 0 && k + nm <= n, "%s: op %s's maps at %d of %d", name, op->stage, k, n);
		if (k < 0 || k + nm > n)
			continue;
		for (int j = 0; j < nm; j++) {
			check(owner[k + j] < 0, "%s: map %d is op %d's and op %d's", name, k + j,
			      owner[k + j], i);
			owner[k + j] = i;
		}
		const int bucket = m->bucket >= 0 && !m->wg_cols && m->bm == 128 && !op->norm;
		buckets += bucket;
		const int want = m->wg_cols || (bucket && a_halves != 1) ? 64 : m->bm;
		check(m->a_box == want, "%s: op %s's a_box %d, not %d", name, op->stage, m->a_box, want);
		check(tm[k].tensor == op->in[0] && tm[k].box_rows == m->a_box && tm[k].box_cols == 64,
		      "%s: op %s's A map: tensor %d box %d x %d (a_box %d)", name, op->stage,
		      tm[k].tensor, tm[k].box_rows, tm[k].box_cols, m->a_box);
		check(tm[k + 1].tensor == op->in[1] && tm[k + 1].box_rows == 64 &&
			      tm[k + 1].box_cols == 64,
		      "%s: op %s's B map: tensor %d box %d x %d", name, op->stage, tm[k + 1].tensor,
		      tm[k + 1].box_rows, tm[k + 1].box_cols);
	}
	for (int i = 0; i < p->nops; i++) {
		const ir_op *op = &p->ops[i];
		const ir_attn_plan *at = &op->plan.attn;
		if (op->kind != OP_ATTENTION)
			continue;
		const ir_tensor *q = &p->tensors[op->in[0]];
		const int64_t D = q->shape[q->ndim - 1];
		if (at->engine == IR_ATTN_WGMMA) {
			const int t[3] = {op->in[0], op->in[1], op->in[2]},
				  r[3] = {128, at->wg_keys, at->wg_keys};
			maps_at(name, op, tm, n, at->tmap, t, r, 3, owner, i);
		} else if (at->bulk == IR_ATTN_MAPS) {
			const int t[2] = {op->in[1], op->in[2]}, r[2] = {at->keys, at->keys};
			check(at->rows == 16 && D % 64 == 0, "%s: op %s by maps: %d rows, D %lld", name,
			      op->stage, at->rows, (long long)D);
			maps_at(name, op, tm, n, at->tmap, t, r, 2, owner, i);
			decode_maps++;
		} else {
			check(at->tmap < 0, "%s: op %s has maps at %d, its tile none", name, op->stage,
			      at->tmap);
		}
	}
	for (int k = 0; k < n; k++)
		check(owner[k] >= 0, "%s: map %d is no op's", name, k);
	free(owner);
	for (int k = 0; k < n; k++) {
		const ir_tensor *t = &p->tensors[tm[k].root];
		long long elems = 1;
		for (int d = 0; d < t->ndim; d++)
			elems *= t->local[d];
		check(tm[k].rows >= 1 && tm[k].cols >= 1 && tm[k].ld >= tm[k].cols &&
			      tm[k].off + (tm[k].rows - 1) * tm[k].ld + tm[k].cols <= elems,
		      "%s: map %d (%lld x %lld, ld %lld, from %lld) outside %s's %lld elements", name,
		      k, tm[k].rows, tm[k].cols, tm[k].ld, tm[k].off, t->name, elems);
	}
	free(tm);
	return buckets;
}

static int run(const char *path, int gpus, int a_halves)
{
	srcset src;
	arena a;
	arena_init(&a);
	ir_sched *s = compile(path, gpus, a_halves, &src, &a);
	int buckets = 0;
	if (s) {
		char name[512];
		snprintf(name, sizeof name, "%s (1 x %d%s)", path, gpus,
			 a_halves == 1 ? ", A whole" : "");
		buckets = properties(name, s, a_halves);
	}
	arena_free(&a);
	src_free(&src);
	return buckets;
}

int main(void)
{
	DIR *dir = opendir("samples");
	if (!dir) {
		fprintf(stderr, "test_tmaps: run from the repository root\n");
		return 1;
	}
	char *names[256];
	int nn = 0;
	struct dirent *e;
	while ((e = readdir(dir)) && nn < 256) {
		const size_t l = strlen(e->d_name);
		if (l > 3 && !strcmp(e->d_name + l - 3, ".mk"))
			names[nn++] = strdup(e->d_name);
	}
	closedir(dir);
	for (int i = 0; i < nn; i++) {
		char path[512];
		snprintf(path, sizeof path, "samples/%s", names[i]);
		run(path, 1, 0);
		run(path, 8, 0);
		free(names[i]);
	}
	const int halves = run("samples/moe_dispatch_gemm.mk", 1, 0);
	check(halves >= 2, "moe_dispatch_gemm: %d bucket matmuls on the Hopper engine, not 2", halves);
	check(run("samples/moe_dispatch_gemm.mk", 1, 1) == halves,
	      "moe_dispatch_gemm: its bucket matmuls differ with A whole");
	check(decode_maps >= 2, "%d decode attention tiles by maps over the samples, not 2 or more",
	      decode_maps);
	printf("test_tmaps: %d checks, %d failed\n", checks, failures);
	return failures != 0;
}
