/* cpuref.h - the CPU reference executor: what a checked pipeline means.
 *
 * cpuref_run executes an ir_prog on the CPU for every rank of its mesh, one
 * op at a time in program order, each op for ranks 0, 1, ... in turn.  It is
 * the oracle GPU runs are compared against, and how a user checks what a
 * pipeline computes without a GPU.  It is written to be obviously right, not
 * fast: dot products and reductions accumulate in double; matmul and
 * attention spread their rows over threads.
 *
 * Buffers.  bufs[t * world + r] is tensor t's local piece on rank r: float32,
 * row-major in ir_tensor.local, ir_tensor_elems(t) floats, allocated by the
 * caller.  Inputs (TK_IN) are only read; every other tensor is zeroed first
 * and then written (a tensor that several explicit `put` stages fill keeps
 * zeros where none of them writes).  Integer tensors (routing indices) hold
 * their values as floats, exact below 2^24.
 *
 * Operands.  op->in[0..nin) are the tensor operands only; the other
 * arguments live in op fields: allgather / reduce_scatter / sum / put /
 * ring_shift dim in op->dim, scale's factor in op->scalar, cast's target in
 * op->to, attention's flag in op->causal (nin 3), dispatch's E and C in
 * op->experts / op->capacity (nin 2: X, idx), combine nin 3 (Ye, idx, gate).
 *
 * Meaning of the ops (rank = node * gpus + gpu):
 *   compute ops act on each rank's local pieces (placement was resolved by
 *   sema: split(0) x local matmul is a local matmul, split(1) x split(0)
 *   gives the partial local product); binary elementwise ops and row-wise
 *   ops line operands up by logical coordinate, so a 1-D operand of the last
 *   dim broadcasts over rows whatever the shards.
 *   attention(Q, K, V [, causal]) over [S, D] or [H, S, D]: scale op->scalar
 *   when nonzero, else 1/sqrt(D); when K/V are split on the sequence dim
 *   (ring attention), each rank's queries see the whole sequence of its
 *   group, and causal masking uses global positions.
 *   allgather(X, d): X split(d) over a group; every rank gets the shards of
 *   its group concatenated along d.  reduce_scatter(X, d): X partial or
 *   local; out split(d) over a group; rank r keeps its shard of the sum over
 *   its group.  allreduce(X): the sum over all ranks, on every rank.
 *   ring_shift(X): rank r receives rank (r-1) mod world's piece.
 *   put (explicit stage, op->peers, op->dim): for each peer p of r, out's
 *   shard p along dim on rank r = X's piece on rank p.
 *   dispatch(X[T,H], idx[T,k], E, C) -> Xe[E,C,H]: X and idx split(0) over
 *   the world; slots of each expert fill in order (source rank, token,
 *   choice); unused slots are 0; a bucket over C is an error.
 *   combine(Ye[E,C,F], idx, gate) -> Y[T,F]: Y[t] = sum_j gate[t,j] *
 *   Ye[idx[t,j], slot(t,j)], slots as dispatch assigns them.
 *   More at each op in cpuref.c.
 *
 * Storage rounding.  With round_storage, every value stored to a tensor is
 * rounded to the tensor's element type (and inputs are read as their rounded
 * values), as the GPU stores them.  cast() always rounds to its target.
 */
#ifndef MK_CPUREF_H
#define MK_CPUREF_H

#include <stddef.h>

#include "ir.h"

typedef struct cpuref_opts {
	int round_storage;  /* 1: round every stored value to its dtype */
	int threads;        /* 0 = one per online CPU (at most 64); 1 = none */
} cpuref_opts;

/* Runs the pipeline on every rank.  o may be NULL (defaults: no storage
 * rounding, auto threads).  Returns 0, or -1 with a one-line message in err
 * (n bytes; err may be NULL): a shape the op cannot take, an out-of-range
 * routing index, an expert bucket over capacity.  Nothing is written past a
 * buffer's end on any error. */
int cpuref_run(const ir_prog *p, float *const *bufs, const cpuref_opts *o,
	       char *err, size_t n);

/* x rounded to element type t, round-to-nearest-even:
 *   bf16, f16  IEEE-style, overflow to +-Inf, NaN stays NaN;
 *   e4m3       OCP E4M3FN (no Inf): saturates to +-448 (and Inf to +-448),
 *              like PTX cvt.rn.satfinite; NaN stays NaN;
 *   f32        x;  i32  nearest integer (ties to even). */
float cpuref_round(ir_dtype t, float x);

#endif
