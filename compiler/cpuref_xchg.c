/* cpuref_xchg.c - the CPU reference's exchange ops: the collectives
 * (allgather, reduce_scatter, allreduce), ring shifts, explicit put stages,
 * and MoE dispatch and combine with their routing.  Each reads other
 * ranks' pieces directly (cpuref_run runs rank 0, 1, ... of an op in
 * turn); coordinates and groups as cpuref.c's opening comment says. */
#include "cpuref_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* allgather(X, d): X split(d); every rank of X's group gets the shards of
 * the group concatenated along d, in shard order. */
int cr_allgather(ctx *c, const ir_op *op, int r)
{
	const ir_tensor *x = cr_T(c, op->in[0]), *o = cr_T(c, op->out);
	int d = op->dim;
	/* one rank: a copy, whatever a folded collective left it reading */
	if (d < 0 || d >= x->ndim || (!cr_is_split(x, d) && c->world > 1))
		return cr_fail(c, "'%s' is not split on dim %d", x->name, d);
	int ok = o->ndim == x->ndim;
	for (int k = 0; ok && k < x->ndim; k++)
		ok = o->local[k] == (k == d ? x->shape[d] : x->local[k]);
	if (!ok)
		return cr_fail(c, "'%s' does not have the gathered shape of '%s'", o->name, x->name);
	int64_t g[IR_MAXDIM];
	cr_gather_dim(c, op->in[0], d, r, cr_outp(c, r), g);
	if (c->round)
		for (int64_t i = 0, e = ir_tensor_elems(o); i < e; i++)
			cr_outp(c, r)[i] = cr_st(c, o, cr_outp(c, r)[i]);
	return 0;
}

/* reduce_scatter(X, d): X partial or local on every rank; the output is
 * split(d) over a group, and rank r keeps its shard along d of the sum of X
 * over the ranks of its group. */
int cr_reduce_scatter(ctx *c, const ir_op *op, int r)
{
	const ir_tensor *x = cr_T(c, op->in[0]), *o = cr_T(c, op->out);
	int d = op->dim;
	if (x->place.kind == PL_SPLIT && c->world > 1)
		return cr_fail(c, "'%s' must be partial or local, not split", x->name);
	if (d < 0 || d >= x->ndim || !cr_is_split(o, d))
		return cr_fail(c, "'%s' is not split on dim %d", o->name, d);
	ir_group g = o->place.group;
	int ok = o->ndim == x->ndim;
	for (int k = 0; ok && k < x->ndim; k++)
		ok = x->local[k] == (k == d ? o->local[d] * cr_group_size(c, g) : o->local[k]);
	if (!ok)
		return cr_fail(c, "'%s' is not a shard of '%s' along dim %d", o->name, x->name, d);
	int64_t n = ir_tensor_elems(o), zero[IR_MAXDIM] = {0}, off[IR_MAXDIM] = {0};
	double *acc = calloc((size_t)n + 1, sizeof *acc);
	float *tmp = malloc((size_t)n * sizeof *tmp + 1);
	if (!acc || !tmp) {
		free(acc), free(tmp);
		return cr_fail(c, "out of memory");
	}
	off[d] = (int64_t)cr_shard_of(c, g, r) * o->local[d];
	for (int s = 0; s < cr_group_size(c, g); s++) {
		cr_copy_box(tmp, o->local, zero, cr_piece(c, op->in[0], cr_rank_of_shard(c, g, s, r)),
			 x->local, off, o->local, o->ndim);
		for (int64_t i = 0; i < n; i++)
			acc[i] += tmp[i];
	}
	for (int64_t i = 0; i < n; i++)
		cr_outp(c, r)[i] = cr_st(c, o, acc[i]);
	free(acc), free(tmp);
	return 0;
}

/* allreduce(X): every rank gets the sum of X over all ranks. */
int cr_allreduce(ctx *c, const ir_op *op, int r)
{
	const ir_tensor *x = cr_T(c, op->in[0]), *o = cr_T(c, op->out);
	if (!cr_same_local(x, o))
		return cr_fail(c, "'%s' and '%s' differ in local shape", x->name, o->name);
	for (int64_t i = 0, n = ir_tensor_elems(o); i < n; i++) {
		double s = 0;
		for (int q = 0; q < c->world; q++)
			s += cr_piece(c, op->in[0], q)[i];
		cr_outp(c, r)[i] = cr_st(c, o, s);
	}
	return 0;
}

/* ring_shift(X [, d]): rank r receives rank r-1's piece. */
int cr_ring_shift(ctx *c, const ir_op *op, int r)
{
	const ir_tensor *x = cr_T(c, op->in[0]), *o = cr_T(c, op->out);
	if (!cr_same_local(x, o))
		return cr_fail(c, "'%s' and '%s' differ in local shape", x->name, o->name);
	const float *src = cr_piece(c, op->in[0], (r - 1 + c->world) % c->world);
	for (int64_t i = 0, n = ir_tensor_elems(o); i < n; i++)
		cr_outp(c, r)[i] = cr_st(c, o, src[i]);
	return 0;
}

/* put: for every peer p of r (its node, the other nodes, or all ranks),
 * the output's shard p along op->dim on rank r is X's piece on rank p (the
 * shard index is p's shard in X's split group; p itself when X is not
 * split).  Other parts of the output are left alone. */
int cr_put(ctx *c, const ir_op *op, int r)
{
	const ir_tensor *x = cr_T(c, op->in[0]), *o = cr_T(c, op->out);
	int d = op->dim;
	ir_group g = x->place.kind == PL_SPLIT ? x->place.group : GRP_WORLD;
	int ok = d >= 0 && d < x->ndim && o->ndim == x->ndim;
	for (int k = 0; ok && k < x->ndim; k++)
		ok = k == d ? x->local[d] * cr_group_size(c, g) <= o->local[d]
			    : o->local[k] == x->local[k];
	if (!ok)
		return cr_fail(c, "'%s' cannot hold the pieces of '%s' along dim %d",
			    o->name, x->name, d);
	int me = r / c->gpus;
	for (int q = 0; q < c->world; q++) {
		int same = q / c->gpus == me;
		if ((op->peers == PEERS_NODE && !same) || (op->peers == PEERS_REMOTE && same))
			continue;
		int64_t zero[IR_MAXDIM] = {0}, off[IR_MAXDIM] = {0};
		off[d] = (int64_t)cr_shard_of(c, g, q) * x->local[d];
		cr_copy_box(cr_outp(c, r), o->local, off, cr_piece(c, op->in[0], q), x->local, zero,
			 x->local, x->ndim);
	}
	if (c->round)
		for (int64_t i = 0, n = ir_tensor_elems(o); i < n; i++)
			cr_outp(c, r)[i] = cr_st(c, o, cr_outp(c, r)[i]);
	return 0;
}

/* Routing shared by dispatch and combine: the slot of every (token, choice)
 * in order (source rank, token, choice), from idx [T, k] split(0) over the
 * world (rank q's tokens come after those of ranks < q).  slot is
 * world * T_local * k long.  Fails on a bad id; a choice past its expert's
 * C slots fails the run when `strict`, else its slot is -1 (dropped: it
 * moves nothing and adds nothing, as on the GPU). */
static int route(ctx *c, int idxi, int64_t E, int64_t C, int strict, int64_t *slot)
{
	const ir_tensor *ix = cr_T(c, idxi);
	if (ix->ndim != 2 || (c->world > 1 && !(cr_is_split(ix, 0) && ix->place.group == GRP_WORLD)))
		return cr_fail(c, "routing indices '%s' must be [T, k] split(0) over the world",
			    ix->name);
	int64_t Tl = ix->local[0], k = ix->local[1];
	int64_t *count = calloc((size_t)E + 1, sizeof *count);
	if (!count)
		return cr_fail(c, "out of memory");
	for (int q = 0; q < c->world; q++) {
		const float *id = cr_piece(c, idxi, q);
		for (int64_t i = 0; i < Tl * k; i++) {
			float x = id[i];
			if (!(x >= 0 && x < (double)E && x == floorf(x))) {
				free(count);
				return cr_fail(c, "'%s' on rank %d: token %lld choice %lld routes to "
					    "%g, not an expert in [0, %lld)", ix->name, q,
					    (long long)(i / k), (long long)(i % k), x, (long long)E);
			}
			const int64_t s = count[(int64_t)x]++;
			slot[q * Tl * k + i] = s < C ? s : -1;
		}
	}
	for (int64_t e = 0; strict && e < E; e++)
		if (count[e] > C) {
			long long n = count[e];
			free(count);
			return cr_fail(c, "expert %lld receives %lld tokens, over its capacity %lld",
				    (long long)e, n, (long long)C);
		}
	free(count);
	return 0;
}

/* dispatch(X[T,H], idx[T,k], E, C) -> Xe[E,C,H]: token t's row goes to slot
 * slot(t, j) of expert idx[t,j] for each choice j; unused slots stay 0. */
int cr_dispatch(ctx *c, const ir_op *op, int r)
{
	const ir_tensor *x = cr_T(c, op->in[0]), *ix = cr_T(c, op->in[1]), *o = cr_T(c, op->out);
	if (x->ndim != 2 || o->ndim != 3 || ix->ndim != 2 || ix->local[0] != x->local[0] ||
	    (c->world > 1 && !(cr_is_split(x, 0) && x->place.group == GRP_WORLD)))
		return cr_fail(c, "expects X[T, H] and idx[T, k] split(0) over the world, "
			    "out [E, C, H]");
	int64_t E = o->shape[0], C = o->shape[1], H = x->local[1];
	if ((op->experts && op->experts != E) || (op->capacity && op->capacity != C) ||
	    o->local[1] != C || o->local[2] != H || o->place.kind == PL_PARTIAL ||
	    (o->place.kind == PL_SPLIT && o->place.dim != 0))
		return cr_fail(c, "'%s' must be [E=%lld, C=%lld, H=%lld], split on experts or local",
			    o->name, (long long)E, (long long)C, (long long)H);
	int64_t Tl = ix->local[0], k = ix->local[1];
	int64_t *slot = malloc((size_t)(c->world * Tl * k) * sizeof *slot + 1);
	if (!slot)
		return cr_fail(c, "out of memory");
	if (route(c, op->in[1], E, C, !op->drop, slot)) {
		free(slot);
		return -1;
	}
	int64_t e0 = cr_base(c, o, 0, r), El = o->local[0];
	float *out = cr_outp(c, r);
	for (int q = 0; q < c->world; q++) {
		const float *id = cr_piece(c, op->in[1], q), *xp = cr_piece(c, op->in[0], q);
		for (int64_t i = 0; i < Tl * k; i++) {
			int64_t e = (int64_t)id[i] - e0;
			if (e < 0 || e >= El || slot[q * Tl * k + i] < 0)
				continue;
			float *dst = out + (e * C + slot[q * Tl * k + i]) * H;
			for (int64_t h = 0; h < H; h++)
				dst[h] = cr_st(c, o, xp[(i / k) * H + h]);
		}
	}
	free(slot);
	return 0;
}

/* combine(Ye[E,C,F], idx[T,k], gate[T,k]) -> Y[T,F]:
 * Y[t] = sum_j gate[t,j] * Ye[idx[t,j], slot(t,j)], slots as in dispatch;
 * a dropped choice's gate counts as zero. */
int cr_combine(ctx *c, const ir_op *op, int r)
{
	const ir_tensor *ye = cr_T(c, op->in[0]), *ix = cr_T(c, op->in[1]);
	const ir_tensor *gt = cr_T(c, op->in[2]), *o = cr_T(c, op->out);
	if (ye->ndim != 3 || ye->place.kind == PL_PARTIAL ||
	    (ye->place.kind == PL_SPLIT && ye->place.dim != 0) ||
	    ye->local[1] != ye->shape[1] || ye->local[2] != ye->shape[2])
		return cr_fail(c, "'%s' must be [E, C, F], split on experts or local", ye->name);
	int64_t E = ye->shape[0], C = ye->shape[1], F = ye->shape[2];
	if (ix->ndim != 2 || !cr_same_local(ix, gt) || o->ndim != 2 ||
	    o->local[0] != ix->local[0] || o->local[1] != F)
		return cr_fail(c, "expects idx and gate [T, k] and out [T, F=%lld] with the same "
			    "local rows", (long long)F);
	int64_t Tl = ix->local[0], k = ix->local[1], El = ye->local[0];
	int64_t *slot = malloc((size_t)(c->world * Tl * k) * sizeof *slot + 1);
	double *acc = malloc((size_t)F * sizeof *acc + 1);
	if (!slot || !acc) {
		free(slot), free(acc);
		return cr_fail(c, "out of memory");
	}
	/* a choice with no slot (past C: its dispatch dropped it, or it
	 * stopped the run first) adds nothing */
	if (route(c, op->in[1], E, C, 0, slot)) {
		free(slot), free(acc);
		return -1;
	}
	const float *id = cr_piece(c, op->in[1], r), *gate = cr_piece(c, op->in[2], r);
	float *out = cr_outp(c, r);
	for (int64_t t = 0; t < Tl; t++) {
		for (int64_t f = 0; f < F; f++)
			acc[f] = 0;
		for (int64_t j = 0; j < k; j++) {
			int64_t e = (int64_t)id[t * k + j], owner = r, le = e;
			if (ye->place.kind == PL_SPLIT) {
				int s = (int)(e / El);
				owner = cr_rank_of_shard(c, ye->place.group, s, r);
				le = e - s * El;
			}
			if (slot[(r * Tl + t) * k + j] < 0)
				continue;
			const float *row = cr_piece(c, op->in[0], (int)owner) +
					   (le * C + slot[(r * Tl + t) * k + j]) * F;
			for (int64_t f = 0; f < F; f++)
				acc[f] += (double)gate[t * k + j] * row[f];
		}
		for (int64_t f = 0; f < F; f++)
			out[t * F + f] = cr_st(c, o, acc[f]);
	}
	free(slot), free(acc);
	return 0;
}

