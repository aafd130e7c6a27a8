/* ir.h - the compiler's two intermediate forms.
 *
 *   ir_prog   a checked pipeline: every name resolved, every shape a concrete
 *             integer for one binding of the parameters and the mesh, every
 *             tensor's placement known.  Made by sema (sema.c), rewritten
 *             by expand.c (collectives into their parts, identity
 *             collectives folded, epilogues fused, hidden tensors, shard
 *             rotations), given a kernel plan per op by plan.c; from then
 *             on read-only: the lowering, the CPU reference executor, the
 *             inspectors, codegen/ and the runtime read it.
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
 *          (needs whole rows), L = layout (a copy that moves elements
 *          within a rank), X = exchange (communication) */
#define IR_OPS(X)                                        \
	X(MATMUL, "matmul", 'C', 2, 2)                   \
	X(ADD, "add", 'E', 2, 2)                         \
	X(MUL, "mul", 'E', 2, 2)                         \
	X(SCALE, "scale", 'E', 2, 2)                     \
	X(CAST, "cast", 'E', 2, 2)                       \
	X(RELU, "relu", 'E', 1, 1)                       \
	X(SILU, "silu", 'E', 1, 1)                       \
	X(GELU, "gelu", 'E', 1, 1)                       \
	X(GELU_TANH, "gelu_tanh", 'E', 1, 1)             \
	X(RMSNORM, "rmsnorm", 'R', 1, 2)                 \
	X(LAYERNORM, "layernorm", 'R', 3, 3)             \
	X(ROPE, "rope", 'R', 3, 3)                       \
	X(SOFTMAX, "softmax", 'R', 1, 1)                 \
	X(SUM, "sum", 'R', 2, 2)                         \
	X(ATTENTION, "attention", 'C', 3, 4)             \
	X(HEADS, "heads", 'L', 2, 2)                     \
	X(MERGE_HEADS, "merge_heads", 'L', 1, 1)         \
	X(SLICE, "slice", 'L', 4, 4)                     \
	X(CONCAT, "concat", 'L', 3, 3)                   \
	X(TRANSPOSE, "transpose", 'L', 3, 3)             \
	X(RESHAPE, "reshape", 'L', 2, 4)                 \
	X(ALLGATHER, "allgather", 'X', 2, 2)             \
	X(REDUCE_SCATTER, "reduce_scatter", 'X', 2, 2)   \
	X(ALLREDUCE, "allreduce", 'X', 1, 1)             \
	X(DISPATCH, "dispatch", 'X', 4, 5)               \
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

const char *ir_group_name(ir_group g);   /* "world", "gpus", "nodes" */

typedef struct ir_place {
	ir_placekind kind;
	int dim;          /* PL_SPLIT: the split dimension */
	ir_group group;   /* PL_SPLIT: over which ranks */
} ir_place;

/* "local", "partial", "split(0)", "split(1, gpus)" */
const char *ir_place_name(ir_place pl, char *buf, int n);

/* ---- tensors ------------------------------------------------------------ */
typedef enum ir_tkind { TK_IN, TK_OUT, TK_TEMP } ir_tkind;

/* A coordinate of dimension d is tied to a rank's shard when rot[d].unit > 0:
 * element x lies in shard x / unit of group rot[d].group, and sigma_r moves
 * it to shard sigma_r(shard), same offset.  Set by the expansion. */
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
	bool folded;                /* an identity collective's end that the
	                               expansion removed: no op reads or writes
	                               it, and it has no storage */
	ir_rot rot[IR_MAXDIM];
	/* Where its elements lie (plan_view.c).  Not a view: in storage of
	 * its own, its local piece row-major (st: those strides, off 0, root
	 * itself).  A view -- the result of a layout op the plan makes no copy
	 * of -- has no storage: element i of its local piece lies at element
	 * off + sum(i[d] * st[d]) of the local piece of tensor root (never a
	 * view itself); st of the last dimension is 1. */
	bool view;
	int root;
	int64_t off;
	int64_t st[IR_MAXDIM];
} ir_tensor;

int64_t ir_tensor_elems(const ir_tensor *t);      /* of the local piece */
int64_t ir_tensor_bytes(const ir_tensor *t);      /* of the local piece */
/* A row op's rows: dimension ndim - 2 (0 for a 1-D tensor, whose rows
 * are its elements), and the bytes of one row of the local piece */
int ir_row_dim(const ir_tensor *t);
int64_t ir_row_bytes(const ir_tensor *t);
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
	int64_t split;          /* split-K (matmul) / split-KV (attention) ways;
	                           0 = the plan chooses, 1 = none */
	span split_where;
} ir_hints;

/* ---- kernel plans (plan.c) ------------------------------------------------
 * How each op's tasks run on the device: decided once per op by the plan
 * pass against the device model in use, stored on the op, and read by the
 * lowering, the scheduler, the verifier, codegen/ and the runtime, which
 * never re-derive it.  Every limit of a plan is reported there, at the op.
 *
 * Matmul.  The output is cut into bm x bn boxes.  On sm_90a the Hopper
 * engine (mkd/wgmma.cuh: TMA + wgmma, 3 warpgroups) takes ops with 16-bit
 * operands, 16-byte rows and a 128 x {64, 128, 256} x 64 tile; everything
 * else, and every op on other archs, uses the portable mma.sync tile
 * (mkd/mma.cuh) with the same boxes.  The plan's smem is the larger need.
 * A matmul with too few tiles to occupy the CTAs (decode: a few rows)
 * splits K: partial tiles into an fp32 workspace, then a sum per tile that
 * applies the epilogue; the workspace is the one kind of tensor the plan
 * adds to the program (it adds or changes no op). */
typedef struct ir_mm_plan {
	int bm, bn, bk;     /* output box, and the mma.sync tile's k step */
	int wgmma;          /* the Hopper engine takes it */
	int wg_stages;      /* its ring depth */
	int wg_cols;        /* 1: no tile has more than 64 rows (decode), so the
	                       two consumer warpgroups split the columns (64 x
	                       bn/2 each) instead of the rows */
	int full;           /* wgmma: every tile lies inside C, so its epilogue
	                       tests no bounds (mkd_wgmma_tile's FULL) */
	int stages;         /* the mma.sync tile's ring depth */
	int tiles_m, tiles_n; /* row and column tiles one task walks (1 x 1
	                       unless the op's task bound asks for more) */
	int tmap;           /* wgmma: index of its A tensor map (B's follows) */
	int a_box;          /* wgmma: the rows of A's TMA box (mkd_wgmma_tile's
	                       ABOX): the tile's A rows, or 64 for a bucket's
	                       128-row tiles, which then load the second half
	                       only where the expert's tokens reach it */
	int bucket;         /* A is laid out as the buckets of this dispatch
	                       op (rows past an expert's tokens are zero
	                       tiles); -1 */
	int ksplit;         /* split-K: each tile's K range in ksplit pieces
	                       of kstep (the last may be shorter), summed by a
	                       sumk task per tile; 1: none */
	int64_t kstep;
	int work;           /* split-K: the fp32 workspace [ksplit, rows,
	                       cols] of the partial sums (a tensor the plan
	                       adds); -1 */
	int carry;          /* wgmma: the engine goes on into the loads of
	                       the next tile of a task that walks several, or
	                       of the CTA's next task, while this tile
	                       finishes (wgmma.cuh); tiles past a bucket's
	                       tokens are skipped, never loaded */
	int staged;         /* wgmma: the epilogue through shared memory
	                       (the default, not with MK_WG_STAGED=0;
	                       mkd_wgmma_tile::staged) */
	int tma_store;      /* staged, and the staging goes out by TMA: each
	                       128-byte column chunk of a warpgroup's rows one
	                       bulk tensor store through C's map (tmap + 2),
	                       while the consumers go on (not with
	                       MK_WG_TMA=0; mkd_wgmma_tile's STG 2); whole
	                       tiles of a result nothing in the kernel reads */
	int late;           /* wgmma, one tile a task, never skipped: the
	                       engine waits for its operands' flags itself,
	                       B's loads (weights) before A's flags, the
	                       epilogue operand's just before the epilogue
	                       (the stage waits per read) */
	int cluster;        /* wgmma, a pool's: its tiles go to the CTAs of a
	                       2-CTA cluster in pairs, the row tiles 2j and
	                       2j + 1 of one weight slab, and each CTA loads
	                       half of B for both (TMA multicast, wgmma.cuh's
	                       MC) where the kernel runs in clusters
	                       (ir_sched.cluster); 1: alone */
} ir_mm_plan;

/* The rows of a wgmma tile's A in a stage (mkd_wgmma_tile's A_ROWS): 64
 * where the warpgroups split the columns, else the tile's */
int ir_mm_a_rows(const ir_mm_plan *m);

/* Attention (mkd/attn.cuh): 16-bit inputs take the tensor-core tile of 128
 * query rows (Q and two stages of K and V chunks of `keys` keys in shared
 * memory), fp32 the CUDA-core tile of 64 rows (q, acc, max and sum in
 * fp32).  On sm_90a the Hopper tile (mkd/attn_wg.cuh: TMA ring, two
 * ping-pong consumer warpgroups on wgmma, 384 threads) takes head
 * dimensions 64 and 128 where Q, K and V are read on the rank itself
 * (engine IR_ATTN_WGMMA); the mma.sync tile is compiled for other archs.
 * With too few query tiles to occupy the CTAs (decode) the keys are
 * split across CTAs and the partial results merged (split-KV). */
enum { IR_ATTN_MMA = 0, IR_ATTN_WGMMA = 1 };
enum { IR_ATTN_ASYNC = 0, IR_ATTN_ROWS = 1, IR_ATTN_MAPS = 2 };  /* ir_attn_plan.bulk */
typedef struct ir_attn_plan {
	int rows;           /* query rows per task */
	int keys;           /* keys per K/V stage (tensor cores) */
	int ring;           /* K/V stages in shared memory (mkd_fa's NST): 2;
	                       4 for split-KV, whose tasks only stream */
	int tensor_cores;
	int bulk;           /* 16-row tiles: K and V by the copy engine on sm_90
	                       (mkd_fa's BULK): IR_ATTN_MAPS boxes of two
	                       tensor maps (K's at tmap, V's next), or
	                       IR_ATTN_ROWS a bulk copy a row; IR_ATTN_ASYNC
	                       cp.async (MK_ATTN_BULK=0|1|rows) */
	int engine;         /* IR_ATTN_WGMMA: the Hopper tile on sm_90a */
	int wg_keys;        /* its keys per stage (mkd_fa_wg::BN) */
	int wg_stages;      /* its K/V ring depth */
	int wg_overlap;     /* 1: S of chunk c beside P V of chunk c-1 */
	int wg_rotate;      /* 1: each CTA reads a block's chunks from its own
	                       place on (the plan's without a causal mask;
	                       MK_ATTN_ROTATE=0 off) */
	int tmap;           /* its tensor maps from this index: the Hopper
	                       tile's Q, K, V; a 16-row tile's K, V
	                       (IR_ATTN_MAPS); -1 */
	int kvsplit;        /* split-KV (flash-decoding): each query tile's keys
	                       in kvsplit ranges of kvstep, an attnpart task
	                       each, merged by an attnsum task; 1: none */
	int64_t kvstep;
	int work;           /* split-KV: the fp32 workspace [kvsplit, heads x
	                       queries, D + 2] of unnormalised outputs with
	                       their running max and sum (columns D, D + 1, in
	                       log2 units); -1 */
} ir_attn_plan;

/* MoE (mkd/moe.cuh): dispatch fills a bucket in blocks of slots, as many
 * as one task of the expert matmul reading it takes; combine sums blocks
 * of token rows. */
typedef struct ir_moe_plan {
	int64_t block;      /* dispatch: slots per task; combine: token rows */
} ir_moe_plan;

typedef struct ir_plan {
	int smem;           /* dynamic shared memory its tasks need, bytes */
	int threads;        /* threads of the CTA its tasks need */
	ir_mm_plan mm;      /* OP_MATMUL */
	ir_attn_plan attn;  /* OP_ATTENTION */
	ir_moe_plan moe;    /* OP_DISPATCH, OP_COMBINE */
	int64_t rows;       /* a row op (rmsnorm, layernorm, rope, softmax):
	                       rows a task (plan.c plan_rows) */
	int view;           /* layout op: its result is a view of its input
	                       (plan_view.c); it makes no task */
	int skip_past;      /* dispatch, bucket matmul: rows past a bucket's
	                       tokens are left unwritten, not zeroed: nothing
	                       reads them (plan.c past_unread) */
	int pool;           /* its tasks are taken at run time, in the pool's
	                       order, from a per-rank counter by the CTAs whose
	                       lists hold them (sched.c, mkd/kernel.cuh): the
	                       bucket matmuls, whose empty tiles are data */
	int signal_past;    /* a pool's task past its bucket's tokens (skip_past:
	                       nothing to do) is signalled by the taking thread,
	                       neither waited for nor run (mk_pool_past,
	                       mkd/kernel.cuh); MK_POOL_SKIP=1, an opt-in: on
	                       an H100 2-5% slower at 8192 tokens, 0.5-1.5%
	                       faster at 32768 (docs/perf-notes.md) */
	int ctas;           /* the most CTAs of its role its tasks go to (the
	                       first ones; sched.c), 0: all: a dispatch whose
	                       buckets a pool reads (plan.c dispatch_ctas) */
} ir_plan;

/* The most tasks one matmul makes without a `tasks` hint: past it a task
 * walks several tiles (the task tables are compiled into the kernel).  A
 * matmul on an MoE's buckets whose tiles a pool hands out (ir_plan.pool)
 * may make more: at 32768 tokens its 128 x 256 tiles need not walk, and a
 * walk of 128 x 256 tiles spills (128 x 128 tiles in walks instead ran the
 * layer 1.46x slower, H100, docs/perf-notes.md, twenty-second session). */
#define IR_MM_TASKS 8192
#define IR_MM_POOL_TASKS 32768

typedef struct ir_op {
	ir_opkind kind;
	span where;
	const char *stage;      /* `stage NAME :` or the output tensor's name */
	int out;                /* tensor written */
	int in[IR_MAXIN];       /* tensors read */
	int nin;
	int dim;                /* collective / reduction / split dimension;
	                           slice, concat: the dimension cut or joined;
	                           transpose: the first of the two swapped */
	int dim2;               /* transpose: the second */
	int64_t lo, hi;         /* slice: the range [lo, hi) kept of dim */
	int64_t to_shape[3];    /* reshape: the result's shape, as written */
	int to_ndim;
	double scalar;          /* scale(x, s); attention's softmax scale */
	ir_dtype to;            /* cast target */
	int causal;             /* attention */
	int64_t experts;        /* dispatch: number of experts E */
	int64_t capacity;       /* dispatch: slots per expert C (upper bound) */
	int drop;               /* dispatch: choices past their expert's C slots
	                           are dropped (their gates count as zero),
	                           instead of stopping the run (MK_ERR_DATA) */
	/* set by the expansion (expand.c) */
	int route1;             /* dispatch, combine: 1 + the routing-table
	                           tensor made for them, 0 none */
	int gate1;              /* dispatch between nodes: 1 + the gates that
	                           travel with its rows (the last combine's that
	                           routes by the same indices), 0 none */
	int pack1, recv1, rroute1; /* dispatch, combine between nodes: 1 + the
	                           hidden tensors of packed rows sent to each
	                           other node, those received, and the routing
	                           tables of those received; 0 none */
	int part1, back1;       /* combine between nodes: 1 + the partial sums
	                           of received rows, and those returned */
	int stage1, stage2;     /* reduce_scatter between nodes: 1 + the
	                           node-partials and the received slots */
	int epi;                /* matmul: 1 + the kind of a unary elementwise op
	                           applied to the accumulator before the store
	                           (fused), 0 none */
	double epi_scalar;      /* its scale factor (epi = 1 + OP_SCALE) */
	int epi2;               /* matmul: 1 + OP_ADD or OP_MUL of the result
	                           (after epi) with in[2], a tensor of the
	                           result's shape and placement, element by
	                           element, or a bias over its columns (fused:
	                           a residual, a gate); nin is 3 then; 0 none */
	int epi3;               /* matmul with epi2: 1 + the kind of a unary op
	                           applied after it (gelu(x W + b)), 0 none */
	double epi3_scalar;     /* its scale factor */
	int gate;               /* matmul: 1 + a second weight Wg of B's shape
	                           and placement: the result is epi(A B) *
	                           gate_epi(A Wg), element by element (a gate
	                           and up projection fused: silu(x Wg) * (x Wu),
	                           expand.c), 0 none */
	int gate_epi;           /* 1 + the kind of the unary op on A Wg, 0 none */
	double gate_scalar;     /* its scale factor */
	int norm;               /* matmul: 1 + N where A = N = rmsnorm(X, g) is
	                           computed in the tile (expand.c fuse_norms):
	                           in[0] is X, N is folded (its dtype is what
	                           the CPU reference rounds A to), 0 none */
	int norm_w;             /* 1 + the rmsnorm's weight g, 0 none */
	ir_transport transport; /* explicit stages; TR_AUTO otherwise */
	ir_peers peers;         /* explicit stages: `for p in node|remote|world` */
	ir_hints hints;
	ir_plan plan;           /* set by the plan (plan.c) */
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
	/* the kernel as a whole (plan.c): every CTA runs every kind of task */
	int threads;            /* threads of every CTA */
	int smem;               /* dynamic shared memory of every CTA, bytes */
	int ntmaps;             /* TMA tensor maps of the wgmma matmuls */
	int wg_trade;           /* the Hopper engine's 128 x 256 tiles trade
	                           registers (setmaxnreg, mkd/wgmma.cuh) */
	int wg_staged;          /* its 128-row tiles store through shared
	                           memory (MKD_WG_STAGED; off: MK_WG_STAGED=0) */
	int prefetch;           /* a run starts with the table rows its CTA
	                           will read kept in L2 (MKD_PREFETCH,
	                           MK_PREFETCH=1) */
} ir_prog;

/* What a matmul's epilogue applies (the ops the expansion fused into it),
 * in order, as "silu", "scale then add X then gelu"; "" none.  Into buf. */
const char *ir_epilogue_text(const ir_prog *p, const ir_op *op, char *buf, int n);
int ir_has_epilogue(const ir_op *op);  /* a matmul's fused epilogue, of any kind */
/* Whether a task of op knows the task its CTA runs next while it runs, so
 * that the Hopper engine may carry its ring into it: a listed task, not a
 * pool's (its CTA's next ticket is taken when it ends: mkd/kernel.cuh) */
int ir_next_known(const ir_op *op);
/* The TMA tensor maps op's tiles read through, from its plan's tmap on
 * (plan.c numbers them, codegen cg_tmaps makes them): a matmul on the
 * Hopper engine A's and B's, then its gate weight's or C's; the Hopper
 * attention tile Q's, K's and V's; a 16-row attention tile by maps
 * (IR_ATTN_MAPS) K's and V's.  0: none. */
int ir_op_nmaps(const ir_op *op);

int ir_find_tensor(const ir_prog *p, const char *name);
int ir_group_size(const ir_prog *p, ir_group g);   /* ranks in one group */

/* ---- editing a program (ir_edit.c; the expansion's tools) ---------------
 * Arrays grow in the arena; -1 when it is out of memory (a->failed). */
/* A temporary like *proto named BASE__SUFFIX (a C identifier no user name
 * can take), with no writers, readers or rotations yet; its index. */
int ir_add_tensor(ir_prog *p, arena *a, const ir_tensor *proto, const char *base,
		  const char *suffix);
/* Inserts op before index `at`; producer indices from there shift up. */
int ir_insert_op(ir_prog *p, arena *a, int at, ir_op op);
/* Removes op `at`; producer indices after it shift down. */
void ir_remove_op(ir_prog *p, int at);
/* A tensor no op reads or writes any more: no storage (ir_tensor.folded). */
void ir_fold_tensor(ir_tensor *t);
/* Fills every tensor's rot[] (rotate.c): which dimensions move with the
 * ranks' shards under sigma_r.  0, or 1 with the conflict reported. */
int ir_rotate(ir_prog *p, diags *d, arena *a);

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
	X(COMBINE, "combine")   /* MoE: weighted sum of expert rows */  \
	X(MMPART, "mmpart")  /* one split-K slice of a matmul tile, fp32 */ \
	X(SUMK, "sumk")      /* a tile's split-K partials summed, stored */ \
	X(ATTNPART, "attnpart") /* split-KV: a query tile over a key range */ \
	X(ATTNSUM, "attnsum")   /* split-KV: a query tile's partials merged */

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
	double hbm;      /* compute tiles: this task's share of the op's
	                    device-memory traffic (operands read once, thanks
	                    to L2, and the result written); 0: none */
	double cost_us;  /* cost model's estimate */
	double t0, t1;   /* predicted begin and end, us from kernel start */
} ir_task;

/* Whether task t waits for its wait w after it has started: a matmul
 * tile whose engine waits per operand (plan late) waits before it starts
 * only for what guards B's read (read 1). */
int ir_wait_late(const ir_prog *p, const ir_task *t, int w);

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
	double run_us;             /* fixed cost of a run: launch to end, events */
	double task_us;            /* fixed cost of every task on its CTA */
	double fill_us;            /* a streaming tile's ring fill and drain */
	double copy_cta_gbps;      /* what one CTA of 16-byte copies moves */
	double stream_cta_gbps;    /* what one CTA streams through a tile's
	                              load ring (TMA or cp.async) */
	double mma_eff;            /* portable mma.sync tile: fraction of peak */
	double attn_eff;           /* the Hopper attention tile at D >= 128
	                              (128 keys a stage; 64 at D = 256):
	                              fraction of peak, per flop its rows'
	                              keys count */
	double attn_k64_eff;       /* the same at D = 128 with 64 keys a stage
	                              (beside a matmul engine) */
	double attn_d64_eff;       /* the Hopper tile at D = 64 */
	double attn_mma_eff;       /* the mma.sync attention tile */
} ir_device;

/* A pool (ir_plan.pool): the tasks of one op, which the CTAs that hold
 * any of them take at run time from a per-rank counter, in this order,
 * until none is left; a CTA's entries of the op are contiguous in its list
 * and run as one loop at the first (sched.c). */
typedef struct ir_pool {
	int op;
	int first, n;    /* its tasks: ir_sched.pool_order[first .. first + n) */
	int ctas;        /* CTAs of a rank with an entry: each takes one ticket
	                    past the last task, so a run takes n + ctas */
} ir_pool;

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
	ir_pool *pools;           /* the ops whose tasks are taken at run time */
	int npools;
	int *pool_order;          /* their tasks, pool by pool, in ticket order */
	int cluster;              /* CTAs a cluster at launch: 2 where a pool's
	                             op pairs its tiles (ir_mm_plan.cluster) and
	                             the CTAs of every cluster hold the same
	                             pools; else 1 */
	double predicted_us;
	int order_wave;           /* the list schedule took tasks by wave, not
	                             ready first (sched.c list_schedule) */
	double other_us;          /* what the other order predicted; 0 when
	                             MK_SCHED_ORDER chose */
	double bound_us;          /* max(compute time, communication time) */
	double compute_us, comm_us;
} ir_sched;

/* Cuts [lo, hi) of dimension d of tensor x into pieces of at most `step`
 * (all of it when step <= 0), never across a shard boundary of a rotated
 * dimension (x->rot[d]).  The pieces go to cl[i], ch[i] (either may be
 * NULL); returns their number, or -1 past `max`. */
int ir_cut(const ir_tensor *x, int d, int64_t lo, int64_t hi, int64_t step, int64_t *cl,
	   int64_t *ch, int max);
/* The most pieces the lowering cuts one op's dimension into. */
#define IR_MAXCUTS 65536

/* sigma_r on the mesh: the rank that rank 0's view calls x, seen by rank r. */
int ir_rank_shift(int x, int r, int nodes, int gpus);
/* Does [lo, hi) of dimension d of x span every shard of its rotation (the
 * whole dimension, rot[d].unit times the group's size)?  sigma_r permutes
 * the shards, so it maps such a range onto itself: a read or write of a
 * whole rotated dimension (a gathered column block read by a matmul's K
 * loop, a row op's whole rows) stays where it is. */
int ir_rot_whole(const ir_prog *p, const ir_tensor *x, int d, int64_t lo, int64_t hi);
/* Layout ops (class 'L'): the dimension of input k that dimension dy of
 * the result copies one for one (the same index, the elements paired by
 * position), or -1 where the op maps it otherwise (a slice's or concat's
 * dimension: an offset; a reshape's last dimensions; the heads of heads /
 * merge_heads).  rotate.c ties exactly these pairs, the copy tasks read
 * them box for box (lower_layout.c), and verify checks they move alike. */
int ir_layout_dim(const ir_prog *p, const ir_op *op, int k, int dy);
/* sigma_r on a region (uses the tensors' rot[]; whole rotated dimensions
 * stay, ir_rot_whole). */
ir_region ir_region_shift(const ir_prog *p, ir_region g, int r);
/* Rank r's copy of template task t (rank, regions and flag refs mapped);
 * its reads go to reads[] (room for t->nreads) and its waits to waits[]
 * (room for t->nwaits), its read_wait stays t's. */
ir_task ir_task_shift(const ir_sched *s, const ir_task *t, int r, ir_region *reads,
		      ir_flagref *waits);

#endif
