/* tiles.h - building the tile graph: the state of one lowering and the
 * helpers every op's lowering uses (lower*.c).
 *
 * A lowering makes rank 0's tasks only (the template; rank r runs their
 * image under sigma_r, ir.h): each task with the exact regions it reads and
 * the one it writes, in rank 0's view.  The program and its plans are
 * read-only here; all per-compile state lives in `lower`, so two threads
 * may compile at once.
 */
#ifndef MK_TILES_H
#define MK_TILES_H

#include "pass.h"

typedef struct lower {
	const ir_prog *p;
	const compile_opts *o;
	diags *d;
	arena *a;
	ir_sched *s;
	int cap;                  /* room in s->tasks */
	int err;
	int64_t *cut_lo, *cut_hi; /* scratch for cuts: IR_MAXCUTS each */
	ir_region *boxes;         /* scratch for one op's boxes: IR_MAXCUTS, made
	                             on first use (lower_boxes) */
	/* rank-0 writes of matmul (or split-K sum) and elementwise tasks, per
	 * tensor, in task order (lower_writer): chains through wnext, tasks
	 * below nindexed */
	int *whead, *wtail, *wnext;
	int nindexed, capnext;
} lower;

/* A new task of kind k serving op `op` (no reads, no write yet); NULL and
 * L->err when out of memory. */
ir_task *lower_task(lower *L, ir_taskkind k, int op);
/* Task t reads region g. */
void lower_read(lower *L, ir_task *t, ir_region g);
/* The whole local piece of tensor t on `rank`, in rank 0's view. */
ir_region lower_full(const ir_prog *p, int t, int rank);
/* g, of another tensor. */
ir_region lower_retarget(ir_region g, int tensor);
/* The rank that holds shard s of group g, in rank 0's view. */
int lower_shard_owner(const ir_prog *p, ir_group g, int s);
/* The boxes that tile tensor t's rank-0 piece when its producer is tiled
 * (so a consumer waits on one producer): the write boxes of its matmul or
 * elementwise tasks.  0 when there are none, -1 past max. */
int lower_producer_boxes(lower *L, int t, ir_region *out, int max);
/* Row blocks of about `bytes` each (at least minrows rows) over tensor t's
 * rank-0 piece; -1 past max. */
int lower_row_boxes(lower *L, int t, int64_t bytes, int64_t minrows, ir_region *out, int max);
/* Boxes of tensor t's rank-0 piece: blocks of `rows` of its next-to-last
 * dimension and `cols` of its last (a 1-D tensor: blocks of `cols`), each
 * index of the dimensions before them apart; never across a shard of a
 * rotated dimension.  -1 past max. */
int lower_grid_boxes(lower *L, int t, int64_t rows, int64_t cols, ir_region *out, int max);
/* The lowering's scratch of IR_MAXCUTS boxes (one op's at a time); NULL
 * and L->err when out of memory. */
ir_region *lower_boxes(lower *L);
/* The tasks made so far join the writer index (lower_run, after each op). */
void lower_index_writers(lower *L);
/* The next matmul or elementwise task after task `after` (-1: the first)
 * that writes tensor t on rank 0, in task order; -1 when none. */
int lower_writer(const lower *L, int t, int after);
/* Elements of a region (its first ndim dimensions). */
double lower_volume(const ir_region *g, int ndim);

/* Each op's lowering: op `oi`'s tasks, in the order they are made. */
void lower_matmul(lower *L, int oi);      /* lower_compute.c */
void lower_attention(lower *L, int oi);
void lower_elementwise(lower *L, int oi);
void lower_sum(lower *L, int oi);
void lower_layout(lower *L, int oi);      /* lower_layout.c */
void lower_view(lower *L, int oi);
void lower_gather(lower *L, int oi);      /* lower_xchg.c */
void lower_reduce(lower *L, int oi);
void lower_ring_shift(lower *L, int oi);
void lower_dispatch(lower *L, int oi);    /* lower_moe.c */
void lower_combine(lower *L, int oi);

#endif
