/* emit_util.c - what the emitter's files all use: failing (once, with the
 * first reason), C type names and float literals, finding a stage of the stage list, and the
 * head of a stage function. */
#include "emit_internal.h"

#include <stdio.h>
#include <string.h>

void cg_fail(cg_em *E, const char *msg, const char *what)
{
	if (!E->bad)
		snprintf(E->err, E->nerr, "%s%s%s", msg, what ? ": " : "", what ? what : "");
	E->bad = 1;
}

/* A float literal of C: "0.125f", "2.0f" ("%.9gf" of 2 is "2f", which is
 * not one). */
const char *cg_flit(double v, char *buf, size_t n)
{
	snprintf(buf, n, "%.9g", v);
	if (!strpbrk(buf, ".eEn"))
		snprintf(buf + strlen(buf), n - strlen(buf), ".0");
	snprintf(buf + strlen(buf), n - strlen(buf), "f");
	return buf;
}

const char *cg_ctype(ir_dtype t)
{
	switch (t) {
	case DT_BF16: return "mkd_bf16";
	case DT_F16: return "mkd_f16";
	case DT_F32: return "float";
	case DT_I32: return "int";
	default: return "mkd_e4m3";
	}
}

/* The index in E->st of op's stage of this kind, or -1. */
int cg_stage_find(const cg_em *E, int op, cg_stage_kind k)
{
	for (int j = 0; j < E->nst; j++)
		if (E->st[j].op == op && E->st[j].kind == k)
			return j;
	return -1;
}

int cg_op_cluster(const cg_em *E, const ir_op *op)
{
	return E->s->cluster > 1 && op->kind == OP_MATMUL && op->plan.mm.cluster > 1 ? E->s->cluster
										     : 1;
}

int cg_stage_tensor(const cg_em *E, int op, cg_stage_kind k)
{
	int j = cg_stage_find(E, op, k);
	return j < 0 ? -1 : E->st[j].tensor;
}

void cg_stage_head(cg_em *E, const ir_op *op, const char *what)
{
	const ir_prog *p = E->p;
	sb_printf(E->o, "// stage %s: %s = %s(", op->stage, p->tensors[op->out].name,
		  ir_op_name(op->kind));
	for (int i = 0; i < op->nin; i++)
		sb_printf(E->o, "%s%s", i ? ", " : "", p->tensors[op->in[i]].name);
	sb_printf(E->o, ")%s%s\n", what ? ", " : "", what ? what : "");
	/* a stage that runs a wgmma pipeline is inlined into the kernel: ptxas
	 * serializes every wgmma whose pipeline crosses a call (C7510), which
	 * cost the Hopper attention tile more than half its speed */
	const int wg = op->kind == OP_MATMUL ||
		       (op->kind == OP_ATTENTION && op->plan.attn.engine == IR_ATTN_WGMMA);
	sb_printf(E->o, "static __device__ %s bool stage_%s(const mkd_params &p, int rank, "
		  "int cta, int i, u64 epoch, char *smem)\n{\n",
		  wg ? "__forceinline__" : "__noinline__", op->stage);
	sb_puts(E->o, "\tconst mkd_task &t = MK_TASKS[i];\n");
	sb_printf(E->o, "\ti64 lo[3], hi[3];  // the box of %s this rank writes\n"
		  "\tmkd_box_shift<MK_NODES, MK_GPUS>(MK_T[T_%s], rank, t.lo, t.hi, lo, hi);\n",
		  p->tensors[op->out].name, p->tensors[op->out].name);
}
