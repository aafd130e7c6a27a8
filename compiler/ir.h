/* ir.h - the compiler's two intermediate forms.
 *
 *   ir_prog   a checked pipeline: every name resolved, every shape a concrete
 *             integer for one binding of the parameters and the mesh, every
 *             tensor's placement known.  Made by sema (sema.c), read by the
 *             lowering, the CPU reference executor and the inspectors.
 *
 *   ir_sched  the schedule: the roles and CTA split of one rank, each CTA's
 *             ordered task list, and the flags that order tasks.  Made by
 *             lower.c + sched.c, checked by verify.c, read by codegen/.
 *
 * Symmetry.  A pipeline is SPMD and its schedule is rank-symmetric: the
 * schedule stores rank 0's tasks (the template), and rank r runs their image
 * under the map sigma_r, which shifts every rank by r on the mesh
 * (node + r_node mod nodes, gpu + r_gpu mod gpus) and every coordinate that
 * is tied to a rank's shard the same way (see ir_tensor.rot).  sched_expand()
 * builds rank r's concrete tasks for verification and JSON; codegen emits the
 * template once and applies sigma_r on the device.  So the generated source
 * is the same for every rank and every world layout of one mesh.
 */
#ifndef MK_IR_H
#define MK_IR_H

#include <stdbool.h>
#include <stdint.h>

#include "../base/arena.h"
#include "../grammar/diag.h"

#define IR_MAXDIM 4
#define IR_MAXIN 4
#define IR_MAXRANKS 1024

/* ---- element types: one table ----------------------------------------- */
#define IR_DTYPES(X)                     \
	X(BF16, "bf16", 2)               \
	X(F16, "f16", 2)                 \
	X(F32, "f32", 4)                 \
	X(I32, "i32", 4)                 \
	X(E4M3, "e4m3", 1)

typedef enum ir_dtype {
#define X(id, name, size) DT_##id,
	IR_DTYPES(X)
#undef X
	DT_COUNT
} ir_dtype;

const char *ir_dtype_name(ir_dtype t);
int ir_dtype_size(ir_dtype t);
int ir_dtype_lookup(const char *name, int len);  /* -1 when unknown */

/* ---- ops: one table ----------------------------------------------------
 * X(id, name, class, min_args, max_args)
 *   class: C = compute, E = elementwise (tile-local), R = row-wise
 *          (needs whole rows), X = exchange (communication) */
#define IR_OPS(X)                                        \
	X(MATMUL, "matmul", 'C', 2, 2)                   \
	X(ADD, "add", 'E', 2, 2)                         \
	X(MUL, "mul", 'E', 2, 2)                         \
	X(SCALE, "scale", 'E', 2, 2)                     \
	X(CAST, "cast", 'E', 2, 2)                       \
	X(RELU, "relu", 'E', 1, 1)                       \
	X(SILU, "silu", 'E', 1, 1)                       \
	X(GELU, "gelu", 'E', 1, 1)                       \
	X(RMSNORM, "rmsnorm", 'R', 1, 2)                 \
	X(SOFTMAX, "softmax", 'R', 1, 1)                 \
	X(SUM, "sum", 'R', 2, 2)                         \
	X(ATTENTION, "attention", 'C', 3, 4)             \
	X(ALLGATHER, "allgather", 'X', 2, 2)             \
	X(REDUCE_SCATTER, "reduce_scatter", 'X', 2, 2)   \
	X(ALLREDUCE, "allreduce", 'X', 1, 1)             \
	X(DISPATCH, "dispatch", 'X', 4, 4)               \
	X(COMBINE, "combine", 'X', 3, 3)                 \
	X(RING_SHIFT, "ring_shift", 'X', 1, 2)           \
	X(PUT, "put", 'X', 1, 1)

typedef enum ir_opkind {
#define X(id, name, cls, lo, hi) OP_##id,
	IR_OPS(X)
#undef X
	OP_COUNT
} ir_opkind;

const char *ir_op_name(ir_opkind k);
char ir_op_class(ir_opkind k);
int ir_op_lookup(const char *name, int len);     /* -1 when unknown */

/* ---- placement ---------------------------------------------------------- */
typedef enum ir_placekind { PL_LOCAL, PL_SPLIT, PL_PARTIAL } ir_placekind;

/* The ranks a split is spread over: all ranks, the GPUs of a node (shard =
 * gpu index, the same on every node), or the nodes (shard = node index). */
typedef enum ir_group { GRP_WORLD, GRP_GPUS, GRP_NODES } ir_group;

typedef struct ir_place {
	ir_placekind kind;
	int dim;          /* PL_SPLIT: the split dimension */
	ir_group group;   /* PL_SPLIT: over which ranks */
} ir_place;

/* ---- tensors ------------------------------------------------------------ */
typedef enum ir_tkind { TK_IN, TK_OUT, TK_TEMP } ir_tkind;

/* A coordinate of dimension d is tied to a rank's shard when rot[d].unit > 0:
 * element x lies in shard x / unit of group rot[d].group, and sigma_r moves
 * it to shard sigma_r(shard), same offset.  Set by the lowering. */
typedef struct ir_rot {
	int64_t unit;
	ir_group group;
} ir_rot;

typedef struct ir_tensor {
	const char *name;
	span where;
	ir_tkind kind;
	ir_dtype dtype;
	int ndim;
	int64_t shape[IR_MAXDIM];   /* logical (global) shape */
	ir_place place;
	int64_t local[IR_MAXDIM];   /* what one rank stores */
	int producer;               /* first op writing it; -1 for inputs */
	int nwriters;               /* ops writing it (explicit stages may share) */
	int nuses;                  /* ops reading it */
	bool peer_access;           /* read or written by other ranks */
	bool folded;                /* an identity collective's end that the
	                               lowering removed: no op reads or writes
	                               it, and it has no storage */
	ir_rot rot[IR_MAXDIM];
} ir_tensor;

int64_t ir_tensor_elems(const ir_tensor *t);      /* of the local piece */
int64_t ir_tensor_bytes(const ir_tensor *t);      /* of the local piece */
/* First logical index that rank `rank` stores along dim d (0 unless split). */
int64_t ir_shard_base(const ir_tensor *t, int d, int rank, int nodes, int gpus);

/* ---- hints and ops ------------------------------------------------------ */
typedef enum ir_transport { TR_AUTO, TR_LOCAL, TR_NVLINK, TR_RDMA } ir_transport;
typedef enum ir_peers { PEERS_ALL, PEERS_NODE, PEERS_REMOTE } ir_peers;

typedef struct ir_hints {
	int64_t tile[3];        /* m, n, k; 0 = not given */
	int ntile;
	span tile_where;
	int64_t chunk;          /* bytes; 0 = not given */
	span chunk_where;
	int64_t tasks;          /* at most this many tasks (matmul); 0 = not given */
	span tasks_where;
} ir_hints;

typedef struct ir_op {
	ir_opkind kind;
	span where;
	const char *stage;      /* `stage NAME :` or the output tensor's name */
	int out;                /* tensor written */
	int in[IR_MAXIN];       /* tensors read */
	int nin;
	int dim;                /* collective / reduction / split dimension */
	double scalar;          /* scale(x, s); attention's softmax scale */
	ir_dtype to;            /* cast target */
	int causal;             /* attention */
	int64_t experts;        /* dispatch: number of experts E */
	int64_t capacity;       /* dispatch: slots per expert C (upper bound) */
	int route1;             /* dispatch, combine: 1 + the routing-table
	                           tensor the lowering made for them, 0 none */
	int pack1, recv1, rroute1; /* dispatch, combine between nodes: 1 + the
	                           hidden tensors of packed rows sent to each
	                           other node, those received, and the routing
	                           tables of those received (lower.c); 0 none */
	int part1, back1;       /* combine between nodes: 1 + the partial sums
	                           of received rows, and those returned */
	int epi;                /* matmul: 1 + the kind of a unary elementwise op
	                           applied to the accumulator before the store
	                           (fused by the lowering), 0 none */
	double epi_scalar;      /* its scale factor (epi = 1 + OP_SCALE) */
	int tiles_m, tiles_n;   /* matmul: row and column tiles one task walks
	                           (lower; 0 or 1: one tile a task) */
	ir_transport transport; /* explicit stages; TR_AUTO otherwise */
	ir_peers peers;         /* explicit stages: `for p in node|remote|world` */
	ir_hints hints;
} ir_op;

typedef struct ir_param {
	const char *name;
	span where;
	int64_t value;
	bool overridden;        /* set by -D */
} ir_param;

/* Role names known to the scheduler; `roles` hints name these. */
#define IR_ROLES(X)                          \
	X(COMPUTE, "compute")                \
	X(NVLINK, "nvlink")                  \
	X(RDMA, "rdma")                      \
	X(REDUCE, "reduce")

typedef enum ir_rolekind {
#define X(id, name) ROLE_##id,
	IR_ROLES(X)
#undef X
	ROLE_COUNT
} ir_rolekind;

const char *ir_role_name(ir_rolekind k);
int ir_role_lookup(const char *name, int len);

typedef struct ir_role_hint {
	ir_rolekind role;
	int ctas;
	span where;
} ir_role_hint;

typedef struct ir_prog {
	const char *name;
	span where;
	int nodes, gpus, world;
	ir_param *params;
	int nparams;
	ir_tensor *tensors;
	int ntensors;
	ir_op *ops;             /* producers before consumers */
	int nops;
	ir_role_hint *roles;    /* the `roles` hint, if any */
	int nroles;
	span roles_where;
} ir_prog;

int ir_find_tensor(const ir_prog *p, const char *name);

/* ---- the schedule --------------------------------------------------------
 * A region is a half-open box in the logical coordinates of a tensor, on one
 * rank.  A flag is a 64-bit epoch counter in a rank's flag array: each signal
 * adds one, and in run e (e = 1, 2, ...) a wait on it completes when it
 * reaches e * expected.  Nothing is ever reset.
 *
 * Add or write.  A signal from the GPU adds one (red.release).  An RDMA write
 * cannot add: a flag signalled by an RDMA task is WRITTEN, with the value e,
 * after the task's data (the proxy posts the flag behind the data).  So every
 * RDMA task has a flag of its own (ir_flag.written), which no other task
 * signals: expected = 1, and "reaches e * 1" holds exactly as for counters.
 * Such flags come first in the flag array (indices 0 .. nwritten-1) and live
 * in the rank's RDMA flag area, which the transport can reach; a consumer
 * whose read was written partly by RDMA tasks waits on each of their flags
 * and on one counter for the other producers. */

typedef struct ir_region {
	int tensor;
	int rank;
	int64_t lo[IR_MAXDIM], hi[IR_MAXDIM];
} ir_region;

typedef struct ir_flagref {
	int rank;     /* whose flag array */
	int index;    /* index in it */
} ir_flagref;

#define IR_TASKS(X)                                              \
	X(COPY, "copy")      /* copy a region, maybe across ranks */   \
	X(RDMA, "rdma")      /* post an RDMA write through the proxy */ \
	X(MATMUL, "matmul")  /* one output tile of a matmul */          \
	X(EW, "ew")          /* elementwise op on a region */           \
	X(ROW, "row")        /* row-wise op on whole rows */            \
	X(REDUCE, "reduce")  /* sum regions of several ranks */         \
	X(ATTN, "attn")      /* attention block */                     \
	X(ROUTE, "route")    /* MoE: a rank's routing table */          \
	X(PACK, "pack")      /* MoE: rows routed to another node, packed */ \
	X(DISPATCH, "dispatch") /* MoE: fill one expert's bucket */     \
	X(COMBINE, "combine")   /* MoE: weighted sum of expert rows */

typedef enum ir_taskkind {
#define X(id, name) TASK_##id,
	IR_TASKS(X)
#undef X
	TASK_COUNT
} ir_taskkind;

const char *ir_task_name(ir_taskkind k);

/* A task's reads and waits are arrays of any length (an attention tile
 * reads every rank's key and value blocks, a dispatch every rank's table
 * and tokens); a reduce task, whose source list the generated code holds
 * in a fixed array, sums at most IR_MAXREDUCE regions. */
#define IR_MAXREDUCE 17
#define IR_MAXSIGNALS 16

typedef struct ir_task {
	int id;          /* index in ir_sched.tasks */
	int rank;        /* the rank that runs it */
	int role;        /* index in ir_sched.roles */
	int cta;         /* CTA within the rank (absolute, not within the role) */
	int order;       /* position in its CTA's list */
	ir_taskkind kind;
	int op;          /* the op (stage) it serves */
	int nreads, maxreads;
	ir_region *reads;        /* nreads regions (arena; lower.c) */
	int *read_wait;          /* the wait guarding each read, -1 none, -3
	                            several (RDMA flags and a counter): only all
	                            the waits together guard it (sched.c) */
	ir_region write;
	int nwaits, maxwaits;
	ir_flagref *waits;       /* nwaits flags (arena; sched.c) */
	int nsignals;
	ir_flagref signals[IR_MAXSIGNALS];
	ir_transport transport; /* COPY / RDMA: how the bytes move */
	double flops;    /* arithmetic of the task */
	double bytes;    /* bytes moved (COPY, RDMA) or streamed (EW, ROW) */
	double cost_us;  /* cost model's estimate */
	double t0, t1;   /* predicted begin and end, us from kernel start */
} ir_task;

typedef struct ir_flag {
	int index;       /* in the rank's flag array */
	int expected;    /* signals per run */
	int written;     /* 1: written (value = epoch) by its one RDMA task, not
	                    added; expected 1; in the RDMA flag area */
	int op;          /* the op whose region it guards */
	ir_region guards;/* the region it announces (for reports) */
} ir_flag;

typedef struct ir_role {
	ir_rolekind kind;
	int first_cta;
	int ctas;
} ir_role;

/* Device constants the cost model and the scheduler use (see costmodel.c). */
typedef struct ir_device {
	const char *name;
	int sms;
	int max_threads_per_sm;
	int smem_per_sm;           /* bytes usable by one CTA */
	int regs_per_sm;
	double bf16_tflops;        /* dense tensor-core rate, whole device */
	double f32_tflops;         /* CUDA-core rate, whole device */
	double mem_gbps;           /* device memory, read + write */
	double nvlink_gbps;        /* per direction, per GPU */
	double nic_gbps;           /* per GPU */
	double nvlink_lat_us;
	double nic_lat_us;
	double flag_lat_us;        /* signal to seen, same device */
	double launch_us;
	double copy_cta_gbps;      /* what one CTA of 16-byte copies moves */
	double mma_eff;            /* portable mma.sync tile: fraction of peak */
} ir_device;

typedef struct ir_sched {
	const ir_prog *prog;
	ir_device dev;
	int ranks_per_gpu;        /* virtual ranks sharing one GPU */
	int ctas;                 /* CTAs of one rank */
	int threads;              /* threads of every CTA */
	int smem;                 /* dynamic shared memory of every CTA, bytes */
	ir_role *roles;
	int nroles;
	ir_task *tasks;           /* rank 0's tasks (the template) */
	int ntasks;
	int *cta_first;           /* tasks of CTA c: [cta_first[c], cta_first[c+1]) */
	ir_flag *flags;           /* rank 0's flag array; every rank has the same */
	int nflags;
	double predicted_us;
	double bound_us;          /* max(compute time, communication time) */
	double compute_us, comm_us;
} ir_sched;

/* How a matmul op is computed.  The output is cut into bm x bn boxes.  On
 * sm_90a the Hopper engine (mkd/wgmma.cuh: TMA + wgmma, 3 warpgroups) takes
 * ops with 16-bit operands, 16-byte rows and a 128 x {64, 128, 256} x 64
 * tile; everything else, and every op on other archs, uses the portable
 * mma.sync tile (mkd/mma.cuh) with the same boxes.  smem: the larger need. */
typedef struct ir_mm_plan {
	int bm, bn;
	int wgmma;          /* the engine can take it */
	int wg_stages;      /* its ring depth */
	int bk, stages;     /* the mma.sync tile's k step and ring depth */
	int smem;           /* bytes of dynamic shared memory the op needs */
} ir_mm_plan;

int ir_mm_plan_of(const ir_prog *p, const ir_op *op, int smem_limit, ir_mm_plan *out);

/* The most tasks one matmul makes without a `tasks` hint: past it a task
 * walks several tiles (lower.c; the task tables are compiled into the
 * kernel). */
#define IR_MM_TASKS 8192

/* How an attention op is computed (mkd/attn.cuh): 16-bit inputs take the
 * tensor-core tile of 128 query rows (Q and two stages of K and V chunks in
 * shared memory), fp32 the CUDA-core tile of 64 rows (q, acc, max and sum
 * in fp32). */
typedef struct ir_attn_plan {
	int rows;           /* query rows per task */
	int tensor_cores;
	int smem;           /* bytes of dynamic shared memory */
} ir_attn_plan;

ir_attn_plan ir_attn_plan_of(const ir_prog *p, const ir_op *op);

/* The gates that travel with a dispatch's rows between nodes: those of the
 * last combine after op `dispatch` that routes by the same indices; -1. */
int ir_moe_gate(const ir_prog *p, int dispatch);

/* sigma_r on the mesh: the rank that rank 0's view calls x, seen by rank r. */
int ir_rank_shift(int x, int r, int nodes, int gpus);
/* sigma_r on a region (uses the tensors' rot[]). */
ir_region ir_region_shift(const ir_prog *p, ir_region g, int r);
/* Rank r's copy of template task t (rank, regions and flag refs mapped);
 * its reads go to reads[] (room for t->nreads) and its waits to waits[]
 * (room for t->nwaits), its read_wait stays t's. */
ir_task ir_task_shift(const ir_sched *s, const ir_task *t, int r, ir_region *reads,
		      ir_flagref *waits);

#endif
