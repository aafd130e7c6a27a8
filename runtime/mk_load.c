/* mk_load.c - libmk: contexts, and loading a pipeline.
 *
 * Loading runs the front half in-process (compile_run: parse ... verify),
 * then the back half (cg_build: CUDA, NVRTC, the JIT cache), loads the
 * cubin and lays out memory (mk_mem.c).  Virtual ranks: R ranks of the
 * pipeline share this GPU and run in ONE cooperative launch of R x CTAs
 * blocks (rank = blockIdx / CTAs), which guarantees that all CTAs are
 * resident; each rank has its own allocation of every tensor and its own
 * flag array, and the rank table tells every CTA where all of them are.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../compiler/costmodel.h"
#include "../compiler/inspect.h"
#include "mk_lib.h"

static int device_model(const mk_ctx *c, ir_device *d, strbuf *log, char *file, size_t nfile);

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
	if (ds == CUDRV_NO_DRIVER || ds == CUDRV_NO_GPU) {
		/* the status names the failure ("no CUDA driver found"), the
		 * context's error the detail: callers print "%s: %s" of both */
		mk_status st = ds == CUDRV_NO_DRIVER ? MK_ERR_NO_DRIVER : MK_ERR_NO_GPU;
		const char *head = mk_strerror(st), *d = why;
		size_t hn = strlen(head), n = strlen(why);
		if (!strncmp(why, head, hn) && !strncmp(why + hn, " (", 2) && n > hn + 3 &&
		    why[n - 1] == ')') {
			d = why + hn + 2;
			why[n - 1] = 0;
		}
		return mk_fail(c, st, "%s", d);
	}
	if (ds != CUDRV_OK)
		return mk_fail(c, MK_ERR_CUDA, "%s", why);
	const cudrv *cu = c->cu;
	int n = 0;
	CU(c, cu->cuDeviceGetCount(&n), "cuDeviceGetCount");
	int ord = o ? o->device : 0;
	if (n == 0)
		return mk_fail(c, MK_ERR_NO_GPU, "the driver reports 0 devices");
	if (ord < 0 || ord >= n)
		return mk_fail(c, MK_ERR_NOT_FOUND, "device %d does not exist (%d visible)", ord, n);
	CU(c, cu->cuDeviceGet(&c->dev, ord), "cuDeviceGet");
	CU(c, cu->cuDevicePrimaryCtxRetain(&c->cc, c->dev), "cuDevicePrimaryCtxRetain");
	c->have_ctx = 1;
	CU(c, cu->cuCtxSetCurrent(c->cc), "cuCtxSetCurrent");
	snprintf(c->card, sizeof c->card, "?");
	cu->cuDeviceGetName(c->card, sizeof c->card, c->dev);
	cu->cuDeviceGetAttribute(&c->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, c->dev);
	cu->cuDeviceGetAttribute(&c->smem_optin,
				 CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, c->dev);
	cu->cuDeviceGetAttribute(&c->major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, c->dev);
	cu->cuDeviceGetAttribute(&c->minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, c->dev);
	snprintf(c->desc, sizeof c->desc, "%s, %d SMs, sm_%d%d", c->card, c->sms, c->major, c->minor);
	ir_device d;
	char model[256];
	if (device_model(c, &d, NULL, model, sizeof model) == 0 && *model)  /* keys over the defaults' */
		snprintf(c->desc + strlen(c->desc), sizeof c->desc - strlen(c->desc),
			 ", cost model %s", model);
	if (c->major < 8)
		return mk_fail(c, MK_ERR_UNSUPPORTED,
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

/* The parameters as -D defines.  The mesh is not decided here: the job's
 * rank count goes to the check (compile_opts.world), which fills the
 * mesh's open sides with it (virtual ranks: every rank on this GPU, so by
 * default 1 x ranks) and reports a mesh the file or -D fixes otherwise. */
static int build_defines(const mk_param *params, int nparams, mk_define *defs, int max,
			 char *err, size_t n)
{
	if (nparams > max) {
		snprintf(err, n, "too many parameters (%d)", nparams);
		return -1;
	}
	for (int i = 0; i < nparams; i++) {
		if (!params[i].name) {
			snprintf(err, n, "parameter %d has no name", i);
			return -1;
		}
		defs[i] = (mk_define){params[i].name, params[i].value};
	}
	return nparams;
}

/* The cost model plans and predicts with: the H200 defaults, the keys of
 * the file $MK_DEVICE_FILE names over them (docs/costmodel.md; e.g.
 * tools/devices/h100.txt), else those of the device file built in whose
 * card line names this GPU (tools/devices/), then what the context found
 * on its GPU (SMs, shared memory).  file[]: the keys' file ("tools/devices/
 * h100.txt"), "" for the defaults'.  -1 with the file's error in log
 * (when given). */
static int device_model(const mk_ctx *c, ir_device *d, strbuf *log, char *file, size_t nfile)
{
	*d = costmodel_h200();
	file[0] = 0;
	const char *f = getenv("MK_DEVICE_FILE"), *b;
	char why[256];
	if (f && *f) {
		if (costmodel_load(f, d, why, sizeof why) != 0) {
			if (log)
				sb_printf(log, "mk: MK_DEVICE_FILE: %s\n", why);
			return -1;
		}
		snprintf(file, nfile, "%s", f);
	} else if (c && !c->cpu) {
		if ((b = costmodel_card(c->card, d, why, sizeof why)) != NULL)
			snprintf(file, nfile, "tools/devices/%s", b);
		else if (*why) {  /* a built-in file is bad: test_costmodel's to catch */
			if (log)
				sb_printf(log, "mk: %s\n", why);
			return -1;
		}
	}
	if (c && c->sms > 0) {
		d->sms = c->sms;
		if (c->smem_optin > 0)
			d->smem_per_sm = c->smem_optin;
	}
	return 0;
}

static mk_status compile_for(const mk_ctx *c, srcset *src, int file, const mk_param *params,
			     int nparams, int world, int ranks, arena *a, compile_out *out,
			     strbuf *log)
{
	mk_define defs[80];
	char err[256];
	int nd = build_defines(params, nparams, defs, 80, err, sizeof err);
	if (nd < 0) {
		sb_printf(log, "mk: %s\n", err);
		return MK_ERR_INVALID;
	}
	ir_device dev;
	char model[256];
	if (device_model(c, &dev, log, model, sizeof model) != 0)
		return MK_ERR_INVALID;
	/* no context, or a CPU one: only the CPU reference runs it */
	compile_opts o = {.defs = defs, .ndefs = nd, .ranks_per_gpu = ranks, .world = world,
			  .dev = &dev,
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

static mk_status load(mk_ctx *c, int file, mk_pipeline *p, const mk_load_opts *o)
{
	const cudrv *cu = c->cu;
	int ranks = o ? o->ranks : 1;
	if (c->cpu && o && o->comm)
		return mk_fail(c, MK_ERR_UNSUPPORTED, "a CPU context runs every rank in this process");
	if (ranks < 1 || ranks > 64)
		return mk_fail(c, MK_ERR_INVALID, "ranks must be 1..64, not %d", ranks);
	p->ranks = ranks;
	p->comm = o ? o->comm : NULL;
	int rpg = ranks;
	if (p->comm) {
		if (ranks != 1)
			return mk_fail(c, MK_ERR_INVALID,
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
		return mk_fail(c, st, "%s", st == MK_ERR_SOURCE ? "the pipeline has errors (see the log)"
				  : sb_str(&c->log));
	p->s = p->co.sched;
	p->p = p->co.prog;
	if (mk_test_sched_hook)
		mk_test_sched_hook(p->s);
	p->nt = p->p->ntensors;
	p->nfl = p->s->nflags + 2 + p->s->npools;  /* the flags, READY, DONE, the pools' counters */
	if (cg_rdma_layout(p->s, &p->rl, NULL, 0) != 0 ||
	    !(p->rdst = calloc((size_t)p->rl.ndst + 1, sizeof(int))))
		return mk_fail(c, MK_ERR_UNSUPPORTED, "RDMA stages this runtime cannot lay out");
	cg_rdma_layout(p->s, &p->rl, p->rdst, p->rl.ndst);
	if (p->nt > MKD_MAX_TENSORS)
		return mk_fail(c, MK_ERR_UNSUPPORTED, "%d tensors; a pipeline may have at most %d",
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
		mk_fail(c, MK_ERR_UNSUPPORTED, "cannot generate CUDA: %s", b.err);
		cg_build_free(&b);
		return MK_ERR_UNSUPPORTED;
	} else if (cs == CG_ENOMEM && !b.cuda) {
		cg_build_free(&b);
		return mk_fail(c, MK_ERR_NOMEM, "out of memory generating CUDA");
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
		return mk_fail(c, cs == CG_ENONVRTC ? MK_ERR_UNSUPPORTED : cs == CG_ENOMEM ? MK_ERR_NOMEM
				  : MK_ERR_NVRTC, "NVRTC: %s", cg_strerror(cs));
	}
	CUresult r = cu->cuModuleLoadData(&p->mod, b.bin.data);
	cg_build_free(&b);
	if (r != CUDA_SUCCESS)
		return mk_fail(c, MK_ERR_CUDA, "loading the module: %s", cudrv_errstr(r));
	char kname[160];
	cg_kernel_name(p->s, kname, sizeof kname);
	CU(c, cu->cuModuleGetFunction(&p->fn, p->mod, kname), "cuModuleGetFunction");
	/* the plan counts the dynamic shared memory; the kernel's own static
	 * variables (mkd's state) come on top, from the same budget */
	int fixed = 0;
	CU(c, cu->cuFuncGetAttribute(&fixed, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, p->fn),
	   "reading the kernel's static shared memory");
	if (c->smem_optin > 0 && (int64_t)fixed + p->s->smem > c->smem_optin)
		return mk_fail(c, MK_ERR_TOO_LARGE,
			       "the plan's %d bytes of shared memory and the kernel's %d static ones "
			       "exceed the %d a CTA may use", p->s->smem, fixed, c->smem_optin);
	CU(c, cu->cuFuncSetAttribute(p->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
				     p->s->smem), "setting the kernel's shared memory");
	if (mk_bench_per_stage) {
		p->stage_fn = calloc((size_t)p->p->nops, sizeof *p->stage_fn);
		if (!p->stage_fn)
			return mk_fail(c, MK_ERR_NOMEM, "out of memory");
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
	const int all = p->s->ctas * ranks * (p->comm ? rpg : 1);
	if (per_sm * c->sms < all)
		return mk_fail(c, MK_ERR_TOO_LARGE,
			     "%d CTAs cannot all be resident: %d per SM x %d SMs fit",
			     all, per_sm, c->sms);
	/* the schedule's clusters, for the code that uses them (sm_90a: the
	 * Hopper engine's paired tiles); they must all be resident too */
	p->cluster = p->s->cluster > 1 && !strcmp(arch, "sm_90a") ? p->s->cluster : 1;
	if (p->cluster > 1) {
		CUlaunchAttribute at[2];
		CUlaunchConfig cfg;
		mk_launch_config(p, 0, NULL, &cfg, at);
		int nc = 0;
		CU(c, cu->cuOccupancyMaxActiveClusters(&nc, p->fn, &cfg), "cuOccupancyMaxActiveClusters");
		if (nc * p->cluster < all)
			return mk_fail(c, MK_ERR_TOO_LARGE,
				     "%d CTAs in clusters of %d cannot all be resident: %d clusters fit "
				     "(MK_CLUSTER=1 runs them alone)", all, p->cluster, nc);
	}
	return mk_alloc_all(p, o ? o->trace : 0);
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
		return mk_fail(c, MK_ERR_STATE, "the context has no GPU (%s)",
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
		return mk_fail(c, MK_ERR_IO, "cannot read %s: %s", path, strerror(err));
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
		if (p->ev_done) {  /* the last run on a caller's stream */
			cu->cuEventSynchronize(p->ev_done);
			cu->cuEventDestroy(p->ev_done);
		}
		mk_staging_free(p);
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

/* ---- what a pipeline is -------------------------------------------------------- */

int mk_pipeline_ntensors(const mk_pipeline *p) { return p ? p->nt : 0; }
int mk_pipeline_ranks(const mk_pipeline *p) { return p ? p->ranks : 0; }
int mk_pipeline_first_rank(const mk_pipeline *p) { return p ? p->first : 0; }
const ir_prog *mk_pipeline_prog(const mk_pipeline *p) { return p ? p->p : NULL; }
const ir_sched *mk_pipeline_sched(const mk_pipeline *p) { return p ? p->s : NULL; }
const char *mk_pipeline_source(const mk_pipeline *p) { return p && p->cu_src ? p->cu_src : ""; }
const char *mk_pipeline_schedule(const mk_pipeline *p) { return p ? sb_str(&p->sched_txt) : ""; }
