/* mkd/abi.cuh - what the host runtime and the generated kernel share.
 *
 * Plain C on purpose: the runtime includes this file as a C header, NVRTC as
 * CUDA.  Changing a layout here changes MKD_ABI_VERSION, which is part of
 * every generated source and therefore of every JIT cache key.
 */
#ifndef MKD_ABI_CUH
#define MKD_ABI_CUH

#define MKD_ABI_VERSION 3
#define MKD_MAX_TENSORS 64

/* One row per rank of the mesh, in device memory: where that rank's flag
 * array and tensors are, as this process sees them (its own allocations,
 * peers' memory mapped over NVLink or shared on one GPU; 0 where the rank is
 * not reachable by loads and stores, e.g. on another node). */
typedef struct mkd_rank_entry {
	unsigned long long flags;                  /* u64 epoch counters */
	unsigned long long buf[MKD_MAX_TENSORS];   /* by tensor index */
} mkd_rank_entry;

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

/* One per task and rank when tracing: %globaltimer at begin and end. */
typedef struct mkd_trace_rec {
	unsigned long long t0, t1;
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
} mkd_params;

#endif
