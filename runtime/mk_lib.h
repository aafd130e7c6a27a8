/* mk_lib.h - libmk's own: the context and pipeline structures, and what
 * its files share (mk_lib.c: status names, mk_fail).  mk_load.c makes
 * contexts and loads pipelines (the compiler, then cg_build, then the
 * module); mk_mem.c lays out every rank's memory
 * and moves tensors in and out; mk_run.c launches, runs resident, and turns
 * the device's reports into stall reports and traces.  Not for mkrun or the
 * tests: they see mk.h and mk_int.h.
 */
#ifndef MK_LIB_H
#define MK_LIB_H

#include "../base/strbuf.h"
#include "../codegen/build.h"
#include "../codegen/mkd/abi.cuh"
#include "cudrv.h"
#include "mk_int.h"
#include "peers.h"
#include "rdma.h"

struct mk_ctx {
	const cudrv *cu;
	CUdevice dev;
	CUcontext cc;
	int have_ctx;
	int sms, smem_optin, major, minor;
	char card[256];          /* the driver's device name */
	char desc[384];
	char err[1024];
	strbuf log;
	char *cache_dir;
	int no_cache;
	int cpu;                 /* CPU reference executor, no GPU */
};

enum { MK_STAGING = 4 };  /* rank tables in flight on a caller's stream */

struct mk_pipeline {
	mk_ctx *c;
	arena a;
	srcset src;
	compile_out co;
	ir_sched *s;
	ir_prog *p;
	char *cu_src;
	strbuf sched_txt;
	CUmodule mod;
	CUfunction fn;
	int ranks, nt;           /* ranks served here; tensors */
	int first, world;        /* first global rank served here; all ranks */
	mk_comm *comm;           /* one process per rank, or NULL */
	CUdeviceptr *buf;        /* [ranks * nt] */
	unsigned char *owned;    /* allocated by us */
	CUdeviceptr flags;       /* [ranks][nflags + 2] u64 */
	int nfl;                 /* flags per rank: nflags + READY + DONE + a counter a pool */
	mk_vmm *vmm;             /* process mode: my tensors, my flags, my RDMA flags */
	int nvmm;                /* nt + 1, + 1 with RDMA stages */
	int npeers;              /* process mode: ranks of my node but me */
	int *peer;               /* their global ranks */
	mk_vmm *peer_vmm;        /* [npeers][nvmm] mapped from them */
	cg_rdma rl;              /* RDMA stages (rl.tasks > 0): flag area, tensors */
	int *rdst;               /* [rl.ndst] ranks rank 0 writes to (READY words) */
	CUdeviceptr rflags;      /* virtual ranks: [ranks][rl.area] u64 */
	rdma *rd;                /* process mode with RDMA stages: transport, proxy */
	int rd_host;             /* RDMA-facing memory in host windows */
	int rd_live;             /* started: closing flushes and meets the peers */
	mkd_proxy_ring ring;     /* the proxy FIFO, as the kernel sees it */
	CUdeviceptr table;       /* [ranks] mkd_rank_entry */
	CUdeviceptr report;      /* mkd_report */
	CUdeviceptr trace;       /* [world][ntasks] mkd_trace_rec, or 0 */
	CUdeviceptr tmaps;       /* [ranks][ntm] TMA tensor maps, 128 bytes each */
	int ntm;
	mkd_control *ctl;        /* resident: host-mapped */
	CUdeviceptr ctl_dev;
	CUdeviceptr gate;        /* resident: 2 words of device memory */
	CUstream stream;
	CUevent ev0, ev1;
	CUfunction *stage_fn;     /* benchmarks: one kernel per stage */
	int cluster;              /* CTAs a cluster at launch: the schedule's
	                             (ir_sched.cluster) for sm_90a code, else 1 */
	CUgraph graph;
	CUgraphExec graph_exec;
	unsigned long long epoch;
	unsigned long long resident_runs;
	unsigned timeout_ms;
	int resident, broken, table_dirty;
	strbuf stall;
	float **host;            /* CPU context: [nt * world], cpuref's layout */
	/* runs on a caller's stream (mk_run_on) */
	void *staging[MK_STAGING];     /* pinned: rank tables on their way */
	CUevent staging_ev[MK_STAGING];  /* the copy that read each */
	int staging_next;
	void **cap_host;         /* pinned tables captured graphs copy from */
	int ncap;
	int captured;            /* a graph holds a run: every run clears the
	                            flags and copies its own table */
	CUevent ev_done;         /* after the last run on any stream */
	CUstream last_stream;    /* the stream it ran on */
	int pending;             /* a run since the last mk_sync */
};

/* c->err = the message; returns st. */
mk_status mk_fail(mk_ctx *c, mk_status st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* "what: the CUDA error", on p's context; returns st. */
mk_status mk_cufail(mk_pipeline *p, mk_status st, const char *what, CUresult r);

/* A driver call that must succeed: its failure returns from the caller. */
#define CU(c, call, what)                                                          \
	do {                                                                       \
		CUresult r_ = (call);                                              \
		if (r_ != CUDA_SUCCESS)                                            \
			return mk_fail((c), r_ == CUDA_ERROR_OUT_OF_MEMORY ? MK_ERR_NOMEM \
					  : MK_ERR_CUDA, "%s: %s", (what), cudrv_errstr(r_)); \
	} while (0)

#define PCU(p, call, what)                                                         \
	do {                                                                       \
		CUresult r_ = (call);                                              \
		if (r_ != CUDA_SUCCESS)                                            \
			return mk_cufail((p), r_ == CUDA_ERROR_OUT_OF_MEMORY ? MK_ERR_NOMEM \
				     : MK_ERR_CUDA, (what), r_);                   \
	} while (0)

/* mk_mem.c: every buffer of a loaded pipeline (tensors, flags, RDMA
 * areas, rank table, report, trace); the rank table uploaded again after a
 * bind. */
mk_status mk_alloc_all(mk_pipeline *p, int trace);
mk_status mk_upload_table(mk_pipeline *p);
/* The same, copied on stream s in stream order (from pinned staging; with
 * capturing, from a buffer that stays the graph's); mk_staging_free at
 * destroy. */
mk_status mk_upload_table_on(mk_pipeline *p, CUstream s, int capturing);
void mk_staging_free(mk_pipeline *p);

/* mk_run.c: the launch of p's kernels on stream s -- every rank's CTAs, the
 * schedule's clusters (p->cluster), cooperative where asked -- with its
 * attributes in attr (cfg points at them); the launches and the check
 * that the clusters all fit (mk_load.c) use the same. */
void mk_launch_config(const mk_pipeline *p, int cooperative, CUstream s, CUlaunchConfig *cfg,
		      CUlaunchAttribute attr[2]);

#endif
