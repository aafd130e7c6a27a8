/* mk_mem.c - libmk's memory: every rank's tensors and flags (device
 * memory with virtual ranks; exported and mapped peer memory with one
 * process per rank; host windows for RDMA), the rank table the kernel reads,
 * and tensors in and out (write, read, bind, device pointers).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mk_lib.h"
#include "tmap.h"

/* The rank table (world entries) and the tensor maps (ranks x ntm, 128
 * bytes each) as the kernel reads them, into host memory: tab, then maps. */
static size_t table_bytes(const mk_pipeline *p)
{
	return (size_t)p->world * sizeof(mkd_rank_entry);
}

static size_t tmaps_bytes(const mk_pipeline *p)
{
	return (size_t)p->ranks * p->ntm * 128;
}

static mk_status table_fill(mk_pipeline *p, mkd_rank_entry *t, unsigned char *h)
{
	memset(t, 0, table_bytes(p));
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
	/* the Hopper engine's tensor maps point at the buffers too */
	if (p->ntm <= 0)
		return MK_OK;
	cg_tmap *tm = calloc((size_t)p->ntm, sizeof *tm);
	if (!tm)
		return MK_ERR_NOMEM;
	cg_tmaps(p->s, tm, p->ntm);
	char err[256];
	for (int r = 0; r < p->ranks; r++)
		for (int k = 0; k < p->ntm; k++) {
			const ir_tensor *x = &p->p->tensors[tm[k].tensor];
			const int es = ir_dtype_size(x->dtype);
			if (mk_tmap_encode(p->c->cu, h + ((size_t)r * p->ntm + k) * 128,
					   p->buf[r * p->nt + tm[k].root] + (CUdeviceptr)(tm[k].off * es),
					   es, tm[k].rows, tm[k].cols, tm[k].ld, tm[k].box_rows,
					   tm[k].box_cols, err, sizeof err) != 0) {
				free(tm);
				return mk_fail(p->c, MK_ERR_CUDA, "tensor map of '%s': %s", x->name, err);
			}
		}
	free(tm);
	return MK_OK;
}

/* Host staging of the table and maps: the table first, the maps at the next
 * 128 bytes (tensor maps want 64-byte alignment). */
static size_t staging_bytes(const mk_pipeline *p)
{
	return (table_bytes(p) + 127) / 128 * 128 + tmaps_bytes(p);
}

static unsigned char *staging_maps(const mk_pipeline *p, void *h)
{
	return (unsigned char *)h + (table_bytes(p) + 127) / 128 * 128;
}

mk_status mk_upload_table(mk_pipeline *p)
{
	const cudrv *cu = p->c->cu;
	void *h = aligned_alloc(128, staging_bytes(p));
	if (!h)
		return MK_ERR_NOMEM;
	mk_status st = table_fill(p, h, staging_maps(p, h));
	if (st != MK_OK) {
		free(h);
		return st;
	}
	CUresult rr = cu->cuMemcpyHtoD(p->table, h, table_bytes(p));
	if (rr == CUDA_SUCCESS && p->ntm > 0)
		rr = cu->cuMemcpyHtoD(p->tmaps, staging_maps(p, h), tmaps_bytes(p));
	free(h);
	if (rr != CUDA_SUCCESS)
		return mk_cufail(p, MK_ERR_CUDA, "uploading the rank table", rr);
	p->table_dirty = 0;
	return MK_OK;
}

/* Pinned host memory outside any stream capture: allocating is not a
 * stream operation, but a capturing thread may not make such calls in the
 * strict capture modes. */
static CUresult host_alloc(const cudrv *cu, void **h, size_t n)
{
	CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
	CUresult r = cu->cuThreadExchangeStreamCaptureMode(&m);
	if (r != CUDA_SUCCESS)
		return r;
	r = cu->cuMemHostAlloc(h, n, CU_MEMHOSTALLOC_PORTABLE);
	cu->cuThreadExchangeStreamCaptureMode(&m);
	return r;
}

mk_status mk_upload_table_on(mk_pipeline *p, CUstream s, int capturing)
{
	const cudrv *cu = p->c->cu;
	void *h;
	if (capturing) {
		/* the graph copies from this buffer on every replay: it is the
		 * graph's, kept until the pipeline goes */
		void **more = realloc(p->cap_host, (size_t)(p->ncap + 1) * sizeof *more);
		if (!more)
			return MK_ERR_NOMEM;
		p->cap_host = more;
		PCU(p, host_alloc(cu, &h, staging_bytes(p)), "allocating a captured rank table");
		p->cap_host[p->ncap++] = h;
	} else {
		/* a ring of staging buffers: slot i is free again once the copy
		 * that last read it (MK_STAGING runs ago) has run */
		int i = p->staging_next;
		p->staging_next = (i + 1) % MK_STAGING;
		if (!p->staging[i]) {
			PCU(p, host_alloc(cu, &p->staging[i], staging_bytes(p)), "allocating a rank table");
			PCU(p, cu->cuEventCreate(&p->staging_ev[i], CU_EVENT_DISABLE_TIMING),
			    "cuEventCreate");
		} else {
			PCU(p, cu->cuEventSynchronize(p->staging_ev[i]), "waiting for an older rank table");
		}
		h = p->staging[i];
	}
	mk_status st = table_fill(p, h, staging_maps(p, h));
	if (st != MK_OK)
		return st;
	PCU(p, cu->cuMemcpyHtoDAsync(p->table, h, table_bytes(p), s), "copying the rank table");
	if (p->ntm > 0)
		PCU(p, cu->cuMemcpyHtoDAsync(p->tmaps, staging_maps(p, h), tmaps_bytes(p), s),
		    "copying the tensor maps");
	if (!capturing)
		PCU(p, cu->cuEventRecord(p->staging_ev[(p->staging_next + MK_STAGING - 1) % MK_STAGING], s),
		    "cuEventRecord");
	p->table_dirty = 0;
	return MK_OK;
}

void mk_staging_free(mk_pipeline *p)
{
	const cudrv *cu = p->c->cu;
	for (int i = 0; i < MK_STAGING; i++) {
		if (p->staging_ev[i])
			cu->cuEventSynchronize(p->staging_ev[i]);
		if (p->staging_ev[i])
			cu->cuEventDestroy(p->staging_ev[i]);
		if (p->staging[i])
			cu->cuMemFreeHost(p->staging[i]);
	}
	for (int i = 0; i < p->ncap; i++)
		cu->cuMemFreeHost(p->cap_host[i]);
	free(p->cap_host);
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

/* Device memory of tensor i per rank: none for one the expansion removed
 * or a view (its elements lie in its root's, compiler/plan_view.c). */
static size_t tensor_storage(const mk_pipeline *p, int i)
{
	const ir_tensor *t = &p->p->tensors[i];
	return t->folded || t->view ? 0 : (size_t)ir_tensor_bytes(t);
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
		return mk_fail(p->c, st, "%s", err);
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
			mk_fail(p->c, st, "sharing memory with the node's ranks: %s", p->comm->err);
		for (int k = 0; k < p->npeers * n && st == MK_OK; k++) {
			st = in_host_window(p, k % n)
			     ? hostwin_import(cu, pf[k], ps[k], &p->peer_vmm[k], err, sizeof err)
			     : vmm_import(cu, p->c->dev, pf[k], ps[k], &p->peer_vmm[k], err, sizeof err);
			if (st != MK_OK)
				mk_fail(p->c, st, "mapping rank %d's memory: %s", p->peer[k / n], err);
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
			return mk_fail(p->c, st, "RDMA between nodes: %s", err);
	}
	st = rdma_start(p->rd, p->c->cu, p->c->dev, p->timeout_ms, &p->ring, err, sizeof err);
	sb_printf(&p->c->log, "mk: %s\n", err);
	if (st != MK_OK)
		return mk_fail(p->c, st, "RDMA between nodes: %s", err);
	p->rd_live = 1;
	return MK_OK;
}

mk_status mk_alloc_all(mk_pipeline *p, int trace)
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
				return mk_fail(p->c, st, "RDMA between nodes: %s", strrchr(log, '\n') ?
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
	if ((st = mk_upload_table(p)) != MK_OK)
		return st;
	/* every rank of the node has mapped everyone's memory before any runs */
	if (p->comm && (st = mk_comm_barrier(p->comm)) != MK_OK)
		return mk_fail(p->c, st, "%s", p->comm->err);
	return MK_OK;
}

/* ---- tensors ------------------------------------------------------------------ */

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
	out->stored = !t->folded && !t->view;
	return MK_OK;
}

/* The tensor index of name, held here for rank; the message says why not. */
static mk_status lookup(const mk_pipeline *p, const char *name, int rank, int *ti)
{
	if (!p || !name)
		return MK_ERR_INVALID;
	*ti = ir_find_tensor(p->p, name);
	if (*ti < 0)
		return mk_fail(p->c, MK_ERR_NOT_FOUND, "no tensor named '%s'", name);
	if (rank < p->first || rank >= p->first + p->ranks)
		return mk_fail(p->c, MK_ERR_NOT_FOUND, "rank %d is not held here (%d..%d)", rank,
			     p->first, p->first + p->ranks - 1);
	if (p->p->tensors[*ti].folded)
		/* the expansion folds a tensor for more than one reason (expand.c):
		 * the end of an identity collective, a temporary fused away */
		return mk_fail(p->c, MK_ERR_NOT_FOUND, "tensor '%s' has no storage: mkc's expansion "
			     "removed it (a temporary fused into the op that writes its consumer, "
			     "or the end of a collective that is the identity in a world of one "
			     "rank); `mkc --emit=expand` lists it as folded", name);
	if (p->p->tensors[*ti].view)
		return mk_fail(p->c, MK_ERR_NOT_FOUND, "tensor '%s' has no storage: it is a view of "
			     "'%s' (a layout op the plan makes no copy of; `mkc --emit=plan` lists "
			     "it; MK_NO_VIEWS=1 makes every layout op a copy)", name,
			     p->p->tensors[p->p->tensors[*ti].root].name);
	return MK_OK;
}

static mk_status check_size(mk_pipeline *p, int ti, size_t bytes)
{
	size_t want = (size_t)ir_tensor_bytes(&p->p->tensors[ti]);
	if (bytes != want)
		return mk_fail(p->c, MK_ERR_SIZE, "tensor '%s' holds %zu bytes per rank, not %zu",
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

/* The fp32 copies' common part: tensor NAME of rank RANK holds COUNT
 * elements, and a staging buffer of its bytes in its own dtype. */
static mk_status f32_staging(mk_pipeline *p, const char *name, int rank, size_t count,
			     const ir_tensor **tp, void **tmp, size_t *bytes)
{
	int ti;
	mk_status st = lookup(p, name, rank, &ti);
	if (st != MK_OK)
		return st;
	const ir_tensor *t = &p->p->tensors[ti];
	if ((int64_t)count != ir_tensor_elems(t))
		return mk_fail(p->c, MK_ERR_SIZE, "tensor '%s' holds %lld elements per rank, not %zu",
			     t->name, (long long)ir_tensor_elems(t), count);
	*bytes = (size_t)ir_tensor_bytes(t);
	*tmp = malloc(*bytes ? *bytes : 1);
	if (!*tmp)
		return MK_ERR_NOMEM;
	*tp = t;
	return MK_OK;
}

mk_status mk_tensor_write_f32(mk_pipeline *p, const char *name, int rank, const float *src,
			      size_t count)
{
	if (!src)
		return MK_ERR_INVALID;
	const ir_tensor *t;
	void *tmp;
	size_t bytes;
	mk_status st = f32_staging(p, name, rank, count, &t, &tmp, &bytes);
	if (st != MK_OK)
		return st;
	mk_convert_from_f32(t->dtype, src, tmp, count);
	st = mk_tensor_write(p, name, rank, tmp, bytes);
	free(tmp);
	return st;
}

mk_status mk_tensor_read_f32(mk_pipeline *p, const char *name, int rank, float *dst, size_t count)
{
	if (!dst)
		return MK_ERR_INVALID;
	const ir_tensor *t;
	void *tmp;
	size_t bytes;
	mk_status st = f32_staging(p, name, rank, count, &t, &tmp, &bytes);
	if (st != MK_OK)
		return st;
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
		return mk_fail(p->c, MK_ERR_INVALID, "device pointer for '%s' must be non-null and "
			     "16-byte aligned", name);
	if (p->resident)
		return mk_fail(p->c, MK_ERR_STATE, "cannot rebind while the kernel is resident");
	int k = (rank - p->first) * p->nt + ti;
	if (p->host)
		return mk_fail(p->c, MK_ERR_UNSUPPORTED, "a CPU context has no device memory to bind");
	if (p->comm)
		return mk_fail(p->c, MK_ERR_UNSUPPORTED,
			     "binding caller memory is for virtual ranks; peers map the runtime's own");
	if (p->buf[k] == devptr)  /* bound already: nothing to copy on the next run */
		return MK_OK;
	if (p->owned[k])
		p->c->cu->cuMemFree(p->buf[k]);
	p->buf[k] = devptr;
	p->owned[k] = 0;
	p->table_dirty = 1;
	return MK_OK;
}

mk_status mk_tensor_unbind(mk_pipeline *p, const char *name, int rank)
{
	int ti;
	mk_status st = lookup(p, name, rank, &ti);
	if (st != MK_OK)
		return st;
	if (p->host)
		return mk_fail(p->c, MK_ERR_UNSUPPORTED, "a CPU context has no device memory to unbind");
	if (p->resident)
		return mk_fail(p->c, MK_ERR_STATE, "cannot unbind while the kernel is resident");
	int k = (rank - p->first) * p->nt + ti;
	if (p->owned[k])  /* the runtime's own memory: nothing bound */
		return MK_OK;
	CUdeviceptr d;
	size_t bytes = (size_t)ir_tensor_bytes(&p->p->tensors[ti]);
	PCU(p, p->c->cu->cuMemAlloc(&d, bytes ? bytes : 16), "allocating a tensor");
	p->buf[k] = d;
	p->owned[k] = 1;
	p->table_dirty = 1;
	return MK_OK;
}

mk_status mk_tensor_devptr(const mk_pipeline *p, const char *name, int rank,
			   unsigned long long *devptr)
{
	int ti;
	if (!devptr)
		return p ? mk_fail(p->c, MK_ERR_INVALID, "mk_tensor_devptr: no place for the pointer")
			 : MK_ERR_INVALID;
	mk_status st = lookup(p, name, rank, &ti);
	if (st != MK_OK)
		return st;
	if (p->host)
		return mk_fail(p->c, MK_ERR_UNSUPPORTED, "a CPU context keeps '%s' in host memory: "
			     "it has no device pointer (use mk_tensor_read / mk_tensor_write)", name);
	*devptr = p->buf[(rank - p->first) * p->nt + ti];
	return MK_OK;
}
