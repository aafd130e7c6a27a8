/* emit.h - CUDA C for one persistent kernel from a verified schedule.
 *
 * The source is self-contained apart from the embedded device library,
 * byte-stable, and commented with the stage and tile each table row and
 * function serves.  Layout of the generated file: constants (MK_*), tensor
 * table, stage enum, task tables (rank 0's view), #include "mkd/task.cuh",
 * stage functions, the progressive table and the stage dispatch mk_stage,
 * #include "mkd/kernel.cuh" (the fixed loop: wait, run the stage, signal;
 * resident mode; the multi-process protocol), and with per_stage the
 * per-stage kernels' tables.
 */
#ifndef MK_EMIT_H
#define MK_EMIT_H

#include <stddef.h>

#include "../compiler/ir.h"
#include "../base/strbuf.h"

typedef struct cg_emit_opts {
	int sys_scope;   /* 1: peers are other processes/GPUs (flags at .sys);
	                    0: every rank in this launch (.gpu); -1: derive:
	                    0 when ranks_per_gpu == world */
	int per_stage;   /* also emit one kernel per stage, KERNEL__s<op>, for
	                    comparisons with separate launches and CUDA graphs */
} cg_emit_opts;

/* The TMA tensor maps a kernel uses, in the order of its MK_NTMAPS table
 * (for every matmul the Hopper engine takes: A, then B; for every Hopper
 * attention tile: Q, K, V): the tensor read, and the 2-D row-major matrix
 * the map covers -- rows x cols with row stride ld (elements) from element
 * off of the storage of tensor root (the tensor itself unless it is a
 * view) -- and the box.  The runtime encodes them for each rank it holds. */
typedef struct cg_tmap {
	int tensor, root;
	long long off;
	long long rows, cols, ld;
	int box_rows, box_cols;
} cg_tmap;

int cg_tmaps(const ir_sched *s, cg_tmap *out, int max);

/* RDMA stages: what the generated kernel and the runtime agree on.  The
 * flags RDMA tasks write are the schedule's first `nflags`; a rank's RDMA
 * flag area holds them, then one READY word per rank it writes to (in the
 * order of cg_rdma_layout's dst[]: rank 0's view), then a scratch word. */
typedef struct cg_rdma {
	int tasks;                    /* RDMA tasks of rank 0 */
	int nflags;                   /* written flags: indices 0 .. nflags-1 */
	int ndst;                     /* ranks rank 0 writes to: READY words */
	int area;                     /* u64 words of a rank's RDMA flag area */
	unsigned long long tensors;   /* bit t: tensor t is read or written by RDMA */
} cg_rdma;

/* Fills *out; dst[0 .. min(ndst, max)) gets the ranks rank 0 writes to, in
 * READY-word order.  -1 when the written flags are not the first ones or a
 * tensor index is past 63 (a schedule codegen cannot serve). */
int cg_rdma_layout(const ir_sched *s, cg_rdma *out, int *dst, int max);

/* 0, or -1 with err[] naming what cannot be generated yet. */
int cg_emit_cuda(const ir_sched *s, const cg_emit_opts *o, strbuf *out,
		 char *err, size_t n);
/* "mk_<pipeline>" */
void cg_kernel_name(const ir_sched *s, char *buf, size_t n);

#endif
