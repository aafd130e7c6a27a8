/* mk.c - libmk: contexts, pipelines, buffers, launches, stall reports.
 *
 * Loading runs the compiler in-process (compile_run), generates the CUDA
 * (cg_emit_cuda), compiles it through NVRTC and the JIT cache (cg_compile)
 * and loads the cubin.  Virtual ranks: R ranks of the pipeline share this
 * GPU and run in ONE cooperative launch of R x CTAs blocks (rank =
 * blockIdx / CTAs), which guarantees that all CTAs are resident; each rank
 * has its own allocation of every tensor and its own flag array, and the
 * rank table tells every CTA where all of them are.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../codegen/mkd/abi.cuh"
#include "../codegen/build.h"
#include "../compiler/costmodel.h"
#include "../compiler/cpuref.h"
#include "../compiler/inspect.h"
#include "cudrv.h"
#include "mk_int.h"
#include "peers.h"
#include "rdma.h"
#include "tmap.h"

struct mk_ctx {
	const cudrv *cu;
	CUdevice dev;
	CUcontext cc;
	int have_ctx;
	int sms, smem_optin, major, minor;
	char desc[320];
	char err[1024];
	strbuf log;
	char *cache_dir;
	int no_cache;
	int cpu;                 /* CPU reference executor, no GPU */
};

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
	int nfl;                 /* flags per rank: nflags + READY + DONE */
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
	CUgraph graph;
	CUgraphExec graph_exec;
	unsigned long long epoch;
	unsigned long long resident_runs;
	unsigned timeout_ms;
	int resident, broken, table_dirty;
	strbuf stall;
	float **host;            /* CPU context: [nt * world], cpuref's layout */
};

static const struct {
	const char *name, *msg;
} statuses[] = {
#define X(name, value, msg) [value] = {#name, msg},
	MK_STATUS_LIST(X)
#undef X
};

const char *mk_strerror(mk_status s)
{
	if ((unsigned)s >= sizeof statuses / sizeof statuses[0] || !statuses[s].msg)
		return "unknown status";
	return statuses[s].msg;
}

const char *mk_status_name(mk_status s)
{
	if ((unsigned)s >= sizeof statuses / sizeof statuses[0] || !statuses[s].name)
		return "MK_UNKNOWN";
	return statuses[s].name;
}

const char *mk_version(void) { return MK_VERSION; }

static mk_status cfail(mk_ctx *c, mk_status st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static mk_status cfail(mk_ctx *c, mk_status st, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->err, sizeof c->err, fmt, ap);
	va_end(ap);
	return st;
}

#define CU(c, call, what)                                                          \
	do {                                                                       \
		CUresult r_ = (call);                                              \
		if (r_ != CUDA_SUCCESS)                                            \
			return cfail((c), r_ == CUDA_ERROR_OUT_OF_MEMORY ? MK_ERR_NOMEM \
					  : MK_ERR_CUDA, "%s: %s", (what), cudrv_errstr(r_)); \
	} while (0)

mk_status mk_ctx_create(const mk_ctx_opts *o, mk_ctx **out)
{
	if (!out)
		return MK_ERR_INVALID;
	mk_ctx *c = calloc(1, sizeof *c);
	*out = c;
	if (!c)
		return MK_ERR_NOMEM;
	sb_init(&c->log);
	if (o && o->cache_dir && !(c->cache_dir = strdup(o->cache_dir)))
		return MK_ERR_NOMEM;
	c->no_cache = o ? o->no_cache : 0;
	if (o && o->cpu) {
		c->cpu = 1;
		c->sms = 132;
		snprintf(c->desc, sizeof c->desc, "CPU reference executor (no GPU)");
		return MK_OK;
	}
	char why[512];
	cudrv_status ds = cudrv_get(&c->cu, why, sizeof why);
	if (ds == CUDRV_NO_DRIVER)
		return cfail(c, MK_ERR_NO_DRIVER, "%s", why);
	if (ds == CUDRV_NO_GPU)
		return cfail(c, MK_ERR_NO_GPU, "%s", why);
	if (ds != CUDRV_OK)
		return cfail(c, MK_ERR_CUDA, "%s", why);
	const cudrv *cu = c->cu;
	int n = 0;
	CU(c, cu->cuDeviceGetCount(&n), "cuDeviceGetCount");
	int ord = o ? o->device : 0;
	if (n == 0)
		return cfail(c, MK_ERR_NO_GPU, "no GPU visible (the driver reports 0 devices)");
	if (ord < 0 || ord >= n)
		return cfail(c, MK_ERR_NOT_FOUND, "device %d does not exist (%d visible)", ord, n);
	CU(c, cu->cuDeviceGet(&c->dev, ord), "cuDeviceGet");
	CU(c, cu->cuDevicePrimaryCtxRetain(&c->cc, c->dev), "cuDevicePrimaryCtxRetain");
	c->have_ctx = 1;
	CU(c, cu->cuCtxSetCurrent(c->cc), "cuCtxSetCurrent");
	char name[256] = "?";
	cu->cuDeviceGetName(name, sizeof name, c->dev);
	cu->cuDeviceGetAttribute(&c->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, c->dev);
	cu->cuDeviceGetAttribute(&c->smem_optin,
				 CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, c->dev);
	cu->cuDeviceGetAttribute(&c->major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, c->dev);
	cu->cuDeviceGetAttribute(&c->minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, c->dev);
	snprintf(c->desc, sizeof c->desc, "%s, %d SMs, sm_%d%d", name, c->sms, c->major, c->minor);
	if (c->major < 8)
		return cfail(c, MK_ERR_UNSUPPORTED,
			     "%s: mkc kernels need compute capability 8.0 or newer", c->desc);
	return MK_OK;
}

void mk_ctx_destroy(mk_ctx *c)
{
	if (!c)
		return;
	if (c->have_ctx)
		c->cu->cuDevicePrimaryCtxRelease(c->dev);
	sb_free(&c->log);
	free(c->cache_dir);
	free(c);
}

const char *mk_ctx_error(const mk_ctx *c) { return c ? c->err : "out of memory"; }
const char *mk_ctx_log(const mk_ctx *c) { return c ? sb_str(&c->log) : ""; }
const char *mk_ctx_device(const mk_ctx *c) { return c ? c->desc : ""; }

void (*mk_test_sched_hook)(ir_sched *s);
int mk_bench_per_stage;

/* ---- loading ---------------------------------------------------------------- */

/* The mesh of virtual ranks: every rank on this GPU, so world == ranks;
 * `gpus` defaults to the rank count and `nodes` to 1. */
static int build_defines(const mk_param *params, int nparams, int world, mk_define *defs,
			 int max, char *err, size_t n)
{
	int nd = 0, have_gpus = 0, have_nodes = 0;
	long long nodes = 1, gpus = world;
	for (int i = 0; i < nparams; i++) {
		if (!params[i].name) {
			snprintf(err, n, "parameter %d has no name", i);
			return -1;
		}
		if (!strcmp(params[i].name, "gpus")) {
			have_gpus = 1;
			gpus = params[i].value;
		} else if (!strcmp(params[i].name, "nodes")) {
			have_nodes = 1;
			nodes = params[i].value;
		}
		if (nd == max) {
			snprintf(err, n, "too many parameters (%d)", nparams);
			return -1;
		}
		defs[nd++] = (mk_define){params[i].name, params[i].value};
	}
	if (nodes * gpus != world) {
		snprintf(err, n, "the mesh %lld x %lld has %lld ranks, but the job has %d",
			 nodes, gpus, nodes * gpus, world);
		return -1;
	}
	if (!have_gpus && nd < max)
		defs[nd++] = (mk_define){"gpus", gpus};
	if (!have_nodes && nd < max)
		defs[nd++] = (mk_define){"nodes", nodes};
	return nd;
}

static ir_device device_model(const mk_ctx *c)
{
	ir_device d = costmodel_h200();
	if (c && c->sms > 0) {
		d.sms = c->sms;
		if (c->smem_optin > 0)
			d.smem_per_sm = c->smem_optin;
	}
	return d;
}

static mk_status compile_for(const mk_ctx *c, srcset *src, int file, const mk_param *params,
			     int nparams, int world, int ranks, arena *a, compile_out *out,
			     strbuf *log)
{
	mk_define defs[80];
	char err[256];
	int nd = build_defines(params, nparams, world, defs, 80, err, sizeof err);
	if (nd < 0) {
		sb_printf(log, "mk: %s\n", err);
		return MK_ERR_INVALID;
	}
	ir_device dev = device_model(c);
	/* no context, or a CPU one: only the CPU reference runs it */
	compile_opts o = {.defs = defs, .ndefs = nd, .ranks_per_gpu = ranks, .dev = &dev,
			  .cpu = !c || c->cpu};
	diags d;
	diag_init(&d, src, a);
	int rc = compile_run(src, file, &o, PASS_VERIFY, &d, a, out);
	diag_render(&d, log, 0);
	if (a->failed)
		return MK_ERR_NOMEM;
	return rc == 0 ? MK_OK : rc == 1 ? MK_ERR_SOURCE : MK_ERR_INTERNAL;
}

mk_status mk_compile_only(srcset *src, int file, const mk_param *params, int nparams,
			  int ranks, arena *a, compile_out *out, strbuf *log)
{
	return compile_for(NULL, src, file, params, nparams, ranks, ranks, a, out, log);
}

static mk_status pfail(mk_pipeline *p, mk_status st, const char *what, CUresult r)
{
	return cfail(p->c, st, "%s: %s", what, cudrv_errstr(r));
}

#define PCU(p, call, what)                                                         \
	do {                                                                       \
		CUresult r_ = (call);                                              \
		if (r_ != CUDA_SUCCESS)                                            \
			return pfail((p), r_ == CUDA_ERROR_OUT_OF_MEMORY ? MK_ERR_NOMEM \
				     : MK_ERR_CUDA, (what), r_);                   \
	} while (0)

static mk_status upload_table(mk_pipeline *p)
{
	const cudrv *cu = p->c->cu;
	size_t n = (size_t)p->world * sizeof(mkd_rank_entry);
	mkd_rank_entry *t = calloc(1, n);
	if (!t)
		return MK_ERR_NOMEM;
	for (int r = 0; r < p->ranks; r++) {
		mkd_rank_entry *e = &t[p->first + r];
		e->flags = p->flags + (CUdeviceptr)r * p->nfl * 8;
		if (p->rl.area)
			e->rflags = p->vmm ? p->vmm[p->nt + 1].ptr
					   : p->rflags + (CUdeviceptr)r * p->rl.area * 8;
		for (int i = 0; i < p->nt; i++)
			e->buf[i] = p->buf[r * p->nt + i];
	}
	for (int k = 0; k < p->npeers; k++) {
		mkd_rank_entry *e = &t[p->peer[k]];
		const mk_vmm *v = &p->peer_vmm[k * p->nvmm];
		for (int i = 0; i < p->nt; i++)
			e->buf[i] = v[i].ptr;
		e->flags = v[p->nt].ptr;
		if (p->rl.area)
			e->rflags = v[p->nt + 1].ptr;
	}
	CUresult rr = cu->cuMemcpyHtoD(p->table, t, n);
	free(t);
	if (rr != CUDA_SUCCESS)
		return pfail(p, MK_ERR_CUDA, "uploading the rank table", rr);
	/* the Hopper engine's tensor maps point at the buffers too */
	if (p->ntm > 0) {
		cg_tmap *tm = calloc((size_t)p->ntm, sizeof *tm);
		unsigned char *h = aligned_alloc(64, (size_t)p->ranks * p->ntm * 128);
		if (!tm || !h) {
			free(tm);
			free(h);
			return MK_ERR_NOMEM;
		}
		cg_tmaps(p->s, tm, p->ntm);
		char err[256];
		for (int r = 0; r < p->ranks; r++)
			for (int k = 0; k < p->ntm; k++) {
				const ir_tensor *x = &p->p->tensors[tm[k].tensor];
				if (mk_tmap_encode(cu, h + ((size_t)r * p->ntm + k) * 128,
						   p->buf[r * p->nt + tm[k].tensor], ir_dtype_size(x->dtype),
						   tm[k].rows, tm[k].cols, tm[k].cols, tm[k].box_rows,
						   tm[k].box_cols, err, sizeof err) != 0) {
					free(tm);
					free(h);
					return cfail(p->c, MK_ERR_CUDA, "tensor map of '%s': %s", x->name, err);
				}
			}
		rr = cu->cuMemcpyHtoD(p->tmaps, h, (size_t)p->ranks * p->ntm * 128);
		free(tm);
		free(h);
		if (rr != CUDA_SUCCESS)
			return pfail(p, MK_ERR_CUDA, "uploading the tensor maps", rr);
	}
	p->table_dirty = 0;
	return MK_OK;
}

/* Process mode: every tensor and the flag array in exportable memory,
 * shared with the ranks of my node of the mesh. */
/* Does entry i of a rank's shared memory (tensors, flags, RDMA flags) live
 * in a host window?  The same answer on every rank: peers map it alike. */
static int in_host_window(const mk_pipeline *p, int i)
{
	if (!p->rd_host)
		return 0;
	return i < p->nt ? (int)(p->rl.tensors >> i & 1) : i == p->nt + 1;
}

/* Device memory of tensor i per rank: none for one the lowering removed. */
static size_t tensor_storage(const mk_pipeline *p, int i)
{
	const ir_tensor *t = &p->p->tensors[i];
	return t->folded ? 0 : (size_t)ir_tensor_bytes(t);
}

static size_t shared_bytes(const mk_pipeline *p, int i)
{
	return i < p->nt ? tensor_storage(p, i)
	       : i == p->nt ? (size_t)p->nfl * 8 : (size_t)p->rl.area * 8;
}

static mk_status alloc_shared(mk_pipeline *p)
{
	const cudrv *cu = p->c->cu;
	int n = p->nvmm = p->nt + 1 + (p->rl.area > 0);
	char err[512];
	p->vmm = calloc((size_t)n, sizeof *p->vmm);
	if (!p->vmm)
		return MK_ERR_NOMEM;
	int *fds = malloc((size_t)n * sizeof(int));
	size_t *sizes = malloc((size_t)n * sizeof(size_t));
	if (!fds || !sizes) {
		free(fds);
		free(sizes);
		return MK_ERR_NOMEM;
	}
	mk_status st = MK_OK;
	for (int i = 0; i < n; i++)
		fds[i] = -1;
	for (int i = 0; i < n && st == MK_OK; i++) {
		size_t bytes = shared_bytes(p, i);
		if (in_host_window(p, i)) {
			st = hostwin_alloc(cu, bytes, &p->vmm[i], err, sizeof err);
			if (st == MK_OK)
				st = hostwin_export(&p->vmm[i], &fds[i], err, sizeof err);
		} else {
			st = vmm_alloc(cu, p->c->dev, bytes, &p->vmm[i], err, sizeof err);
			if (st == MK_OK)
				st = vmm_export(cu, &p->vmm[i], &fds[i], err, sizeof err);
		}
		sizes[i] = p->vmm[i].size;
	}
	if (st != MK_OK) {
		for (int i = 0; i < n; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		free(fds);
		free(sizes);
		return cfail(p->c, st, "%s", err);
	}
	for (int i = 0; i < p->nt; i++) {
		p->buf[i] = p->vmm[i].ptr;
		p->owned[i] = 0;  /* freed with the vmm */
	}
	p->flags = p->vmm[p->nt].ptr;

	/* the ranks of my node of the mesh */
	int gpus = p->p->gpus, me = p->first;
	p->peer = calloc((size_t)gpus, sizeof(int));
	if (!p->peer) {
		st = MK_ERR_NOMEM;
		goto out;
	}
	for (int g = 0; g < gpus; g++)
		if (me - me % gpus + g != me)
			p->peer[p->npeers++] = me - me % gpus + g;
	if (p->npeers) {
		int *pf = malloc((size_t)p->npeers * n * sizeof(int));
		size_t *ps = malloc((size_t)p->npeers * n * sizeof(size_t));
		p->peer_vmm = calloc((size_t)p->npeers * n, sizeof *p->peer_vmm);
		if (!pf || !ps || !p->peer_vmm) {
			free(pf);
			free(ps);
			st = MK_ERR_NOMEM;
			goto out;
		}
		st = comm_share_fds(p->comm, p->peer, p->npeers, fds, sizes, n, pf, ps);
		if (st != MK_OK)
			cfail(p->c, st, "sharing memory with the node's ranks: %s", p->comm->err);
		for (int k = 0; k < p->npeers * n && st == MK_OK; k++) {
			st = in_host_window(p, k % n)
			     ? hostwin_import(cu, pf[k], ps[k], &p->peer_vmm[k], err, sizeof err)
			     : vmm_import(cu, p->c->dev, pf[k], ps[k], &p->peer_vmm[k], err, sizeof err);
			if (st != MK_OK)
				cfail(p->c, st, "mapping rank %d's memory: %s", p->peer[k / n], err);
		}
		for (int k = 0; k < p->npeers * n; k++)
			if (pf[k] >= 0)
				close(pf[k]);
		free(pf);
		free(ps);
	}
out:
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(fds);
	free(sizes);
	return st;
}

/* Process mode, RDMA stages: every tensor an RDMA task reads or writes and
 * the RDMA flag area become transport regions (same index on every rank);
 * then connect, the proxy FIFO and its thread. */
static mk_status rdma_setup(mk_pipeline *p)
{
	char err[640];
	mk_status st;
	for (int i = 0; i <= p->nt; i++) {
		int t = i < p->nt ? i : p->nt + 1;   /* tensors, then the flag area */
		if (i < p->nt && !(p->rl.tensors >> i & 1))
			continue;
		const mk_vmm *v = &p->vmm[t];
		void *addr = v->host ? v->host : (void *)(uintptr_t)v->ptr;
		st = rdma_reg(p->rd, i < p->nt ? i : MKD_PROXY_REGION_FLAGS, addr, shared_bytes(p, t),
			      v->host != NULL, (int)p->c->dev, err, sizeof err);
		if (st != MK_OK)
			return cfail(p->c, st, "RDMA between nodes: %s", err);
	}
	st = rdma_start(p->rd, p->c->cu, p->c->dev, p->timeout_ms, &p->ring, err, sizeof err);
	sb_printf(&p->c->log, "mk: %s\n", err);
	if (st != MK_OK)
		return cfail(p->c, st, "RDMA between nodes: %s", err);
	p->rd_live = 1;
	return MK_OK;
}

static mk_status alloc_all(mk_pipeline *p, int trace)
{
	const cudrv *cu = p->c->cu;
	p->buf = calloc((size_t)p->ranks * p->nt, sizeof *p->buf);
	p->owned = calloc((size_t)p->ranks * p->nt, 1);
	if (!p->buf || !p->owned)
		return MK_ERR_NOMEM;
	mk_status st;
	char log[1024];
	if (p->comm) {
		/* RDMA stages: the transport first, it decides where their memory goes */
		if (p->rl.tasks) {
			st = rdma_open(p->comm->b, &p->rd, &p->rd_host, log, sizeof log);
			sb_printf(&p->c->log, "mk: %s\n", log);
			if (st != MK_OK)
				return cfail(p->c, st, "RDMA between nodes: %s", strrchr(log, '\n') ?
					     strrchr(log, '\n') + 1 : log);
		}
		if ((st = alloc_shared(p)) != MK_OK)
			return st;
	} else {
		for (int r = 0; r < p->ranks; r++)
			for (int i = 0; i < p->nt; i++) {
				size_t bytes = tensor_storage(p, i);
				CUdeviceptr d;
				PCU(p, cu->cuMemAlloc(&d, bytes ? bytes : 16), "allocating a tensor");
				p->buf[r * p->nt + i] = d;
				p->owned[r * p->nt + i] = 1;
			}
		PCU(p, cu->cuMemAlloc(&p->flags, (size_t)p->ranks * p->nfl * 8), "allocating flags");
		if (p->rl.area) {  /* RDMA stages between virtual ranks: stores */
			PCU(p, cu->cuMemAlloc(&p->rflags, (size_t)p->ranks * p->rl.area * 8),
			    "allocating RDMA flags");
			PCU(p, cu->cuMemsetD8(p->rflags, 0, (size_t)p->ranks * p->rl.area * 8),
			    "clearing RDMA flags");
		}
	}
	/* poison what the kernel writes: unwritten elements read as NaN */
	for (int r = 0; r < p->ranks; r++)
		for (int i = 0; i < p->nt; i++)
			if (p->p->tensors[i].kind != TK_IN && tensor_storage(p, i)) {
				size_t b = tensor_storage(p, i);
				if (p->vmm && p->vmm[i].host)
					memset(p->vmm[i].host, 0xff, b);
				else
					PCU(p, cu->cuMemsetD8(p->buf[r * p->nt + i], 0xff, b),
					    "poisoning a tensor");
			}
	PCU(p, cu->cuMemsetD8(p->flags, 0, (size_t)p->ranks * p->nfl * 8), "clearing flags");
	if (p->vmm && p->rl.area) {
		mk_vmm *v = &p->vmm[p->nt + 1];
		if (v->host)
			memset(v->host, 0, (size_t)p->rl.area * 8);
		else
			PCU(p, cu->cuMemsetD8(v->ptr, 0, (size_t)p->rl.area * 8), "clearing RDMA flags");
	}
	PCU(p, cu->cuMemAlloc(&p->table, (size_t)p->world * sizeof(mkd_rank_entry)),
	    "allocating the rank table");
	p->ntm = cg_tmaps(p->s, NULL, 0);
	if (p->ntm > 0)
		PCU(p, cu->cuMemAlloc(&p->tmaps, (size_t)p->ranks * p->ntm * 128), "allocating tensor maps");
	PCU(p, cu->cuMemAlloc(&p->report, sizeof(mkd_report)), "allocating the report");
	PCU(p, cu->cuMemsetD8(p->report, 0, sizeof(mkd_report)), "clearing the report");
	if (trace) {
		size_t tb = (size_t)p->world * (p->s->ntasks ? p->s->ntasks : 1) * sizeof(mkd_trace_rec);
		PCU(p, cu->cuMemAlloc(&p->trace, tb), "allocating the trace");
		PCU(p, cu->cuMemsetD8(p->trace, 0, tb), "clearing the trace");
	}
	PCU(p, cu->cuStreamCreate(&p->stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
	PCU(p, cu->cuEventCreate(&p->ev0, CU_EVENT_DEFAULT), "cuEventCreate");
	PCU(p, cu->cuEventCreate(&p->ev1, CU_EVENT_DEFAULT), "cuEventCreate");
	if (p->rd && (st = rdma_setup(p)) != MK_OK)
		return st;
	if ((st = upload_table(p)) != MK_OK)
		return st;
	/* every rank of the node has mapped everyone's memory before any runs */
	if (p->comm && (st = mk_comm_barrier(p->comm)) != MK_OK)
		return cfail(p->c, st, "%s", p->comm->err);
	return MK_OK;
}

static mk_status load(mk_ctx *c, int file, mk_pipeline *p, const mk_load_opts *o)
{
	const cudrv *cu = c->cu;
	int ranks = o ? o->ranks : 1;
	if (c->cpu && o && o->comm)
		return cfail(c, MK_ERR_UNSUPPORTED, "a CPU context runs every rank in this process");
	if (ranks < 1 || ranks > 64)
		return cfail(c, MK_ERR_INVALID, "ranks must be 1..64, not %d", ranks);
	p->ranks = ranks;
	p->comm = o ? o->comm : NULL;
	int rpg = ranks;
	if (p->comm) {
		if (ranks != 1)
			return cfail(c, MK_ERR_INVALID,
				     "with a communicator each process holds one rank (ranks = 1)");
		p->first = mk_comm_rank(p->comm);
		p->world = mk_comm_size(p->comm);
		int ndev = 1;
		cu->cuDeviceGetCount(&ndev);
		int local = mk_comm_local_size(p->comm);
		rpg = o->ranks_per_gpu > 0 ? o->ranks_per_gpu : (local + ndev - 1) / (ndev ? ndev : 1);
	} else {
		p->first = 0;
		p->world = ranks;
	}
	p->timeout_ms = o && o->timeout_ms ? o->timeout_ms : 5000;
	mk_status st = compile_for(c, &p->src, file, o ? o->params : NULL, o ? o->nparams : 0,
				   p->world, rpg, &p->a, &p->co, &c->log);
	if (st != MK_OK)
		return cfail(c, st, "%s", st == MK_ERR_SOURCE ? "the pipeline has errors (see the log)"
				  : sb_str(&c->log));
	p->s = p->co.sched;
	p->p = p->co.prog;
	if (mk_test_sched_hook)
		mk_test_sched_hook(p->s);
	p->nt = p->p->ntensors;
	p->nfl = p->s->nflags + 2;
	if (cg_rdma_layout(p->s, &p->rl, NULL, 0) != 0 ||
	    !(p->rdst = calloc((size_t)p->rl.ndst + 1, sizeof(int))))
		return cfail(c, MK_ERR_UNSUPPORTED, "RDMA stages this runtime cannot lay out");
	cg_rdma_layout(p->s, &p->rl, p->rdst, p->rl.ndst);
	if (p->nt > MKD_MAX_TENSORS)
		return cfail(c, MK_ERR_UNSUPPORTED, "%d tensors; a pipeline may have at most %d",
			     p->nt, MKD_MAX_TENSORS);
	inspect_schedule(p->s, &p->sched_txt);

	/* the back half: CUDA (and on a GPU, the cubin) from the schedule */
	char arch[32];
	cg_arch(c->major, c->minor, arch, sizeof arch);
	cg_build_opts bo = {.arch = arch, .use_cache = !c->no_cache, .cache_dir = c->cache_dir,
			    .emit = {.sys_scope = p->comm != NULL, .per_stage = mk_bench_per_stage}};
	cg_build_out b;
	cg_status cs = cg_build(p->s, c->cpu ? CG_TO_CUDA : CG_TO_CUBIN, &bo, &b);
	if (cs == CG_EEMIT && c->cpu) {
		/* the CPU executor runs what the GPU cannot yet: say so, go on */
		sb_printf(&c->log, "mk: note: no CUDA for this pipeline yet: %s\n", b.err);
	} else if (cs == CG_EEMIT) {
		cfail(c, MK_ERR_UNSUPPORTED, "cannot generate CUDA: %s", b.err);
		cg_build_free(&b);
		return MK_ERR_UNSUPPORTED;
	} else if (cs == CG_ENOMEM && !b.cuda) {
		cg_build_free(&b);
		return cfail(c, MK_ERR_NOMEM, "out of memory generating CUDA");
	}
	p->cu_src = b.cuda;
	b.cuda = NULL;
	if (c->cpu) {  /* host buffers in the CPU reference executor's layout */
		cg_build_free(&b);
		p->host = calloc((size_t)p->nt * p->world, sizeof *p->host);
		if (!p->host)
			return MK_ERR_NOMEM;
		for (int i = 0; i < p->nt; i++)
			for (int r = 0; r < p->world; r++) {
				size_t k = (size_t)ir_tensor_elems(&p->p->tensors[i]);
				if (!(p->host[i * p->world + r] = calloc(k ? k : 1, sizeof(float))))
					return MK_ERR_NOMEM;
			}
		return MK_OK;
	}
	if (b.bin.note)
		sb_printf(&c->log, "mk: note: %s\n", b.bin.note);
	if (b.bin.log && *b.bin.log)
		sb_puts(&c->log, b.bin.log);
	if (cs != CG_OK) {
		cg_build_free(&b);
		return cfail(c, cs == CG_ENONVRTC ? MK_ERR_UNSUPPORTED : cs == CG_ENOMEM ? MK_ERR_NOMEM
				  : MK_ERR_NVRTC, "NVRTC: %s", cg_strerror(cs));
	}
	CUresult r = cu->cuModuleLoadData(&p->mod, b.bin.data);
	cg_build_free(&b);
	if (r != CUDA_SUCCESS)
		return cfail(c, MK_ERR_CUDA, "loading the module: %s", cudrv_errstr(r));
	char kname[160];
	cg_kernel_name(p->s, kname, sizeof kname);
	CU(c, cu->cuModuleGetFunction(&p->fn, p->mod, kname), "cuModuleGetFunction");
	CU(c, cu->cuFuncSetAttribute(p->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
				     p->s->smem), "setting the kernel's shared memory");
	if (mk_bench_per_stage) {
		p->stage_fn = calloc((size_t)p->p->nops, sizeof *p->stage_fn);
		if (!p->stage_fn)
			return cfail(c, MK_ERR_NOMEM, "out of memory");
		for (int i = 0; i < p->p->nops; i++) {
			char sn[200];
			snprintf(sn, sizeof sn, "%s__s%d", kname, i);
			CU(c, cu->cuModuleGetFunction(&p->stage_fn[i], p->mod, sn), "cuModuleGetFunction");
			CU(c, cu->cuFuncSetAttribute(p->stage_fn[i],
						     CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
						     p->s->smem), "setting a stage kernel's shared memory");
		}
	}
	int per_sm = 0;
	CU(c, cu->cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, p->fn, p->s->threads,
								(size_t)p->s->smem),
	   "cuOccupancyMaxActiveBlocksPerMultiprocessor");
	if (per_sm * c->sms < p->s->ctas * ranks * (p->comm ? rpg : 1))
		return cfail(c, MK_ERR_TOO_LARGE,
			     "%d CTAs cannot all be resident: %d per SM x %d SMs fit",
			     p->s->ctas * ranks * (p->comm ? rpg : 1), per_sm, c->sms);
	return alloc_all(p, o ? o->trace : 0);
}

static mk_status load_common(mk_ctx *c, int file, const mk_load_opts *o, mk_pipeline *p,
			     mk_pipeline **out)
{
	mk_status st = load(c, file, p, o);
	if (st != MK_OK) {
		mk_pipeline_destroy(p);
		return st;
	}
	*out = p;
	return MK_OK;
}

static mk_pipeline *new_pipeline(mk_ctx *c)
{
	mk_pipeline *p = calloc(1, sizeof *p);
	if (!p)
		return NULL;
	p->c = c;
	arena_init(&p->a);
	src_init(&p->src);
	sb_init(&p->sched_txt);
	sb_init(&p->stall);
	return p;
}

static mk_status check_ctx(mk_ctx *c, mk_pipeline **out)
{
	if (!c || !out)
		return MK_ERR_INVALID;
	*out = NULL;
	if (c->cpu) {
		sb_free(&c->log);
		c->err[0] = 0;
		return MK_OK;
	}
	if (!c->cu || !c->have_ctx)
		return cfail(c, MK_ERR_STATE, "the context has no GPU (%s)",
			     c->err[0] ? c->err : "not created");
	sb_free(&c->log);
	c->err[0] = 0;
	return c->cu->cuCtxSetCurrent(c->cc) == CUDA_SUCCESS ? MK_OK : MK_ERR_CUDA;
}

mk_status mk_pipeline_load_file(mk_ctx *c, const char *path, const mk_load_opts *o,
				mk_pipeline **out)
{
	mk_status st = check_ctx(c, out);
	if (st != MK_OK)
		return st;
	if (!path)
		return MK_ERR_INVALID;
	mk_pipeline *p = new_pipeline(c);
	if (!p)
		return MK_ERR_NOMEM;
	int err = 0;
	int file = src_load(&p->src, path, &err);
	if (file < 0) {
		mk_pipeline_destroy(p);
		return cfail(c, MK_ERR_IO, "cannot read %s: %s", path, strerror(err));
	}
	return load_common(c, file, o, p, out);
}

mk_status mk_pipeline_load_string(mk_ctx *c, const char *name, const char *text,
				  const mk_load_opts *o, mk_pipeline **out)
{
	mk_status st = check_ctx(c, out);
	if (st != MK_OK)
		return st;
	if (!text)
		return MK_ERR_INVALID;
	mk_pipeline *p = new_pipeline(c);
	if (!p)
		return MK_ERR_NOMEM;
	int file = src_add(&p->src, name ? name : "<string>", text, strlen(text));
	if (file < 0) {
		mk_pipeline_destroy(p);
		return MK_ERR_NOMEM;
	}
	return load_common(c, file, o, p, out);
}

void mk_pipeline_destroy(mk_pipeline *p)
{
	if (!p)
		return;
	const cudrv *cu = p->c->cu;
	if (p->host) {
		for (int i = 0; i < p->nt * p->world; i++)
			free(p->host[i]);
		free(p->host);
	}
	if (cu) {
		if (p->resident)
			mk_resident_stop(p);
		if (p->stream)
			cu->cuStreamSynchronize(p->stream);
		/* before the memory it registered goes */
		rdma_close(p->rd, p->rd_live && !p->broken);
		if (p->buf)
			for (int i = 0; i < p->ranks * p->nt; i++)
				if (p->owned[i] && p->buf[i])
					cu->cuMemFree(p->buf[i]);
		if (p->vmm) {
			for (int i = 0; i < p->nvmm; i++)
				vmm_free(cu, &p->vmm[i]);
		} else if (p->flags) {
			cu->cuMemFree(p->flags);
		}
		if (p->rflags)
			cu->cuMemFree(p->rflags);
		if (p->peer_vmm)
			for (int i = 0; i < p->npeers * p->nvmm; i++)
				vmm_free(cu, &p->peer_vmm[i]);
		if (p->table)
			cu->cuMemFree(p->table);
		if (p->report)
			cu->cuMemFree(p->report);
		if (p->trace)
			cu->cuMemFree(p->trace);
		if (p->tmaps)
			cu->cuMemFree(p->tmaps);
		if (p->ctl)
			cu->cuMemFreeHost(p->ctl);
		if (p->gate)
			cu->cuMemFree(p->gate);
		if (p->graph_exec)
			cu->cuGraphExecDestroy(p->graph_exec);
		if (p->graph)
			cu->cuGraphDestroy(p->graph);
		if (p->ev0)
			cu->cuEventDestroy(p->ev0);
		if (p->ev1)
			cu->cuEventDestroy(p->ev1);
		if (p->stream)
			cu->cuStreamDestroy(p->stream);
		if (p->mod)
			cu->cuModuleUnload(p->mod);
	}
	free(p->buf);
	free(p->owned);
	free(p->stage_fn);
	free(p->vmm);
	free(p->peer_vmm);
	free(p->peer);
	free(p->rdst);
	free(p->cu_src);
	sb_free(&p->sched_txt);
	sb_free(&p->stall);
	arena_free(&p->a);
	src_free(&p->src);
	free(p);
}

/* ---- tensors ------------------------------------------------------------------ */

int mk_pipeline_ntensors(const mk_pipeline *p) { return p ? p->nt : 0; }
int mk_pipeline_ranks(const mk_pipeline *p) { return p ? p->ranks : 0; }
int mk_pipeline_first_rank(const mk_pipeline *p) { return p ? p->first : 0; }
const ir_prog *mk_pipeline_prog(const mk_pipeline *p) { return p ? p->p : NULL; }
const ir_sched *mk_pipeline_sched(const mk_pipeline *p) { return p ? p->s : NULL; }
const char *mk_pipeline_source(const mk_pipeline *p) { return p && p->cu_src ? p->cu_src : ""; }
const char *mk_pipeline_schedule(const mk_pipeline *p) { return p ? sb_str(&p->sched_txt) : ""; }

int mk_tensor_find(const mk_pipeline *p, const char *name)
{
	return p && name ? ir_find_tensor(p->p, name) : -1;
}

mk_status mk_tensor_info_get(const mk_pipeline *p, int i, mk_tensor_info *out)
{
	if (!p || !out)
		return MK_ERR_INVALID;
	if (i < 0 || i >= p->nt)
		return MK_ERR_NOT_FOUND;
	const ir_tensor *t = &p->p->tensors[i];
	memset(out, 0, sizeof *out);
	out->name = t->name;
	out->kind = t->kind == TK_IN ? MK_TENSOR_IN : t->kind == TK_OUT ? MK_TENSOR_OUT : MK_TENSOR_TEMP;
	out->dtype = ir_dtype_name(t->dtype);
	out->elem_size = ir_dtype_size(t->dtype);
	out->ndim = t->ndim;
	for (int d = 0; d < t->ndim; d++) {
		out->shape[d] = t->shape[d];
		out->local[d] = t->local[d];
	}
	out->bytes = (size_t)ir_tensor_bytes(t);
	return MK_OK;
}

static mk_status lookup(mk_pipeline *p, const char *name, int rank, int *ti)
{
	if (!p || !name)
		return MK_ERR_INVALID;
	*ti = ir_find_tensor(p->p, name);
	if (*ti < 0)
		return cfail(p->c, MK_ERR_NOT_FOUND, "no tensor named '%s'", name);
	if (rank < p->first || rank >= p->first + p->ranks)
		return cfail(p->c, MK_ERR_NOT_FOUND, "rank %d is not held here (%d..%d)", rank,
			     p->first, p->first + p->ranks - 1);
	if (p->p->tensors[*ti].folded)
		return cfail(p->c, MK_ERR_NOT_FOUND, "tensor '%s' has no storage: in a world of "
			     "one rank the collective that reads or writes it is the identity, "
			     "and mkc removed it", name);
	return MK_OK;
}

static mk_status check_size(mk_pipeline *p, int ti, size_t bytes)
{
	size_t want = (size_t)ir_tensor_bytes(&p->p->tensors[ti]);
	if (bytes != want)
		return cfail(p->c, MK_ERR_SIZE, "tensor '%s' holds %zu bytes per rank, not %zu",
			     p->p->tensors[ti].name, want, bytes);
	return MK_OK;
}

mk_status mk_tensor_write(mk_pipeline *p, const char *name, int rank, const void *src, size_t bytes)
{
	int ti;
	mk_status st = lookup(p, name, rank, &ti);
	if (st == MK_OK)
		st = check_size(p, ti, bytes);
	if (st != MK_OK)
		return st;
	if (!src)
		return MK_ERR_INVALID;
	if (p->host) {
		const ir_tensor *t = &p->p->tensors[ti];
		mk_convert_to_f32(t->dtype, src, p->host[ti * p->world + rank], (size_t)ir_tensor_elems(t));
		return MK_OK;
	}
	if (p->vmm && p->vmm[ti].host) {  /* a host window: the kernel is not running */
		memcpy(p->vmm[ti].host, src, bytes);
		return MK_OK;
	}
	PCU(p, p->c->cu->cuMemcpyHtoD(p->buf[(rank - p->first) * p->nt + ti], src, bytes), "writing a tensor");
	return MK_OK;
}

mk_status mk_tensor_read(mk_pipeline *p, const char *name, int rank, void *dst, size_t bytes)
{
	int ti;
	mk_status st = lookup(p, name, rank, &ti);
	if (st == MK_OK)
		st = check_size(p, ti, bytes);
	if (st != MK_OK)
		return st;
	if (!dst)
		return MK_ERR_INVALID;
	if (p->host) {
		const ir_tensor *t = &p->p->tensors[ti];
		mk_convert_from_f32(t->dtype, p->host[ti * p->world + rank], dst, (size_t)ir_tensor_elems(t));
		return MK_OK;
	}
	if (p->vmm && p->vmm[ti].host) {
		memcpy(dst, p->vmm[ti].host, bytes);
		return MK_OK;
	}
	PCU(p, p->c->cu->cuMemcpyDtoH(dst, p->buf[(rank - p->first) * p->nt + ti], bytes), "reading a tensor");
	return MK_OK;
}

mk_status mk_tensor_write_f32(mk_pipeline *p, const char *name, int rank, const float *src,
			      size_t count)
{
	if (!src)
		return MK_ERR_INVALID;
	int ti;
	mk_status st = lookup(p, name, rank, &ti);
	if (st != MK_OK)
		return st;
	const ir_tensor *t = &p->p->tensors[ti];
	if ((int64_t)count != ir_tensor_elems(t))
		return cfail(p->c, MK_ERR_SIZE, "tensor '%s' holds %lld elements per rank, not %zu",
			     t->name, (long long)ir_tensor_elems(t), count);
	size_t bytes = (size_t)ir_tensor_bytes(t);
	void *tmp = malloc(bytes ? bytes : 1);
	if (!tmp)
		return MK_ERR_NOMEM;
	mk_convert_from_f32(t->dtype, src, tmp, count);
	st = mk_tensor_write(p, name, rank, tmp, bytes);
	free(tmp);
	return st;
}

mk_status mk_tensor_read_f32(mk_pipeline *p, const char *name, int rank, float *dst, size_t count)
{
	if (!dst)
		return MK_ERR_INVALID;
	int ti;
	mk_status st = lookup(p, name, rank, &ti);
	if (st != MK_OK)
		return st;
	const ir_tensor *t = &p->p->tensors[ti];
	if ((int64_t)count != ir_tensor_elems(t))
		return cfail(p->c, MK_ERR_SIZE, "tensor '%s' holds %lld elements per rank, not %zu",
			     t->name, (long long)ir_tensor_elems(t), count);
	size_t bytes = (size_t)ir_tensor_bytes(t);
	void *tmp = malloc(bytes ? bytes : 1);
	if (!tmp)
		return MK_ERR_NOMEM;
	st = mk_tensor_read(p, name, rank, tmp, bytes);
	if (st == MK_OK)
		mk_convert_to_f32(t->dtype, tmp, dst, count);
	free(tmp);
	return st;
}

mk_status mk_tensor_bind(mk_pipeline *p, const char *name, int rank, unsigned long long devptr,
			 size_t bytes)
{
	int ti;
	mk_status st = lookup(p, name, rank, &ti);
	if (st == MK_OK)
		st = check_size(p, ti, bytes);
	if (st != MK_OK)
		return st;
	if (!devptr || (devptr & 15))
		return cfail(p->c, MK_ERR_INVALID, "device pointer for '%s' must be non-null and "
			     "16-byte aligned", name);
	if (p->resident)
		return cfail(p->c, MK_ERR_STATE, "cannot rebind while the kernel is resident");
	int k = (rank - p->first) * p->nt + ti;
	if (p->host)
		return cfail(p->c, MK_ERR_UNSUPPORTED, "a CPU context has no device memory to bind");
	if (p->comm)
		return cfail(p->c, MK_ERR_UNSUPPORTED,
			     "binding caller memory is for virtual ranks; peers map the runtime's own");
	if (p->owned[k])
		p->c->cu->cuMemFree(p->buf[k]);
	p->buf[k] = devptr;
	p->owned[k] = 0;
	p->table_dirty = 1;
	return MK_OK;
}

mk_status mk_tensor_devptr(const mk_pipeline *p, const char *name, int rank,
			   unsigned long long *devptr)
{
	if (!p || !name || !devptr)
		return MK_ERR_INVALID;
	int ti = ir_find_tensor(p->p, name);
	if (ti < 0 || rank < p->first || rank >= p->first + p->ranks || p->p->tensors[ti].folded)
		return MK_ERR_NOT_FOUND;
	if (p->host)
		return MK_ERR_UNSUPPORTED;
	*devptr = p->buf[(rank - p->first) * p->nt + ti];
	return MK_OK;
}

/* ---- running -------------------------------------------------------------------- */

static mkd_params params(mk_pipeline *p, unsigned long long epoch, int resident)
{
	mkd_params k;
	memset(&k, 0, sizeof k);
	k.epoch = epoch;
	k.ranks = (const mkd_rank_entry *)(uintptr_t)p->table;
	k.report = (mkd_report *)(uintptr_t)p->report;
	k.trace = (mkd_trace_rec *)(uintptr_t)p->trace;
	k.control = resident ? (mkd_control *)(uintptr_t)p->ctl_dev : NULL;
	k.gate = resident ? (unsigned long long *)(uintptr_t)p->gate : NULL;
	k.timeout_ns = (unsigned long long)p->timeout_ms * 1000000ull;
	k.rank_base = p->first;
	k.ranks_here = p->ranks;
	k.tmaps = (const void *)(uintptr_t)p->tmaps;
	k.ring = p->ring;
	return k;
}

static CUresult launch_fn(mk_pipeline *p, CUfunction fn, mkd_params *k, int cooperative);
static mk_status reset_after_stall(mk_pipeline *p);
static mk_status check_report(mk_pipeline *p);

static CUresult launch(mk_pipeline *p, mkd_params *k)
{
	return launch_fn(p, p->fn, k, 1);
}

static CUresult launch_fn(mk_pipeline *p, CUfunction fn, mkd_params *k, int cooperative)
{
	CUlaunchAttribute attr[1];
	memset(attr, 0, sizeof attr);
	attr[0].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
	attr[0].value.cooperative = 1;
	CUlaunchConfig cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.gridDimX = (unsigned)(p->s->ctas * p->ranks);
	cfg.gridDimY = cfg.gridDimZ = 1;
	cfg.blockDimX = (unsigned)p->s->threads;
	cfg.blockDimY = cfg.blockDimZ = 1;
	cfg.sharedMemBytes = (unsigned)p->s->smem;
	cfg.hStream = p->stream;
	cfg.attrs = attr;
	cfg.numAttrs = cooperative ? 1 : 0;
	void *args[] = {k};
	return p->c->cu->cuLaunchKernelEx(&cfg, fn, args, NULL);
}

static CUresult launch_stages(mk_pipeline *p, mkd_params *k)
{
	for (int i = 0; i < p->p->nops; i++) {
		CUresult r = launch_fn(p, p->stage_fn[i], k, 0);
		if (r != CUDA_SUCCESS)
			return r;
	}
	return CUDA_SUCCESS;
}

mk_status mk_run_stages(mk_pipeline *p, int graph, float *ms)
{
	if (!p)
		return MK_ERR_INVALID;
	if (p->host || !p->stage_fn)
		return cfail(p->c, MK_ERR_STATE, "loaded without per-stage kernels");
	if (p->resident)
		return cfail(p->c, MK_ERR_STATE, "the kernel is resident");
	const cudrv *cu = p->c->cu;
	mk_status st;
	if (p->broken && !graph && (st = reset_after_stall(p)) != MK_OK)
		return st;
	if (p->table_dirty && (st = upload_table(p)) != MK_OK)
		return st;
	CUresult r;
	if (graph && !p->graph_exec) {
		/* captured once with a fixed epoch: flags keep growing on every
		 * replay, so waits (>= epoch * expected) stay satisfied; the
		 * megakernel's epochs are resynchronised afterwards */
		mkd_params k = params(p, p->epoch + 1, 0);
		PCU(p, cu->cuStreamBeginCapture(p->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
		    "cuStreamBeginCapture");
		r = launch_stages(p, &k);
		CUgraph g = NULL;
		CUresult r2 = cu->cuStreamEndCapture(p->stream, &g);
		if (r != CUDA_SUCCESS || r2 != CUDA_SUCCESS)
			return pfail(p, MK_ERR_CUDA, "capturing the stage kernels",
				     r != CUDA_SUCCESS ? r : r2);
		p->graph = g;
		PCU(p, cu->cuGraphInstantiate(&p->graph_exec, g, 0), "cuGraphInstantiate");
	}
	PCU(p, cu->cuEventRecord(p->ev0, p->stream), "cuEventRecord");
	if (graph) {
		r = cu->cuGraphLaunch(p->graph_exec, p->stream);
		p->broken = 1;  /* flags ran ahead of the epoch: reset before the next run */
	} else {
		mkd_params k = params(p, ++p->epoch, 0);
		r = launch_stages(p, &k);
	}
	if (r != CUDA_SUCCESS)
		return pfail(p, MK_ERR_CUDA, "launching the stage kernels", r);
	PCU(p, cu->cuEventRecord(p->ev1, p->stream), "cuEventRecord");
	PCU(p, cu->cuStreamSynchronize(p->stream), "running the stage kernels");
	if (ms) {
		float t = 0;
		PCU(p, cu->cuEventElapsedTime(&t, p->ev0, p->ev1), "cuEventElapsedTime");
		*ms = t;
	}
	mk_status rs = check_report(p);
	if (graph)
		p->broken = 1;
	return rs;
}

/* After a stall the flags no longer match the epoch: clear everything. */
static mk_status reset_after_stall(mk_pipeline *p)
{
	const cudrv *cu = p->c->cu;
	if (p->comm)  /* peers' flags run at the same epoch: they cannot be reset alone */
		return cfail(p->c, MK_ERR_STATE, "a stalled multi-process pipeline must be reloaded");
	PCU(p, cu->cuMemsetD8(p->flags, 0, (size_t)p->ranks * p->nfl * 8), "clearing flags");
	if (p->rflags)
		PCU(p, cu->cuMemsetD8(p->rflags, 0, (size_t)p->ranks * p->rl.area * 8),
		    "clearing RDMA flags");
	PCU(p, cu->cuMemsetD8(p->report, 0, sizeof(mkd_report)), "clearing the report");
	p->epoch = 0;
	p->broken = 0;
	sb_free(&p->stall);
	return MK_OK;
}

static const ir_task *task_at(const mk_pipeline *p, int i)
{
	return i >= 0 && i < p->s->ntasks ? &p->s->tasks[i] : NULL;
}

/* Reads the report; MK_ERR_STALL with the text filled when a wait timed out. */
static mk_status check_report(mk_pipeline *p)
{
	mkd_report r;
	PCU(p, p->c->cu->cuMemcpyDtoH(&r, p->report, sizeof r), "reading the report");
	if (!r.stalled && !r.aborted)
		return MK_OK;
	p->broken = 1;
	sb_free(&p->stall);
	const ir_prog *pr = p->p;
	const ir_sched *s = p->s;
	const ir_task *t = task_at(p, r.task);
	if (r.flag_rank == -2 && t) {  /* bad data (mkd/moe.cuh) */
		const ir_op *op = &pr->ops[t->op];
		const ir_tensor *ix = op->nin > 1 ? &pr->tensors[op->in[1]] : NULL;
		if (r.flag_index == 1 && ix && ix->ndim == 2)
			sb_printf(&p->stall, "run %llu: '%s' on rank %d: token %lld (of the rank's "
				  "piece) choice %lld routes to %d, not an expert in [0, %lld)",
				  r.epoch, ix->name, r.rank, (long long)(r.expected / ix->local[1]),
				  (long long)(r.expected % ix->local[1]), (int)(unsigned)r.seen,
				  (long long)op->experts);
		else if (r.flag_index == 2)
			sb_printf(&p->stall, "run %llu: stage '%s': expert %llu receives %llu tokens, "
				  "over its capacity %lld; nothing was written past it",
				  r.epoch, op->stage, r.expected, r.seen, (long long)op->capacity);
		else
			sb_printf(&p->stall, "run %llu: bad data in stage '%s' (code %d)", r.epoch,
				  op->stage, r.flag_index);
		sb_putc(&p->stall, '\n');
		return cfail(p->c, MK_ERR_DATA, "%s", sb_str(&p->stall));
	}
	sb_printf(&p->stall, "stall in run %llu: rank %d, CTA %d", r.epoch, r.rank, r.cta);
	if (t) {
		const ir_region w = ir_region_shift(pr, t->write, r.rank);
		sb_printf(&p->stall, " (%s), task %d (%s of stage '%s', writes ",
			  ir_role_name(s->roles[t->role].kind), r.task, ir_task_name(t->kind),
			  pr->ops[t->op].stage);
		inspect_region(pr, &w, &p->stall);
		sb_puts(&p->stall, ")");
	}
	if (r.task < 0)
		sb_puts(&p->stall, ", at the end of the run");
	sb_printf(&p->stall, "\n  waited %.1f ms on flag %d of rank %d: expected %llu, saw %llu",
		  r.waited_ns / 1e6, r.flag_index, r.flag_rank, r.expected, r.seen);
	if (r.flag_rank == -1) {  /* the RDMA proxy (mkd/proxy.cuh) */
		char msg[640];
		sb_printf(&p->stall, "\n  (the RDMA proxy: %s",
			  r.flag_index == MKD_PROXY_STALL_FULL ? "its command ring stayed full"
			  : r.flag_index == MKD_PROXY_STALL_DONE ? "a command was not delivered in time"
			  : "it failed");
		if (rdma_status(p->rd, msg, sizeof msg) != MK_OK)
			sb_printf(&p->stall, ": %s", msg);
		sb_putc(&p->stall, ')');
	}
	if (r.flag_index >= s->nflags + 2 && r.flag_index < s->nflags + 2 + p->rl.ndst && p->rl.tasks)
		sb_printf(&p->stall, "\n  (READY over RDMA: rank %d, which this rank writes to, has not "
			  "started this run; is the process alive?)",
			  ir_rank_shift(p->rdst[r.flag_index - s->nflags - 2], r.rank, pr->nodes, pr->gpus));
	if (r.flag_index >= 0 && r.flag_index < p->rl.nflags)
		sb_puts(&p->stall, "\n  (a flag written by an RDMA task of another node, after its data)");
	if (r.flag_index == s->nflags)
		sb_printf(&p->stall, "\n  (READY: rank %d's kernel has not started this run; is the "
			  "process alive?)", r.flag_rank);
	else if (r.flag_index == s->nflags + 1)
		sb_printf(&p->stall, "\n  (DONE: rank %d has not finished this run; is the process "
			  "alive?)", r.flag_rank);
	if (r.flag_index >= 0 && r.flag_index < s->nflags) {
		const ir_flag *f = &s->flags[r.flag_index];
		ir_region g = ir_region_shift(pr, f->guards,
					      r.flag_rank >= 0 ? r.rank : 0);
		sb_printf(&p->stall, "\n  the flag announces stage '%s' (%d signal%s per run), e.g. ",
			  pr->ops[f->op].stage, f->expected, f->expected == 1 ? "" : "s");
		inspect_region(pr, &g, &p->stall);
	}
	sb_putc(&p->stall, '\n');
	return MK_ERR_STALL;
}

/* After a run: a proxy that failed (a dead peer, a transport error) fails
 * the run even where the kernel saw nothing wrong. */
static mk_status check_proxy(mk_pipeline *p, mk_status st)
{
	char msg[640];
	if (st != MK_OK || rdma_status(p->rd, msg, sizeof msg) == MK_OK)
		return st;
	p->broken = 1;
	return cfail(p->c, MK_ERR_PEER, "the RDMA proxy failed: %s", msg);
}

static double now_ms(void);

/* A CPU context runs the reference executor over the host buffers. */
static mk_status run_cpu(mk_pipeline *p, float *ms)
{
	char err[512];
	cpuref_opts ro = {.round_storage = 1};
	double t0 = now_ms();
	if (cpuref_run(p->p, p->host, &ro, err, sizeof err) != 0)
		return cfail(p->c, MK_ERR_INVALID, "CPU reference: %s", err);
	if (ms)
		*ms = (float)(now_ms() - t0);
	p->epoch++;
	return MK_OK;
}

mk_status mk_run_timed(mk_pipeline *p, float *ms)
{
	if (!p)
		return MK_ERR_INVALID;
	if (p->host)
		return run_cpu(p, ms);
	if (p->resident)
		return cfail(p->c, MK_ERR_STATE, "the kernel is resident: use mk_resident_run");
	const cudrv *cu = p->c->cu;
	mk_status st;
	if (p->broken && (st = reset_after_stall(p)) != MK_OK)
		return st;
	if (p->table_dirty && (st = upload_table(p)) != MK_OK)
		return st;
	mkd_params k = params(p, ++p->epoch, 0);
	PCU(p, cu->cuEventRecord(p->ev0, p->stream), "cuEventRecord");
	CUresult r = launch(p, &k);
	if (r == CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE)
		return cfail(p->c, MK_ERR_TOO_LARGE, "%d CTAs cannot all be resident",
			     p->s->ctas * p->ranks);
	if (r != CUDA_SUCCESS)
		return pfail(p, MK_ERR_CUDA, "launching the kernel", r);
	PCU(p, cu->cuEventRecord(p->ev1, p->stream), "cuEventRecord");
	r = cu->cuStreamSynchronize(p->stream);
	if (r == CUDA_ERROR_ILLEGAL_ADDRESS && p->comm)
		/* under MPS a killed client's memory goes with it: peers that
		 * still map it fault instead of timing out */
		return pfail(p, MK_ERR_PEER, "running the kernel (a peer process probably died: "
			     "its memory vanished under this rank's loads)", r);
	PCU(p, r, "running the kernel");
	if (ms) {
		float t = 0;
		PCU(p, cu->cuEventElapsedTime(&t, p->ev0, p->ev1), "cuEventElapsedTime");
		*ms = t;
	}
	return check_proxy(p, check_report(p));
}

mk_status mk_run(mk_pipeline *p) { return mk_run_timed(p, NULL); }

mk_status mk_resident_start(mk_pipeline *p)
{
	if (!p)
		return MK_ERR_INVALID;
	if (p->resident)
		return cfail(p->c, MK_ERR_STATE, "already resident");
	if (p->host) {  /* nothing stays anywhere: runs are synchronous */
		p->resident = 1;
		return MK_OK;
	}
	const cudrv *cu = p->c->cu;
	mk_status st;
	if (p->broken && (st = reset_after_stall(p)) != MK_OK)
		return st;
	if (p->table_dirty && (st = upload_table(p)) != MK_OK)
		return st;
	if (!p->ctl) {
		void *h;
		PCU(p, cu->cuMemHostAlloc(&h, sizeof(mkd_control),
					  CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE),
		    "allocating the doorbell");
		p->ctl = h;
		PCU(p, cu->cuMemHostGetDevicePointer(&p->ctl_dev, h, 0), "mapping the doorbell");
		PCU(p, cu->cuMemAlloc(&p->gate, 2 * sizeof(unsigned long long)), "allocating the gate");
	}
	PCU(p, cu->cuMemsetD8(p->gate, 0, 2 * sizeof(unsigned long long)), "clearing the gate");
	PCU(p, cu->cuMemcpyHtoD(p->gate, &p->epoch, sizeof p->epoch), "setting the gate");
	p->ctl->doorbell = p->epoch;
	p->ctl->done = p->epoch;
	__sync_synchronize();
	p->resident_runs = 0;
	mkd_params k = params(p, p->epoch, 1);
	CUresult r = launch(p, &k);
	if (r != CUDA_SUCCESS)
		return pfail(p, r == CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE ? MK_ERR_TOO_LARGE
			     : MK_ERR_CUDA, "launching the resident kernel", r);
	p->resident = 1;
	return MK_OK;
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

mk_status mk_resident_run(mk_pipeline *p, float *ms)
{
	if (!p)
		return MK_ERR_INVALID;
	if (!p->resident)
		return cfail(p->c, MK_ERR_STATE, "the kernel is not resident: call mk_resident_start");
	if (p->host)
		return run_cpu(p, ms);
	const cudrv *cu = p->c->cu;
	unsigned long long want = p->epoch + 1;
	double t0 = now_ms();
	volatile mkd_control *ctl = p->ctl;
	__sync_synchronize();
	ctl->doorbell = ++p->epoch;
	__sync_synchronize();
	for (unsigned long long spin = 0;; spin++) {
		if (ctl->done >= want)
			break;
		if ((spin & 1023) == 0) {
			CUresult q = cu->cuStreamQuery(p->stream);
			if (q == CUDA_SUCCESS) {  /* the kernel left: a stall */
				p->resident = 0;
				mk_status st = check_report(p);
				return st != MK_OK ? st
				       : cfail(p->c, MK_ERR_INTERNAL, "the resident kernel exited early");
			}
			if (q != CUDA_ERROR_NOT_READY) {
				p->resident = 0;
				return pfail(p, MK_ERR_CUDA, "the resident kernel failed", q);
			}
			if (now_ms() - t0 > 2.0 * p->timeout_ms + 1000) {
				return cfail(p->c, MK_ERR_STALL,
					     "the resident kernel did not finish run %llu", p->epoch);
			}
		}
	}
	__sync_synchronize();
	p->resident_runs++;
	if (ms)
		*ms = (float)(now_ms() - t0);
	return MK_OK;
}

mk_status mk_resident_stop(mk_pipeline *p)
{
	if (!p)
		return MK_ERR_INVALID;
	if (!p->resident)
		return MK_OK;
	if (p->host) {
		p->resident = 0;
		return MK_OK;
	}
	volatile mkd_control *ctl = p->ctl;
	ctl->doorbell = MKD_STOP;
	__sync_synchronize();
	p->resident = 0;
	PCU(p, p->c->cu->cuStreamSynchronize(p->stream), "stopping the resident kernel");
	return check_proxy(p, check_report(p));
}

const char *mk_stall_report(const mk_pipeline *p) { return p ? sb_str(&p->stall) : ""; }

mk_status mk_trace_write(mk_pipeline *p, const char *path)
{
	if (!p || !path)
		return MK_ERR_INVALID;
	if (p->host)
		return cfail(p->c, MK_ERR_UNSUPPORTED, "a CPU context records no trace");
	if (!p->trace)
		return cfail(p->c, MK_ERR_STATE, "the pipeline was loaded without tracing");
	size_t n = (size_t)p->world * p->s->ntasks;
	mkd_trace_rec *rec = calloc(n + 1, sizeof *rec);
	if (!rec)
		return MK_ERR_NOMEM;
	CUresult r = p->c->cu->cuMemcpyDtoH(rec, p->trace, n * sizeof *rec);
	if (r != CUDA_SUCCESS) {
		free(rec);
		return pfail(p, MK_ERR_CUDA, "reading the trace", r);
	}
	unsigned long long t0 = ~0ull;
	for (size_t i = 0; i < n; i++)
		if (rec[i].t0 && rec[i].t0 < t0)
			t0 = rec[i].t0;
	FILE *f = fopen(path, "w");
	if (!f) {
		free(rec);
		return cfail(p->c, MK_ERR_IO, "cannot write %s", path);
	}
	fprintf(f, "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n");
	int first = 1;
	for (int rk = p->first; rk < p->first + p->ranks; rk++) {
		fprintf(f, "%s{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d, "
			"\"args\": {\"name\": \"rank %d\"}}", first ? "" : ",\n", rk, rk);
		first = 0;
		for (int i = 0; i < p->s->ntasks; i++) {
			const mkd_trace_rec *x = &rec[(size_t)rk * p->s->ntasks + i];
			if (!x->t0 || !x->t1)
				continue;
			const ir_task *t = &p->s->tasks[i];
			const ir_region w = ir_region_shift(p->p, t->write, rk);
			strbuf reg;
			sb_init(&reg);
			inspect_region(p->p, &w, &reg);
			fprintf(f, ",\n{\"name\": \"%s %s\", \"cat\": \"%s\", \"ph\": \"X\", "
				"\"ts\": %.3f, \"dur\": %.3f, \"pid\": %d, \"tid\": %d, "
				"\"args\": {\"task\": %d, \"writes\": \"%s\"}}",
				p->p->ops[t->op].stage, ir_task_name(t->kind),
				ir_role_name(p->s->roles[t->role].kind), (x->t0 - t0) / 1e3,
				(x->t1 - x->t0) / 1e3, rk, t->cta, i, sb_str(&reg));
			sb_free(&reg);
		}
	}
	fprintf(f, "\n]}\n");
	int bad = ferror(f);
	bad |= fclose(f) != 0;
	free(rec);
	return bad ? cfail(p->c, MK_ERR_IO, "cannot write %s", path) : MK_OK;
}
