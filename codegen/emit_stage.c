/* emit_stage.c - the stage functions of compute and copy ops, and of RDMA
 * stages.
 *
 * One function per op, stage_<op>, that runs one task with all threads of
 * the CTA: it maps the task's boxes to this rank (mkd_box_shift,
 * mkd_read_box), finds the addresses (mkd_at) and calls the device library
 * tile (mkd/mma.cuh, wgmma.cuh, copy.cuh, ew.cuh, attn.cuh).  Only the
 * stages with a wgmma pipeline (matmuls, and attention on the Hopper tile)
 * are inlined into the kernel (ptxas serializes a wgmma chain that crosses
 * a call, and setmaxnreg needs it); the others are __noinline__ so that
 * the kernel keeps its registers (cg_stage_head).  An op's RDMA tasks get their own function, rdma_<op>.
 * Also here: the table of TMA tensor maps the Hopper engine reads.
 */
#include "emit_internal.h"

#include <stdio.h>
#include <string.h>

void cg_stage_copy(cg_em *E, const ir_op *op)
{
	const ir_prog *p = E->p;
	const ir_tensor *y = &p->tensors[op->out];
	int es = ir_dtype_size(y->dtype);
	/* docs/copies.md: TMA bulk copies measure best for whole rows (one
	 * contiguous run), 16-byte loads/stores for strided boxes; the bulk
	 * path needs the CTA's shared memory as its ring and falls back to
	 * the vector copy where it cannot run (alignment, too little smem) */
	cg_stage_head(E, op, "copy a box from the rank that holds it");
	sb_printf(E->o,
		  "\tconst mkd_box s = mkd_read_box(rank, t, 0);\n"
		  "\tconst mkd_tensor &S = MK_T[s.tensor], &D = MK_T[T_%s];\n"
		  "\tconst i64 rb = (hi[2] - lo[2]) * %d;  // bytes of one row of the box\n"
		  "\tconst bool whole = rb == D.st[1] * %d && rb == S.st[1] * %d;\n"
		  "\tfor (i64 e = 0; e < hi[0] - lo[0]; e++) {\n"
		  "\t\tchar *d = mkd_at<MK_GPUS>(p, T_%s, D, rank, lo[0] + e, lo[1], lo[2]);\n"
		  "\t\tconst char *f = mkd_at<MK_GPUS>(p, s.tensor, S, s.rank, s.lo[0] + e, s.lo[1], s.lo[2]);\n"
		  "\t\tif (whole && MK_SMEM > 0)\n"
		  "\t\t\tmkd_copy_bulk_2d(d, D.st[1] * %d, f, S.st[1] * %d, hi[1] - lo[1], rb, smem, MK_SMEM);\n"
		  "\t\telse\n"
		  "\t\t\tmkd_copy_2d(d, D.st[1] * %d, f, S.st[1] * %d, hi[1] - lo[1], rb);\n"
		  "\t}\n"
		  "\treturn true;\n}\n\n",
		  y->name, es, es, es, y->name, es, es, es, es);
}

/* Y[box] = sum over the reads (one box of X on each rank of the group). */
void cg_stage_reduce(cg_em *E, const ir_op *op)
{
	const ir_prog *p = E->p;
	const ir_tensor *y = &p->tensors[op->out];
	const ir_tensor *x = &p->tensors[op->in[0]];
	int w = cg_stage_tensor(E, (int)(op - p->ops), CG_W);
	if (w >= 0 && p->tensors[w].dtype != y->dtype) {
		cg_fail(E, "a reduction whose node-partials have another element type", op->stage);
		return;
	}
	cg_stage_head(E, op, "sum one box over the group's ranks, fp32");
	if (w >= 0)  /* one function for both (a second heavy callee makes the kernel spill) */
		sb_printf(E->o,
			  "\t// W_%s tasks write %s, the node-partials\n"
			  "\tconst int yt = t.stage == W_%s ? T_%s : T_%s;\n"
			  "\tif (yt != T_%s)\n"
			  "\t\tmkd_box_shift<MK_NODES, MK_GPUS>(MK_T[yt], rank, t.lo, t.hi, lo, hi);\n",
			  op->stage, p->tensors[w].name, op->stage, p->tensors[w].name, y->name, y->name);
	else
		sb_printf(E->o, "\tconst int yt = T_%s;\n", y->name);
	/* the sources' addresses in shared memory, not registers: the kernel's
	 * inlined GEMM engine needs those, and a callee holding 8-17 pointers
	 * makes the kernel spill around the call */
	sb_printf(E->o,
		  "\tconst mkd_tensor &Y = MK_T[yt];\n"
		  "\t__shared__ const %s *src[%d];\n"
		  "\t__shared__ int ld[%d];\n"
		  "\tconst int rows = (int)(hi[1] - lo[1]), cols = (int)(hi[2] - lo[2]);\n"
		  "\tfor (i64 e = 0; e < hi[0] - lo[0]; e++) {\n"
		  "\t\tif (threadIdx.x < t.nread) {\n"
		  "\t\t\tconst mkd_box s = mkd_read_box(rank, t, threadIdx.x);\n"
		  "\t\t\tsrc[threadIdx.x] = (const %s *)mkd_at<MK_GPUS>(p, s.tensor, MK_T[s.tensor], s.rank,\n"
		  "\t\t\t\t\t\t\t\t\t  s.lo[0] + e, s.lo[1], s.lo[2]);\n"
		  "\t\t\tld[threadIdx.x] = (int)MK_T[s.tensor].st[1];\n"
		  "\t\t}\n"
		  "\t\t__syncthreads();\n"
		  "\t\tmkd_reduce_sum_n(src, ld, t.nread,\n"
		  "\t\t\t(%s *)mkd_at<MK_GPUS>(p, yt, Y, rank, lo[0] + e, lo[1], lo[2]), Y.st[1], rows, cols);\n"
		  "\t\t__syncthreads();\n"
		  "\t}\n"
		  "\treturn true;\n}\n\n",
		  cg_ctype(x->dtype), IR_MAXREDUCE, IR_MAXREDUCE, cg_ctype(x->dtype), cg_ctype(y->dtype));
}

/* O[q rows] = softmax(Q K^T * scale) V over the key blocks (reads 1, 3,
 * ... are K blocks, 2, 4, ... V blocks), each waited on just before use.
 * 16-bit inputs: the tensor-core tile (mkd_fa, 128 rows, state in
 * registers); fp32: the CUDA-core tile (64 rows, state in shared memory). */
/* A split-KV attention (plan.c, flash-decoding): W_ tasks run the tile over
 * one range of keys (reads: Q rows, then K and V of the range) and leave
 * its rows unnormalised, with their max and sum, in slice s of the fp32
 * workspace (mkd_fa::end_part); S_ tasks merge a tile's slices
 * (mkd_attn_merge, split.cuh).  Every read is waited on up front. */
/* mkd_wgmma_tile's template arguments past STAGES, up to the last that is
 * not its default: COLS, GATE (a gate-up tile: both), FULL (plan.c: every
 * tile inside C), MC, STG (2: the epilogue stored by TMA), NORM (an
 * rmsnorm in the tile, expand.c fuse_norms) and ABOX (the plan's a_box,
 * where it is not the tile's A rows) */
static const char *wg_targs(const ir_mm_plan *mp, int gate, int mc, int norm, char *buf, size_t n)
{
	static const char *const dflt[7] = {"false", "false", "false", "1", "MKD_WG_STAGED", "false",
					    "0"};
	char abox[16];
	snprintf(abox, sizeof abox, "%d", mp->a_box != ir_mm_a_rows(mp) ? mp->a_box : 0);
	const char *v[7] = {mp->wg_cols || gate ? "true" : "false", gate ? "true" : "false",
			    mp->full ? "true" : "false", mc > 1 ? "MKD_CLUSTER" : "1",
			    mp->tma_store ? "2" : "MKD_WG_STAGED", norm ? "true" : "false", abox};
	int last = -1;
	for (int i = 0; i < 7; i++)
		if (strcmp(v[i], dflt[i]))
			last = i;
	size_t k = 0;
	buf[0] = 0;
	for (int i = 0; i <= last && k < n; i++)
		k += (size_t)snprintf(buf + k, n - k, ", %s", v[i]);
	return buf;
}

/* The engine's run() arguments past the epilogue: a gate-up tile's act,
 * the tile's place in C's map (TMA stores), the rmsnorm in the tile. */
static const char *wg_tail(const ir_mm_plan *mp, const char *act, int norm, char *buf, size_t n)
{
	snprintf(buf, n, "%s%s%s%s", act || mp->tma_store || norm ? ", " : "",
		 act ? act : mp->tma_store || norm ? "mkd_epi_none()" : "",
		 mp->tma_store ? ", out" : norm ? ", mkd_wg_out()" : "",
		 norm ? ", mkd_wg_norm{nw, (int)K}" : "");
	return buf;
}

/* mkd_fa's template arguments past D and T: the plan's ring, tile rows and
 * copies where they are not the defaults (2 stages, 128 rows, cp.async) */
static void fa_targs(const ir_attn_plan *a, char buf[40])
{
	buf[0] = 0;
	if (a->bulk)
		snprintf(buf, 40, ", %d, %d, %s", a->ring, a->rows,
			 a->bulk == IR_ATTN_MAPS ? "MKD_FA_MAPS" : "MKD_FA_ROWS_BULK");
	else if (a->rows != 128)
		snprintf(buf, 40, ", %d, %d", a->ring, a->rows);
	else if (a->ring != 2)
		snprintf(buf, 40, ", %d", a->ring);
}

/* The 16-bit tile's declaration `fa` (indent: tabs before it): the plan's
 * engine, the Hopper tile on sm_90a with the mma.sync tile for other archs,
 * or the mma.sync tile alone. */
static void attn_tile(cg_em *E, const ir_op *op, const char *indent)
{
	const ir_prog *p = E->p;
	const ir_tensor *q = &p->tensors[op->in[0]];
	const long long D = (long long)q->shape[q->ndim - 1];
	const char *tq = cg_ctype(q->dtype);
	const ir_attn_plan ap = op->plan.attn;
	if (ap.engine == IR_ATTN_WGMMA)
		sb_printf(E->o,
			  "#ifdef MKD_HAS_WGMMA\n"
			  "%smkd_fa_wg<%lld, %s, %d, %d, %d%s> fa((const mkd_tmap *)p.tmaps + (rank - p.rank_base) * MK_NTMAPS + %d,\n"
			  "%s\t(u64)mkd_origin(p, MK_T[T_%s], rank), (u64)mkd_origin(p, MK_T[T_%s], rank),\n"
			  "%s\t(u64)mkd_origin(p, MK_T[T_%s], rank));\n"
			  "#else\n",
			  indent, D, tq, ap.wg_keys, ap.wg_stages, ap.wg_overlap,
			  ap.wg_rotate ? ", 1" : "", ap.tmap, indent, q->name, p->tensors[op->in[1]].name, indent,
			  p->tensors[op->in[2]].name);
	char targs[40];
	fa_targs(&ap, targs);
	sb_printf(E->o, "%smkd_fa<%lld, %s%s> fa;\n%s", indent, D, tq, targs,
		  ap.engine == IR_ATTN_WGMMA ? "#endif\n" : "");
	if (ap.bulk == IR_ATTN_MAPS)
		sb_printf(E->o,
			  "%sfa.maps((const mkd_tmap *)p.tmaps + (rank - p.rank_base) * MK_NTMAPS + %d,\n"
			  "%s\t(u64)mkd_origin(p, MK_T[T_%s], rank), (u64)mkd_origin(p, MK_T[T_%s], rank));\n",
			  indent, ap.tmap, indent, p->tensors[op->in[1]].name, p->tensors[op->in[2]].name);
}

static void stage_attention_split(cg_em *E, const ir_op *op)
{
	const ir_prog *p = E->p;
	const ir_tensor *q = &p->tensors[op->in[0]], *o = &p->tensors[op->out];
	const ir_attn_plan ap = op->plan.attn;
	const ir_tensor *W = &p->tensors[ap.work];
	const int64_t D = q->shape[q->ndim - 1];
	const char *tq = cg_ctype(q->dtype), *to = cg_ctype(o->dtype);
	const double scale = op->scalar != 0 ? op->scalar : 1.0 / __builtin_sqrt((double)D);
	char what[160];
	snprintf(what, sizeof what, "split-KV %d x %lld keys: W_ tasks a range each (tensor cores%s, "
		 "%d stages of keys), S_ the merges", ap.kvsplit, (long long)ap.kvstep,
		 ap.engine == IR_ATTN_WGMMA ? "; TMA + wgmma on sm_90a" : "", ap.ring);
	cg_stage_head(E, op, what);
	sb_printf(E->o, "\tconst mkd_tensor &W = MK_T[T_%s];\n", W->name);
	if (cg_stage_tensor(E, (int)(op - p->ops), CG_W) == ap.work)
		sb_printf(E->o,
			  "\tif (t.stage == W_%s) {  // the tile's rows over one range of keys\n"
			  "\t\tconst mkd_box qb = mkd_read_box(rank, t, 0), kb = mkd_read_box(rank, t, 1),\n"
			  "\t\t\t      vb = mkd_read_box(rank, t, 2);\n"
			  "\t\tmkd_box_shift<MK_NODES, MK_GPUS>(W, rank, t.lo, t.hi, lo, hi);\n"
			  "\t\tconst int rows = (int)(qb.hi[1] - qb.lo[1]);\n"
			  "\t\tconst %s *Qp = (const %s *)mkd_at<MK_GPUS>(p, qb.tensor, MK_T[qb.tensor], qb.rank, qb.lo[0], qb.lo[1], 0);\n"
			  "\t\tconst %s *Kp = (const %s *)mkd_at<MK_GPUS>(p, kb.tensor, MK_T[kb.tensor], kb.rank, kb.lo[0], kb.lo[1], 0);\n"
			  "\t\tconst %s *Vp = (const %s *)mkd_at<MK_GPUS>(p, vb.tensor, MK_T[vb.tensor], vb.rank, vb.lo[0], vb.lo[1], 0);\n",
			  op->stage, tq, tq, tq, tq, tq, tq);
	if (cg_stage_tensor(E, (int)(op - p->ops), CG_W) == ap.work) {
		attn_tile(E, op, "\t\t");
		sb_printf(E->o,
			  "\t\tfa.begin(Qp, MK_T[qb.tensor].st[1], rows, %.9gf, smem);\n"
			  "\t\tfa.block(Kp, Vp, MK_T[kb.tensor].st[1], MK_T[vb.tensor].st[1], (int)(kb.hi[1] - kb.lo[1]), rows, %s, qb.lo[1], kb.lo[1]);\n"
			  "\t\tfa.end_part((float *)mkd_at<MK_GPUS>(p, T_%s, W, rank, lo[0], lo[1], 0), W.st[1], rows);\n"
			  "\t\treturn true;\n"
			  "\t}\n",
			  scale, op->causal ? "true" : "false", W->name);
	}
	sb_printf(E->o,
		  "\t// the merge of the tile's %d ranges\n"
		  "\tconst mkd_box wb = mkd_read_box(rank, t, 0);\n"
		  "\tmkd_attn_merge((const float *)mkd_at<MK_GPUS>(p, T_%s, W, rank, 0, wb.lo[1], 0),\n"
		  "\t\tW.st[0], %d, %lld,\n"
		  "\t\t(%s *)mkd_at<MK_GPUS>(p, T_%s, MK_T[T_%s], rank, lo[0], lo[1], 0), MK_T[T_%s].st[1],\n"
		  "\t\t(int)(hi[1] - lo[1]));\n"
		  "\treturn true;\n}\n\n",
		  ap.kvsplit, W->name, ap.kvsplit, (long long)D, to, o->name, o->name, o->name);
}

void cg_stage_attention(cg_em *E, const ir_op *op)
{
	if (op->plan.attn.kvsplit > 1) {
		stage_attention_split(E, op);
		return;
	}
	const ir_prog *p = E->p;
	const ir_tensor *q = &p->tensors[op->in[0]], *k = &p->tensors[op->in[1]],
			*o = &p->tensors[op->out];
	int64_t D = q->shape[q->ndim - 1];
	const int tc = op->plan.attn.tensor_cores;  /* plan.c: D a multiple of 32, at most 256 */
	const int causal = op->causal ? 1 : 0;
	const char *tq = cg_ctype(q->dtype), *tk = cg_ctype(k->dtype), *to = cg_ctype(o->dtype);
	double scale = op->scalar != 0 ? op->scalar : 1.0 / __builtin_sqrt((double)D);
	cg_stage_head(E, op, !tc ? "online softmax over the key blocks as they arrive"
			     : op->plan.attn.engine == IR_ATTN_WGMMA
			     ? "online softmax over the key blocks as they arrive (tensor cores; TMA + wgmma on sm_90a)"
			     : "online softmax over the key blocks as they arrive (tensor cores)");
	sb_printf(E->o,
		  "\tconst mkd_box qb = mkd_read_box(rank, t, 0);\n"
		  "\tconst %s *Qp = (const %s *)mkd_at<MK_GPUS>(p, qb.tensor, MK_T[qb.tensor], qb.rank, qb.lo[0], qb.lo[1], 0);\n"
		  "\tconst int rows = (int)(hi[1] - lo[1]);\n"
		  "\t__shared__ int qok;  // the queries, when made in this kernel\n"
		  "\tif (threadIdx.x == 0) {\n"
		  "\t\tconst int wq = MK_READS[t.read0].wait;\n"
		  "\t\tqok = wq == -3 ? mkd_task_wait_all(p, rank, cta, i, t, epoch)\n"
		  "\t\t      : wq >= 0 ? mkd_task_wait(p, rank, cta, i, t, wq, epoch) : true;\n"
		  "\t}\n"
		  "\t__syncthreads();\n"
		  "\tif (!qok)\n"
		  "\t\treturn false;\n",
		  tq, tq);
	if (tc) {
		sb_puts(E->o, "\t__shared__ int good;\n");
		attn_tile(E, op, "\t");
		sb_printf(E->o, "\tfa.begin(Qp, MK_T[qb.tensor].st[1], rows, %.9gf, smem);\n", scale);
	} else
		sb_printf(E->o,
			  "\tmkd_attn_state<%lld> *st = (mkd_attn_state<%lld> *)smem;\n"
			  "\tint &good = st->ok;\n"
			  "\tmkd_attn_begin<%lld>(st, Qp, MK_T[qb.tensor].st[1], rows, %.9gf);\n",
			  (long long)D, (long long)D, (long long)D, scale);
	/* through the blocks the tile's first and last query as ints, the
	 * box not (beside a matmul on the engine, 168 registers a thread, it
	 * was spilled: samples/llama_layer.mk) */
	sb_printf(E->o,
		  "\tconst int q0 = (int)lo[1], qlast = q0 + rows - 1;\n"
		  "\tfor (int b = 1; b + 1 < t.nread; b += 2) {\n"
		  "\t\tconst mkd_box kb = mkd_read_box(rank, t, b), vb = mkd_read_box(rank, t, b + 1);\n"
		  "\t\tif (%d && kb.lo[1] > qlast)\n"
		  "\t\t\tcontinue;  // causal: the whole block lies after the last query\n"
		  "\t\tif (threadIdx.x == 0) {\n"
		  "\t\t\tbool ok = true;\n"
		  "\t\t\tconst int wk = MK_READS[t.read0 + b].wait, wv = MK_READS[t.read0 + b + 1].wait;\n"
		  "\t\t\tif (wk == -3 || wv == -3)  // several RDMA writes deliver it\n"
		  "\t\t\t\tok = mkd_task_wait_all(p, rank, cta, i, t, epoch);\n"
		  "\t\t\tif (ok && wk >= 0)\n"
		  "\t\t\t\tok = mkd_task_wait(p, rank, cta, i, t, wk, epoch);\n"
		  "\t\t\tif (ok && wv >= 0)\n"
		  "\t\t\t\tok = mkd_task_wait(p, rank, cta, i, t, wv, epoch);\n"
		  "\t\t\tgood = ok;\n"
		  "\t\t}\n"
		  "\t\t__syncthreads();\n"
		  "\t\tif (!good)%s\n"
		  "\t\tconst %s *Kp = (const %s *)mkd_at<MK_GPUS>(p, kb.tensor, MK_T[kb.tensor], kb.rank, kb.lo[0], kb.lo[1], 0);\n"
		  "\t\tconst %s *Vp = (const %s *)mkd_at<MK_GPUS>(p, vb.tensor, MK_T[vb.tensor], vb.rank, vb.lo[0], vb.lo[1], 0);\n",
		  causal, tc ? " {\n\t\t\tfa.quit();  // the tile's barriers back\n\t\t\treturn false;\n\t\t}"
			      : "\n\t\t\treturn false;", tk, tk, tk, tk);
	if (tc)
		sb_printf(E->o,
			  "\t\tfa.block(Kp, Vp, MK_T[kb.tensor].st[1], MK_T[vb.tensor].st[1], (int)(kb.hi[1] - kb.lo[1]), rows, %s, q0, kb.lo[1]);\n",
			  causal ? "true" : "false");
	else
		sb_printf(E->o,
			  "\t\tmkd_attn_block<%lld>(st, Kp, Vp, MK_T[kb.tensor].st[1], MK_T[vb.tensor].st[1], (int)(kb.hi[1] - kb.lo[1]), rows, %d, q0, kb.lo[1]);\n",
			  (long long)D, causal);
	/* the box again and the output's pointer after the blocks: not live
	 * through them */
	sb_printf(E->o, "\t}\n\tmkd_box_shift<MK_NODES, MK_GPUS>(MK_T[T_%s], rank, t.lo, t.hi, lo, hi);\n"
		  "\t%s *Op = (%s *)mkd_at<MK_GPUS>(p, T_%s, MK_T[T_%s], rank, lo[0], lo[1], 0);\n",
		  o->name, to, to, o->name, o->name);
	if (tc)
		sb_printf(E->o, "\tfa.end(Op, MK_T[T_%s].st[1], (int)(hi[1] - lo[1]));\n", o->name);
	else
		sb_printf(E->o, "\tmkd_attn_end<%lld>(st, Op, MK_T[T_%s].st[1], (int)(hi[1] - lo[1]));\n",
			  (long long)D, o->name);
	sb_puts(E->o, "\treturn true;\n}\n\n");
}

/* Y[rows] = sum of each row of X. */
void cg_stage_sum(cg_em *E, const ir_op *op)
{
	const ir_prog *p = E->p;
	const ir_tensor *x = &p->tensors[op->in[0]], *y = &p->tensors[op->out];
	if (op->dim != x->ndim - 1) {
		/* over another dim: X's box, 3-D as the device sees it, has the
		 * summed dim k and two free ones a < b, which are Y's dims 1, 2 */
		const int k = 3 - x->ndim + op->dim, a = k == 0 ? 1 : 0, b = k == 2 ? 1 : 2;
		char what[64];
		snprintf(what, sizeof what, "sums over dim %d", op->dim);
		cg_stage_head(E, op, what);
		sb_printf(E->o,
			  "\tconst mkd_box s = mkd_read_box(rank, t, 0);\n"
			  "\tconst mkd_tensor &X = MK_T[T_%s], &Y = MK_T[T_%s];\n"
			  "\tconst i64 st[3] = {X.st[0], X.st[1], 1};\n"
			  "\tmkd_axis_sum((const %s *)mkd_at<MK_GPUS>(p, T_%s, X, rank, s.lo[0], s.lo[1], s.lo[2]),\n"
			  "\t\tst[%d], st[%d], st[%d], (int)(s.hi[%d] - s.lo[%d]), (int)(s.hi[%d] - s.lo[%d]),\n"
			  "\t\t(int)(s.hi[%d] - s.lo[%d]),\n"
			  "\t\t(%s *)mkd_at<MK_GPUS>(p, T_%s, Y, rank, lo[0], lo[1], lo[2]), Y.st[1]);\n"
			  "\treturn true;\n}\n\n",
			  x->name, y->name, cg_ctype(x->dtype), x->name, a, b, k, a, a, b, b, k, k,
			  cg_ctype(y->dtype), y->name);
		return;
	}
	cg_stage_head(E, op, "row sums");
	sb_printf(E->o,
		  "\tconst mkd_box s = mkd_read_box(rank, t, 0);\n"
		  "\tfor (i64 e = 0; e < s.hi[0] - s.lo[0]; e++)\n"
		  "\t\tmkd_row_sum((const %s *)mkd_at<MK_GPUS>(p, T_%s, MK_T[T_%s], rank, s.lo[0] + e, s.lo[1], s.lo[2]),\n"
		  "\t\t\tMK_T[T_%s].st[1], (%s *)mkd_at<MK_GPUS>(p, T_%s, MK_T[T_%s], rank, %s),\n"
		  "\t\t\t(int)(s.hi[1] - s.lo[1]), (int)(s.hi[2] - s.lo[2]));\n"
		  "\treturn true;\n}\n\n",
		  cg_ctype(x->dtype), x->name, x->name, x->name, cg_ctype(y->dtype), y->name, y->name,
		  y->ndim == 1 ? "0, 0, s.lo[1]" : "0, s.lo[0] + e, s.lo[1]");
}

/* The matrix tensor t's map covers: rows of the storage holding it, row
 * stride ld, from its origin.  A head of a 3-D tensor starts a whole
 * number of rows further (its own storage, or a view the plan lets a
 * matmul or the Hopper attention tile read: plan_view.c, reader_ok). */
static cg_tmap tmap_of(const ir_prog *p, int t, int box_rows, int box_cols)
{
	const ir_tensor *x = &p->tensors[t];
	const int nd = x->ndim;
	cg_tmap m = {t, x->root, (long long)x->off, 1, (long long)x->local[nd - 1],
		     nd > 1 ? (long long)x->st[nd - 2] : (long long)x->local[nd - 1], box_rows,
		     box_cols};
	if (nd == 2)
		m.rows = x->local[0];
	else if (nd == 3)
		m.rows = (long long)((x->local[0] - 1) * (x->st[0] / m.ld) + x->local[1]);
	return m;
}

int cg_tmaps(const ir_sched *s, cg_tmap *out, int max)
{
	const ir_prog *p = s->prog;
	for (int i = 0; i < p->nops; i++) {
		const ir_op *op = &p->ops[i];
		const int n = op->plan.mm.tmap;  /* plan.c numbers them */
		if (op->kind != OP_MATMUL || !ir_op_nmaps(op) || !out || n + ir_op_nmaps(op) > max)
			continue;
		/* A's box: the plan's a_box (mkd_wgmma_tile's A_BOX) */
		out[n] = tmap_of(p, op->in[0], op->plan.mm.a_box, 64);
		out[n + 1] = tmap_of(p, op->in[1], 64, 64);
		if (op->gate)  /* a gate-up tile's gate weight, boxes as B's */
			out[n + 2] = tmap_of(p, op->gate - 1, 64, 64);
		else if (op->plan.mm.tma_store)  /* C's: a warpgroup's 64 rows, 128 bytes of columns */
			out[n + 2] = tmap_of(p, op->out, 64,
					     128 / ir_dtype_size(p->tensors[op->out].dtype));
	}
	/* the Hopper attention tile's Q, K and V (mkd/attn_wg.cuh); a 16-row
	 * tile's K and V (mkd/attn.cuh, MKD_FA_MAPS) */
	for (int i = 0; i < p->nops; i++) {
		const ir_op *op = &p->ops[i];
		const ir_attn_plan *a = &op->plan.attn;
		const int n = a->tmap, nm = ir_op_nmaps(op), wg = a->engine == IR_ATTN_WGMMA;
		if (op->kind != OP_ATTENTION || !nm || !out || n < 0 || n + nm > max)
			continue;
		const int first = 3 - nm;  /* Q's map: the Hopper tile's alone */
		for (int k = first; k < 3; k++)
			out[n + k - first] = tmap_of(p, op->in[k], k == 0 ? 128 : wg ? a->wg_keys : a->keys,
						     64);
	}
	return p->ntmaps;
}

/* The device functor of an elementwise op (ew.cuh). */
static const char *functor(cg_em *E, const ir_op *op, char *buf, size_t n)
{
	switch (op->kind) {
	case OP_RELU: return "mkd_relu()";
	case OP_SILU: return "mkd_silu()";
	case OP_GELU: return "mkd_gelu()";
	case OP_GELU_TANH: return "mkd_gelu_tanh()";
	case OP_CAST: return "mkd_ident()";
	case OP_SCALE: {
		char f[48];
		snprintf(buf, n, "mkd_scale{%s}", cg_flit(op->scalar, f, sizeof f));
		return buf;
	}
	case OP_ADD: return "mkd_add()";
	case OP_MUL: return "mkd_mul()";
	default: cg_fail(E, "no device functor for op", ir_op_name(op->kind)); return "";
	}
}

/* One step of a fused epilogue, as ir_op keeps it (1 + the op's kind, 0:
 * none, the identity): the functor's constructor in ctor, its type (the
 * constructor up to its parenthesis or brace) in type. */
static void epi_step(cg_em *E, int kind1, double scalar, char *ctor, char *type)
{
	ir_op u = {0};
	u.kind = kind1 ? (ir_opkind)(kind1 - 1) : OP_CAST;  /* OP_CAST: mkd_ident() */
	u.scalar = scalar;
	char fb[64];
	snprintf(ctor, 64, "%s", functor(E, &u, fb, sizeof fb));
	snprintf(type, 64, "%.*s", (int)strcspn(ctor, "({"), ctor);
}

/* The epilogue functor of matmul op (the ops compiler/expand.c fused into
 * it; mma.cuh), as an expression.  With an add or mul, its operand's
 * pointer at the tile (lo[0], R, N; a bias: column N, row stride 0) is
 * declared first, as `epi`, and the expression is that name. */
static const char *epilogue(cg_em *E, const ir_op *op, const char *R, const char *N,
			    char *buf, size_t n)
{
	char f[64], ft[64], b[64], bt[64], g[64], gt[64];
	epi_step(E, op->epi, op->epi_scalar, f, ft);
	if (!op->epi2) {
		if (op->epi)
			snprintf(buf, n, "mkd_epi1<%s>{%s}", ft, f);
		else
			snprintf(buf, n, "mkd_epi_none()");
		return buf;
	}
	const ir_tensor *x = &E->p->tensors[op->in[2]];
	const int bias = x->ndim == 1;  /* over the columns */
	epi_step(E, op->epi2, 0, b, bt);
	epi_step(E, op->epi3, op->epi3_scalar, g, gt);
	sb_printf(E->o,
		  "\tconst mkd_tensor &X2 = MK_T[T_%s];  // %s's other operand, read in the epilogue\n"
		  "\tconst mkd_epi2<%s, %s, %s, %s> epi{%s,\n"
		  "\t\t(const %s *)mkd_at<MK_GPUS>(p, T_%s, X2, rank, %s, %s, %s), %s, %s};\n",
		  x->name, ir_op_name((ir_opkind)(op->epi2 - 1)), ft, bt, cg_ctype(x->dtype), gt, f,
		  cg_ctype(x->dtype), x->name, bias ? "0" : "lo[0]", bias ? "0" : R, N,
		  bias ? "0 /* a bias: every row the same */" : "(int)X2.st[1]", g);
	snprintf(buf, n, "epi");
	return buf;
}

/* What the epilogue does, for the stage's comment. */
static void epilogue_what(const cg_em *E, const ir_op *op, char *what, size_t nw)
{
	char eb[160];
	size_t n = strlen(what);
	if (ir_has_epilogue(op))
		snprintf(what + n, nw - n, "; then %s in the epilogue",
			 ir_epilogue_text(E->p, op, eb, sizeof eb));
}

/* The Hopper engine on task i's tile where the plan lets the ring go on
 * into the next task (carry) or the engine wait for its operands itself
 * (late): `loads(j)` gives task j's loads (its body: lines at indent in,
 * one deeper), thread 0 asks for the next task's through the second
 * argument (a task of the stage kind_stage, "S" or "W" and the op's
 * stage name), and the waits come third.  ta, tb, tx: the tensors of A, B
 * and the epilogue's operand (NULL: none). */
static void wg_run(cg_em *E, const char *in, const char *kind, const char *stage,
		   const ir_mm_plan *mp, const char *tin,
		   const char *tout, const char *body, const char *dst, const char *epi,
		   const char *ta, const char *tb, const char *tx, const char *act,
		   const char *empty, int mc, int norm)
{
	/* act: a gate-up tile's unary op on A Wg (the engine's BN is 128: 64
	 * columns of each weight), NULL for any other tile; empty: the body
	 * of a test whether task j's tile is skipped (past a bucket's
	 * tokens), NULL where none is */
	char targs[96];
	sb_printf(E->o,
		  "%s// task j's loads: this one's, or the next task's, which may start early\n"
		  "%sauto loads = [&](int j) {\n%s%s};\n", in, in, body, in);
	if (empty && mp->carry)
		sb_printf(E->o, "%s// whether task j skips its tile: nothing to load early\n"
			  "%sauto empty = [&](int j) {\n%s%s};\n", in, in, empty, in);
	sb_printf(E->o,
		  "%sif (!mkd_wgmma_tile<%s, %s, %d, %d, 64, %d%s>::run(loads(i), mkd_wg_key(i, 0), ",
		  in, tin, tout, mp->bm, act ? 128 : mp->bn, mp->wg_stages,
		  wg_targs(mp, act != NULL, mc, norm, targs, sizeof targs));
	if (mp->carry)
		sb_printf(E->o,
			  "[&](mkd_wg_loads &n) -> i64 {\n"
			  "%s\t\tconst int j = mkd_next_ready(p, rank, %s_%s, epoch);\n"
			  "%s\t\tif (j < 0%s)\n"
			  "%s\t\t\treturn -1;\n"
			  "%s\t\tn = loads(j);\n"
			  "%s\t\treturn mkd_wg_key(j, 0);\n"
			  "%s\t},\n", in, kind, stage, in, empty ? " || empty(j)" : "", in, in, in, in);
	else
		sb_puts(E->o, "mkd_wg_last(),\n");
	if (mp->late)
		sb_printf(E->o, "%s\tmkd_mm_waits<%s>{p, rank, cta, i, epoch, T_%s, T_%s, %s%s},\n", in,
			  tx ? "true" : "false", ta, tb, tx ? "T_" : "-1", tx ? tx : "");
	else
		sb_printf(E->o, "%s\tmkd_wg_waited(),\n", in);
	char tail[160];
	sb_printf(E->o, "%s\t%s, rows, cols, smem, %s%s))\n%s\treturn false;\n", in, dst, epi,
		  wg_tail(mp, act, norm, tail, sizeof tail), in);
}

/* Lines: the tile's origin in C's tensor map (tm + 2), as `out`, where the
 * plan stores the epilogue by TMA (its rows: heads stacked, as tmap_of
 * maps them; R, N: the tile's first row and column). */
static void wg_out(cg_em *E, const ir_mm_plan *mp, const char *R, const char *N)
{
	if (!mp->tma_store)
		return;
	sb_printf(E->o,
		  "\t// the tile in C's tensor map: its epilogue goes out by TMA stores\n"
		  "\tconst mkd_wg_out out{tm + 2,\n"
		  "\t\t(int)((lo[0] - mkd_base<MK_GPUS>(C, 0, rank)) * C.local[1] + %s - mkd_base<MK_GPUS>(C, 1, rank)),\n"
		  "\t\t(int)(%s - mkd_base<MK_GPUS>(C, 2, rank))};\n", R, N);
}

/* Lambda lines: task j's box of C on this rank, as l and h. */
static const char TASK_BOX[] =
	"\t\ti64 l[3], h[3];\n"
	"\t\tmkd_box_shift<MK_NODES, MK_GPUS>(C, rank, MK_TASKS[j].lo, MK_TASKS[j].hi, l, h);\n";

/* The engine's loads of a tile of C at row `row` and column `col` (of task
 * j's box l): A's rows from its bucket or batch l[0], all of K; B's K rows
 * of batch b0 from its column; `more` ends the initializer (a gate-up
 * tile's third map). */
static void tile_loads(char *buf, size_t n, const char *row, const char *col, const char *b0,
		       const char *more)
{
	snprintf(buf, n,
		 "mkd_wg_loads{tm, tm + 1,\n"
		 "\t\t\t(int)((l[0] - mkd_base<MK_GPUS>(A, 0, rank)) * A.local[1] + %s - mkd_base<MK_GPUS>(A, 1, rank)), 0,\n"
		 "\t\t\t(int)(%s * B.local[1]), (int)(%s - mkd_base<MK_GPUS>(B, 2, rank)), (int)((K + 63) / 64)%s}",
		 row, b0, col, more);
}

/* A split-K matmul (plan.c): W_ tasks compute a partial tile over one K
 * range into slice s of the fp32 workspace (the engine with fp32 out, no
 * epilogue); S_ tasks add a tile's slices, apply the epilogue and store
 * (mkd_sumk, split.cuh).  Boxes come from the reads: A's rows and K range
 * (read 0), B's K range and columns (read 1); a sum's workspace box is
 * its read 0. */
static void stage_matmul_split(cg_em *E, const ir_op *op, char *what, size_t nw)
{
	const ir_prog *p = E->p;
	const ir_tensor *A = &p->tensors[op->in[0]], *B = &p->tensors[op->in[1]],
			*C = &p->tensors[op->out];
	const ir_mm_plan mp = op->plan.mm;
	const ir_tensor *W = &p->tensors[mp.work];
	const int wst = cg_stage_tensor(E, (int)(op - p->ops), CG_W) == mp.work;
	size_t n = strlen(what);
	snprintf(what + n, nw - n, "; split-K %d x %lld: W_ tasks the partials, S_ the sums",
		 mp.ksplit, (long long)mp.kstep);
	cg_stage_head(E, op, what);
	sb_printf(E->o,
		  "\tconst mkd_tensor &A = MK_T[T_%s], &B = MK_T[T_%s], &W = MK_T[T_%s];\n",
		  A->name, B->name, W->name);
	if (wst) {
		sb_printf(E->o,
			  "\tif (t.stage == W_%s) {  // a partial: rows x K range into slice s of %s\n"
			  "\t\tconst mkd_box ab = mkd_read_box(rank, t, 0), bb = mkd_read_box(rank, t, 1);\n"
			  "\t\tmkd_box_shift<MK_NODES, MK_GPUS>(W, rank, t.lo, t.hi, lo, hi);\n"
			  "\t\tfloat *c = (float *)mkd_at<MK_GPUS>(p, T_%s, W, rank, lo[0], lo[1], lo[2]);\n"
			  "\t\tconst int rows = (int)(hi[1] - lo[1]), cols = (int)(hi[2] - lo[2]);\n",
			  op->stage, W->name, W->name);
		if (mp.wgmma && (mp.carry || mp.late)) {  /* plan.c */
			sb_printf(E->o,
				  "#ifdef MKD_HAS_WGMMA\n"
				  "\t\tconst mkd_tmap *tm = (const mkd_tmap *)p.tmaps + (rank - p.rank_base) * MK_NTMAPS + %d;\n",
				  mp.tmap);
			wg_run(E, "\t\t", "W", op->stage, &mp, cg_ctype(A->dtype), "float",
			       "\t\t\tconst mkd_box ja = mkd_read_box(rank, MK_TASKS[j], 0), jb = mkd_read_box(rank, MK_TASKS[j], 1);\n"
			       "\t\t\treturn mkd_wg_loads{tm, tm + 1, (int)(ja.lo[1] - mkd_base<MK_GPUS>(A, 1, rank)),\n"
			       "\t\t\t\t(int)(ja.lo[2] - mkd_base<MK_GPUS>(A, 2, rank)), (int)(jb.lo[1] - mkd_base<MK_GPUS>(B, 1, rank)),\n"
			       "\t\t\t\t(int)(jb.lo[2] - mkd_base<MK_GPUS>(B, 2, rank)), (int)((ja.hi[2] - ja.lo[2] + 63) / 64)};\n",
			       "c, W.st[1]", "mkd_epi_none()", A->name, B->name, NULL, NULL, NULL, 1, 0);
			sb_puts(E->o, "#else\n");
		}
		else if (mp.wgmma)
			sb_printf(E->o,
				  "#ifdef MKD_HAS_WGMMA\n"
				  "\t\tconst mkd_tmap *tm = (const mkd_tmap *)p.tmaps + (rank - p.rank_base) * MK_NTMAPS + %d;\n"
				  "\t\tconst int a_row = (int)(ab.lo[1] - mkd_base<MK_GPUS>(A, 1, rank));\n"
				  "\t\tconst int a_col = (int)(ab.lo[2] - mkd_base<MK_GPUS>(A, 2, rank));\n"
				  "\t\tconst int b_row = (int)(bb.lo[1] - mkd_base<MK_GPUS>(B, 1, rank));\n"
				  "\t\tconst int b_col = (int)(bb.lo[2] - mkd_base<MK_GPUS>(B, 2, rank));\n"
				  "\t\tconst int kn = (int)(ab.hi[2] - ab.lo[2]);\n"
				  "\t\tmkd_wgmma_tile<%s, float, %d, %d, 64, %d%s>::run(tm, a_row, a_col, tm + 1, b_row, b_col, kn,\n"
				  "\t\t\tc, W.st[1], rows, cols, smem, mkd_epi_none());\n"
				  "#else\n",
				  mp.tmap, cg_ctype(A->dtype), mp.bm, mp.bn, mp.wg_stages, mp.wg_cols ? ", true" : "");
		sb_printf(E->o,
			  "\t\tconst int kn = (int)(ab.hi[2] - ab.lo[2]);\n"
			  "\t\tconst %s *a = (const %s *)mkd_at<MK_GPUS>(p, T_%s, A, rank, ab.lo[0], ab.lo[1], ab.lo[2]);\n"
			  "\t\tconst %s *b = (const %s *)mkd_at<MK_GPUS>(p, T_%s, B, rank, bb.lo[0], bb.lo[1], bb.lo[2]);\n"
			  "\t\tmkd_mma_tile<%s, float, %d, %d, %d, %d>::run(a, A.st[1], b, B.st[1], c, W.st[1],\n"
			  "\t\t\trows, cols, kn, 0, 0, smem, mkd_epi_none());\n%s"
			  "\t\treturn true;\n"
			  "\t}\n",
			  cg_ctype(A->dtype), cg_ctype(A->dtype), A->name,
			  cg_ctype(B->dtype), cg_ctype(B->dtype), B->name,
			  cg_ctype(A->dtype), mp.bm, mp.bn, mp.bk, mp.stages, mp.wgmma ? "#endif\n" : "");
	}
	sb_printf(E->o,
		  "\t// the sum of the tile's %d partials\n"
		  "\tconst mkd_box wb = mkd_read_box(rank, t, 0);\n"
		  "\tconst mkd_tensor &C = MK_T[T_%s];\n", mp.ksplit, C->name);
	char eb[192];
	const char *epi = epilogue(E, op, "lo[1]", "lo[2]", eb, sizeof eb);
	sb_printf(E->o,
		  "\tmkd_sumk((const float *)mkd_at<MK_GPUS>(p, T_%s, W, rank, 0, wb.lo[1], wb.lo[2]),\n"
		  "\t\tW.st[0], %d, W.st[1],\n"
		  "\t\t(%s *)mkd_at<MK_GPUS>(p, T_%s, C, rank, lo[0], lo[1], lo[2]), C.st[1],\n"
		  "\t\t(int)(hi[1] - lo[1]), (int)(hi[2] - lo[2]), %s);\n"
		  "\treturn true;\n}\n\n",
		  W->name, mp.ksplit, cg_ctype(C->dtype), C->name, epi);
}

int cg_bucket_rows(const cg_em *E, const ir_op *op, const char *e, char *buf, size_t n)
{
	const ir_prog *p = E->p;
	const int dop = op->kind == OP_MATMUL ? op->plan.mm.bucket : -1;
	const int rt = dop >= 0 ? p->ops[dop].route1 - 1 : -1;
	/* every rank's count, or between nodes every source's on this node */
	if (rt >= 0 && p->ops[dop].rroute1)
		snprintf(buf, n, "mkd_bucket_rows_nodes<MK_NODES, MK_GPUS>(p, T_%s, T_%s, %lld, (int)%s, rank)",
			 p->tensors[rt].name, p->tensors[p->ops[dop].rroute1 - 1].name,
			 (long long)p->tensors[p->ops[dop].rroute1 - 1].local[1], e);
	else if (rt >= 0)
		snprintf(buf, n, "mkd_bucket_rows(p, T_%s, MK_WORLD, (int)%s)", p->tensors[rt].name, e);
	else if (n)
		buf[0] = 0;
	return rt;
}

void cg_stage_matmul(cg_em *E, const ir_op *op)
{
	char targs[96];  /* mkd_wgmma_tile's template arguments past STAGES */
	const ir_prog *p = E->p;
	const ir_tensor *A = &p->tensors[op->in[0]], *B = &p->tensors[op->in[1]],
			*C = &p->tensors[op->out];
	const ir_mm_plan mp = op->plan.mm;  /* plan.c */
	char what[256];
	if (mp.wgmma)
		snprintf(what, sizeof what, "tile %d x %d x 64: TMA + wgmma, %d-stage ring on sm_90a%s; "
			 "mma.sync elsewhere", mp.bm, mp.bn, mp.wg_stages,
			 mp.wg_cols ? ", warpgroups split the columns" : "");
	else
		snprintf(what, sizeof what, "tile %d x %d x %d, %d-stage ring (mma.sync)", mp.bm, mp.bn,
			 mp.bk, mp.stages);
	if (op->norm) {  /* expand.c fuse_norms */
		size_t n = strlen(what);
		snprintf(what + n, sizeof what - n, "; A = rmsnorm(%s%s%s) in the tile", A->name,
			 op->norm_w ? ", " : "", op->norm_w ? p->tensors[op->norm_w - 1].name : "");
	}
	epilogue_what(E, op, what, sizeof what);
	/* a task of several tiles walks them row tile by row tile, column
	 * tile by column tile (lower.c: the `tasks` bound) */
	const int walk = mp.tiles_m * mp.tiles_n > 1;
	/* where tasks walk several tiles, the engine's ring goes on along the
	 * stage's loop over them (plan.c: carry): `tile` says which tile comes
	 * next, and whether it is loaded (past a bucket's tokens it is not) */
	const int wcarry = mp.wgmma && mp.carry && !mp.late && !op->gate && walk;
	if (walk) {
		size_t n = strlen(what);
		snprintf(what + n, sizeof what - n, "; up to %d x %d tiles a task", mp.tiles_m,
			 mp.tiles_n);
	}
	if (mp.ksplit > 1) {
		stage_matmul_split(E, op, what, sizeof what);
		return;
	}
	const char *R = walk ? "r0" : "lo[1]", *N = walk ? "n0" : "lo[2]";
	/* the stage whose tasks run this engine is the op's own, S_ (only a
	 * split has others, its W_ partials) */
	if (cg_stage_find(E, (int)(op - p->ops), CG_W) >= 0) {
		cg_fail(E, "an unsplit matmul with tasks of a second stage", op->stage);
		return;
	}
	/* a pool's tiles in pairs on 2-CTA clusters (plan.c mm_cluster) */
	const int mc = cg_op_cluster(E, op);
	if (mc > 1 && (!mp.wgmma || mp.late || op->gate || mp.tiles_m > 1 ||
		       (op->plan.pool && (walk || mp.carry)))) {
		cg_fail(E, "a paired matmul's tiles walk rows or wait per operand, or a pool's carry",
			op->stage);
		return;
	}
	/* inlined into the kernel: the engine's wgmma chain and setmaxnreg need it */
	cg_stage_head(E, op, what);
	sb_printf(E->o,
		  "\tconst mkd_tensor &A = MK_T[T_%s], &B = MK_T[T_%s], &C = MK_T[T_%s];\n"
		  "\tconst i64 k0 = mkd_base<MK_GPUS>(A, 2, rank), K = A.local[2];\n",
		  A->name, B->name, C->name);
	char rows_of[320], rows_of_l[320];  /* of the expert lo[0], l[0] */
	const int rt = cg_bucket_rows(E, op, "lo[0]", rows_of, sizeof rows_of);
	cg_bucket_rows(E, op, "l[0]", rows_of_l, sizeof rows_of_l);
	const char *b0 = B->ndim == 3 ? "(l[0] - mkd_base<MK_GPUS>(B, 0, rank))" : "0";
	strbuf body, *o = E->o;
	sb_init(&body);
	if (walk) {
		if (rt >= 0)
			sb_printf(o, "\tconst int filled = %s;\n", rows_of);
		if (wcarry) {
			/* a bucket's tile: its rows with tokens (the engine's
			 * warpgroups past them multiply nothing) */
			char past[400] = "", ld[600], fl[400] = "";
			if (rt >= 0) {
				snprintf(fl, sizeof fl, "\t\tconst i64 f = %s;\n", rows_of_l);
				snprintf(past, sizeof past, " || r >= f");
			}
			tile_loads(ld, sizeof ld, "r", "c", b0, rt >= 0 ? ", nullptr, (int)(f - r)" : "");
			sb_printf(o,
				  "#ifdef MKD_HAS_WGMMA\n"
				  "\tconst mkd_tmap *tm = (const mkd_tmap *)p.tmaps + (rank - p.rank_base) * MK_NTMAPS + %d;\n"
				  "\t// tile q of task j's walk (row tile by row tile, column tile by column\n"
				  "\t// tile): its loads, or false past the task's tiles%s\n"
				  "\tauto tile = [&](int j, int q, mkd_wg_loads &n) {\n%s"
				  "\t\tconst i64 nc = (h[2] - l[2] + %d) / %d, r = l[1] + q / nc * %d, c = l[2] + q %% nc * %d;\n"
				  "%s"
				  "\t\tif (r >= h[1]%s)\n"
				  "\t\t\treturn false;\n"
				  "\t\tn = %s;\n"
				  "\t\treturn true;\n"
				  "\t};\n"
				  "#endif\n",
				  mp.tmap, rt >= 0 ? " or its bucket's tokens" : "", TASK_BOX, mp.bn - 1,
				  mp.bn, mp.bm, mp.bn, fl, past, ld);
		}
		sb_printf(o, "\tfor (i64 r0 = lo[1]; r0 < hi[1]; r0 += %d)\n"
			     "\tfor (i64 n0 = lo[2]; n0 < hi[2]; n0 += %d) {\n", mp.bm, mp.bn);
		E->o = &body;
	}
	sb_printf(E->o,
		  "\t%s *c = (%s *)mkd_at<MK_GPUS>(p, T_%s, C, rank, lo[0], %s, %s);\n",
		  cg_ctype(C->dtype), cg_ctype(C->dtype), C->name, R, N);
	if (walk)
		sb_printf(E->o,
			  "\tconst int rows = (int)(hi[1] - r0 < %d ? hi[1] - r0 : %d), "
			  "cols = (int)(hi[2] - n0 < %d ? hi[2] - n0 : %d);\n",
			  mp.bm, mp.bm, mp.bn, mp.bn);
	else
		sb_puts(E->o, "\tconst int rows = (int)(hi[1] - lo[1]), cols = (int)(hi[2] - lo[2]);\n");
	if (op->norm) {  /* expand.c fuse_norms: A is X, normalised in the tile */
		const ir_tensor *G = op->norm_w ? &p->tensors[op->norm_w - 1] : NULL;
		if (G)
			sb_printf(E->o,
				  "\t// A is %s, its rmsnorm made in the tile: %s, its weight, from A's column k0\n"
				  "\tconst %s *nw = (const %s *)mkd_at<MK_GPUS>(p, T_%s, MK_T[T_%s], rank, 0, 0, k0);\n",
				  A->name, G->name, cg_ctype(A->dtype), cg_ctype(A->dtype), G->name, G->name);
		else
			sb_printf(E->o, "\t// A is %s, its rmsnorm (no weight) made in the tile\n"
				  "\tconst %s *nw = nullptr;\n", A->name, cg_ctype(A->dtype));
	}
	/* rows of a dispatch's buckets: tiles past the tokens are zeros, or
	 * left unwritten where nothing reads them (plan.c: skip_past) */
	const char *zt = op->plan.skip_past ? "" : "\t\tmkd_zero_tile(c, C.st[1], rows, cols);\n";
	const char *why = op->plan.skip_past ? "no tokens here: nothing reads these rows" : "no tokens here";
	if (rt >= 0 && walk)
		sb_printf(E->o,
			  "\tif (r0 >= filled) {  // %s\n"
			  "%s"
			  "\t\tcontinue;\n"
			  "\t}\n", why, zt);
	else if (rt >= 0 && mc > 1)
		/* a pair of row tiles on a cluster (plan.c mm_cluster): a CTA
		 * whose tile has no tokens still loads its half of B for the
		 * other, unless neither has any */
		sb_printf(E->o,
			  "\tconst int filled = %s;\n"
			  "\t// the first row tile of the pair this cluster runs (its rank 0's)\n"
			  "#if MKD_CLUSTER > 1\n"
			  "\tconst i64 pair = lo[1] - %d * (i64)mkd_cluster_rank();\n"
			  "#else\n"
			  "\tconst i64 pair = lo[1];\n"
			  "#endif\n"
			  "%s%s%s"
			  "\tif (pair >= filled)  // no tokens in the pair: %s\n"
			  "\t\treturn true;\n",
			  rows_of, mp.bm, *zt ? "\tif (lo[1] >= filled) {  // no tokens here\n" : "", zt,
			  *zt ? "\t}\n" : "", op->plan.skip_past ? "nothing reads these rows" : "none to load");
	else if (rt >= 0)
		sb_printf(E->o,
			  "\tconst int filled = %s;\n"
			  "\tif (lo[1] >= filled) {  // %s\n"
			  "%s"
			  "\t\treturn true;\n"
			  "\t}\n", rows_of, why, zt);
	char eb[192], act[160] = "mkd_epi_none()";
	const char *epi = epilogue(E, op, R, N, eb, sizeof eb);
	if (op->gate && op->gate_epi) {  /* the gate-up tile's act(A Wg), an epilogue functor */
		char f[64], ft[64];
		epi_step(E, op->gate_epi, op->gate_scalar, f, ft);
		snprintf(act, sizeof act, "mkd_epi1<%s>{%s}", ft, f);
	}
	if (wcarry) {
		char tail[160];
		sb_puts(E->o, "#ifdef MKD_HAS_WGMMA\n");
		wg_out(E, &mp, R, N);
		strbuf nx;
		sb_init(&nx);
		if (ir_next_known(op))
			sb_printf(&nx,
				  "\t\t\tconst int j = mkd_next_ready(p, rank, S_%s, epoch);  // or the next task's first\n"
				  "\t\t\treturn j >= 0 && tile(j, 0, n) ? mkd_wg_key(j, 0) : -1;\n",
				  op->stage);
		else  /* a pool's next task is taken when this one ends (sched.c) */
			sb_puts(&nx, "\t\t\treturn -1;  // a pool's next task is taken at its end\n");
		sb_printf(E->o,
			  "\tconst int q = (int)((r0 - lo[1]) / %d * ((hi[2] - lo[2] + %d) / %d) + (n0 - lo[2]) / %d);\n"
			  "\tmkd_wg_loads ld;\n"
			  "\ttile(i, q, ld);\n"
			  "\tif (!mkd_wgmma_tile<%s, %s, %d, %d, 64, %d%s>::run(ld, mkd_wg_key(i, q), [&](mkd_wg_loads &n) -> i64 {\n"
			  "\t\t\tif (tile(i, q + 1, n))  // this task's next tile\n"
			  "\t\t\t\treturn mkd_wg_key(i, q + 1);\n"
			  "%s"
			  "\t\t},\n"
			  "\t\tmkd_wg_waited(), c, C.st[1], rows, cols, smem, %s%s))\n"
			  "\t\treturn false;\n"
			  "#else\n",
			  mp.bm, mp.bn - 1, mp.bn, mp.bn, cg_ctype(A->dtype), cg_ctype(C->dtype), mp.bm,
			  mp.bn, mp.wg_stages, wg_targs(&mp, 0, mc, op->norm, targs, sizeof targs),
			  sb_str(&nx), epi, wg_tail(&mp, NULL, op->norm, tail, sizeof tail));
		sb_free(&nx);
	}
	/* plan.c: one tile a task, never skipped (a gate-up tile: always) */
	else if (mp.wgmma && (mp.carry || mp.late || op->gate)) {
		/* a bucket's task past the tokens loads nothing: the engine
		 * carries nothing into it */
		char em[600];
		if (rt >= 0)
			snprintf(em, sizeof em, "%s\t\treturn l[1] >= %s;\n", TASK_BOX, rows_of_l);
		char ld[1000], lb[1400], lv[400] = "";
		if (rt >= 0)  /* a bucket's: its rows with tokens (rows_of_l is set) */
			snprintf(lv, sizeof lv, ", nullptr, (int)(%s - l[1])", rows_of_l);
		tile_loads(ld, sizeof ld, "l[1]", "l[2]", b0, op->gate ? ", tm + 2" : rt >= 0 ? lv : "");
		snprintf(lb, sizeof lb, "%s\t\treturn %s;\n", TASK_BOX, ld);
		sb_printf(E->o,
			  "#ifdef MKD_HAS_WGMMA\n"
			  "\tconst mkd_tmap *tm = (const mkd_tmap *)p.tmaps + (rank - p.rank_base) * MK_NTMAPS + %d;\n",
			  mp.tmap);
		wg_out(E, &mp, R, N);
		wg_run(E, "\t", "S", op->stage, &mp, cg_ctype(A->dtype), cg_ctype(C->dtype), lb, "c, C.st[1]", epi,
		       A->name, B->name, op->epi2 ? p->tensors[op->in[2]].name : NULL,
		       op->gate ? act : NULL, rt >= 0 ? em : NULL, mc, op->norm);
		sb_puts(E->o, "#else\n");
	}
	else if (mp.wgmma && mc > 1)  /* (mm_cluster: a bucket's, one tile a task) */
		sb_printf(E->o,
			  "#ifdef MKD_HAS_WGMMA\n"
			  "\tconst mkd_tmap *tm = (const mkd_tmap *)p.tmaps + (rank - p.rank_base) * MK_NTMAPS + %d;\n"
			  "\tconst int a_row = (int)((lo[0] - mkd_base<MK_GPUS>(A, 0, rank)) * A.local[1] +\n"
			  "\t\t\t\t lo[1] - mkd_base<MK_GPUS>(A, 1, rank));\n"
			  "\tconst int b_row = (int)(%s * B.local[1]);\n"
			  "\tconst int b_col = (int)(lo[2] - mkd_base<MK_GPUS>(B, 2, rank));\n"
			  "\t// a tile past the tokens: no rows, no A (live -1), its half of B for the pair\n"
			  "\tconst bool none = lo[1] >= filled;\n"
			  "\tmkd_wgmma_tile<%s, %s, %d, %d, 64, %d%s>::run(tm, a_row, 0,\n"
			  "\t\ttm + 1, b_row, b_col, (int)K, c, C.st[1], none ? 0 : rows, cols, smem, %s,\n"
			  "\t\tnone ? -1 : (int)(filled - lo[1]));\n"
			  "#else\n",
			  mp.tmap, B->ndim == 3 ? "(lo[0] - mkd_base<MK_GPUS>(B, 0, rank))" : "0",
			  cg_ctype(A->dtype), cg_ctype(C->dtype), mp.bm, mp.bn, mp.wg_stages,
			  wg_targs(&mp, 0, mc, 0, targs, sizeof targs), epi);
	else if (mp.wgmma)
		sb_printf(E->o,
			  "#ifdef MKD_HAS_WGMMA\n"
			  "\tconst mkd_tmap *tm = (const mkd_tmap *)p.tmaps + (rank - p.rank_base) * MK_NTMAPS + %d;\n"
			  "\tconst int a_row = (int)((lo[0] - mkd_base<MK_GPUS>(A, 0, rank)) * A.local[1] +\n"
			  "\t\t\t\t %s - mkd_base<MK_GPUS>(A, 1, rank));\n"
			  "\tconst int b_row = (int)(%s * B.local[1]);\n"
			  "\tconst int b_col = (int)(%s - mkd_base<MK_GPUS>(B, 2, rank));\n"
			  "\tmkd_wgmma_tile<%s, %s, %d, %d, 64, %d%s>::run(tm, a_row, 0, tm + 1, b_row, b_col, (int)K,\n"
			  "\t\tc, C.st[1], rows, cols, smem, %s%s%s%s%s);\n"
			  "#else\n",
			  mp.tmap, R, B->ndim == 3 ? "(lo[0] - mkd_base<MK_GPUS>(B, 0, rank))" : "0",
			  N, cg_ctype(A->dtype), cg_ctype(C->dtype), mp.bm, mp.bn, mp.wg_stages,
			  wg_targs(&mp, 0, mc, op->norm, targs, sizeof targs), epi,
			  rt >= 0 ? ", (int)(filled - " : "",
			  rt >= 0 ? R : "", rt >= 0 ? ")" : "",
			  op->norm ? ", 0, mkd_wg_norm{nw, (int)K}" : "");
	sb_printf(E->o,
		  "\tconst %s *a = (const %s *)mkd_at<MK_GPUS>(p, T_%s, A, rank, lo[0], %s, k0);\n"
		  "\tconst %s *b = (const %s *)mkd_at<MK_GPUS>(p, T_%s, B, rank, %s, k0, %s);\n",
		  cg_ctype(A->dtype), cg_ctype(A->dtype), A->name, R,
		  cg_ctype(B->dtype), cg_ctype(B->dtype), B->name, B->ndim == 3 ? "lo[0]" : "0", N);
	if (op->gate) {  /* two tiles: act(A Wg) into C, then epi(A B) * C over it */
		const ir_tensor *G = &p->tensors[op->gate - 1];
		char f[64], ft[64];
		epi_step(E, op->epi, op->epi_scalar, f, ft);
		sb_printf(E->o,
			  "\tconst mkd_tensor &G = MK_T[T_%s];  // the gate's weight\n"
			  "\tmkd_mma_tile<%s, %s, %d, %d, %d, %d>::run(a, A.st[1],\n"
			  "\t\t(const %s *)mkd_at<MK_GPUS>(p, T_%s, G, rank, 0, k0, %s), G.st[1], c, C.st[1],\n"
			  "\t\trows, cols, (int)K, 0, 0, smem, %s);\n"
			  "\t__syncthreads();  // the gate's values in C, for the threads that multiply\n",
			  G->name, cg_ctype(A->dtype), cg_ctype(C->dtype), mp.bm, mp.bn, mp.bk,
			  mp.stages, cg_ctype(G->dtype), G->name, N, act);
		snprintf(eb, sizeof eb, "mkd_epi2<%s, mkd_mul, %s, mkd_ident>{%s, c, (int)C.st[1], mkd_ident()}",
			 ft, cg_ctype(C->dtype), f);
		epi = eb;
	}
	if (op->norm) {  /* the rows' 1/rms past the ring (plan.c), then A times the weight */
		char tt[96];
		snprintf(tt, sizeof tt, "mkd_mma_tile<%s, %s, %d, %d, %d, %d, true>", cg_ctype(A->dtype),
			 cg_ctype(C->dtype), mp.bm, mp.bn, mp.bk, mp.stages);
		sb_printf(E->o,
			  "\tfloat *rs = (float *)(smem + %s::SMEM);  // the rows' 1/rms\n"
			  "\tmkd_rms_rows(a, A.st[1], rows, (int)K, rs);\n"
			  "\t%s::run(a, A.st[1], b, B.st[1], c, C.st[1],\n"
			  "\t\trows, cols, (int)K, 0, 0, smem, mkd_by_rows(rs, %s), nw);\n%s",
			  tt, tt, epi, mp.wgmma ? "#endif\n" : "");
	} else {
		sb_printf(E->o,
			  "\tmkd_mma_tile<%s, %s, %d, %d, %d, %d>::run(a, A.st[1], b, B.st[1], c, C.st[1],\n"
			  "\t\trows, cols, (int)K, 0, 0, smem, %s);\n%s",
			  cg_ctype(A->dtype), cg_ctype(C->dtype), mp.bm, mp.bn, mp.bk, mp.stages, epi,
			  mp.wgmma ? "#endif\n" : "");
	}
	if (walk) {  /* the tile's body, one level deeper (preprocessor lines stay put) */
		E->o = o;
		for (const char *l = body.s; l && *l;) {
			const char *nl = strchr(l, '\n');
			size_t len = nl ? (size_t)(nl - l) + 1 : strlen(l);
			if (*l != '#')
				sb_putc(o, '\t');
			sb_putn(o, l, len);
			l += len;
		}
		sb_puts(o, "\t}\n");
	}
	sb_free(&body);
	sb_puts(E->o, "\treturn true;\n}\n\n");
}

void cg_stage_ew(cg_em *E, const ir_op *op)
{
	const ir_prog *p = E->p;
	const ir_tensor *y = &p->tensors[op->out], *x = &p->tensors[op->in[0]];
	char fb[64];
	const char *fn = functor(E, op, fb, sizeof fb);
	cg_stage_head(E, op, "elementwise over the box");
	sb_printf(E->o, "\tconst mkd_tensor &X = MK_T[T_%s], &Y = MK_T[T_%s];\n", x->name, y->name);
	if (op->nin == 2) {
		const ir_tensor *z = &p->tensors[op->in[1]];
		int bc = z->ndim != y->ndim;
		sb_printf(E->o, "\tconst mkd_tensor &Z = MK_T[T_%s];\n", z->name);
		sb_printf(E->o,
			  "\tfor (i64 e = lo[0]; e < hi[0]; e++)\n"
			  "\t\tmkd_ew2(%s, (const %s *)mkd_at<MK_GPUS>(p, T_%s, X, rank, e, lo[1], lo[2]), X.st[1],\n"
			  "\t\t\t(const %s *)mkd_at<MK_GPUS>(p, T_%s, Z, rank, %s), Z.st[1], %s,\n"
			  "\t\t\t(%s *)mkd_at<MK_GPUS>(p, T_%s, Y, rank, e, lo[1], lo[2]), Y.st[1],\n"
			  "\t\t\t(int)(hi[1] - lo[1]), (int)(hi[2] - lo[2]));\n\treturn true;\n}\n\n",
			  fn, cg_ctype(x->dtype), x->name, cg_ctype(z->dtype), z->name,
			  bc ? "0, 0, lo[2]" : "e, lo[1], lo[2]", bc ? "true" : "false",
			  cg_ctype(y->dtype), y->name);
		return;
	}
	sb_printf(E->o,
		  "\tfor (i64 e = lo[0]; e < hi[0]; e++)\n"
		  "\t\tmkd_ew1(%s, (const %s *)mkd_at<MK_GPUS>(p, T_%s, X, rank, e, lo[1], lo[2]), X.st[1],\n"
		  "\t\t\t(%s *)mkd_at<MK_GPUS>(p, T_%s, Y, rank, e, lo[1], lo[2]), Y.st[1],\n"
		  "\t\t\t(int)(hi[1] - lo[1]), (int)(hi[2] - lo[2]));\n\treturn true;\n}\n\n",
		  fn, cg_ctype(x->dtype), x->name, cg_ctype(y->dtype), y->name);
}

/* heads / merge_heads: the task's box is one head (of the [H, T, D] side)
 * over a block of tokens; copy it from or to that head's D columns.  The
 * source is where the task's read box puts it on this rank (the tokens
 * move alike on both sides under sigma_r, rotate.c; the heads by each
 * side's shard). */
void cg_stage_layout(cg_em *E, const ir_op *op)
{
	const ir_prog *p = E->p;
	const ir_tensor *y = &p->tensors[op->out], *x = &p->tensors[op->in[0]];
	int heads = op->kind == OP_HEADS;
	long long D = heads ? y->shape[2] : x->shape[2];
	cg_stage_head(E, op, "a copy: one head, a block of tokens");
	sb_printf(E->o, "\tconst mkd_tensor &X = MK_T[T_%s], &Y = MK_T[T_%s];\n", x->name, y->name);
	sb_puts(E->o, "\tconst mkd_box s = mkd_read_box(rank, t, 0);  // the head in X\n");
	if (heads)
		sb_printf(E->o,
			  "\tmkd_ew1(mkd_ident(), (const %s *)mkd_at<MK_GPUS>(p, T_%s, X, s.rank, 0, s.lo[1], s.lo[2]), X.st[1],\n"
			  "\t\t(%s *)mkd_at<MK_GPUS>(p, T_%s, Y, rank, lo[0], lo[1], 0), Y.st[1],\n"
			  "\t\t(int)(hi[1] - lo[1]), %lld);\n\treturn true;\n}\n\n",
			  cg_ctype(x->dtype), x->name, cg_ctype(y->dtype), y->name, D);
	else
		sb_printf(E->o,
			  "\tmkd_ew1(mkd_ident(), (const %s *)mkd_at<MK_GPUS>(p, T_%s, X, s.rank, s.lo[0], s.lo[1], 0), X.st[1],\n"
			  "\t\t(%s *)mkd_at<MK_GPUS>(p, T_%s, Y, rank, 0, lo[1], lo[2]), Y.st[1],\n"
			  "\t\t(int)(hi[1] - lo[1]), %lld);\n\treturn true;\n}\n\n",
			  cg_ctype(x->dtype), x->name, cg_ctype(y->dtype), y->name, D);
}

/* slice, concat, transpose, reshape: the task's box of the result, copied
 * from where the op puts its elements in the input (the box's coordinates
 * are logical, so the map is the op's own; lower_layout.c makes the reads
 * that order it).  Shapes are normalised to 3-D (leading 1s): dimension d
 * of an n-D tensor is dimension d + 3 - n here.  One mkd_copy_box per
 * input the box takes from; its strides say the layout on each side. */
static void view_copy(cg_em *E, const ir_tensor *x, const char *src, const char *st,
		      const char *n, const ir_tensor *y)
{
	sb_printf(E->o, "\t\tmkd_copy_box<%d>(mkd_at<MK_GPUS>(p, T_%s, Y, rank, %s),\n"
		  "\t\t\tY.st[0], Y.st[1], 1,\n"
		  "\t\t\tmkd_at<MK_GPUS>(p, T_%s, X, sr, %s),\n"
		  "\t\t\t%s, %s);\n",
		  ir_dtype_size(y->dtype), y->name, "o[0], o[1], o[2]", x->name, src, st, n);
}

void cg_stage_view(cg_em *E, const ir_op *op)
{
	const ir_prog *p = E->p;
	const ir_tensor *y = &p->tensors[op->out], *x = &p->tensors[op->in[0]];
	static const char *xs = "X.st[0], X.st[1], 1";
	cg_stage_head(E, op, "a copy of a box");
	sb_printf(E->o, "\tconst mkd_tensor &Y = MK_T[T_%s];\n", y->name);
	sb_puts(E->o, "\tconst int sr = mkd_read_box(rank, t, 0).rank;  // the rank holding the input\n"
		      "\ti64 o[3] = {lo[0], lo[1], lo[2]};  // where in Y\n"
		      "\ti64 n[3] = {hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]};\n");
	int od = 3 - y->ndim;  /* normalised dimension of the result's dim 0 */
	if (op->kind == OP_CONCAT) {
		const ir_tensor *b = &p->tensors[op->in[1]];
		int c = op->dim + od;
		long long seam = x->shape[op->dim];
		sb_printf(E->o, "\tconst i64 seam = %lld;  // where %s ends along dimension %d\n"
			  "\tconst i64 end = hi[%d];\n", seam, x->name, op->dim, c);
		sb_printf(E->o, "\tif (lo[%d] < seam) {  // the part from %s\n"
			  "\t\tconst mkd_tensor &X = MK_T[T_%s];\n"
			  "\t\tn[%d] = (end < seam ? end : seam) - lo[%d];\n",
			  c, x->name, x->name, c, c);
		view_copy(E, x, "lo[0], lo[1], lo[2]", xs, "n[0], n[1], n[2]", y);
		sb_printf(E->o, "\t}\n\tif (end > seam) {  // the part from %s\n"
			  "\t\tconst mkd_tensor &X = MK_T[T_%s];\n"
			  "\t\to[%d] = lo[%d] > seam ? lo[%d] : seam;\n"
			  "\t\tn[%d] = end - o[%d];\n"
			  "\t\ti64 s[3] = {o[0], o[1], o[2]};\n"
			  "\t\ts[%d] -= seam;\n",
			  b->name, b->name, c, c, c, c, c, c);
		view_copy(E, b, "s[0], s[1], s[2]", xs, "n[0], n[1], n[2]", y);
		sb_puts(E->o, "\t}\n\treturn true;\n}\n\n");
		return;
	}
	sb_printf(E->o, "\tconst mkd_tensor &X = MK_T[T_%s];\n", x->name);
	if (op->kind == OP_SLICE) {
		sb_puts(E->o, "\ti64 s[3] = {lo[0], lo[1], lo[2]};\n");
		if (op->lo)
			sb_printf(E->o, "\ts[%d] += %lld;  // the slice's start\n", op->dim + od,
				  (long long)op->lo);
		sb_puts(E->o, "\t{\n");
		view_copy(E, x, "s[0], s[1], s[2]", xs, "n[0], n[1], n[2]", y);
	} else if (op->kind == OP_TRANSPOSE) {
		int a = op->dim + od, b = op->dim2 + od;
		char src[64], st[160];
		const char *sx[3] = {"X.st[0]", "X.st[1]", "1"};
		const char *c[3] = {"lo[0]", "lo[1]", "lo[2]"};
		int perm[3] = {0, 1, 2};
		perm[a] = b;
		perm[b] = a;
		/* X's coordinate on dim e is the box's on perm[e]; the box's dim d
		 * steps X's dim perm[d] */
		snprintf(src, sizeof src, "%s, %s, %s", c[perm[0]], c[perm[1]], c[perm[2]]);
		snprintf(st, sizeof st, "%s, %s, %s", sx[perm[0]], sx[perm[1]], sx[perm[2]]);
		sb_printf(E->o, "\t// dimensions %d and %d swapped: X's strides permuted\n\t{\n", a, b);
		view_copy(E, x, src, st, "n[0], n[1], n[2]", y);
	} else if (x->ndim + 1 == y->ndim) {  /* reshape [.., A * B] -> [.., A, B] */
		long long B = y->shape[y->ndim - 1];
		sb_printf(E->o, "\tconst i64 B = %lld;  // [.., A * B] -> [.., A, B]: X's row of A * B holds\n"
			  "\t                     // the box's dims 1 and 2 at a * B + b\n\t{\n", B);
		view_copy(E, x, "0, lo[0], lo[1] * B + lo[2]", "X.st[1], B, 1", "n[0], n[1], n[2]", y);
	} else if (x->ndim == y->ndim + 1) {  /* reshape [.., A, B] -> [.., A * B] */
		long long B = x->shape[x->ndim - 1];
		sb_printf(E->o, "\tconst i64 B = %lld;  // [.., A, B] -> [.., A * B]: the box's rows of A * B\n"
			  "\t                     // are X's [A, B] blocks (whole B: the last dim is never cut)\n"
			  "\tn[0] = hi[1] - lo[1], n[1] = (hi[2] - lo[2]) / B, n[2] = B;\n\t{\n", B);
		sb_printf(E->o, "\t\tmkd_copy_box<%d>(mkd_at<MK_GPUS>(p, T_%s, Y, rank, o[0], o[1], o[2]),\n"
			  "\t\t\tY.st[1], B, 1,\n"
			  "\t\t\tmkd_at<MK_GPUS>(p, T_%s, X, sr, lo[1], lo[2] / B, 0),\n"
			  "\t\t\t%s, n[0], n[1], n[2]);\n",
			  ir_dtype_size(y->dtype), y->name, x->name, xs);
	} else {  /* reshape to the same shape */
		sb_puts(E->o, "\t{\n");
		view_copy(E, x, "lo[0], lo[1], lo[2]", xs, "n[0], n[1], n[2]", y);
	}
	sb_puts(E->o, "\t}\n\treturn true;\n}\n\n");
}

void cg_stage_row(cg_em *E, const ir_op *op)
{
	const ir_prog *p = E->p;
	const ir_tensor *y = &p->tensors[op->out], *x = &p->tensors[op->in[0]];
	cg_stage_head(E, op, "whole rows");
	sb_printf(E->o, "\tconst mkd_tensor &X = MK_T[T_%s], &Y = MK_T[T_%s];\n", x->name, y->name);
	if (op->kind == OP_RMSNORM) {
		const ir_tensor *w = op->nin > 1 ? &p->tensors[op->in[1]] : NULL;
		if (w)
			sb_printf(E->o, "\tconst %s *w = (const %s *)mkd_at<MK_GPUS>(p, T_%s, MK_T[T_%s], rank, 0, 0, 0);\n",
				  cg_ctype(w->dtype), cg_ctype(w->dtype), w->name, w->name);
		else
			sb_puts(E->o, "\tconst float *w = 0;\n");
		sb_printf(E->o,
			  "\tfor (i64 e = lo[0]; e < hi[0]; e++)\n"
			  "\t\tmkd_rmsnorm((const %s *)mkd_at<MK_GPUS>(p, T_%s, X, rank, e, lo[1], lo[2]), X.st[1], w,\n"
			  "\t\t\t(%s *)mkd_at<MK_GPUS>(p, T_%s, Y, rank, e, lo[1], lo[2]), Y.st[1],\n"
			  "\t\t\t(int)(hi[1] - lo[1]), (int)(hi[2] - lo[2]));\n\treturn true;\n}\n\n",
			  cg_ctype(x->dtype), x->name, cg_ctype(y->dtype), y->name);
		return;
	}
	if (op->kind == OP_LAYERNORM) {
		const ir_tensor *w = &p->tensors[op->in[1]], *b = &p->tensors[op->in[2]];
		sb_printf(E->o, "\tconst %s *w = (const %s *)mkd_at<MK_GPUS>(p, T_%s, MK_T[T_%s], rank, 0, 0, 0);\n",
			  cg_ctype(w->dtype), cg_ctype(w->dtype), w->name, w->name);
		sb_printf(E->o, "\tconst %s *b = (const %s *)mkd_at<MK_GPUS>(p, T_%s, MK_T[T_%s], rank, 0, 0, 0);\n",
			  cg_ctype(b->dtype), cg_ctype(b->dtype), b->name, b->name);
		sb_printf(E->o,
			  "\tfor (i64 e = lo[0]; e < hi[0]; e++)\n"
			  "\t\tmkd_layernorm((const %s *)mkd_at<MK_GPUS>(p, T_%s, X, rank, e, lo[1], lo[2]), X.st[1], w, b,\n"
			  "\t\t\t(%s *)mkd_at<MK_GPUS>(p, T_%s, Y, rank, e, lo[1], lo[2]), Y.st[1],\n"
			  "\t\t\t(int)(hi[1] - lo[1]), (int)(hi[2] - lo[2]));\n\treturn true;\n}\n\n",
			  cg_ctype(x->dtype), x->name, cg_ctype(y->dtype), y->name);
		return;
	}
	if (op->kind == OP_ROPE) {
		/* the box's rows are tokens lo[1].. (the token dim is never
		 * split: local = global); a table row per token */
		const ir_tensor *c = &p->tensors[op->in[1]], *sn = &p->tensors[op->in[2]];
		sb_printf(E->o, "\tconst mkd_tensor &C = MK_T[T_%s], &S = MK_T[T_%s];\n", c->name, sn->name);
		sb_printf(E->o,
			  "\tfor (i64 e = lo[0]; e < hi[0]; e++)\n"
			  "\t\tmkd_rope((const %s *)mkd_at<MK_GPUS>(p, T_%s, X, rank, e, lo[1], lo[2]), X.st[1],\n"
			  "\t\t\t(const %s *)mkd_at<MK_GPUS>(p, T_%s, C, rank, 0, lo[1], 0),\n"
			  "\t\t\t(const %s *)mkd_at<MK_GPUS>(p, T_%s, S, rank, 0, lo[1], 0), C.st[1],\n"
			  "\t\t\t(%s *)mkd_at<MK_GPUS>(p, T_%s, Y, rank, e, lo[1], lo[2]), Y.st[1],\n"
			  "\t\t\t(int)(hi[1] - lo[1]), (int)(hi[2] - lo[2]));\n\treturn true;\n}\n\n",
			  cg_ctype(x->dtype), x->name, cg_ctype(c->dtype), c->name,
			  cg_ctype(sn->dtype), sn->name, cg_ctype(y->dtype), y->name);
		return;
	}
	sb_printf(E->o,
		  "\tfor (i64 e = lo[0]; e < hi[0]; e++)\n"
		  "\t\tmkd_softmax((const %s *)mkd_at<MK_GPUS>(p, T_%s, X, rank, e, lo[1], lo[2]), X.st[1],\n"
		  "\t\t\t(%s *)mkd_at<MK_GPUS>(p, T_%s, Y, rank, e, lo[1], lo[2]), Y.st[1],\n"
		  "\t\t\t(int)(hi[1] - lo[1]), (int)(hi[2] - lo[2]));\n\treturn true;\n}\n\n",
		  cg_ctype(x->dtype), x->name, cg_ctype(y->dtype), y->name);
}

/* The RDMA tasks of an op: the box read (on this rank) goes to the box
 * written on a rank of another node, then the task's own flag there is
 * written with the epoch.  Process mode: commands to the proxy; virtual
 * ranks (every rank on this GPU): stores, then a release store. */
void cg_stage_rdma(cg_em *E, const ir_op *op)
{
	const ir_prog *p = E->p;
	const ir_tensor *y = NULL;  /* what the op's RDMA tasks write (one tensor) */
	for (int i = 0; i < E->s->ntasks; i++) {
		const ir_task *t = &E->s->tasks[i];
		if (t->kind != TASK_RDMA || &p->ops[t->op] != op)
			continue;
		if (y && y != &p->tensors[t->write.tensor]) {
			cg_fail(E, "RDMA tasks of one stage writing several tensors", op->stage);
			return;
		}
		y = &p->tensors[t->write.tensor];
		if (ir_dtype_size(p->tensors[t->reads[0].tensor].dtype) != ir_dtype_size(y->dtype)) {
			cg_fail(E, "an RDMA write between tensors of different element types", op->stage);
			return;
		}
	}
	if (!y)
		return;
	int es = ir_dtype_size(y->dtype);
	sb_printf(E->o, "// stage %s, its RDMA tasks: a box of %s to a rank of another node, then the\n"
		  "// task's flag there (written: the epoch)\n", op->stage, y->name);
	sb_printf(E->o, "static __device__ __noinline__ bool rdma_%s(const mkd_params &p, int rank, "
		  "int cta, int i, u64 epoch, char *smem)\n{\n", op->stage);
	sb_printf(E->o,
		  "\tconst mkd_task &t = MK_TASKS[i];\n"
		  "\tconst mkd_fref f = MK_SIGNALS[t.sig0];  // its flag, on the rank it writes\n"
		  "\tconst int dst = mkd_shift_rank<MK_NODES, MK_GPUS>(f.rank, rank);\n"
		  "\ti64 lo[3], hi[3];  // the box of %s written on rank dst\n"
		  "\tmkd_box_shift<MK_NODES, MK_GPUS>(MK_T[T_%s], rank, t.lo, t.hi, lo, hi);\n"
		  "\tconst mkd_box s = mkd_read_box(rank, t, 0);\n"
		  "%s"
		  "#if MK_MULTIPROC\n"
		  "\t__shared__ int ok;\n"
		  "\tif (threadIdx.x == 0) {\n"
		  "\t\tint j = 0;  // READY word of rank dst\n"
		  "\t\twhile (j + 1 < MK_NRDST && MK_RDST[j] != f.rank)\n"
		  "\t\t\tj++;\n"
		  "\t\tok = mkd_rdma_put<MK_GPUS>(p, rank, s.tensor, MK_T[s.tensor], s.lo, T_%s, MK_T[T_%s],\n"
		  "\t\t\tdst, lo, hi, f.index, MK_NRFLAGS + j, MK_NFLAGS + 2 + j, MK_NRFLAGS + MK_NRDST,\n"
		  "\t\t\tepoch, &mkd_ticket, mkd_waiter{rank, cta, i, t.stage});\n"
		  "\t}\n"
		  "\t__syncthreads();\n"
		  "\treturn ok;\n"
		  "#else\n"
		  "\tconst mkd_tensor &S = MK_T[s.tensor], &D = MK_T[T_%s];\n"
		  "\tfor (i64 e = 0; e < hi[0] - lo[0]; e++)\n"
		  "\t\tmkd_copy_2d(mkd_at<MK_GPUS>(p, T_%s, D, dst, lo[0] + e, lo[1], lo[2]), D.st[1] * %d,\n"
		  "\t\t\t    mkd_at<MK_GPUS>(p, s.tensor, S, s.rank, s.lo[0] + e, s.lo[1], s.lo[2]),\n"
		  "\t\t\t    S.st[1] * %d, hi[1] - lo[1], (hi[2] - lo[2]) * %d);\n"
		  "\t__syncthreads();\n"
		  "\tif (threadIdx.x == 0) {\n"
		  "\t\t__threadfence();\n"
		  "\t\tmkd_st_release((u64 *)p.ranks[dst].rflags + f.index, epoch);\n"
		  "\t}\n"
		  "\treturn true;\n"
		  "#endif\n"
		  "}\n\n",
		  y->name, y->name,
		  op->pack1 ? "\tif (hi[1] > lo[1] + 1) {  // MoE between nodes: the count (row 0, word 0) and its rows\n"
			      "\t\tconst int n = *(const int *)mkd_at<MK_GPUS>(p, s.tensor, MK_T[s.tensor], s.rank, s.lo[0], s.lo[1], 0);\n"
			      "\t\tif (hi[1] > lo[1] + 1 + n)\n"
			      "\t\t\thi[1] = lo[1] + 1 + n;\n"
			      "\t}\n" : "",
		  y->name, y->name, y->name, y->name, es, es, es);
}
