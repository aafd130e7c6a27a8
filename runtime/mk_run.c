/* mk_run.c - libmk's runs: one-shot and resident launches, the per-stage
 * kernels of the benchmarks, the CPU reference in a CPU context, and what
 * the device reports back (stalls, proxy failures, data errors, traces).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../compiler/cpuref.h"
#include "../compiler/inspect.h"
#include "mk_lib.h"

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

static CUresult launch_fn(mk_pipeline *p, CUfunction fn, mkd_params *k, int cooperative,
			  CUstream s);
static mk_status reset_after_stall(mk_pipeline *p);
static mk_status check_report(mk_pipeline *p);

static CUresult launch(mk_pipeline *p, mkd_params *k)
{
	return launch_fn(p, p->fn, k, 1, p->stream);
}

void mk_launch_config(const mk_pipeline *p, int cooperative, CUstream s, CUlaunchConfig *cfg,
		      CUlaunchAttribute attr[2])
{
	unsigned na = 0;
	memset(attr, 0, 2 * sizeof *attr);
	if (cooperative) {
		attr[na].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
		attr[na++].value.cooperative = 1;
	}
	if (p->cluster > 1) {  /* the schedule's clusters (mk_load.c) */
		attr[na].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
		attr[na].value.clusterDim.x = (unsigned)p->cluster;
		attr[na].value.clusterDim.y = attr[na].value.clusterDim.z = 1;
		na++;
	}
	memset(cfg, 0, sizeof *cfg);
	cfg->gridDimX = (unsigned)(p->s->ctas * p->ranks);
	cfg->gridDimY = cfg->gridDimZ = 1;
	cfg->blockDimX = (unsigned)p->s->threads;
	cfg->blockDimY = cfg->blockDimZ = 1;
	cfg->sharedMemBytes = (unsigned)p->s->smem;
	cfg->hStream = s;
	cfg->attrs = attr;
	cfg->numAttrs = na;
}

static CUresult launch_fn(mk_pipeline *p, CUfunction fn, mkd_params *k, int cooperative,
			  CUstream s)
{
	CUlaunchAttribute attr[2];
	CUlaunchConfig cfg;
	mk_launch_config(p, cooperative, s, &cfg, attr);
	void *args[] = {k};
	return p->c->cu->cuLaunchKernelEx(&cfg, fn, args, NULL);
}

static CUresult launch_stages(mk_pipeline *p, mkd_params *k)
{
	for (int i = 0; i < p->p->nops; i++) {
		CUresult r = launch_fn(p, p->stage_fn[i], k, 0, p->stream);
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
		return mk_fail(p->c, MK_ERR_STATE, "loaded without per-stage kernels");
	if (p->resident)
		return mk_fail(p->c, MK_ERR_STATE, "the kernel is resident");
	const cudrv *cu = p->c->cu;
	mk_status st;
	if (p->broken && !graph && (st = reset_after_stall(p)) != MK_OK)
		return st;
	if (p->table_dirty && (st = mk_upload_table(p)) != MK_OK)
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
			return mk_cufail(p, MK_ERR_CUDA, "capturing the stage kernels",
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
		return mk_cufail(p, MK_ERR_CUDA, "launching the stage kernels", r);
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
		return mk_fail(p->c, MK_ERR_STATE, "a stalled multi-process pipeline must be reloaded");
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
		return mk_fail(p->c, MK_ERR_DATA, "%s", sb_str(&p->stall));
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
	return mk_fail(p->c, MK_ERR_PEER, "the RDMA proxy failed: %s", msg);
}

static double now_ms(void);

/* A CPU context runs the reference executor over the host buffers. */
static mk_status run_cpu(mk_pipeline *p, float *ms)
{
	char err[512];
	cpuref_opts ro = {.round_storage = 1};
	double t0 = now_ms();
	if (cpuref_run(p->p, p->host, &ro, err, sizeof err) != 0)
		return mk_fail(p->c, MK_ERR_INVALID, "CPU reference: %s", err);
	if (ms)
		*ms = (float)(now_ms() - t0);
	p->epoch++;
	return MK_OK;
}

/* One run enqueued on stream s, the one way every run reaches the GPU but
 * resident ones.  Until a CUDA graph holds a run, flags count runs (epoch
 * 1, 2, ...) and the rank table is copied only after a bind.  A graph's
 * replays cannot count: each clears the flags, runs epoch 1 and copies the
 * table it was captured with; from then on every run does the same, since
 * replays may come between any two runs. */
static mk_status enqueue(mk_pipeline *p, CUstream s, int capturing)
{
	const cudrv *cu = p->c->cu;
	mk_status st;
	if (capturing) {
		if (p->comm)
			return mk_fail(p->c, MK_ERR_UNSUPPORTED, "a pipeline with one process per rank "
				     "cannot be captured in a CUDA graph: its flags count runs "
				     "together with the peer processes' (run it with mk_run_on outside "
				     "the capture)");
		if (p->broken)
			return mk_fail(p->c, MK_ERR_STATE, "the pipeline stalled: run it once outside "
				     "the capture (mk_run) to reset it");
		p->captured = 1;
	} else if (p->broken && (st = reset_after_stall(p)) != MK_OK) {
		return st;
	}
	/* runs of one pipeline stay in order whatever streams they come on */
	if (!capturing && p->pending && s != p->last_stream)
		PCU(p, cu->cuStreamWaitEvent(s, p->ev_done, 0), "ordering after the previous run");
	unsigned long long epoch;
	if (p->captured) {
		if ((st = mk_upload_table_on(p, s, capturing)) != MK_OK)
			return st;
		PCU(p, cu->cuMemsetD8Async(p->flags, 0, (size_t)p->ranks * p->nfl * 8, s),
		    "clearing flags");
		if (p->rflags)
			PCU(p, cu->cuMemsetD8Async(p->rflags, 0, (size_t)p->ranks * p->rl.area * 8, s),
			    "clearing RDMA flags");
		epoch = 1;
		p->epoch = 1;
	} else {
		if (p->table_dirty && (st = mk_upload_table_on(p, s, 0)) != MK_OK)
			return st;
		epoch = ++p->epoch;
	}
	mkd_params k = params(p, epoch, 0);
	CUresult r = launch_fn(p, p->fn, &k, 1, s);
	if (r == CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE)
		return mk_fail(p->c, MK_ERR_TOO_LARGE, "%d CTAs cannot all be resident",
			     p->s->ctas * p->ranks);
	if (capturing && r != CUDA_SUCCESS)
		return mk_cufail(p, MK_ERR_UNSUPPORTED, "capturing the kernel's cooperative launch", r);
	if (r != CUDA_SUCCESS)
		return mk_cufail(p, MK_ERR_CUDA, "launching the kernel", r);
	if (!capturing) {
		if (!p->ev_done)
			PCU(p, cu->cuEventCreate(&p->ev_done, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
		PCU(p, cu->cuEventRecord(p->ev_done, s), "cuEventRecord");
		p->pending = 1;
		p->last_stream = s;
	}
	return MK_OK;
}

mk_status mk_run_on(mk_pipeline *p, void *stream)
{
	if (!p)
		return MK_ERR_INVALID;
	if (p->host)
		return run_cpu(p, NULL);
	if (p->resident)
		return mk_fail(p->c, MK_ERR_STATE, "the kernel is resident: use mk_resident_run");
	const cudrv *cu = p->c->cu;
	CUstream s = stream ? (CUstream)stream : p->stream;
	CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
	PCU(p, cu->cuStreamIsCapturing(s, &cs), "asking whether the stream is capturing");
	if (cs == CU_STREAM_CAPTURE_STATUS_INVALIDATED)
		return mk_fail(p->c, MK_ERR_STATE, "the stream's capture was invalidated by an "
			     "earlier call");
	return enqueue(p, s, cs == CU_STREAM_CAPTURE_STATUS_ACTIVE);
}

/* Waits for the last mk_run_on and reads what the device reported. */
mk_status mk_sync(mk_pipeline *p)
{
	if (!p)
		return MK_ERR_INVALID;
	if (p->host || p->resident)
		return MK_OK;
	if (p->pending) {
		CUresult r = p->c->cu->cuEventSynchronize(p->ev_done);
		p->pending = 0;
		if (r == CUDA_ERROR_ILLEGAL_ADDRESS && p->comm)
			return mk_cufail(p, MK_ERR_PEER, "running the kernel (a peer process probably "
				     "died: its memory vanished under this rank's loads)", r);
		PCU(p, r, "running the kernel");
	}
	return check_proxy(p, check_report(p));
}

mk_status mk_run_timed(mk_pipeline *p, float *ms)
{
	if (!p)
		return MK_ERR_INVALID;
	if (p->host)
		return run_cpu(p, ms);
	if (p->resident)
		return mk_fail(p->c, MK_ERR_STATE, "the kernel is resident: use mk_resident_run");
	const cudrv *cu = p->c->cu;
	mk_status st;
	if (p->pending && (st = mk_sync(p)) != MK_OK)  /* an earlier run's failure is its own */
		return st;
	PCU(p, cu->cuEventRecord(p->ev0, p->stream), "cuEventRecord");
	if ((st = enqueue(p, p->stream, 0)) != MK_OK)
		return st;
	PCU(p, cu->cuEventRecord(p->ev1, p->stream), "cuEventRecord");
	if ((st = mk_sync(p)) != MK_OK)
		return st;
	if (ms) {
		float t = 0;
		PCU(p, cu->cuEventSynchronize(p->ev1), "cuEventSynchronize");
		PCU(p, cu->cuEventElapsedTime(&t, p->ev0, p->ev1), "cuEventElapsedTime");
		*ms = t;
	}
	return MK_OK;
}

mk_status mk_run(mk_pipeline *p) { return mk_run_timed(p, NULL); }

mk_status mk_resident_start(mk_pipeline *p)
{
	if (!p)
		return MK_ERR_INVALID;
	if (p->resident)
		return mk_fail(p->c, MK_ERR_STATE, "already resident");
	if (p->host) {  /* nothing stays anywhere: runs are synchronous */
		p->resident = 1;
		return MK_OK;
	}
	const cudrv *cu = p->c->cu;
	mk_status st;
	if (p->pending && (st = mk_sync(p)) != MK_OK)
		return st;
	/* after a graph's replays the flags hold epoch 1's counts */
	if ((p->broken || p->captured) && (st = reset_after_stall(p)) != MK_OK)
		return st;
	if ((p->table_dirty || p->captured) && (st = mk_upload_table(p)) != MK_OK)
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
		return mk_cufail(p, r == CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE ? MK_ERR_TOO_LARGE
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
		return mk_fail(p->c, MK_ERR_STATE, "the kernel is not resident: call mk_resident_start");
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
				       : mk_fail(p->c, MK_ERR_INTERNAL, "the resident kernel exited early");
			}
			if (q != CUDA_ERROR_NOT_READY) {
				p->resident = 0;
				return mk_cufail(p, MK_ERR_CUDA, "the resident kernel failed", q);
			}
			if (now_ms() - t0 > 2.0 * p->timeout_ms + 1000) {
				return mk_fail(p->c, MK_ERR_STALL,
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
		return mk_fail(p->c, MK_ERR_UNSUPPORTED, "a CPU context records no trace");
	if (!p->trace)
		return mk_fail(p->c, MK_ERR_STATE, "the pipeline was loaded without tracing");
	size_t n = (size_t)p->world * p->s->ntasks;
	mkd_trace_rec *rec = calloc(n + 1, sizeof *rec);
	if (!rec)
		return MK_ERR_NOMEM;
	CUresult r = p->c->cu->cuMemcpyDtoH(rec, p->trace, n * sizeof *rec);
	if (r != CUDA_SUCCESS) {
		free(rec);
		return mk_cufail(p, MK_ERR_CUDA, "reading the trace", r);
	}
	unsigned long long t0 = ~0ull;
	for (size_t i = 0; i < n; i++)
		if (rec[i].t0 && rec[i].t0 < t0)
			t0 = rec[i].t0;
	FILE *f = fopen(path, "w");
	if (!f) {
		free(rec);
		return mk_fail(p->c, MK_ERR_IO, "cannot write %s", path);
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
				(x->t1 - x->t0) / 1e3, rk, x->cta, i, sb_str(&reg));
			sb_free(&reg);
		}
	}
	fprintf(f, "\n]}\n");
	int bad = ferror(f);
	bad |= fclose(f) != 0;
	free(rec);
	return bad ? mk_fail(p->c, MK_ERR_IO, "cannot write %s", path) : MK_OK;
}
