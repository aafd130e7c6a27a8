/* emit_internal.h - what the files of the CUDA emitter share; not for use
 * outside codegen/ (the interface is emit.h).
 *
 *   emit_cu.c     the driver: header, tensor and task tables, the stage
 *                 list, the progressive table, the stage dispatch, the
 *                 per-stage kernels; the RDMA layout
 *   emit_stage.c  stage functions of compute and copy ops, RDMA stages,
 *                 the TMA tensor maps
 *   emit_moe.c    stage functions of MoE dispatch and combine
 *   emit_util.c   what they all use: failing, type names, the stage
 *                 list's lookups, the head of a stage function
 *
 * The fixed code every kernel shares (the loop, the task accessors) is in
 * the device library: mkd/tables.cuh, mkd/task.cuh, mkd/kernel.cuh.
 */
#ifndef MK_EMIT_INTERNAL_H
#define MK_EMIT_INTERNAL_H

#include "emit.h"

/* X(kind, enum prefix, function prefix, what its tasks do): the kinds of
 * stage, in the order their enum values are numbered. */
#define CG_STAGE_KINDS(X)                                                       \
	X(S, "S", "stage", "the op's own tasks")                                 \
	X(R, "R", "rdma", "its RDMA tasks")                                      \
	X(W, "W", "stage", "tasks writing another tensor (lowest number)")       \
	X(W2, "W2", "stage", "tasks writing a second other tensor")              \
	X(W3, "W3", "stage", "tasks writing a third other tensor")

typedef enum cg_stage_kind {
#define X(k, prefix, fn, what) CG_##k,
	CG_STAGE_KINDS(X)
#undef X
	CG_NKINDS
} cg_stage_kind;

/* One value of the generated stage enum, <prefix>_<op stage>.  S stages
 * exist for every op (MK_PROGRESSIVE and the task table index by op); the
 * others only where the op has such tasks. */
typedef struct cg_stage {
	int op;               /* index into prog->ops */
	cg_stage_kind kind;
	int tensor;           /* what its tasks write (S: the op's out; R: the
	                         RDMA destination) */
	int fn;               /* 1: it has a function and a dispatch case */
	int progressive;      /* 1: the stage waits for each read itself; 2
	                         (emit_cu.c): only on the Hopper engine */
} cg_stage;

typedef struct cg_em {
	int sys;      /* ranks are separate processes */
	int per_stage;/* also one kernel per stage */
	const ir_sched *s;
	const ir_prog *p;
	strbuf *o;
	char *err;
	size_t nerr;
	int bad;
	cg_rdma rl;   /* RDMA stages (rl.tasks > 0) */
	int *rdst;    /* [rl.ndst] ranks rank 0 writes to */
	cg_stage *st; /* the stage list, in enum order: its index is the value */
	int nst;
} cg_em;

/* ---- emit_util.c */
void cg_fail(cg_em *E, const char *msg, const char *what);
const char *cg_ctype(ir_dtype t);
const char *cg_flit(double v, char *buf, size_t n);
/* The index in E->st of op's stage of this kind, or -1. */
int cg_stage_find(const cg_em *E, int op, cg_stage_kind k);
/* CTAs a cluster that run op's tiles together: 2 where the plan pairs its
 * tiles (ir_mm_plan.cluster) and the kernel runs in clusters
 * (ir_sched.cluster), else 1. */
int cg_op_cluster(const cg_em *E, const ir_op *op);
/* The tensor op's stage of this kind writes, or -1 (no such stage). */
int cg_stage_tensor(const cg_em *E, int op, cg_stage_kind k);
/* The comment and signature of op's stage function, and the box of its out
 * tensor this rank writes (lo, hi). */
void cg_stage_head(cg_em *E, const ir_op *op, const char *what);
void cg_stage_layout(cg_em *E, const ir_op *op);
void cg_stage_view(cg_em *E, const ir_op *op);

/* ---- emit_stage.c: one function per op (all threads of a CTA, one task) */
void cg_stage_matmul(cg_em *E, const ir_op *op);
/* Into buf: the expression for the rows of expert e's bucket that hold
 * tokens, where matmul op reads a dispatch's buckets; returns the routing
 * table's tensor, or -1 (no bucket; buf empty). */
int cg_bucket_rows(const cg_em *E, const ir_op *op, const char *e, char *buf, size_t n);
void cg_stage_copy(cg_em *E, const ir_op *op);
void cg_stage_reduce(cg_em *E, const ir_op *op);
void cg_stage_attention(cg_em *E, const ir_op *op);
void cg_stage_sum(cg_em *E, const ir_op *op);
void cg_stage_ew(cg_em *E, const ir_op *op);
void cg_stage_row(cg_em *E, const ir_op *op);
void cg_stage_rdma(cg_em *E, const ir_op *op);

/* ---- emit_moe.c */
void cg_stage_dispatch(cg_em *E, const ir_op *op);
void cg_stage_combine(cg_em *E, const ir_op *op);

#endif
