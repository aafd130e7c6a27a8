/* plan.c - each op's kernel plan, decided once against the device model.
 *
 * The plan says how an op's tasks run on the device: a matmul's tile, its
 * engine (the Hopper TMA + wgmma engine or the portable mma.sync tile), the
 * depth of its shared-memory ring, how many tiles one task walks, its TMA
 * descriptors; an attention op's tile; the shared memory MoE routing needs
 * and the blocks it works in; and, for the kernel as a whole, the threads
 * and shared memory of every CTA.  It is stored on the op (ir_op.plan) and
 * on the program (threads, smem, ntmaps), and read by the lowering, the
 * scheduler, the verifier, codegen/ and the runtime, which never derive it
 * again.  Every limit a plan runs into is reported here, at the op (or its
 * hint) in the source: shared memory, element types and head dimensions
 * the GPU code takes, tile and task counts, reduction fan-in, MoE meshes.
 *
 * Runs after the expansion (epilogues fused, hidden tensors made, shard
 * rotations known) and before the lowering.  Matmuls are planned first: a
 * dispatch sizes its blocks by the matmul that reads its buckets.
 */
#include "plan.h"

#include <stdio.h>
#include <string.h>

#include "costmodel.h"

typedef struct planner {
	ir_prog *p;
	const compile_opts *o;
	diags *d;
	arena *a;
	int ctas;           /* CTAs of one rank */
	ir_device dev;
	int gpu;            /* GPU code will be generated (not the CPU reference) */
	int64_t *cut_lo;    /* scratch: a matmul's row cuts */
	int err;
} planner;

/* ---- matmul ----------------------------------------------------------------- */

/* mkd_mma_tile: padded A [BM][BK+8] and B [BK][BN+8] per stage, 16-bit;
 * -1 past 2^62 */
static int64_t mma_smem(int64_t bm, int64_t bn, int64_t bk, int stages)
{
	int64_t a, b, s;
	if (__builtin_mul_overflow(bm, bk + 8, &a) || __builtin_mul_overflow(bk, bn + 8, &b) ||
	    __builtin_add_overflow(a, b, &s) || __builtin_mul_overflow(s, (int64_t)stages * 2, &s))
		return -1;
	return s;
}

/* mkd_wgmma_tile::SMEM: 1 KB of alignment slack, per stage an A box of
 * a_rows x 64 (BM, or 64 when the warpgroups split the columns) and BN/64
 * B boxes of 64 x 64 (16-bit), two mbarriers; and 64 bytes for each of
 * the 8 consumer warps to keep its epilogue's pointers in over the
 * mainloop (KEEP_BYTES) */
static int64_t wg_smem(int64_t a_rows, int64_t bn, int stages)
{
	return 1024 + stages * (a_rows * 64 * 2 + (bn / 64) * 64 * 64 * 2) + 2 * stages * 8 + 8 * 64;
}

/* A gate-up tile (op->gate): the engine's BN is 128, a 64-column box of
 * each weight, and 16 KB past the ring carry the gate's activations from
 * one consumer warpgroup to the other (128 threads x 32 fp32,
 * mkd_wgmma_tile::GATE_BYTES).  Staged (the default; not with
 * MK_WG_STAGED=0), tiles of 128 rows stage their epilogue past the ring:
 * per consumer warpgroup 64 rows of 128 bytes of C, padded
 * to 144 bytes, 160 for fp32 (split-K partials; mkd_wgmma_tile::EPI_BYTES):
 * the larger is counted whatever C's type. */
enum { MM_GATE_BYTES = 128 * 32 * 4, MM_EPI_BYTES = 2 * 64 * 160 };
/* Staged by TMA (staged 2: ir_mm_plan.tma_store), two buffers of 64 rows
 * of 128 bytes (swizzled, unpadded) per consumer warpgroup. */
enum { MM_TMA_EPI_BYTES = 2 * 2 * 64 * 128 };
/* An rmsnorm in the tile (op->norm): one more mbarrier a stage and the
 * rows' 1/rms, a_rows fp32 (mkd_wgmma_tile::NORM_BYTES). */
static int64_t wg_bytes(const ir_op *op, int64_t a_rows, int64_t bn, int stages, int staged)
{
	if (op->gate)
		return wg_smem(64, 128, stages) + MM_GATE_BYTES;
	return wg_smem(a_rows, bn, stages) + (op->norm ? 8 * stages + a_rows * 4 : 0) +
	       (staged == 2 ? MM_TMA_EPI_BYTES : staged ? MM_EPI_BYTES : 0);
}

/* Whether the Hopper engine can take op: 16-bit operands, 16-byte rows for
 * TMA, a 128-row tile with k step 64 when the hint gives them. */
static int wg_ok(const planner *P, const ir_op *op)
{
	const ir_prog *p = P->p;
	const ir_tensor *a = &p->tensors[op->in[0]], *b = &p->tensors[op->in[1]],
			*c = &p->tensors[op->out];
	if (P->o->no_wgmma)
		return 0;
	if ((a->dtype != DT_BF16 && a->dtype != DT_F16) || b->dtype != a->dtype)
		return 0;
	if (c->dtype != DT_BF16 && c->dtype != DT_F16 && c->dtype != DT_F32)
		return 0;
	if (a->local[a->ndim - 1] % 8 || b->local[b->ndim - 1] % 8)
		return 0;
	if ((op->hints.ntile >= 1 && op->hints.tile[0] != 128) ||
	    (op->hints.ntile >= 3 && op->hints.tile[2] != 64))
		return 0;
	return 1;
}

static int bucket_dispatch(const ir_prog *p, int t);

/* Whether matmul op's tiles are taken at run time (ir_plan.pool): a
 * bucket matmul's, expert by expert (sched.c: the pool).  Which of them
 * are past the tokens is data, and in fixed lists every empty tile let
 * its CTA run ahead, so the tiles that share a weight slab started
 * milliseconds apart and read it from device memory again
 * (docs/perf-notes.md, 2026-12-06); MK_NO_POOL=1 keeps them in the
 * lists. */
static int mm_pooled(const planner *P, const ir_op *op)
{
	return P->p->tensors[op->out].ndim == 3 && !P->o->no_pool &&
	       bucket_dispatch(P->p, op->in[0]) >= 0;
}

/* Whether matmul op pairs its tiles on 2-CTA clusters (ir_mm_plan.cluster):
 * two row tiles of the same columns and k-blocks run side by side, and each
 * CTA loads half of B for both (wgmma.cuh, clusters).  A 128 x 256 tile
 * reads 48 KB a k-block, 32 KB so, and alone it is bound by those reads
 * (the engine ran 1.05-1.53x faster in pairs: docs/gemm.md, clusters).
 * Whole 128-row tiles of 128 or 256 columns on the Hopper engine, no
 * split-K, an even number of CTAs, and
 *   - a pool's (the MoE's expert GEMMs): one tile a task, an even number
 *     of row tiles a bucket; the pool hands out pairs (the row tiles 2j
 *     and 2j + 1 of one expert's slab, side by side in its order);
 *   - else the kernel's only op, on the program's inputs, one row of tiles
 *     a task: its tasks wait for nothing, so the CTAs of a cluster, given
 *     the pairs at the same places in their lists (sched.c static_pairs),
 *     go on from task to task together.
 * MK_CLUSTER=2 asks for it, MK_CLUSTER=1 keeps every CTA alone. */
static int mm_cluster(const planner *P, const ir_op *op)
{
	const ir_prog *p = P->p;
	const ir_mm_plan *m = &op->plan.mm;
	const ir_tensor *A = &p->tensors[op->in[0]], *B = &p->tensors[op->in[1]];
	if (P->o->cluster != 2 || !m->wgmma || m->wg_cols || op->gate || op->norm || m->bm != 128 ||
	    m->bn < 128 || m->ksplit > 1 || P->ctas % 2)
		return 0;
	if (op->plan.pool)
		return m->tiles_m * m->tiles_n == 1 && A->ndim == 3 && A->local[1] % (2 * m->bm) == 0;
	return p->nops == 1 && m->tiles_m == 1 && m->bucket < 0 && !m->late && A->producer < 0 &&
	       B->producer < 0;
}

/* The most tasks matmul op may make: its hint's, else IR_MM_POOL_TASKS for
 * a pool's, else IR_MM_TASKS. */
static int64_t mm_cap(const planner *P, const ir_op *op)
{
	if (op->hints.tasks)
		return op->hints.tasks;
	return mm_pooled(P, op) ? IR_MM_POOL_TASKS : IR_MM_TASKS;
}

/* Whether op, a matmul, with a default 128 x 256 tile would make more
 * tasks than its bound, so that its tasks walk several tiles.  Then it
 * takes 128 x 128: a loop over 128 x 256 tiles leaves too few registers
 * (the kernel spills, measured with ptxas); 128 x 128 fits, also beside
 * the 128 x 256 engine of a matmul of the kernel that does not walk (the
 * MoE's expert GEMMs at 8192 tokens, spill-free since the kernel's task
 * loop keeps no pool byte across a task: kernel.cuh). */
static int walks_wide(const planner *P, const ir_op *op)
{
	const ir_prog *p = P->p;
	if (op->kind != OP_MATMUL || op->hints.ntile >= 2 || !wg_ok(P, op))
		return 0;
	const ir_tensor *c = &p->tensors[op->out];
	const int64_t nb = c->ndim == 3 ? c->local[0] : 1, rows = c->local[c->ndim - 2];
	const int64_t n = c->local[c->ndim - 1], bm = op->hints.ntile >= 1 ? op->hints.tile[0] : 128;
	const int64_t cap = mm_cap(P, op);
	return n >= 256 && nb * ((rows + bm - 1) / bm) * ((n + 255) / 256) > cap;
}

/* Tiles per task of a matmul with nb x nm x nn tiles (batch, rows,
 * columns) and at most cap tasks: cw column tiles first, then rb row
 * tiles. */
static void mm_group(int64_t cap, int64_t nb, int64_t nm, int64_t nn, int64_t *rb, int64_t *cw)
{
	*rb = *cw = 1;
	if (nb * nm * nn <= cap)
		return;
	int64_t c = (nb * nm * nn + cap - 1) / cap;
	*cw = c < nn ? c : nn;
	int64_t left = nb * nm * ((nn + *cw - 1) / *cw);
	if (left > cap) {
		int64_t r = (left + cap - 1) / cap;
		*rb = r < nm ? r : nm;
	}
}

int plan_mm_order(const ir_op *op, const int64_t *ml, int nm, int nn, int64_t lo, int64_t unit,
		  int *order)
{
	enum { GROUP = 8 };
	const int rb = op->plan.mm.tiles_m, cw = op->plan.mm.tiles_n;
	const int group = rb > GROUP ? rb : GROUP;
	int n = 0;
	for (int i0 = 0; i0 < nm;) {
		int i1 = i0;
		while (i1 < nm && i1 - i0 < group && (ml[i1] - lo) / unit == (ml[i0] - lo) / unit)
			i1++;
		for (int j = 0; j < nn; j += cw)
			for (int i = i0; i < i1; i += rb) {
				if (order) {
					order[2 * n] = i * nn + j;
					order[2 * n + 1] = i + rb < i1 ? i + rb : i1;
				}
				n++;
			}
		i0 = i1;
	}
	return n;
}

/* The dispatch behind a tensor laid out as its buckets [E, C, ...]: the
 * dispatch's result, and what batched matmuls (rows of A) and elementwise
 * ops make of it row for row; -1 for other tensors. */
static int bucket_dispatch(const ir_prog *p, int t)
{
	for (int depth = 0; depth < 64; depth++) {
		const ir_tensor *x = &p->tensors[t];
		if (x->producer < 0 || x->nwriters != 1 || x->ndim != 3)
			return -1;
		const ir_op *op = &p->ops[x->producer];
		if (op->kind == OP_DISPATCH)
			return op->route1 ? (int)(op - p->ops) : -1;
		if (op->kind == OP_MATMUL || (ir_op_class(op->kind) == 'E' && op->kind != OP_ADD &&
					       op->kind != OP_MUL))
			t = op->in[0];
		else
			return -1;
	}
	return -1;
}

/* Whether every tile of dimension d of C, cut as mm_grid cuts it (ir_cut:
 * pieces of step inside each band of rows that arrive together), is whole:
 * the band and C's side multiples of step.  A FULL engine stores whole
 * tiles whatever the task's box: a tile past a box of 64 rows wrote into
 * the next tensor (tests/runs/views_nocopy.mk at 2 ranks, llama_layer at
 * 8, on the GPU). */
static int tiles_whole(const ir_tensor *C, int d, int64_t step)
{
	const int64_t unit = C->rot[d].unit > 0 ? C->rot[d].unit : C->local[d];
	return step > 0 && unit % step == 0 && C->local[d] % step == 0;
}

/* The tile grid: tiles, the tasks they group into, and the bound. */
static void mm_grid(planner *P, ir_op *op)
{
	const ir_prog *p = P->p;
	const ir_tensor *C = &p->tensors[op->out];
	ir_mm_plan *m = &op->plan.mm;
	const int b = C->ndim == 3;
	const int64_t nb = b ? C->local[0] : 1;
	const int nm = ir_cut(C, b, 0, C->local[b], m->bm, P->cut_lo, NULL, IR_MAXCUTS / 2);
	const int nn = ir_cut(C, b + 1, 0, C->local[b + 1], m->bn, NULL, NULL, IR_MAXCUTS / 2);
	if (nm < 0 || nn < 0) {
		diag_error(P->d, op->where, "matmul '%s' has too many tiles; use a larger tile",
			   op->stage);
		P->err = 1;
		return;
	}
	if ((int64_t)nm * nn > (1 << 22)) {
		diag_error(P->d, op->where, "matmul '%s' has %lld tiles; use a larger tile", op->stage,
			   (long long)nm * nn);
		P->err = 1;
		return;
	}
	/* A task covers rb row tiles by cw column tiles when the op would
	 * otherwise make more tasks than its `tasks` hint allows (default
	 * mm_cap: the task tables are compiled into the kernel): whole rows
	 * of column tiles first, then several row tiles. */
	const int64_t cap = mm_cap(P, op);
	int64_t rb, cw;
	mm_group(cap, nb, nm, nn, &rb, &cw);
	m->tiles_m = (int)rb;
	m->tiles_n = (int)cw;
	const int64_t unit = C->rot[b].unit > 0 ? C->rot[b].unit : INT64_MAX;
	const int ntask = plan_mm_order(op, P->cut_lo, nm, nn, 0, unit, NULL);
	if (nb * ntask > cap) {
		diag_error(P->d, op->hints.tasks ? op->hints.tasks_where : op->where,
			   "matmul '%s' needs at least %lld tasks (one per row band%s), over "
			   "its bound of %lld", op->stage, (long long)(nb * ntask),
			   b ? " and batch entry" : "", (long long)cap);
		P->err = 1;
	}
}

/* The cost model's split-K for tiles of bm x bn: the predicted time of
 * the op's tasks in waves over the rank's CTAs, the partials' and then the
 * sums', for S = 1 .. 16 pieces of at least 4 k steps; the fastest, unless
 * it saves less than a tenth over no split (the extra stage code costs
 * registers).  *us (unless NULL): that time. */
static int64_t best_ksplit(const planner *P, const ir_op *op, int64_t bm, int64_t bn,
			   int64_t tiles, int64_t K, int64_t unit, double *us)
{
	const ir_prog *p = P->p;
	const ir_tensor *A = &p->tensors[op->in[0]], *B = &p->tensors[op->in[1]],
			*C = &p->tensors[op->out];
	const int64_t rows = C->local[0] < bm ? C->local[0] : bm;
	const int64_t cols = C->local[1] < bn ? C->local[1] : bn;
	const double flops = 2.0 * (double)rows * (double)cols * (double)K;
	const double io = (double)ir_tensor_bytes(A) + (double)ir_tensor_bytes(B) +
			  (double)ir_tensor_bytes(C);
	const int rpg = P->o->ranks_per_gpu > 0 ? P->o->ranks_per_gpu : 1;
	double best = 0, none = 0;
	int64_t bs = 1;
	for (int64_t S = 1; S <= 16 && (S == 1 || (K + unit - 1) / unit / S >= 4); S++) {
		const double work = S > 1 ? 2.0 * (double)S * (double)ir_tensor_elems(C) * 4 : 0;
		const double part = cost_tile_us(&P->dev, flops / (double)S,
						 (io + work) / (double)(tiles * S), P->ctas, rpg);
		double t = (double)((tiles * S + P->ctas - 1) / P->ctas) *
			   (part + cost_store_us(&P->dev, (double)rows * (double)cols *
							      (S > 1 ? 4.0 : ir_dtype_size(C->dtype))));
		if (S > 1)
			t += (double)((tiles + P->ctas - 1) / P->ctas) *
			     cost_stream_us(&P->dev, (double)rows * (double)cols *
						     (4.0 * (double)S + ir_dtype_size(C->dtype)));
		if (S == 1)
			none = best = t;
		else if (t < best) {
			best = t;
			bs = S;
		}
	}
	const int split = best < 0.9 * none;
	if (us)
		*us = split ? best : none;
	return split ? bs : 1;
}

/* Few output tiles (decode) on the Hopper engine: 128 x 256 tiles, or 128 x
 * 128 ones, which make twice the tiles, each streaming half the columns of
 * B, and often need no split-K at all (no fp32 partials, no sums, no extra
 * flag hop: 42.8 against 59.7 us for [128, 4096] x [4096, 14336] on the
 * H200).  The cost model's best_ksplit decides; 256 on a tie. */
static int64_t decode_bn(const planner *P, const ir_op *op, int64_t bm)
{
	const ir_tensor *A = &P->p->tensors[op->in[0]], *C = &P->p->tensors[op->out];
	const int64_t K = A->local[A->ndim - 1], ksteps = (K + 63) / 64;
	if (C->ndim != 2 || ksteps < 16 || C->local[1] < 256)
		return 256;
	const int64_t tm = (C->local[0] + bm - 1) / bm;
	if (tm * ((C->local[1] + 255) / 256) * 2 > P->ctas)
		return 256;
	double us[2];
	for (int i = 0; i < 2; i++) {
		const int64_t bn = i ? 128 : 256, tiles = tm * ((C->local[1] + bn - 1) / bn);
		if (tiles * 2 <= P->ctas)
			best_ksplit(P, op, bm, bn, tiles, K, 64, &us[i]);
		else  /* too many tiles to split: each whole */
			best_ksplit(P, op, bm, bn, tiles, K, K, &us[i]);
	}
	return us[1] < us[0] ? 128 : 256;
}

/* Split-K: when the tiles are too few to occupy the rank's CTAs (decode:
 * a handful of rows, all the time in streaming B), each tile's K range is
 * cut in ksplit pieces (K of 16 steps or more: a shorter K gains little
 * and its stage code costs registers; how many, the cost model's
 * best_ksplit), each an mmpart task into the fp32 workspace; a sumk task
 * per tile adds them, applies the epilogue and stores.  Not for batched
 * (expert) matmuls, bucket-bounded rows or tasks that walk several tiles.
 * The `split` hint sets the count (1: none). */
static void mm_split(planner *P, ir_op *op)
{
	ir_prog *p = P->p;
	ir_mm_plan *m = &op->plan.mm;
	const ir_tensor *A = &p->tensors[op->in[0]], *C = &p->tensors[op->out];
	const int64_t K = A->local[A->ndim - 1], unit = m->wgmma ? 64 : m->bk;
	const int64_t ksteps = (K + unit - 1) / unit;
	const int64_t tiles = (int64_t)((C->local[C->ndim - 2] + m->bm - 1) / m->bm) *
			      ((C->local[C->ndim - 1] + m->bn - 1) / m->bn);
	m->ksplit = 1;
	m->kstep = K;
	m->work = -1;
	/* (an rmsnorm in the tile needs the whole row: expand.c fuse_norms) */
	const int can = C->ndim == 2 && m->bucket < 0 && m->tiles_m * m->tiles_n == 1 && !op->gate &&
			!op->norm;
	int64_t S = 1;
	if (op->hints.split) {
		S = op->hints.split;
		if (S > 1 && !can) {
			diag_error(P->d, op->hints.split_where, "split-K needs a 2-D matmul whose tasks "
				   "take one tile each ('%s' is %s)", op->stage,
				   C->ndim != 2 ? "batched" : "walking several tiles a task");
			P->err = 1;
			return;
		}
		if (S > ksteps) {
			diag_error(P->d, op->hints.split_where, "split %lld is more than the %lld k "
				   "steps of %lld that '%s' has", (long long)S, (long long)ksteps,
				   (long long)unit, op->stage);
			P->err = 1;
			return;
		}
	} else if (can && tiles * 2 <= P->ctas && ksteps >= 16) {
		S = best_ksplit(P, op, m->bm, m->bn, tiles, K, unit, NULL);
	}
	if (S < 2)
		return;
	int64_t step = (ksteps + S - 1) / S * unit;
	/* K tied to the ranks' shards (A's columns or B's rows gathered, or read
	 * by a collective along K): sigma_r moves a piece whole only inside one
	 * shard, so the pieces divide a shard (of whole engine steps) */
	const ir_tensor *B = &p->tensors[op->in[1]];
	const ir_rot kr[2] = {A->rot[A->ndim - 1], B->rot[B->ndim - 2]};
	for (int i = 0; i < 2; i++) {
		const int64_t u = kr[i].unit;
		if (u <= 0 || ir_group_size(p, kr[i].group) < 2 || step <= 0)
			continue;
		int64_t best = 0, widest = 0;
		for (int64_t d = unit; d <= u; d += unit)
			if (u % d == 0) {
				widest = d;
				if (d <= step)
					best = d;
			}
		if (op->hints.split && (!best || (K + best - 1) / best != S)) {
			char alt[64] = "no split can";
			if (widest)
				snprintf(alt, sizeof alt, "split %lld can",
					 (long long)((K + widest - 1) / widest));
			diag_error(P->d, op->hints.split_where, "split %lld of '%s' would cut K inside "
				   "the shards it is tied to (%lld a shard over %s: '%s''s dimension %d); "
				   "a piece must lie in one shard and be whole steps of %lld: %s",
				   (long long)S, op->stage, (long long)u, ir_group_name(kr[i].group),
				   i ? B->name : A->name, i ? B->ndim - 2 : A->ndim - 1, (long long)unit,
				   alt);
			P->err = 1;
			return;
		}
		step = best;
	}
	if (step <= 0)
		return;
	S = (K + step - 1) / step;
	if (S < 2)
		return;
	/* the workspace is C with a slice dimension in front: C's placement
	 * and shard rotations one dimension further, so a partial's box is its
	 * tile's box on every rank */
	ir_tensor proto = *C;
	proto.dtype = DT_F32;
	proto.ndim = 3;
	proto.shape[0] = proto.local[0] = S;
	for (int d = 0; d < 2; d++) {
		proto.shape[d + 1] = C->shape[d];
		proto.local[d + 1] = C->local[d];
	}
	proto.shape[3] = proto.local[3] = 0;
	if (proto.place.kind == PL_SPLIT)
		proto.place.dim++;
	else
		proto.place = (ir_place){PL_LOCAL, 0, GRP_WORLD};
	const ir_rot rot[2] = {C->rot[0], C->rot[1]};
	const int w = ir_add_tensor(p, P->a, &proto, C->name, "ksplit");
	if (w < 0) {
		P->err = 1;
		return;
	}
	p->tensors[w].producer = (int)(op - p->ops);
	p->tensors[w].nwriters = 1;
	p->tensors[w].rot[1] = rot[0];
	p->tensors[w].rot[2] = rot[1];
	m->ksplit = (int)S;
	m->kstep = step;
	m->work = w;
}

/* Whether matmul op's staged epilogue goes out by TMA (ir_mm_plan.
 * tma_store; not with MK_WG_TMA=0): each consumer warpgroup writes a 128-byte
 * column chunk of its 64 rows into one of two swizzled buffers, and one
 * thread stores the chunk with a bulk tensor store through C's map while
 * the warpgroup goes on (the next chunk, the next tile's k-blocks): what
 * the staged epilogue's read-back and 16-byte stores cost the tile (its
 * tensor cores idle) goes to the copy engine.  Where
 *   - the ring goes on to the CTA's next task (carry: the stage's emitted
 *     form that takes C's map), on whole 128-row tiles (no COLS, no gate,
 *     no bucket, no split-K; not in 2-CTA clusters, MK_CLUSTER=2, an A/B
 *     not measured with it): a TMA store writes the whole box, so every
 *     tile must lie inside C (tiles_whole, as FULL; the verifier's check
 *     11);
 *   - C's rows are 16-byte aligned (a tensor map's constraint; a
 *     matmul's result is never a view: plan_view.c makes those of layout
 *     ops only, so it is row-major in storage of its own, heads stacked,
 *     and the map's row of head h, row r is h * rows + r);
 *   - the two buffers fit beside the ring's stages (no stage given up);
 *   - nothing in the kernel reads the result (no other op uses it): a
 *     task whose result is waited on drains its stores before it signals
 *     (mkd/kernel.cuh), which exposes the last chunk's write; on an H100
 *     the 5-matmul chain mlp_chain (T = 8192, D = 4096) ran 1.9% slower
 *     so, gemm_rs at 2 ranks 0.5% faster, where gemm.mk gained 0.6-1.2%
 *     (docs/perf-notes.md, thirtieth session).
 */
static int mm_tma_store(const planner *P, const ir_op *op)
{
	const ir_prog *p = P->p;
	const ir_mm_plan *m = &op->plan.mm;
	const ir_tensor *C = &p->tensors[op->out];
	const int nd = C->ndim, es = ir_dtype_size(C->dtype);
	if (!P->o->wg_tma || !m->staged || !m->carry || m->wg_cols || op->gate || m->bucket >= 0 ||
	    m->ksplit > 1 || m->bm != 128 || C->nuses > 0 || m->cluster > 1)
		return 0;
	if (!tiles_whole(C, nd - 2, m->bm) || !tiles_whole(C, nd - 1, m->bn))
		return 0;
	if ((C->local[nd - 1] * es) % 16)
		return 0;
	return wg_bytes(op, m->bm, m->bn, m->wg_stages, 2) <= P->dev.smem_per_sm;
}

/* Whether a matmul's A or its epilogue's operand comes (through layout
 * ops) from an exchange: data another rank delivers while the tile could
 * already load B. */
static int mm_delivered(const ir_prog *p, const ir_op *op)
{
	for (int k = 0; k < op->nin; k += 2) {  /* in[0] (A) and in[2] (the operand) */
		int t = op->in[k];
		while (t >= 0 && p->tensors[t].producer >= 0) {
			const ir_op *w = &p->ops[p->tensors[t].producer];
			const char c = ir_op_class(w->kind);
			if (c == 'X')
				return 1;
			t = c == 'L' ? w->in[0] : -1;
		}
	}
	return 0;
}

static void plan_matmul(planner *P, ir_op *op, int wide)
{
	const ir_prog *p = P->p;
	const ir_tensor *A = &p->tensors[op->in[0]], *B = &p->tensors[op->in[1]],
			*C = &p->tensors[op->out];
	ir_mm_plan *m = &op->plan.mm;
	if (C->ndim > 3) {
		diag_error(P->d, op->where, "matmul of more than 3 dimensions is not supported");
		P->err = 1;
		return;
	}
	/* e4m3 runs on the portable tile, widened to f16 in shared memory
	 * (mma.cuh); wg_ok keeps it off the wgmma engine */
	if (P->gpu && ((A->dtype != DT_BF16 && A->dtype != DT_F16 && A->dtype != DT_E4M3) ||
		       B->dtype != A->dtype ||
		       (C->dtype != DT_BF16 && C->dtype != DT_F16 && C->dtype != DT_F32))) {
		diag_error(P->d, op->where, "matmul on the GPU takes bf16, f16 or e4m3 operands of one "
			   "type and writes bf16, f16 or f32; here %s x %s -> %s (the CPU reference, "
			   "mkrun --cpu, runs it)", ir_dtype_name(A->dtype), ir_dtype_name(B->dtype),
			   ir_dtype_name(C->dtype));
		P->err = 1;
		return;
	}
	if (P->gpu && (A->local[A->ndim - 1] % 8 || B->local[B->ndim - 1] % 8)) {
		/* the tiles load rows in pieces of 8 elements (mma.cuh) */
		diag_error(P->d, op->where, "matmul on the GPU loads rows in pieces of 8 elements: "
			   "K (= %lld) and N (= %lld per rank) must be multiples of 8",
			   (long long)A->local[A->ndim - 1], (long long)B->local[B->ndim - 1]);
		P->err = 1;
		return;
	}
	const int64_t n = C->local[C->ndim - 1];
	const int64_t limit = P->dev.smem_per_sm;
	m->wgmma = wg_ok(P, op);
	/* the hint's sizes (sema: positive multiples of 64, 16, 16; m and n
	 * within the output, n at most 256), else the defaults */
	const int64_t bm = op->hints.ntile >= 1 ? op->hints.tile[0] : 128;
	int64_t bn = op->hints.ntile >= 2 ? op->hints.tile[1]
					  : m->wgmma ? (n >= 256 ? 256 : n > 64 ? 128 : 64) : 128;
	/* MK_WG_BN=128 (A/B): 128-column tiles where the plan would take 256
	 * (in the llama layer the 128 x 256 tiles' 128 accumulators a thread,
	 * beside the attention tile and the row ops in one kernel, spill 3.2
	 * KB, some in the mainloops; 128-column tiles 40 bytes) */
	if (m->wgmma && op->hints.ntile < 2 && bn == 256 && (wide || P->o->wg_bn128))
		bn = 128;
	else if (m->wgmma && op->hints.ntile < 2 && bn == 256 && !op->hints.split && bm == 128)
		bn = decode_bn(P, op, bm);
	if (op->gate)  /* 64 columns of the result: 64 of each weight (expand.c) */
		bn = 64;
	const int64_t bk = op->hints.ntile >= 3 ? op->hints.tile[2] : 64;
	/* the portable tile's rmsnorm in the tile: the rows' 1/rms past the
	 * ring (mkd_rms_rows) */
	const int64_t rs_bytes = op->norm ? bm * 4 : 0;
	int stages;
	for (stages = 4; stages > 2; stages--) {
		int64_t s = mma_smem(bm, bn, bk, stages);
		if (s >= 0 && s + rs_bytes <= limit)
			break;
	}
	int64_t smem = mma_smem(bm, bn, bk, stages);
	if (smem >= 0)
		smem += rs_bytes;
	if (smem < 0 || smem > limit) {
		diag_error(P->d, op->hints.ntile ? op->hints.tile_where : op->where,
			   "tile %lld x %lld x %lld needs %s bytes of shared memory for %d stages; %lld fit",
			   (long long)bm, (long long)bn, (long long)bk,
			   smem < 0 ? "more than 2^63" : arena_printf(P->d->a, "%lld", (long long)smem),
			   stages, (long long)limit);
		P->err = 1;
		return;
	}
	m->bm = (int)bm;  /* they fit in shared memory: small */
	m->bn = (int)bn;
	m->bk = (int)bk;
	m->stages = stages;
	if (m->wgmma && m->bn != 64 && m->bn != 128 && m->bn != 256)
		m->wgmma = 0;
	m->bucket = C->ndim == 3 ? bucket_dispatch(p, op->in[0]) : -1;
	/* a few rows (decode): 128-row tiles would have one warpgroup multiply
	 * the zeros TMA fills the missing rows with; the two split the columns
	 * and load A in 64-row boxes, and the room that frees holds more
	 * stages of B (up to 12): the weights such tiles stream are the
	 * bytes in flight */
	m->wg_cols = m->wgmma && (m->bn >= 128 || op->gate) && m->bucket < 0 &&
		     C->local[C->ndim - 2] <= 64;
	const int64_t a_rows = ir_mm_a_rows(m);
	/* MK_WG_STAGED: the epilogue's staging, for 128-row tiles but the
	 * gate-up tile's (mkd_wgmma_tile::EPI_BYTES) */
	const int stg = P->o->wg_staged && a_rows != 64 && !op->gate;
	m->wg_stages = 0;
	if (m->wgmma) {
		/* MK_WG_STAGES=N (A/B): N stages where they fit */
		const int want = P->o->wg_stages >= 2 && P->o->wg_stages <= 12 ? P->o->wg_stages
										   : m->wg_cols ? 12 : 8;
		for (m->wg_stages = want;
		     m->wg_stages > 2 && wg_bytes(op, a_rows, m->bn, m->wg_stages, stg) > limit; m->wg_stages--)
			;
		if (wg_bytes(op, a_rows, m->bn, m->wg_stages, stg) > limit || (op->gate && !m->wg_cols))
			m->wgmma = 0;
	}
	m->wg_cols = m->wg_cols && m->wgmma;
	m->staged = m->wgmma && stg;
	if (m->wgmma && wg_bytes(op, a_rows, m->bn, m->wg_stages, stg) > smem)
		smem = wg_bytes(op, a_rows, m->bn, m->wg_stages, stg);
	op->plan.smem = (int)smem;
	op->plan.threads = m->wgmma ? 384 : 256;  /* producer + two consumer warpgroups */
	m->tmap = -1;
	const int before = P->err;
	P->err = 0;
	mm_grid(P, op);
	if (!P->err)
		mm_split(P, op);
	if (op->gate && m->tiles_m * m->tiles_n > 1) {  /* the engine's gate-up tile: one a task */
		m->wgmma = m->wg_cols = 0;
		op->plan.threads = 256;
	}
	/* the ring goes on from tile to tile, in a task that walks several
	 * and from task to task, wherever the engine runs (the stage skips
	 * bucket tiles past the tokens before their loads go out) but after
	 * a dispatch between nodes (its stages beside the engine's carry
	 * spill the kernel loop's registers: ptxas, 2 x 2 and 2 x 8); and
	 * where every task is one tile, never skipped, and another rank
	 * delivers A or the epilogue's operand, the engine waits for each
	 * operand's flags as late as it can, so that B's loads run under the
	 * transfer.  Not where they are computed here: on the
	 * H200 that gained nothing in decode and cost 4-5% in compute-bound
	 * chains (docs/perf-notes.md, 2026-12-05); MK_LATE=1 makes every such
	 * tile wait per operand, MK_NO_LATE=1 none */
	/* a pooled task's successor is not known before it ends: the ring
	 * goes on only inside a task (a ticket taken while the task before
	 * it ran, so that the ring went on into it, made the MoE layer 4-38%
	 * slower on an H100: tickets then go out in the order tasks begin,
	 * and tiles that share a weight slab ran apart; docs/perf-notes.md,
	 * twenty-fifth session) */
	op->plan.pool = mm_pooled(P, op);
	const int one = m->wgmma && m->tiles_m * m->tiles_n == 1 && m->bucket < 0;
	m->carry = m->wgmma && !P->o->no_carry && (m->bucket < 0 || !p->ops[m->bucket].rroute1) &&
		   (ir_next_known(op) || m->tiles_m * m->tiles_n > 1);
	m->late = one && !P->o->no_late && !op->gate && !op->norm &&
		  (P->o->all_late || mm_delivered(P->p, op));
	m->cluster = mm_cluster(P, op) ? 2 : 1;
	/* every tile inside C (its sides multiples of the tile's) and no
	 * epilogue op: the engine stores without testing bounds, ~2
	 * instructions a pair of values where the tests take ~12
	 * (mkd_wgmma_tile's FULL).  With an epilogue op (gelu: tp_mlp) the
	 * branch-free loop let ptxas overlap the ops of many pairs and spill */
	m->full = m->wgmma && !m->wg_cols && !op->gate && m->ksplit <= 1 && !ir_has_epilogue(op) &&
		  tiles_whole(C, C->ndim - 2, m->bm) && tiles_whole(C, C->ndim - 1, m->bn);
	/* a bucket's 128-row tiles load A by 64-row halves: an expert's
	 * last row tile, partly filled, loads only the half that holds its
	 * tokens where they fit in it (its other warpgroup multiplies
	 * nothing already); such tiles cost as much as full ones, bound by
	 * their loads (docs/perf-notes.md, twenty-fifth session) */
	m->a_box = 0;
	if (m->wgmma)
		m->a_box = m->bucket >= 0 && m->bm == 128 && !op->norm && P->o->a_halves != 1
				   ? 64 : ir_mm_a_rows(m);
	m->tma_store = mm_tma_store(P, op);
	if (m->tma_store && wg_bytes(op, m->bm, m->bn, m->wg_stages, 2) > op->plan.smem)
		op->plan.smem = (int)wg_bytes(op, m->bm, m->bn, m->wg_stages, 2);
	P->err |= before;
}

/* ---- attention -------------------------------------------------------------- */

/* The cost model's split-KV, as best_ksplit: waves of the query tiles'
 * ranges (each at least 4 stages of keys), then the merges. */
static int64_t best_kvsplit(const planner *P, const ir_op *op, int64_t tiles, int64_t stages,
			    int64_t unit)
{
	const ir_prog *p = P->p;
	const ir_tensor *q = &p->tensors[op->in[0]], *k = &p->tensors[op->in[1]];
	const int sd = q->ndim - 2;
	const double D = (double)q->shape[q->ndim - 1], keys = (double)k->local[sd];
	const double rows = (double)(q->local[sd] < op->plan.attn.rows ? q->local[sd]
								: op->plan.attn.rows);
	const double flops = 4.0 * rows * keys * D / (op->causal ? 2 : 1);
	/* K and V from device memory once for the head's query tiles (the L2
	 * serves the others), as lower_attention counts them */
	const double kv = 2.0 * keys * D * ir_dtype_size(k->dtype) /
			  (double)((q->local[sd] + op->plan.attn.rows - 1) / op->plan.attn.rows);
	const int rpg = P->o->ranks_per_gpu > 0 ? P->o->ranks_per_gpu : 1;
	double best = 0, none = 0;
	int64_t bs = 1;
	for (int64_t S = 1; S <= 16 && (S == 1 || stages / S >= 4); S++) {
		/* (the tile as planned so far: the kernel's threads, known
		 * once every op is planned, may still change it, wg_attn_fit) */
		const double part = cost_attn_us(&P->dev, flops / (double)S,
						 cost_attn_eff(&P->dev, p, op),
						 kv / (double)S + rows * (D + 2) * 4, P->ctas, rpg);
		double t = (double)((tiles * S + P->ctas - 1) / P->ctas) * part;
		if (S > 1)
			t += (double)((tiles + P->ctas - 1) / P->ctas) *
			     cost_stream_us(&P->dev, rows * (D + 2) * 4 * (double)S);
		if (S == 1)
			none = best = t;
		else if (t < best) {
			best = t;
			bs = S;
		}
	}
	return best < 0.9 * none ? bs : 1;
}

/* Split-KV (flash-decoding): when the query tiles are too few to occupy
 * the rank's CTAs (decode: a few queries per head), each tile's keys are
 * cut into kvsplit ranges of at least 4 stages (how many: the cost
 * model's best_kvsplit); an attnpart task per range writes its
 * unnormalised output and its row max and sum into the fp32 workspace, and
 * an attnsum task per tile merges them.  16-bit inputs only; not where K and V are gathered
 * block by block (ring attention), whose tiles already wait per block.
 * The `split` hint sets the count (1: none). */
static void attn_split(planner *P, ir_op *op)
{
	ir_prog *p = P->p;
	ir_attn_plan *a = &op->plan.attn;
	const ir_tensor *q = &p->tensors[op->in[0]], *k = &p->tensors[op->in[1]];
	const int sd = q->ndim - 2, me = (int)(op - p->ops);
	const int64_t D = q->shape[q->ndim - 1], keys = k->local[sd];
	const int64_t heads = sd ? q->local[0] : 1, heads_all = sd ? q->shape[0] : 1;
	const int64_t tiles = heads * ((q->local[sd] + a->rows - 1) / a->rows);
	const int64_t unit = a->tensor_cores ? a->keys : 64;
	const int64_t stages = (keys + unit - 1) / unit;
	a->kvsplit = 1;
	a->kvstep = keys;
	a->work = -1;
	int ring = 0;
	for (int j = 0; j < me; j++)
		ring |= p->ops[j].kind == OP_ALLGATHER && p->ops[j].out == op->in[1];
	/* rows of the flattened workspace move with O's heads only: not where
	 * the queries themselves are split or rotated */
	const ir_tensor *o = &p->tensors[op->out];
	const int can = a->tensor_cores && !ring && o->rot[sd].unit == 0 &&
			q->local[sd] == q->shape[sd];
	int64_t S = 1;
	if (op->hints.split) {
		S = op->hints.split;
		if (S > 1 && !can) {
			diag_error(P->d, op->hints.split_where, "split-KV takes attention of 16-bit "
				   "inputs whose keys are local and whose queries are whole (%s)",
				   ring ? "here K and V are gathered block by block, as ring attention"
				   : !a->tensor_cores ? "here the inputs are fp32"
				   : "here the queries are split over the ranks");
			P->err = 1;
			return;
		}
		if (S > stages) {
			diag_error(P->d, op->hints.split_where, "split %lld is more than the %lld "
				   "stages of %lld keys that '%s' has", (long long)S, (long long)stages,
				   (long long)unit, op->stage);
			P->err = 1;
			return;
		}
	} else if (can && tiles * 2 <= P->ctas && stages >= 8) {
		S = best_kvsplit(P, op, tiles, stages, unit);
	}
	if (S < 2)
		return;
	const int64_t step = (stages + S - 1) / S * unit;
	S = (keys + step - 1) / step;
	if (S < 2)
		return;
	/* the workspace: O's rows (heads x queries, flattened) with a slice
	 * dimension in front and two more columns; split and rotated as O's
	 * heads are, so a partial's rows are its tile's on every rank */
	ir_tensor proto = *o;
	proto.dtype = DT_F32;
	proto.ndim = 3;
	proto.shape[0] = proto.local[0] = S;
	proto.shape[1] = heads_all * q->shape[sd];
	proto.local[1] = heads * q->local[sd];
	proto.shape[2] = proto.local[2] = D + 2;
	proto.shape[3] = proto.local[3] = 0;
	ir_rot rot = {0, GRP_WORLD};
	if (sd && o->place.kind == PL_SPLIT && o->place.dim == 0)
		proto.place = (ir_place){PL_SPLIT, 1, o->place.group};
	else
		proto.place = (ir_place){PL_LOCAL, 0, GRP_WORLD};
	if (sd && o->rot[0].unit > 0)
		rot = (ir_rot){o->rot[0].unit * q->shape[sd], o->rot[0].group};
	const int w = ir_add_tensor(p, P->a, &proto, o->name, "kvsplit");
	if (w < 0) {
		P->err = 1;
		return;
	}
	p->tensors[w].producer = me;
	p->tensors[w].nwriters = 1;
	p->tensors[w].rot[1] = rot;
	a->kvsplit = (int)S;
	a->kvstep = step;
	a->work = w;
}

/* Whether every read of op's tasks is on the rank itself, as the Hopper
 * tile's tensor maps (one per tensor and rank) need: Q split as O is (a
 * task reads the query rows it writes), K and V whole on every rank (given,
 * or gathered: ring attention) or split as Q over the heads.  A split over
 * a group of one rank is the whole tensor (a world of one: the samples'
 * split(0) K and V, whose gathers the expansion removed). */
static ir_place attn_place(const ir_prog *p, int t)
{
	ir_place pl = p->tensors[t].place;
	if (pl.kind == PL_SPLIT && ir_group_size(p, pl.group) == 1)
		pl = (ir_place){PL_LOCAL, 0, GRP_WORLD};  /* one shard: all of it */
	return pl;
}

static int attn_local(const planner *P, const ir_op *op)
{
	const ir_prog *p = P->p;
	const ir_tensor *q = &p->tensors[op->in[0]];
	const ir_place qp = attn_place(p, op->in[0]), op_ = attn_place(p, op->out);
	if (qp.kind == PL_PARTIAL || qp.kind != op_.kind ||
	    (qp.kind == PL_SPLIT && (qp.dim != op_.dim || qp.group != op_.group)))
		return 0;
	for (int i = 1; i <= 2; i++) {
		const ir_place kp = attn_place(p, op->in[i]);
		if (kp.kind == PL_LOCAL)
			continue;
		if (kp.kind != PL_SPLIT || q->ndim != 3 || kp.dim != 0 || qp.kind != PL_SPLIT ||
		    qp.dim != 0 || qp.group != kp.group)
			return 0;
	}
	return 1;
}

/* mkd_fa_wg (attn_wg.cuh): its SMEM: 1 KB of alignment slack, Q
 * [128][D], the stages of K and V [keys][D], then 16 bytes a stage and 64
 * (its barriers, counts, the block's place) */
static int64_t wg_attn_smem(int64_t D, int keys, int stages)
{
	return 1024 + 128 * D * 2 + (int64_t)stages * 2 * keys * D * 2 + 16 * stages + 64;
}

/* The mma.sync tile's SMEM: Q [rows][D + 8], `ring` stages of K and V
 * [keys][D + 8], with bulk copies a barrier each (fp32: its own layout of
 * 64-row tiles) */
static int64_t mma_attn_smem_ring(const ir_attn_plan *a, int64_t D, int ring)
{
	if (!a->tensor_cores)
		return 16 + 64 * 2 * 4 + 64 * D * 2 * 4;
	return (a->rows + 2 * (int64_t)ring * a->keys) * (D + 8) * 2 + (a->bulk ? 8 * ring : 0) +
	       (a->bulk == IR_ATTN_MAPS ? 1024 : 0);
}

static int64_t mma_attn_smem(const ir_attn_plan *a, int64_t D)
{
	return mma_attn_smem_ring(a, D, 2);
}

/* The Hopper attention tile's shape: KEYS keys a stage unless
 * MK_ATTN_KEYS says, three stages where they fit, else two; the chunk
 * order (without a causal mask each CTA from its own place on: one head's
 * 256 tiles 4% faster, perf-notes 2026-12-05, eighteenth session; off with
 * MK_ATTN_ROTATE=0); and the op's SMEM, the larger of the two tiles' (the
 * mma.sync tile stays compiled for other archs). */
static void wg_attn_shape(const planner *P, ir_op *op, int64_t D, int keys)
{
	ir_attn_plan *a = &op->plan.attn;
	a->wg_keys = P->o->attn_keys ? P->o->attn_keys : keys;
	a->wg_stages = wg_attn_smem(D, a->wg_keys, 3) <= P->dev.smem_per_sm ? 3 : 2;
	a->wg_rotate = P->o->attn_rotate != 1 && !op->causal;
	const int64_t ws = wg_attn_smem(D, a->wg_keys, a->wg_stages);
	const int64_t ms = mma_attn_smem(a, D);
	op->plan.smem = (int)(ws > ms ? ws : ms);
}

/* The mma.sync tile's ring: split-KV tasks stream the cache for a few
 * queries, load latency bounds them, so more stages in flight (4, or 3,
 * where they fit) */
static void mma_attn_ring(const planner *P, ir_op *op, int64_t D)
{
	ir_attn_plan *a = &op->plan.attn;
	for (int n = 4; a->tensor_cores && a->kvsplit > 1 && n > 2; n--) {
		const int64_t deep = mma_attn_smem_ring(a, D, n);
		if (deep <= P->dev.smem_per_sm) {
			a->ring = n;
			if (deep > op->plan.smem)
				op->plan.smem = (int)deep;
			break;
		}
	}
}

/* What the kernel's threads leave it: a consumer thread holds O (D/2
 * registers), S (keys/2) and P (keys/4), with S beside P V (the overlap)
 * those of two chunks.  A thread of a 256-thread kernel has 255 registers:
 * the overlap with 128 keys fits up to D = 128 (231-254 registers at D =
 * 128), D = 256 with 64 keys without it; one of a 384-thread kernel (a matmul on
 * the Hopper engine beside it) 168: 64 keys, the overlap only up to
 * D = 64, and D = 256 goes back to the mma.sync tile.  MK_ATTN_OVERLAP
 * forces the overlap either way, MK_ATTN_KEYS the keys. */
static void wg_attn_fit(const planner *P, ir_op *op, int64_t D, int threads)
{
	ir_attn_plan *a = &op->plan.attn;
	if (D > 128 && threads > 256) {
		a->engine = IR_ATTN_MMA;
		op->plan.smem = (int)mma_attn_smem(a, D);
		mma_attn_ring(P, op, D);
	} else if (threads > 256) {
		wg_attn_shape(P, op, D, 64);
	}
	a->wg_overlap = P->o->attn_overlap ? P->o->attn_overlap == 2
					   : D <= 64 || (D <= 128 && threads <= 256);
}

static void plan_attention(planner *P, ir_op *op)
{
	const ir_tensor *q = &P->p->tensors[op->in[0]];
	const int64_t D = q->shape[q->ndim - 1];
	if (P->gpu && (D % 32 || D > 256)) {
		diag_error(P->d, op->where, "attention on the GPU needs a head dimension that is a "
			   "multiple of 32, at most 256; '%s' has %lld", q->name, (long long)D);
		P->err = 1;
		return;
	}
	ir_attn_plan *a = &op->plan.attn;
	a->tensor_cores = ir_dtype_size(q->dtype) == 2;
	/* decode (a head's queries fit 16 rows): 16-row tiles whose 8 warps
	 * split every stage's keys (mkd_fa's ROWS = 16), else 128 rows */
	const int few = a->tensor_cores && q->local[q->ndim - 2] <= 16 && D <= 128;
	a->rows = few ? 16 : a->tensor_cores ? 128 : 64;
	const int sd = q->ndim - 2;
	if (ir_cut(q, sd, 0, q->local[sd], a->rows, NULL, NULL, IR_MAXCUTS) < 0) {
		diag_error(P->d, op->where, "attention '%s' has more than %d query tiles of %d rows",
			   op->stage, IR_MAXCUTS, a->rows);
		P->err = 1;
		return;
	}
	if (a->tensor_cores) {
		/* keys per stage (mkd_fa's KEYS): two warpgroups of 32 keys up to
		 * D = 64, one of 64 up to 128, one of 32 above; 16-row tiles: 8
		 * warps of 16 */
		a->keys = few ? 128 : D <= 128 ? 64 : 32;
		/* a 16-row tile only streams K and V: by the copy engine
		 * (attn.cuh: BULK), as boxes of tensor maps where K and V are
		 * this rank's and D a multiple of 64, else a row a copy (a
		 * row a copy, its issue one lane at a time, took half the
		 * warp samples of a decode range: docs/perf-notes.md,
		 * thirty-seventh session) */
		a->bulk = !few || P->o->attn_bulk == 1 ? IR_ATTN_ASYNC
			  : D % 64 == 0 && P->o->attn_bulk != 3 && attn_local(P, op) ? IR_ATTN_MAPS
			  : IR_ATTN_ROWS;
	}
	const int64_t smem = mma_attn_smem(a, D);
	if (smem > P->dev.smem_per_sm) {
		diag_error(P->d, op->where, "attention with head dimension %lld needs %lld bytes of "
			   "shared memory; %d fit", (long long)D, (long long)smem, P->dev.smem_per_sm);
		P->err = 1;
		return;
	}
	op->plan.smem = (int)smem;
	op->plan.threads = 256;
	a->ring = 2;
	/* the Hopper tile where it can run (the mma.sync tile stays compiled
	 * for other archs: the plan's smem and threads, 256 both, cover both);
	 * not for 16-row decode tiles, whose 8 warps split the keys instead.
	 * 128 keys a stage up to D = 128, 64 at D = 256 (the kernel's threads,
	 * known once every op is planned, may cut them: wg_attn_fit) */
	a->tmap = -1;
	a->engine = IR_ATTN_MMA;
	if (a->tensor_cores && a->rows == 128 && !P->o->no_wgmma && !P->o->attn_mma &&
	    (D == 64 || D == 128 || D == 256) && attn_local(P, op)) {
		wg_attn_shape(P, op, D, D <= 128 ? 128 : 64);
		if (op->plan.smem <= P->dev.smem_per_sm)
			a->engine = IR_ATTN_WGMMA;
		else
			op->plan.smem = (int)smem;
	}
	attn_split(P, op);
	if (a->engine == IR_ATTN_MMA)
		mma_attn_ring(P, op, D);
}

/* ---- row sums ---------------------------------------------------------------- */

static void plan_sum(planner *P, ir_op *op)
{
	op->plan.threads = 256;
}

/* ---- exchange --------------------------------------------------------------- */

/* A reduction sums at most IR_MAXREDUCE sources in one task (the generated
 * stage holds them in a fixed array). */
static void plan_reduce(planner *P, ir_op *op)
{
	const ir_prog *p = P->p;
	const ir_tensor *ty = &p->tensors[op->out];
	ir_group g = ty->place.kind == PL_SPLIT ? ty->place.group : GRP_WORLD;
	if (p->nodes == 1 || g != GRP_WORLD) {
		const int G = ir_group_size(p, g);
		if (G > IR_MAXREDUCE) {
			diag_error(P->d, op->where, "reduce over %d ranks at once is not supported "
				   "(at most %d)", G, IR_MAXREDUCE);
			P->err = 1;
		}
	} else if (p->nodes > IR_MAXREDUCE || p->gpus > IR_MAXREDUCE) {
		diag_error(P->d, op->where, "reduce over %d nodes of %d GPUs is not supported "
			   "(at most %d of each)", p->nodes, p->gpus, IR_MAXREDUCE);
		P->err = 1;
	}
	op->plan.threads = 256;
}

/* ---- MoE -------------------------------------------------------------------- */

/* The meshes dispatch and combine run on: every rank of a node pulls rows
 * by loads; between nodes rows travel packed in 16-byte words. */
static int moe_mesh_ok(planner *P, const ir_op *op, const ir_tensor *tok, const ir_tensor *ex)
{
	const ir_prog *p = P->p;
	if (p->world == 1)
		return 1;
	if (p->nodes > 1 && (tok->shape[tok->ndim - 1] * ir_dtype_size(tok->dtype)) % 16) {
		diag_error(P->d, op->where, "'%s' between nodes sends rows of '%s' in 16-byte "
			   "words; a row of %lld x %d bytes is not a multiple of 16", ir_op_name(op->kind),
			   tok->name, (long long)tok->shape[tok->ndim - 1], ir_dtype_size(tok->dtype));
		P->err = 1;
		return 0;
	}
	const ir_tensor *t2[2] = {tok, ex};
	for (int k = 0; k < 2; k++)
		if (t2[k]->place.kind != PL_SPLIT || t2[k]->place.dim != 0 ||
		    ir_group_size(p, t2[k]->place.group) != p->world) {
			diag_error(P->d, op->where, "'%s' needs '%s' split(0) over all %d ranks",
				   ir_op_name(op->kind), t2[k]->name, p->world);
			P->err = 1;
			return 0;
		}
	return 1;
}

/* The shared memory of routing (mkd_route: per-warp counts of 4 warps or
 * more and the offsets; mkd_combine: E ints; between nodes mkd_pack: warps + a chunk of
 * tokens). */
static int moe_smem(planner *P, ir_op *op, int64_t E, int64_t need)
{
	if (op->pack1 && need < 4 * (32 + 1024 + 1))
		need = 4 * (32 + 1024 + 1);
	if (need > P->dev.smem_per_sm) {
		diag_error(P->d, op->where, "%lld experts need %lld bytes of shared memory to route; "
			   "an SM has %d", (long long)E, (long long)need, P->dev.smem_per_sm);
		P->err = 1;
		return 0;
	}
	op->plan.smem = (int)need;
	op->plan.threads = 256;
	return 1;
}

/* The CTAs a dispatch's tasks go to (ir_plan.ctas): where a pool reads its
 * buckets, as many as copy at the device memory's rate (the copy roles'
 * bound, sched.c choose_roles), so that the others take the pool's first
 * tiles meanwhile; on all of them the copies held every GEMM tile back
 * for the whole dispatch (3 of the 36 ms at 32768 tokens).  Measured
 * (H100, docs/perf-notes.md, twenty-third session): 0.5-0.6% faster at
 * 8192 and 32768 tokens, as the GEMMs beside the copies share device
 * memory with them.  0 (all) otherwise, or with MK_DISPATCH_CTAS=all. */
#define DISPATCH_RING_SMEM (8 * 1024 + 128 + 4 * 16384)

static int dispatch_ctas(const planner *P, const ir_op *op)
{
	int pooled = 0;
	for (int j = 0; j < P->p->nops; j++) {
		const ir_op *mm = &P->p->ops[j];
		pooled |= mm->kind == OP_MATMUL && mm->in[0] == op->out && mm->plan.pool;
	}
	if (!pooled || P->o->dispatch_all)
		return 0;
	const int rpg = P->o->ranks_per_gpu > 0 ? P->o->ranks_per_gpu : 1;
	const int k = cost_copy_ctas(&P->dev, P->dev.mem_gbps / 2 / rpg);
	return k < P->ctas ? k : 0;
}

static void plan_dispatch(planner *P, ir_op *op)
{
	const ir_prog *p = P->p;
	const ir_tensor *ix = &p->tensors[op->in[1]], *xe = &p->tensors[op->out];
	if (!moe_mesh_ok(P, op, &p->tensors[op->in[0]], xe))
		return;
	if (op->drop && p->nodes > 1) {
		/* between nodes a bucket fills in node-offset order, not the
		 * ranks' order the CPU reference drops in */
		diag_error(P->d, op->where, "the 'drop' routing policy between nodes is not built "
			   "yet (nodes = %d); on one node it is", p->nodes);
		P->err = 1;
		return;
	}
	const int64_t E = xe->shape[0], C = xe->shape[1], H = xe->shape[2];
	const int64_t N = ix->local[0] * ix->local[1], len = E + 1 + 2 * N;
	if (len >= INT32_MAX / 2 || C * H >= INT32_MAX) {
		diag_error(P->d, op->where, "dispatch of %lld entries into %lld x %lld slots is too "
			   "large for 32-bit routing tables", (long long)N, (long long)E, (long long)C);
		P->err = 1;
		return;
	}
	if (!moe_smem(P, op, op->experts, 4 * (5 * op->experts + 2)))
		return;
	/* and the bulk copies' ring (mkd_dispatch on sm_90: the rows' sources,
	 * then stages of 16 KB): four stages at least */
	if (op->plan.smem < DISPATCH_RING_SMEM)
		op->plan.smem = DISPATCH_RING_SMEM;
	/* one task per expert and block of slots, as many rows as one task of
	 * the matmul reading the buckets takes: the expert's first tiles start
	 * while its last slots are filled */
	op->plan.moe.block = 128;
	for (int j = 0; j < p->nops; j++) {
		const ir_op *mm = &p->ops[j];
		if (mm->kind == OP_MATMUL && mm->in[0] == op->out && mm->plan.mm.bm > 0)
			op->plan.moe.block = (int64_t)mm->plan.mm.bm * mm->plan.mm.tiles_m;
	}
	op->plan.ctas = dispatch_ctas(P, op);
}

/* Whether nothing reads the rows of bucket tensor t past its expert's
 * tokens: t is a temporary read only as the rows of a bucket matmul (whose
 * tiles past the tokens load nothing and whose other rows are row for row
 * their own) or by a unary elementwise op, either's result such a tensor
 * too (a partly filled tile's rows past the tokens are made of t's), or
 * by combine (which reads a token's slots).  Then a dispatch need not
 * zero those rows nor a bucket matmul store zero tiles there: whatever
 * they hold stays in rows nothing reads (docs/language.md, dispatch). */
static int past_unread(const ir_prog *p, int t, int depth)
{
	if (depth > 64 || p->tensors[t].kind != TK_TEMP)
		return 0;
	for (int j = 0; j < p->nops; j++) {
		const ir_op *op = &p->ops[j];
		if ((op->gate && op->gate - 1 == t) || (op->norm_w && op->norm_w - 1 == t))
			return 0;
		for (int k = 0; k < op->nin; k++) {
			if (op->in[k] != t)
				continue;
			if (k == 0 && op->kind == OP_COMBINE)
				continue;
			if (k == 0 && ((op->kind == OP_MATMUL && op->plan.mm.bucket >= 0) ||
				       (op->nin == 1 && ir_op_class(op->kind) == 'E')) &&
			    past_unread(p, op->out, depth + 1))
				continue;
			return 0;
		}
	}
	return 1;
}

static void plan_combine(planner *P, ir_op *op)
{
	const ir_prog *p = P->p;
	const ir_tensor *ye = &p->tensors[op->in[0]], *ix = &p->tensors[op->in[1]];
	if (!moe_mesh_ok(P, op, &p->tensors[op->out], ye))
		return;
	const int64_t k = ix->local[1], Tl = ix->local[0];
	if (k > 32) {
		diag_error(P->d, op->where, "combine of more than 32 choices per token is not lowered "
			   "yet ('%s' has %lld)", ix->name, (long long)k);
		P->err = 1;
		return;
	}
	if (!moe_smem(P, op, ye->shape[0], 4 * ye->shape[0]))
		return;
	op->plan.moe.block = Tl >= 4096 ? 64 : 16;
}

/* ---- the pass ---------------------------------------------------------------- */

/* Limits of the generated code that are not one op's: tensors it lays out
 * in three dimensions at most. */
static void plan_tensors(planner *P)
{
	for (int t = 0; t < P->p->ntensors && P->gpu; t++) {
		const ir_tensor *x = &P->p->tensors[t];
		if (x->ndim > 3 && !x->folded) {
			diag_error(P->d, x->where, "tensors of more than 3 dimensions cannot be generated "
				   "for the GPU yet ('%s' has %d)", x->name, x->ndim);
			P->err = 1;
		}
	}
}

/* A row op's row blocks (lower_compute.c): 16 KB of rows a task, and at
 * least 8 (a warp a row).  An rmsnorm's keep 8 only where that still gives
 * every CTA a block; else as few as the 16 KB's (one or two rows of a
 * Llama block), which the CTA's warps share (mkd/ew.cuh few_rows), so that
 * the decode MLP's tokens go to as many CTAs: 8 rows a task took 10.9 us
 * on an H100 while every matmul of the block waited (docs/perf-notes.md,
 * thirty-fifth session). */
static void plan_rows(const planner *P, ir_op *op)
{
	const ir_tensor *y = &P->p->tensors[op->out];
	const int64_t rowb = ir_row_bytes(y);
	const int64_t per = rowb > 0 && 16 * 1024 / rowb > 1 ? 16 * 1024 / rowb : 1;
	if (per >= 8) {
		op->plan.rows = per;
	} else if (op->kind != OP_RMSNORM) {
		op->plan.rows = 8;
	} else {  /* between the 16 KB's rows and 8: as many as keep every CTA busy */
		const int64_t rows = ir_tensor_bytes(y) / (rowb ? rowb : 1);  /* every row, batches too */
		const int64_t wave = (rows + P->ctas - 1) / P->ctas;
		op->plan.rows = wave >= 8 ? 8 : wave > per ? wave : per;
	}
}

int plan_run(ir_prog *p, const compile_opts *o, diags *d, arena *a)
{
	static const compile_opts none;
	planner P = {.p = p, .o = o ? o : &none, .d = d, .a = a};
	P.dev = P.o->dev ? *P.o->dev : costmodel_h200();
	P.ctas = P.dev.sms / (P.o->ranks_per_gpu > 0 ? P.o->ranks_per_gpu : 1);
	P.gpu = !P.o->cpu;
	P.cut_lo = arena_alloc(a, IR_MAXCUTS / 2 * sizeof(int64_t));
	if (!P.cut_lo)
		return 1;
	plan_tensors(&P);
	for (int i = 0; i < p->nops; i++) {
		memset(&p->ops[i].plan, 0, sizeof p->ops[i].plan);
		p->ops[i].plan.mm.tmap = p->ops[i].plan.mm.bucket = -1;
		if (p->ops[i].kind == OP_MATMUL)
			plan_matmul(&P, &p->ops[i], walks_wide(&P, &p->ops[i]));
	}
	for (int i = 0; i < p->nops; i++) {
		ir_op *op = &p->ops[i];
		switch (op->kind) {
		case OP_ATTENTION: plan_attention(&P, op); break;
		case OP_REDUCE_SCATTER:
		case OP_ALLREDUCE: plan_reduce(&P, op); break;
		case OP_DISPATCH: plan_dispatch(&P, op); break;
		case OP_COMBINE: plan_combine(&P, op); break;
		case OP_SUM: plan_sum(&P, op); break;
		case OP_MATMUL: break;
		default:
			if (ir_op_class(op->kind) == 'R')  /* a row op (not sum: plan_sum) */
				plan_rows(&P, op);
			op->plan.threads = 256;
			break;
		}
	}
	/* buckets' rows past the tokens: not written where nothing reads them
	 * (MK_ZERO_PAST=1: zeros, as the CPU reference holds) */
	for (int i = 0; i < p->nops; i++) {
		ir_op *op = &p->ops[i];
		if (op->kind == OP_DISPATCH || (op->kind == OP_MATMUL && op->plan.mm.bucket >= 0))
			op->plan.skip_past = P.gpu && !P.o->zero_past && past_unread(p, op->out, 0);
		/* and a pool's tasks there signalled without running: each cost
		 * ~6-10 us of a CTA, half the MoE's tiles (docs/perf-notes.md,
		 * twenty-third session); an opt-in: measured 2-5% slower at
		 * 8192 tokens, 0.5-1.5% faster at 32768 (twenty-fourth) */
		op->plan.signal_past = op->plan.pool && op->plan.skip_past && P.o->pool_skip;
		/* a task signalled without running leaves its cluster's other
		 * CTA alone with the pair */
		if (op->plan.signal_past)
			op->plan.mm.cluster = 1;
	}
	/* the kernel: every CTA can run every task */
	p->threads = 256;
	p->smem = 0;
	p->ntmaps = 0;
	/* setmaxnreg in the engine's 128 x 256 tiles: with one engine instance
	 * (several inlined into one kernel spill), unless MK_WG_TRADE=0.  The
	 * consumers fit the plain 168 registers too (154 used); ptxas keeps
	 * them there even when they trade, since the warpgroups meet again
	 * after each tile (the attention tile's finding, perf-notes
	 * 2026-12-05, seventeenth session): what the trade costs or gives is
	 * to be measured */
	int nwg = 0;
	for (int i = 0; i < p->nops; i++)
		nwg += p->ops[i].kind == OP_MATMUL && p->ops[i].plan.mm.wgmma;
	p->wg_trade = nwg <= 1 && !P.o->no_trade;
	p->wg_staged = P.o->wg_staged;
	p->prefetch = P.o->prefetch;
	for (int i = 0; i < p->nops; i++)
		if (p->ops[i].plan.threads > p->threads)
			p->threads = p->ops[i].plan.threads;
	for (int i = 0; i < p->nops; i++) {
		ir_op *op = &p->ops[i];
		if (op->kind == OP_ATTENTION && op->plan.attn.engine == IR_ATTN_WGMMA) {
			const ir_tensor *q = &p->tensors[op->in[0]];
			wg_attn_fit(&P, op, q->shape[q->ndim - 1], p->threads);
		}
	}
	for (int i = 0; i < p->nops; i++) {
		ir_op *op = &p->ops[i];
		if (op->plan.smem > p->smem)
			p->smem = op->plan.smem;
		const int nm = ir_op_nmaps(op);  /* which: ir.h */
		if (nm && op->kind == OP_MATMUL)
			op->plan.mm.tmap = p->ntmaps;
		else if (nm)
			op->plan.attn.tmap = p->ntmaps;
		p->ntmaps += nm;
	}
	plan_views(p, P.gpu && !P.o->no_views);
	return P.err || a->failed ? 1 : 0;
}
