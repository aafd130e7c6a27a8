/* cpuref_prog.h - what the CPU reference executor's tests share: checks,
 * programs built by hand (tensors with their placements, ops), their
 * buffers on every rank, and running them through cpuref_run.
 * Header-only (each tests/unit/ source is its own program): test_cpuref.c
 * (the ops) and test_cpuref_comm.c (the collectives, put, dispatch and
 * combine) include it.
 */
#ifndef MKT_CPUREF_PROG_H
#define MKT_CPUREF_PROG_H

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/cpuref.h"

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

static void near(const char *what, double got, double want, double tol)
{
	int ok = fabs(got - want) <= tol * (1 + fabs(want)) || (isnan(got) && isnan(want));
	check(ok, "%s: got %.9g, want %.9g", what, got, want);
}

/* ---- building programs by hand ----------------------------------------- */

#define MAXT 16
#define MAXO 16

typedef struct prog {
	ir_prog p;
	ir_tensor t[MAXT];
	ir_op o[MAXO];
	float **buf;
} prog;

#define LOCAL ((ir_place){PL_LOCAL, 0, GRP_WORLD})
#define PARTIAL ((ir_place){PL_PARTIAL, 0, GRP_WORLD})
#define SPLIT(d) ((ir_place){PL_SPLIT, (d), GRP_WORLD})
#define SPLITG(d, g) ((ir_place){PL_SPLIT, (d), (g)})
#define SH(...) (int64_t[]){__VA_ARGS__}, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t))

static void mesh(prog *b, int nodes, int gpus)
{
	memset(b, 0, sizeof *b);
	b->p.name = "test";
	b->p.nodes = nodes;
	b->p.gpus = gpus;
	b->p.world = nodes * gpus;
	b->p.tensors = b->t;
	b->p.ops = b->o;
}

/* A tensor with its local shape worked out from the placement. */
static int ten(prog *b, const char *name, ir_tkind kind, ir_dtype dt, ir_place pl,
	       const int64_t *shape, int nd)
{
	ir_tensor *t = &b->t[b->p.ntensors];
	memset(t, 0, sizeof *t);
	t->name = name;
	t->kind = kind;
	t->dtype = dt;
	t->ndim = nd;
	t->place = pl;
	t->producer = -1;
	int gs = pl.group == GRP_GPUS ? b->p.gpus : pl.group == GRP_NODES ? b->p.nodes : b->p.world;
	for (int d = 0; d < nd; d++) {
		t->shape[d] = shape[d];
		t->local[d] = pl.kind == PL_SPLIT && pl.dim == d ? shape[d] / gs : shape[d];
	}
	return b->p.ntensors++;
}

static int in(prog *b, const char *name, ir_place pl, const int64_t *shape, int nd)
{
	return ten(b, name, TK_IN, DT_F32, pl, shape, nd);
}

static int out(prog *b, const char *name, ir_place pl, const int64_t *shape, int nd)
{
	return ten(b, name, TK_OUT, DT_F32, pl, shape, nd);
}

static ir_op *op(prog *b, ir_opkind k, int o, int nin, ...)
{
	ir_op *x = &b->o[b->p.nops++];
	memset(x, 0, sizeof *x);
	x->kind = k;
	x->out = o;
	x->nin = nin;
	x->stage = b->t[o].name;
	va_list ap;
	va_start(ap, nin);
	for (int i = 0; i < nin; i++)
		x->in[i] = va_arg(ap, int);
	va_end(ap);
	if (b->t[o].producer < 0)
		b->t[o].producer = b->p.nops - 1;
	return x;
}

static void alloc(prog *b)
{
	int n = b->p.ntensors * b->p.world;
	b->buf = calloc((size_t)n, sizeof *b->buf);
	for (int t = 0; t < b->p.ntensors; t++)
		for (int r = 0; r < b->p.world; r++)
			b->buf[t * b->p.world + r] =
				calloc((size_t)ir_tensor_elems(&b->t[t]) + 1, sizeof(float));
}

static void release(prog *b)
{
	for (int i = 0; b->buf && i < b->p.ntensors * b->p.world; i++)
		free(b->buf[i]);
	free(b->buf);
	b->buf = NULL;
}

static float *P(prog *b, int t, int r) { return b->buf[t * b->p.world + r]; }

static void fill(prog *b, int t, int r, const float *v)
{
	memcpy(P(b, t, r), v, (size_t)ir_tensor_elems(&b->t[t]) * sizeof(float));
}

static unsigned rng = 12345;
static float frand(void)
{
	rng = rng * 1103515245u + 12345u;
	return (float)((rng >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static void randomize(prog *b, int t)
{
	for (int r = 0; r < b->p.world; r++)
		for (int64_t i = 0; i < ir_tensor_elems(&b->t[t]); i++)
			P(b, t, r)[i] = frand();
}

static char err[256];

static int run(prog *b, int round, int threads)
{
	cpuref_opts o = {round, threads};
	err[0] = 0;
	if (!b->buf)
		alloc(b);
	return cpuref_run(&b->p, b->buf, &o, err, sizeof err);
}

static void expect(const char *what, const float *got, const float *want, int64_t n, double tol)
{
	char name[160];
	for (int64_t i = 0; i < n; i++) {
		snprintf(name, sizeof name, "%s[%lld]", what, (long long)i);
		near(name, got[i], want[i], tol);
	}
}

/* x[i] of rank r's piece = 100 * r + i, so every value says where it came from */
static void mark(prog *b, int t)
{
	for (int r = 0; r < b->p.world; r++)
		for (int64_t i = 0; i < ir_tensor_elems(&b->t[t]); i++)
			P(b, t, r)[i] = (float)(100 * r + i);
}

#endif
