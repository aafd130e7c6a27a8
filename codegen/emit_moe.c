/* emit_moe.c - the stage functions of MoE dispatch and combine.
 *
 * A dispatch's stage function serves several task kinds, told apart by the
 * task's stage value (W_: route this rank's tokens, between nodes W2_: pack
 * rows for another node, W3_: route what a node sent; S_: fill an expert's
 * bucket); a combine's likewise (W_ between nodes: the partial sums of the
 * rows another node sent; S_: a block of this rank's tokens).  One function
 * per op, not one per kind: every extra callee of the kernel costs
 * registers around the calls.  The device side is mkd/moe.cuh; the task
 * kinds are lowered in compiler/lower.c.
 */
#include "emit_internal.h"

#include <stdio.h>

/* The start of a dispatch stage: its waiter, and W_ tasks build this
 * rank's routing table (table R) from its indices. */
static void route_branch(cg_em *E, const ir_op *op, int R)
{
	const ir_prog *p = E->p;
	const ir_tensor *ix = &p->tensors[op->in[1]];
	sb_printf(E->o,
		  "\tconst mkd_waiter w = {rank, cta, i, t.stage};\n"
		  "\tif (t.stage == W_%s) {  // this rank's routing table\n"
		  "\t\tconst int *idx = (const int *)p.ranks[rank].buf[T_%s];\n"
		  "\t\treturn mkd_route(p, w, idx, %lld, %lld, (int *)p.ranks[rank].buf[T_%s], smem, MK_SMEM);\n"
		  "\t}\n",
		  op->stage, ix->name, (long long)(ix->local[0] * ix->local[1]),
		  (long long)op->experts, p->tensors[R].name);
}

/* mkd_dispatch's `zero`: false where the plan leaves the slots past the
 * tokens unwritten (plan.c: past_unread) */
static const char *zero_arg(const ir_op *op)
{
	return op->plan.skip_past ? ", false" : ", true";
}

/* MoE dispatch between nodes (lower.c, moe_nodes): W_ tasks build this
 * rank's routing table, W2_ tasks pack its rows for another node (one
 * column block each), W3_ tasks route what a node sent; the others fill one
 * expert's bucket from every source: reads 2q (a table) and 2q + 1 (its
 * rows), source q = node offset * GPUS + the GPU that holds it. */
static void stage_dispatch_nodes(cg_em *E, const ir_op *op)
{
	const ir_prog *p = E->p;
	const ir_tensor *x = &p->tensors[op->in[0]], *ix = &p->tensors[op->in[1]];
	const ir_tensor *xe = &p->tensors[op->out];
	const ir_tensor *pk = &p->tensors[op->pack1 - 1], *rk = &p->tensors[op->recv1 - 1];
	const ir_tensor *rr = &p->tensors[op->rroute1 - 1];
	const int i = (int)(op - p->ops);
	int R = cg_stage_tensor(E, i, CG_W);
	if (R < 0 || cg_stage_tensor(E, i, CG_W2) != op->pack1 - 1 ||
	    cg_stage_tensor(E, i, CG_W3) != op->rroute1 - 1) {
		cg_fail(E, "a dispatch between nodes without its route, pack and received-route tasks",
		     op->stage);
		return;
	}
	const int gt = op->gate1 - 1;
	const char *gate = gt >= 0 ? p->tensors[gt].name : NULL;
	const int es = ir_dtype_size(x->dtype);
	const long long Tl = ix->local[0], k = ix->local[1], N = Tl * k;
	const long long H = xe->shape[2], El = xe->local[0], W = pk->local[2];
	const long long words = H * es / 4, len = rr->local[1];
	const char *tx = cg_ctype(x->dtype);
	char gexp[200] = "0";  /* the gates travel with the rows (the combine's) */
	if (gate)
		snprintf(gexp, sizeof gexp, "(const float *)p.ranks[rank].buf[T_%s]", gate);
	cg_stage_head(E, op, "route, pack for the other nodes, route what they sent, or fill one "
		   "expert's bucket");
	route_branch(E, op, R);
	sb_printf(E->o,
		  "\tif (t.stage == W2_%s) {  // rows for node +(t.lo[0] + 1), columns [t.lo[2], t.hi[2])\n"
		  "\t\tconst int node = (rank / MK_GPUS + t.lo[0] + 1) %% MK_NODES;\n"
		  "\t\tmkd_pack<%s>((const int *)p.ranks[rank].buf[T_%s], %lld, (const %s *)p.ranks[rank].buf[T_%s], %lld,\n"
		  "\t\t\t%s, %lld, node * MK_GPUS * %lld, (node + 1) * MK_GPUS * %lld,\n"
		  "\t\t\t(int *)p.ranks[rank].buf[T_%s] + (i64)t.lo[0] * %lld, %lld, %lld, t.lo[2], t.hi[2], smem);\n"
		  "\t\treturn true;\n"
		  "\t}\n",
		  op->stage, tx, ix->name, k, tx, x->name, H,
		  gexp, Tl, El, El, pk->name, (1 + Tl) * W, W, words);
	sb_printf(E->o,
		  "\tif (t.stage == W3_%s) {  // the routing table of what node +(t.lo[1] + 1) sent\n"
		  "\t\tconst int *rk = (const int *)p.ranks[rank].buf[T_%s] + (i64)t.lo[1] * %lld;\n"
		  "\t\treturn mkd_route_rows(p, w, rk + %lld, %lld, %lld, rk[0] * %lld, %lld, %lld,\n"
		  "\t\t\t(int *)p.ranks[rank].buf[T_%s] + (i64)t.lo[1] * %lld, smem, MK_SMEM, false);\n"
		  "\t}\n",
		  op->stage, rk->name, (1 + Tl) * W, W + words, W, k, k, N, (long long)xe->shape[0],
		  rr->name, len);
	sb_printf(E->o,
		  "\t__shared__ const int *route[MK_WORLD];\n"
		  "\t__shared__ const %s *x[MK_WORLD];\n"
		  "\t__shared__ i64 ldx[MK_WORLD];\n"
		  "\tif (threadIdx.x < t.nread) {\n"
		  "\t\tconst mkd_box b = mkd_read_box(rank, t, threadIdx.x);\n"
		  "\t\tconst char *a = mkd_at<MK_GPUS>(p, b.tensor, MK_T[b.tensor], b.rank, b.lo[0], b.lo[1], b.lo[2]);\n"
		  "\t\tconst int g = b.rank %% MK_GPUS;\n"
		  "\t\tif (b.tensor == T_%s)\n"
		  "\t\t\troute[g] = (const int *)a;\n"
		  "\t\telse if (b.tensor == T_%s)\n"
		  "\t\t\troute[(b.lo[1] + 1) * MK_GPUS + g] = (const int *)a;\n"
		  "\t\telse if (b.tensor == T_%s) {\n"
		  "\t\t\tx[(b.lo[0] + 1) * MK_GPUS + g] = (const %s *)(a + %lld);  // its first packed row\n"
		  "\t\t\tldx[(b.lo[0] + 1) * MK_GPUS + g] = %lld;\n"
		  "\t\t} else {\n"
		  "\t\t\tx[g] = (const %s *)a;\n"
		  "\t\t\tldx[g] = %lld;\n"
		  "\t\t}\n"
		  "\t}\n"
		  "\t__syncthreads();\n"
		  "\tfor (i64 e = lo[0]; e < hi[0]; e++)\n"
		  "\t\tif (!mkd_dispatch<%s>(p, w, (int)e, %lld, %lld, %lld, %lld, %lld, route, x, MK_WORLD,\n"
		  "\t\t\t\t(int)lo[1], (int)hi[1], (%s *)mkd_at<MK_GPUS>(p, T_%s, MK_T[T_%s], rank, e, lo[1], 0), ldx,\n"
		  "\t\t\t\t%s%s, smem, MK_SMEM))\n"
		  "\t\t\treturn false;\n"
		  "\treturn true;\n}\n\n",
		  tx, p->tensors[R].name, rr->name, rk->name, tx, W * 4, W * 4 / es, tx, H,
		  tx, (long long)xe->shape[0], (long long)xe->shape[1], N, k, H, cg_ctype(xe->dtype),
		  xe->name, xe->name, op->drop ? "true" : "false", zero_arg(op));
}

/* MoE dispatch (mkd/moe.cuh): W_ tasks build this rank's routing table;
 * the others fill one expert's bucket each from every rank's rows (reads
 * 2q: rank q's table, 2q + 1: rank q's tokens). */
void cg_stage_dispatch(cg_em *E, const ir_op *op)
{
	const ir_prog *p = E->p;
	if (op->pack1) {
		stage_dispatch_nodes(E, op);
		return;
	}
	const ir_tensor *x = &p->tensors[op->in[0]], *ix = &p->tensors[op->in[1]];
	const ir_tensor *xe = &p->tensors[op->out];
	int R = cg_stage_tensor(E, (int)(op - p->ops), CG_W);
	if (R < 0) {
		cg_fail(E, "a dispatch without its route task", op->stage);
		return;
	}
	long long N = (long long)(ix->local[0] * ix->local[1]);
	cg_stage_head(E, op, "route this rank's tokens, or fill one expert's bucket");
	route_branch(E, op, R);
	sb_printf(E->o,
		  "\t__shared__ const int *route[MK_WORLD];\n"
		  "\t__shared__ const %s *x[MK_WORLD];\n"
		  "\tif (threadIdx.x < t.nread) {\n"
		  "\t\tconst mkd_box b = mkd_read_box(rank, t, threadIdx.x);\n"
		  "\t\tif (b.tensor == T_%s)\n"
		  "\t\t\troute[b.rank] = (const int *)p.ranks[b.rank].buf[T_%s];\n"
		  "\t\telse\n"
		  "\t\t\tx[b.rank] = (const %s *)p.ranks[b.rank].buf[T_%s];\n"
		  "\t}\n"
		  "\t__syncthreads();\n"
		  "\tfor (i64 e = lo[0]; e < hi[0]; e++)\n"
		  "\t\tif (!mkd_dispatch<%s>(p, w, (int)e, %lld, %lld, %lld, %lld, %lld, route, x, MK_WORLD,\n"
		  "\t\t\t\t(int)lo[1], (int)hi[1], (%s *)mkd_at<MK_GPUS>(p, T_%s, MK_T[T_%s], rank, e, lo[1], 0),\n"
		  "\t\t\t\t0, %s%s, smem, MK_SMEM))\n"
		  "\t\t\treturn false;\n"
		  "\treturn true;\n}\n\n",
		  cg_ctype(x->dtype), p->tensors[R].name, p->tensors[R].name, cg_ctype(x->dtype), x->name,
		  cg_ctype(x->dtype), (long long)xe->shape[0], (long long)xe->shape[1], N,
		  (long long)ix->local[1], (long long)xe->shape[2], cg_ctype(xe->dtype), xe->name,
		  xe->name, op->drop ? "true" : "false", zero_arg(op));
}

/* MoE combine between nodes (lower.c, moe_nodes).  W_ tasks: the partial
 * sums over this node's experts of a block of the rows node +s sent (read
 * 0: those rows; 1 .. WORLD: every source's table; then this node's expert
 * outputs).  The others: a block of this rank's tokens (reads 0, 1: its ids
 * and gates; GPUS route tables and GPUS expert outputs of this node; its
 * packed rows; the sums the other nodes returned). */
static void stage_combine_nodes(cg_em *E, const ir_op *op)
{
	const ir_prog *p = E->p;
	const ir_tensor *ye = &p->tensors[op->in[0]], *ix = &p->tensors[op->in[1]];
	const ir_tensor *g = &p->tensors[op->in[2]], *y = &p->tensors[op->out];
	const ir_tensor *pk = &p->tensors[op->pack1 - 1], *rk = &p->tensors[op->recv1 - 1];
	const ir_tensor *rr = &p->tensors[op->rroute1 - 1], *part = &p->tensors[op->part1 - 1];
	const ir_tensor *back = &p->tensors[op->back1 - 1];
	const char *rname = p->tensors[op->route1 - 1].name;
	if (cg_stage_tensor(E, (int)(op - p->ops), CG_W) != op->part1 - 1) {
		cg_fail(E, "a combine between nodes without its partial sums", op->stage);
		return;
	}
	const long long Tl = ix->local[0], k = ix->local[1], N = Tl * k;
	const long long E_ = ye->shape[0], El = ye->local[0], C = ye->shape[1], H = ye->shape[2];
	const long long W = pk->local[2], words = H * ir_dtype_size(ye->dtype) / 4;
	const char *te = cg_ctype(ye->dtype), *ty = cg_ctype(y->dtype);
	cg_stage_head(E, op, "sums of a block of received rows over this node's experts, or a block "
		   "of this rank's tokens");
	sb_printf(E->o,
		  "\t__shared__ const int *route[MK_WORLD];\n"
		  "\t__shared__ const %s *ye[MK_GPUS];\n"
		  "\tconst int node = rank / MK_GPUS, gi = rank %% MK_GPUS;\n"
		  "\tif (t.stage == W_%s) {  // rows [t.lo[1] - 1, t.hi[1] - 1) of slice t.lo[0]\n"
		  "\t\tif (threadIdx.x >= 1 && threadIdx.x < t.nread) {\n"
		  "\t\t\tconst mkd_box b = mkd_read_box(rank, t, threadIdx.x);\n"
		  "\t\t\tconst char *a = mkd_at<MK_GPUS>(p, b.tensor, MK_T[b.tensor], b.rank, b.lo[0], b.lo[1], b.lo[2]);\n"
		  "\t\t\tconst int g = b.rank %% MK_GPUS;\n"
		  "\t\t\tif (b.tensor == T_%s)\n"
		  "\t\t\t\troute[g] = (const int *)a;\n"
		  "\t\t\telse if (b.tensor == T_%s)\n"
		  "\t\t\t\troute[(b.lo[1] + 1) * MK_GPUS + g] = (const int *)a;\n"
		  "\t\t\telse\n"
		  "\t\t\t\tye[g] = (const %s *)p.ranks[b.rank].buf[T_%s];\n"
		  "\t\t}\n"
		  "\t\t__syncthreads();\n"
		  "\t\tconst int sl = t.lo[0], me = (sl + 1) * MK_GPUS + gi;\n"
		  "\t\tconst int *rk = (const int *)p.ranks[rank].buf[T_%s] + (i64)sl * %lld;\n"
		  "\t\tfloat *part = (float *)p.ranks[rank].buf[T_%s] + (i64)sl * %lld;\n"
		  "\t\tconst int n = rk[0];\n"
		  "\t\tif (t.lo[1] == 0 && threadIdx.x == 0)\n"
		  "\t\t\t*(int *)part = n;  // the count, for the RDMA back\n"
		  "\t\tconst int r0 = t.lo[1] > 1 ? t.lo[1] - 1 : 0, r1 = t.hi[1] - 1 < n ? t.hi[1] - 1 : n;\n"
		  "\t\tif (r0 < r1)\n"
		  "\t\t\tmkd_combine_nodes<%s, float>(me, %lld, %lld, MK_GPUS, node * MK_GPUS * %lld, %lld, %lld, %lld, %lld,\n"
		  "\t\t\t\troute, ye, route[me] + %lld, rk + %lld, rk + %lld, %lld, r0, r1, part + (i64)(1 + r0) * %lld, %lld,\n"
		  "\t\t\t\t0, 0, %lld, 0, 0, smem);\n"
		  "\t\treturn true;\n"
		  "\t}\n",
		  te, op->stage, rname, rr->name, te, ye->name,
		  rk->name, (1 + Tl) * W, part->name, (1 + Tl) * H,
		  te, E_, El, El, C, N, k, H,
		  E_ + 1 + N, W + words, W + words + k, W, H, H, W);
	sb_printf(E->o,
		  "\t__shared__ const int *pk[MK_NODES];\n"
		  "\t__shared__ const float *bk[MK_NODES];\n"
		  "\tif (threadIdx.x >= 2 && threadIdx.x < 2 + 2 * MK_GPUS) {\n"
		  "\t\tconst mkd_box b = mkd_read_box(rank, t, threadIdx.x);\n"
		  "\t\tif (b.tensor == T_%s)\n"
		  "\t\t\troute[b.rank %% MK_GPUS] = (const int *)p.ranks[b.rank].buf[T_%s];\n"
		  "\t\telse\n"
		  "\t\t\tye[b.rank %% MK_GPUS] = (const %s *)p.ranks[b.rank].buf[T_%s];\n"
		  "\t}\n"
		  "\tif (threadIdx.x < MK_NODES - 1) {\n"
		  "\t\tpk[threadIdx.x] = (const int *)p.ranks[rank].buf[T_%s] + (i64)threadIdx.x * %lld;\n"
		  "\t\tbk[threadIdx.x] = (const float *)p.ranks[rank].buf[T_%s] + (i64)threadIdx.x * %lld;\n"
		  "\t}\n"
		  "\t__syncthreads();\n"
		  "\tconst i64 t0 = lo[1] - mkd_base<MK_GPUS>(MK_T[T_%s], 1, rank);  // local token rows\n"
		  "\tmkd_combine_nodes<%s, %s>(gi, %lld, %lld, MK_GPUS, node * MK_GPUS * %lld, %lld, %lld, %lld, %lld,\n"
		  "\t\troute, ye, route[gi] + %lld, (const int *)p.ranks[rank].buf[T_%s],\n"
		  "\t\t(const int *)p.ranks[rank].buf[T_%s], %lld, (int)t0, (int)(t0 + hi[1] - lo[1]),\n"
		  "\t\t(%s *)mkd_at<MK_GPUS>(p, T_%s, MK_T[T_%s], rank, lo[0], lo[1], lo[2]), MK_T[T_%s].st[1],\n"
		  "\t\tMK_NODES - 1, pk, %lld, %lld, bk, smem);\n"
		  "\treturn true;\n}\n\n",
		  rname, rname, te, ye->name,
		  pk->name, (1 + Tl) * W, back->name, (1 + Tl) * H,
		  y->name, te, ty, E_, El, El, C, N, k, H,
		  E_ + 1 + N, ix->name, g->name, k,
		  ty, y->name, y->name, y->name, W, words + 2 * k);
}

/* MoE combine (mkd/moe.cuh): one block of this rank's token rows; reads 0
 * and 1 are its indices and gates. */
void cg_stage_combine(cg_em *E, const ir_op *op)
{
	const ir_prog *p = E->p;
	if (op->pack1) {
		stage_combine_nodes(E, op);
		return;
	}
	const ir_tensor *ye = &p->tensors[op->in[0]], *ix = &p->tensors[op->in[1]];
	const ir_tensor *g = &p->tensors[op->in[2]], *y = &p->tensors[op->out];
	if (!op->route1) {
		cg_fail(E, "a combine without its routing table", op->stage);
		return;
	}
	const char *rname = p->tensors[op->route1 - 1].name;
	if (g->dtype != DT_F32 || ix->dtype != DT_I32) {
		cg_fail(E, "combine needs i32 indices and f32 gates", op->stage);
		return;
	}
	cg_stage_head(E, op, "gate-weighted sum of the expert rows of a block of tokens");
	sb_printf(E->o,
		  "\t__shared__ const int *route[MK_WORLD];\n"
		  "\t__shared__ const %s *ye[MK_WORLD];\n"
		  "\tif (threadIdx.x < MK_WORLD) {\n"
		  "\t\troute[threadIdx.x] = (const int *)p.ranks[threadIdx.x].buf[T_%s];\n"
		  "\t\tye[threadIdx.x] = (const %s *)p.ranks[threadIdx.x].buf[T_%s];\n"
		  "\t}\n"
		  "\t__syncthreads();\n"
		  "\tconst i64 t0 = lo[1] - mkd_base<MK_GPUS>(MK_T[T_%s], 1, rank);  // local token rows\n"
		  "\tmkd_combine<%s, %s>(rank, %lld, %lld, %lld, %lld, %lld, %lld, route, ye,\n"
		  "\t\t(const int *)p.ranks[rank].buf[T_%s], (const float *)p.ranks[rank].buf[T_%s],\n"
		  "\t\t(int)t0, (int)(t0 + hi[1] - lo[1]),\n"
		  "\t\t(%s *)mkd_at<MK_GPUS>(p, T_%s, MK_T[T_%s], rank, lo[0], lo[1], lo[2]), MK_T[T_%s].st[1], smem);\n"
		  "\treturn true;\n}\n\n",
		  cg_ctype(ye->dtype), rname, cg_ctype(ye->dtype), ye->name, y->name, cg_ctype(ye->dtype),
		  cg_ctype(y->dtype), (long long)ye->shape[0], (long long)ye->local[0],
		  (long long)ye->shape[1], (long long)(ix->local[0] * ix->local[1]),
		  (long long)ix->local[1], (long long)ye->shape[2], ix->name, g->name,
		  cg_ctype(y->dtype), y->name, y->name, y->name);
}
