/* cpuref_int.h - what the CPU reference's files share (cpuref.c: the
 * pieces, coordinates, threads, compute ops and the driver; cpuref_xchg.c:
 * the exchange ops).  Not part of cpuref.h's interface. */
#ifndef MK_CPUREF_INT_H
#define MK_CPUREF_INT_H

#include "cpuref.h"

#include <stdint.h>

typedef struct ctx {
	const ir_prog *p;
	float **v;               /* v[t * world + r]: the pieces ops read/write */
	int world, nodes, gpus;
	int round;
	int threads;
	int opi;                 /* the op running, for messages; -1 = none */
	char *err;
	size_t n;
} ctx;

/* The op's error ("op N (kind 'stage'): ..."); returns -1. */
int cr_fail(ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* x rounded to t's storage type when the run rounds storage */
float cr_st(const ctx *c, const ir_tensor *t, double x);
const ir_tensor *cr_T(const ctx *c, int i);
float *cr_piece(const ctx *c, int t, int r);   /* tensor t's piece on rank r */
float *cr_outp(const ctx *c, int r);           /* the running op's output on r */
/* groups: ranks in g; rank r's shard of g; the rank holding shard s in r's group */
int cr_group_size(const ctx *c, ir_group g);
int cr_shard_of(const ctx *c, ir_group g, int r);
int cr_rank_of_shard(const ctx *c, ir_group g, int s, int r);
int64_t cr_base(const ctx *c, const ir_tensor *t, int d, int r);  /* r's piece starts here on d */
int cr_is_split(const ir_tensor *t, int d);
int cr_same_local(const ir_tensor *a, const ir_tensor *b);
/* a box of ext elements from src (shape ss, at so) to dst (shape ds, at dof) */
void cr_copy_box(float *dst, const int64_t *ds, const int64_t *dof,
		 const float *src, const int64_t *ss, const int64_t *so,
		 const int64_t *ext, int nd);
/* tensor ti gathered along d over r's group into dst; its shape into gshape */
void cr_gather_dim(const ctx *c, int ti, int d, int r, float *dst, int64_t *gshape);

/* the exchange ops (cpuref_xchg.c) */
int cr_allgather(ctx *c, const ir_op *op, int r);
int cr_reduce_scatter(ctx *c, const ir_op *op, int r);
int cr_allreduce(ctx *c, const ir_op *op, int r);
int cr_ring_shift(ctx *c, const ir_op *op, int r);
int cr_put(ctx *c, const ir_op *op, int r);
int cr_dispatch(ctx *c, const ir_op *op, int r);
int cr_combine(ctx *c, const ir_op *op, int r);

#endif
