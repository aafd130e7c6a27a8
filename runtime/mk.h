/* mk.h - libmk: compile .mk pipelines to one persistent GPU kernel and run them.
 *
 * The one public header of the runtime.  A typical embedding:
 *
 *   mk_ctx *ctx;
 *   mk_pipeline *pl;
 *   if (mk_ctx_create(NULL, &ctx) != MK_OK) ... mk_ctx_error(ctx) says why
 *   mk_load_opts lo = MK_LOAD_OPTS_INIT;
 *   lo.ranks = 2;                               // two virtual ranks on this GPU
 *   if (mk_pipeline_load_file(ctx, "ag_gemm.mk", &lo, &pl) != MK_OK)
 *           fputs(mk_ctx_log(ctx), stderr);      // diagnostics, NVRTC log
 *   mk_tensor_write_f32(pl, "A", 0, a0, n); ...  // each rank's piece
 *   mk_run(pl);                                 // one launch, all ranks
 *   mk_tensor_read_f32(pl, "C", 1, c1, n);
 *   mk_pipeline_destroy(pl);
 *   mk_ctx_destroy(ctx);
 *
 * Rules: handles are opaque; every create has a destroy that accepts NULL;
 * every call returns an mk_status with a stable value and mk_strerror();
 * the library never prints and never exits: diagnostics, the NVRTC log and
 * stall reports are returned as text.  The CUDA driver is loaded at run
 * time, so a program linked with libmk starts on a machine without a GPU,
 * and mk_ctx_create then returns MK_ERR_NO_DRIVER or MK_ERR_NO_GPU.
 * Calls on one context are not thread-safe; use one context per thread.
 */
#ifndef MK_H
#define MK_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* MK_API marks the functions below: they are libmk's interface, and the
 * only symbols libmk.so exports (the library is built with
 * -fvisibility=hidden; tests/sh/exports.sh holds the two lists equal). */
#if defined(__GNUC__) || defined(__clang__)
#define MK_API __attribute__((visibility("default")))
#else
#define MK_API
#endif

/* X(name, value, message): the status codes.  Values never change. */
#define MK_STATUS_LIST(X)                                                    \
	X(MK_OK, 0, "success")                                               \
	X(MK_ERR_INVALID, 1, "invalid argument")                             \
	X(MK_ERR_NOMEM, 2, "out of memory")                                  \
	X(MK_ERR_NO_DRIVER, 3, "no CUDA driver found")                       \
	X(MK_ERR_NO_GPU, 4, "no GPU visible")                                \
	X(MK_ERR_CUDA, 5, "CUDA driver call failed")                         \
	X(MK_ERR_SOURCE, 6, "the pipeline has errors")                       \
	X(MK_ERR_NVRTC, 7, "NVRTC could not compile the generated kernel")   \
	X(MK_ERR_NOT_FOUND, 8, "no such tensor, parameter or rank")          \
	X(MK_ERR_SIZE, 9, "buffer size does not match the tensor")           \
	X(MK_ERR_STALL, 10, "a wait timed out; see the stall report")        \
	X(MK_ERR_UNSUPPORTED, 11, "not supported by this build or device")   \
	X(MK_ERR_IO, 12, "file error")                                       \
	X(MK_ERR_INTERNAL, 13, "internal error")                             \
	X(MK_ERR_STATE, 14, "not valid in the pipeline's current state")     \
	X(MK_ERR_TOO_LARGE, 15, "does not fit on the device")                \
	X(MK_ERR_PEER, 16, "a peer rank failed or disappeared")              \
	X(MK_ERR_DATA, 17, "input data the pipeline cannot take (e.g. routing)")

typedef enum mk_status {
#define MK_X_(name, value, msg) name = value,
	MK_STATUS_LIST(MK_X_)
#undef MK_X_
} mk_status;

MK_API const char *mk_strerror(mk_status s);     /* "no GPU visible" */
MK_API const char *mk_status_name(mk_status s);  /* "MK_ERR_NO_GPU" */
MK_API const char *mk_version(void);

typedef struct mk_ctx mk_ctx;
typedef struct mk_pipeline mk_pipeline;

/* ---- context: one GPU, the driver, the JIT cache ----------------------- */
typedef struct mk_ctx_opts {
	int device;              /* CUDA device ordinal */
	const char *cache_dir;   /* NULL: $XDG_CACHE_HOME/mk or ~/.cache/mk */
	int no_cache;            /* 1: compile every time */
	int cpu;                 /* 1: no GPU: pipelines compile (CUDA source
	                            included) and run on the CPU reference
	                            executor, tensors live in host memory */
} mk_ctx_opts;

/* On failure *out is still a context (or NULL when out of memory) whose
 * mk_ctx_error() tells why; destroy it. */
MK_API mk_status mk_ctx_create(const mk_ctx_opts *o, mk_ctx **out);
MK_API void mk_ctx_destroy(mk_ctx *c);
/* One line on the last failure of this context ("" if none). */
MK_API const char *mk_ctx_error(const mk_ctx *c);
/* Diagnostics and NVRTC log of the last load ("" if none). */
MK_API const char *mk_ctx_log(const mk_ctx *c);
/* "NVIDIA H200, 132 SMs, sm_90" */
MK_API const char *mk_ctx_device(const mk_ctx *c);

/* ---- several processes --------------------------------------------------------
 * One process per rank (one GPU each, or several sharing a GPU under MPS).
 * mk_comm_create joins the job: the ranks meet through a TCP rendezvous set
 * up from MK_RANK, MK_WORLD_SIZE and MK_ROOT=host:port (or the variables
 * mpirun, Slurm and torchrun set; MK_JOB_TOKEN keeps strangers out).  Pass
 * the communicator in mk_load_opts.comm: memory is then shared with the
 * ranks of the node (cuMemCreate, exported as file descriptors) and each
 * process launches its own rank's kernel. */
typedef struct mk_comm mk_comm;

MK_API mk_status mk_comm_create(mk_comm **out, char *err, size_t n);
MK_API void mk_comm_destroy(mk_comm *c);
MK_API int mk_comm_rank(const mk_comm *c);
MK_API int mk_comm_size(const mk_comm *c);
MK_API int mk_comm_local_rank(const mk_comm *c);   /* among the ranks of this host */
MK_API int mk_comm_local_size(const mk_comm *c);
/* All ranks reach this point (e.g. before reading results). */
MK_API mk_status mk_comm_barrier(mk_comm *c);
/* Every rank gives one int; all[] (mk_comm_size entries) gets them. */
MK_API mk_status mk_comm_gather_int(mk_comm *c, int mine, int *all);

/* ---- loading a pipeline --------------------------------------------------- */
typedef struct mk_param {
	const char *name;        /* a `param`, or the mesh built-ins nodes / gpus */
	long long value;
} mk_param;

typedef struct mk_load_opts {
	const mk_param *params;
	int nparams;
	int ranks;               /* virtual ranks on this GPU, one launch (>= 1) */
	unsigned timeout_ms;     /* bound on every wait in the kernel */
	int trace;               /* record per-task times for mk_trace_write */
	mk_comm *comm;           /* one process per rank (ranks must be 1) */
	int ranks_per_gpu;       /* with comm: processes sharing this GPU (0: the
	                            local ranks over the visible GPUs) */
} mk_load_opts;

#define MK_LOAD_OPTS_INIT {NULL, 0, 1, 5000, 0, NULL, 0}

/* Parse, check, schedule, generate, compile (through the cache), load the
 * module, allocate every tensor of every rank.  MK_ERR_SOURCE: the
 * pipeline has errors, mk_ctx_log() lists them (file:line:col); among them
 * a mesh (the file's `mesh 2 x 8`, or params "nodes" and "gpus") that does
 * not hold exactly the job's ranks.  The job's ranks fill the mesh's open
 * sides (by default 1 x ranks). */
MK_API mk_status mk_pipeline_load_file(mk_ctx *c, const char *path, const mk_load_opts *o,
				       mk_pipeline **out);
MK_API mk_status mk_pipeline_load_string(mk_ctx *c, const char *name, const char *text,
					 const mk_load_opts *o, mk_pipeline **out);
MK_API void mk_pipeline_destroy(mk_pipeline *p);

/* ---- tensors -------------------------------------------------------------- */
typedef enum mk_tensor_kind { MK_TENSOR_IN, MK_TENSOR_OUT, MK_TENSOR_TEMP } mk_tensor_kind;

typedef struct mk_tensor_info {
	const char *name;
	mk_tensor_kind kind;
	const char *dtype;       /* "bf16", "f16", "f32", "i32", "e4m3" */
	int elem_size;
	int ndim;
	long long shape[4];      /* logical shape */
	long long local[4];      /* what one rank stores */
	size_t bytes;            /* of one rank's piece */
	int stored;              /* 0: the compiler removed it (folded), it has
	                            no storage and cannot be read, written or bound */
} mk_tensor_info;

/* What a caller must provide: every tensor i < mk_pipeline_ntensors() with
 * kind MK_TENSOR_IN and stored set, local[] elements of dtype on each rank
 * (the same shape on every rank); MK_TENSOR_OUT the results.  Works on a
 * CPU context, so tools can ask without a GPU. */
MK_API int mk_pipeline_ntensors(const mk_pipeline *p);
/* The ranks this process holds: 0 .. mk_pipeline_ranks()-1 with virtual
 * ranks; with a communicator, only its own rank (mk_comm_rank). */
MK_API int mk_pipeline_ranks(const mk_pipeline *p);
MK_API int mk_pipeline_first_rank(const mk_pipeline *p);
MK_API mk_status mk_tensor_info_get(const mk_pipeline *p, int index, mk_tensor_info *out);
MK_API int mk_tensor_find(const mk_pipeline *p, const char *name);   /* -1 if none */

/* Copy one rank's piece in or out: raw bytes in the element type, or
 * float32 converted (round to nearest even).  `bytes` / `count` must match
 * the piece exactly (MK_ERR_SIZE otherwise). */
MK_API mk_status mk_tensor_write(mk_pipeline *p, const char *name, int rank, const void *src,
				 size_t bytes);
MK_API mk_status mk_tensor_read(mk_pipeline *p, const char *name, int rank, void *dst,
				size_t bytes);
MK_API mk_status mk_tensor_write_f32(mk_pipeline *p, const char *name, int rank,
				     const float *src, size_t count);
MK_API mk_status mk_tensor_read_f32(mk_pipeline *p, const char *name, int rank, float *dst,
				    size_t count);
/* Use caller-owned device memory (a CUdeviceptr, e.g. a PyTorch tensor's
 * data_ptr(): libmk runs in the device's primary context, the one the CUDA
 * runtime uses) for a rank's piece, from the next run on.  Binding is cheap
 * and may change every run: nothing is allocated or copied but the rank
 * table, which the next run copies in stream order; binding the pointer
 * already bound costs nothing.  The runtime's own buffer is freed at the
 * first bind; mk_tensor_unbind allocates one again. */
MK_API mk_status mk_tensor_bind(mk_pipeline *p, const char *name, int rank,
				unsigned long long devptr, size_t bytes);
MK_API mk_status mk_tensor_unbind(mk_pipeline *p, const char *name, int rank);
MK_API mk_status mk_tensor_devptr(const mk_pipeline *p, const char *name, int rank,
				  unsigned long long *devptr);

/* ---- running ----------------------------------------------------------------
 * One-shot: launch, run every rank, wait.  Resident: the kernel stays on the
 * GPU and waits on a doorbell in host-mapped memory; each mk_resident_run
 * rings it and waits for completion, costing no launch at all. */
MK_API mk_status mk_run(mk_pipeline *p);
/* ms: time of the run on the GPU (CUDA events), may be NULL. */
MK_API mk_status mk_run_timed(mk_pipeline *p, float *ms);
/* On the caller's stream: mk_run_on enqueues one run on `stream` (a
 * CUstream of this context's device; NULL: the pipeline's own stream; the
 * legacy default stream is CU_STREAM_LEGACY, PyTorch's stream 0) and
 * returns without waiting.  Bound tensors are read and written in stream
 * order, so a producer kernel before it and a consumer after it on the same
 * stream need no synchronisation; runs of one pipeline stay in order across
 * streams.  mk_sync waits for the last run and reports what the device saw
 * (a stall, bad routing data, a failed RDMA proxy) since the previous
 * mk_sync; until then such a failure is silent.  mk_run is mk_run_on on the
 * pipeline's stream followed by mk_sync.  A CPU context runs at once.
 *
 * CUDA graphs: a run enqueued on a stream that is capturing is captured.
 * The graph holds the tensors bound at capture time (bind before the
 * capture, as a graph's static inputs and outputs) and, per replay, copies
 * its own rank table, clears the flags and runs; every later run of the
 * pipeline does the same (one memset and one small copy more per run).
 * Replays report through mk_sync after the caller synchronised their
 * stream.  Not capturable: resident mode (the kernel never ends, MK_ERR_STATE),
 * a pipeline with one process per rank (its flags count runs together with
 * the peer processes'; MK_ERR_UNSUPPORTED), a pipeline that stalled and was
 * not run since.  The kernel is a cooperative launch: all its CTAs are
 * resident at once, so in a graph it waits for the SMs like any such
 * launch; a driver that cannot capture cooperative launches gives
 * MK_ERR_UNSUPPORTED. */
MK_API mk_status mk_run_on(mk_pipeline *p, void *stream);
MK_API mk_status mk_sync(mk_pipeline *p);
MK_API mk_status mk_resident_start(mk_pipeline *p);
MK_API mk_status mk_resident_run(mk_pipeline *p, float *ms);
MK_API mk_status mk_resident_stop(mk_pipeline *p);

/* After MK_ERR_STALL: which rank, role, CTA, task and flag waited, the
 * expected and seen values, the stage and tile.  "" when no stall. */
MK_API const char *mk_stall_report(const mk_pipeline *p);
/* Per-task begin/end of the last run (needs mk_load_opts.trace) as a Chrome
 * trace, one track per rank and CTA; opens in Perfetto. */
MK_API mk_status mk_trace_write(mk_pipeline *p, const char *path);
/* The generated CUDA source, the schedule as text. */
MK_API const char *mk_pipeline_source(const mk_pipeline *p);
MK_API const char *mk_pipeline_schedule(const mk_pipeline *p);

#ifdef __cplusplus
}
#endif
#endif
