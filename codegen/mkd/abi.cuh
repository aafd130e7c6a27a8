/* mkd/abi.cuh - what the host runtime and the generated kernel share.
 *
 * Plain C on purpose: the runtime includes this file as a C header, NVRTC as
 * CUDA.  Changing a layout here changes MKD_ABI_VERSION, which is part of
 * every generated source and therefore of every JIT cache key.
 */
#ifndef MKD_ABI_CUH
#define MKD_ABI_CUH

#define MKD_ABI_VERSION 5
#define MKD_MAX_TENSORS 64

/* One row per rank of the mesh, in device memory: where that rank's flag
 * array and tensors are, as this process sees them (its own allocations,
 * peers' memory mapped over NVLink or shared on one GPU; 0 where the rank is
 * not reachable by loads and stores, e.g. on another node).
 *
 * `rflags` is the rank's RDMA flag area (pipelines with RDMA stages): the
 * flags RDMA tasks write (schedule indices 0 .. nwritten-1, each written
 * with the epoch, never added), then one READY word per rank this rank
 * writes to (that rank has started the run: its buffers may be written),
 * then a scratch word.  The transport can reach it: host-pinned memory
 * mapped for the GPU, or GPU memory where the transport registers it. */
typedef struct mkd_rank_entry {
	unsigned long long flags;                  /* u64 epoch counters */
	unsigned long long rflags;                 /* u64 RDMA flag area, or 0 */
	unsigned long long buf[MKD_MAX_TENSORS];   /* by tensor index */
} mkd_rank_entry;

/* ---- the proxy FIFO's shared layout (the protocol: mkd/proxy.cuh) ------- */
#define MKD_PROXY_CMD_BYTES 64

/* Commands (op). */
#define MKD_PROXY_OP_WRITE 1   /* bytes from src to dst_rank's dst, then the flag */
#define MKD_PROXY_OP_SIGNAL 2  /* the flag only */

/* Regions: src_buf / dst_buf are tensor indices (0 .. MKD_MAX_TENSORS-1,
 * registered by the runtime); the RDMA flag area of each rank is region
 * MKD_PROXY_REGION_FLAGS and a flag is 8 bytes at flag_index * 8. */
#define MKD_PROXY_REGION_FLAGS 64

/* Stall report codes (mkd_report.flag_index when flag_rank == -1). */
#define MKD_PROXY_STALL_FULL (-1)    /* the ring stayed full */
#define MKD_PROXY_STALL_DONE (-2)    /* a command did not complete */
#define MKD_PROXY_STALL_FAILED (-3)  /* the proxy reported a failure */

/* One command.  The flag is WRITTEN (not added) after the data, with
 * flag_value: each remote flag slot has one writer, and the value is the
 * count the consumer waits for (epoch * expected), so it only grows.  No
 * order between different commands is promised, only data before its flag. */
typedef struct mkd_proxy_cmd {
	unsigned short op;
	unsigned short src_buf;
	unsigned short dst_buf;
	unsigned short lane;            /* connection hint (QP) */
	unsigned int dst_rank;
	unsigned int flag_index;        /* in dst_rank's RDMA flag area */
	unsigned long long src_off;     /* bytes into src_buf on this rank */
	unsigned long long dst_off;     /* bytes into dst_buf on dst_rank */
	unsigned long long bytes;
	unsigned long long flag_value;
	unsigned int task;              /* for reports */
	unsigned int reserved;
	unsigned long long seq;         /* published last: position + 1 */
} mkd_proxy_cmd;

/* Host-written words, each on its own 64-byte line (host-pinned, mapped). */
typedef struct mkd_proxy_ctl {
	unsigned long long tail;        /* commands copied out of the ring */
	unsigned long long pad0[7];
	unsigned long long done;        /* commands delivered, in ring order */
	unsigned long long pad1[7];
	unsigned int failed;            /* nonzero mk_status once the proxy failed */
	unsigned int pad2[15];
} mkd_proxy_ctl;

/* What a kernel gets to reach its ring (by value, e.g. in mkd_params). */
typedef struct mkd_proxy_ring {
	mkd_proxy_cmd *slots;           /* host-pinned, nslots */
	mkd_proxy_ctl *ctl;             /* host-pinned */
	unsigned long long *head;       /* device memory: slots claimed */
	unsigned int nslots;            /* a power of two */
	unsigned int pad;
} mkd_proxy_ring;

/* Written once by the first wait that times out; every other wait sees
 * `aborted` and leaves, so a stall ends the kernel within its timeout. */
typedef struct mkd_report {
	unsigned int stalled;        /* 1 once a report is recorded */
	unsigned int aborted;        /* all CTAs: stop now */
	int rank, cta, task, stage;
	int flag_rank, flag_index;
	unsigned long long expected, seen;
	unsigned long long waited_ns;
	unsigned long long epoch;
} mkd_report;

/* One per task and rank when tracing: %globaltimer at begin and end, and
 * the CTA that ran it (a pool's task: whichever took it). */
typedef struct mkd_trace_rec {
	unsigned long long t0, t1;
	int cta, pad;
} mkd_trace_rec;

/* Resident mode.  The host rings `doorbell` (host-mapped memory) with the
 * epoch to run; only CTA 0 polls it (one reader over PCIe, not one per
 * CTA) and passes it on through gate[0] in device memory, which the other
 * CTAs poll.  Each CTA adds one to gate[1] when it has finished the run;
 * CTA 0 waits for all of them and then writes the epoch to `done`, which the
 * host polls. */
typedef struct mkd_control {
	unsigned long long doorbell;  /* host writes the epoch to run; ~0 = exit */
	unsigned long long done;      /* the last epoch every CTA finished */
} mkd_control;

#define MKD_STOP 0xffffffffffffffffull

/* Every rank's flag array ends with two words the kernel keeps itself when
 * ranks are separate processes: READY (signalled once a run when the rank's
 * kernel starts: its host has written its inputs) and DONE (one signal per
 * CTA when it has finished the run).  A rank's CTA 0 leaves a run only when
 * every rank of its node is DONE, so no process rewrites buffers a peer may
 * still read.  Their indices are nflags and nflags + 1. */

/* The kernel's one parameter (passed by value, __grid_constant__). */
typedef struct mkd_params {
	unsigned long long epoch;         /* run number, 1, 2, ... (one-shot) */
	const mkd_rank_entry *ranks;      /* [world] */
	mkd_report *report;
	mkd_trace_rec *trace;             /* [world][ntasks] or 0 */
	mkd_control *control;             /* resident mode, else 0 */
	unsigned long long *gate;         /* resident mode: 2 words of device memory */
	unsigned long long timeout_ns;    /* bound on every wait */
	int rank_base;                    /* rank of this launch's first CTA group */
	int ranks_here;                   /* ranks served by this launch */
	const void *tmaps;                /* TMA tensor maps, 128 bytes each, 64-byte
	                                     aligned: [ranks_here][MK_NTMAPS] */
	mkd_proxy_ring ring;              /* RDMA stages in process mode: the proxy
	                                     FIFO of this rank (else zeros) */
} mkd_params;

#endif
