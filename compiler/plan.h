/* plan.h - the plan pass (plan_run, declared in pass.h with the other
 * passes; plan.c, and plan_view.c for views) and the one piece of it the
 * lowering calls: the order of a matmul's tasks.  The plans themselves are ir_plan (ir.h), on each op. */
#ifndef MK_PLAN_H
#define MK_PLAN_H

#include "pass.h"

/* A planned matmul's tasks, in the order they are listed: bands of up to
 * 8 row tiles (or tiles_m, if more) that never cross a shard boundary of
 * the rows (`unit` rows from `lo`; the rows that arrive first, the rank's
 * own shard, still come first), column by column inside a band, so the
 * CTAs busy at once share a few row blocks of A and a few column blocks of
 * B (L2).  ml[0..nm) are the first rows of the row tiles, nn the column
 * tiles.  Task q covers row tiles [order[2q] / nn, order[2q + 1]) and the
 * tiles_n column tiles from order[2q] % nn; order may be NULL.  Returns
 * the number of tasks per batch entry. */
int plan_mm_order(const ir_op *op, const int64_t *ml, int nm, int nn, int64_t lo, int64_t unit,
		  int *order);

/* Views (plan_view.c): every tensor's storage (ir_tensor.view, root, off,
 * st), and op->plan.view on the layout ops whose result needs no copy.
 * Last in the plan: it asks how each reader runs.  gpu: 0 for the CPU
 * reference, which copies. */
void plan_views(ir_prog *p, int gpu);

#endif
