/* fabric.c - the libfabric backend: RMA writes on an FI_EP_RDM endpoint.
 *
 * libfabric.so.1 is opened with dlopen (MK_LIBFABRIC names another file);
 * only its few exported functions are looked up, everything else in the
 * fi_*.h headers is inline calls through the objects' operation tables.
 *
 * Provider: opts->provider, else MK_FABRIC_PROVIDER, else `efa` when
 * fi_getinfo finds it, else `tcp` (RMA emulated over TCP; with FI_EP_RDM it
 * comes as "tcp;ofi_rxm").  FI_TCP_IFACE and the other FI_* variables work
 * as libfabric documents them.
 *
 * Memory: regions are registered with fi_mr_regattr, honouring the
 * provider's mr_mode (local descriptors, virtual or offset addressing,
 * provider or caller keys, binding to the endpoint).  GPU memory is
 * registered with iface FI_HMEM_CUDA when the provider has FI_HMEM;
 * otherwise the runtime uses host-pinned memory (transport_reg says so).
 *
 * Ordering: with FI_FENCE the flag is posted right behind its data with
 * FI_FENCE; otherwise the transport is unordered and the proxy posts the
 * flag once the data write has completed with FI_DELIVERY_COMPLETE.
 *
 * Progress: tcp has manual data progress, so the proxy thread polls the
 * completion queue all the time, including on ranks that only receive.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "base/dynlib.h"
#include "tp_core.h"

/* X(field, entry point, return, (params)) */
#define FAB_FUNCS(X)                                                                         \
	X(getinfo, "fi_getinfo", int, (uint32_t, const char *, const char *, uint64_t,       \
	  const struct fi_info *, struct fi_info **))                                        \
	X(freeinfo, "fi_freeinfo", void, (struct fi_info *))                                 \
	X(dupinfo, "fi_dupinfo", struct fi_info *, (const struct fi_info *))                 \
	X(fabric, "fi_fabric", int, (struct fi_fabric_attr *, struct fid_fabric **, void *)) \
	X(strerror, "fi_strerror", const char *, (int))                                      \
	X(version, "fi_version", uint32_t, (void))

typedef struct fab_lib {
	FAB_FUNCS(DYNLIB_FIELD)
} fab_lib;

typedef struct fab_ctx {
	struct fi_context2 fc;   /* first: the provider may use it (FI_CONTEXT) */
	uint64_t ctx;
	int next;
} fab_ctx;

typedef struct fab {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	fi_addr_t *peers;
	uint64_t mr_mode, next_key;
	int fence, hmem;
	size_t inject;
	fab_ctx *ctx;            /* a pool: one per write in flight */
	int nctx, free_ctx;
	unsigned char addr[TP_ADDR_MAX];
	size_t addrlen;
} fab;

static fab_lib lib;

static const char *const lib_syms[] = {FAB_FUNCS(DYNLIB_NAME) NULL};
DYNLIB_CHECK(lib, lib_syms);
static dynlib lib_dl = {.names = (const char *const[]){"libfabric.so.1", NULL},
			.env = "MK_LIBFABRIC", .syms = lib_syms, .table = &lib};

static const char *fstr(int e)
{
	return lib.strerror ? lib.strerror(e < 0 ? -e : e) : "?";
}

static fab *F(transport *t) { return t->be; }

static struct fi_info *query(const char *prov, int hmem, uint32_t version, int *ret)
{
	struct fi_info *hints = lib.dupinfo(NULL), *info = NULL;
	if (!hints) {
		*ret = -FI_ENOMEM;
		return NULL;
	}
	hints->caps = FI_RMA | FI_WRITE | FI_REMOTE_WRITE | FI_MSG | (hmem ? FI_HMEM : 0);
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->ep_attr->type = FI_EP_RDM;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY | FI_MR_ENDPOINT | (hmem ? FI_MR_HMEM : 0);
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	hints->fabric_attr->prov_name = strdup(prov);
	*ret = lib.getinfo(version, NULL, NULL, 0, hints, &info);
	lib.freeinfo(hints);
	return *ret ? NULL : info;
}

static mk_status fab_reg(transport *t, tp_region *r)
{
	fab *f = F(t);
	struct fid_mr *mr = NULL;
	struct iovec iov;
	struct fi_mr_attr a;
	int ret;

	memset(&a, 0, sizeof a);
	iov.iov_base = r->mem.addr;
	iov.iov_len = r->mem.len;
	a.mr_iov = &iov;
	a.iov_count = 1;
	a.access = FI_WRITE | FI_REMOTE_WRITE;
	a.requested_key = f->next_key++;
	a.iface = r->mem.kind == TP_MEM_CUDA ? FI_HMEM_CUDA : FI_HMEM_SYSTEM;
	if (r->mem.kind == TP_MEM_CUDA)
		a.device.cuda = r->mem.cuda_device;
	if ((ret = fi_mr_regattr(f->domain, &a, 0, &mr)) != 0) {
		tp_fail(t, "fi_mr_regattr of %zu bytes (%s memory): %s", r->mem.len,
			r->mem.kind == TP_MEM_CUDA ? "GPU" : "host", fstr(ret));
		return MK_ERR_IO;
	}
	if (f->mr_mode & FI_MR_ENDPOINT) {
		if ((ret = fi_mr_bind(mr, &f->ep->fid, 0)) != 0 || (ret = fi_mr_enable(mr)) != 0) {
			tp_fail(t, "fi_mr_bind/enable: %s", fstr(ret));
			fi_close(&mr->fid);
			return MK_ERR_IO;
		}
	}
	r->handle = mr;
	r->rkey = fi_mr_key(mr);
	r->desc = fi_mr_desc(mr);
	r->raddr = f->mr_mode & FI_MR_VIRT_ADDR ? (uint64_t)(uintptr_t)r->mem.addr : 0;
	return MK_OK;
}

static void fab_dereg(transport *t, tp_region *r)
{
	(void)t;
	if (r->handle)
		fi_close(&((struct fid_mr *)r->handle)->fid);
	r->handle = NULL;
}

static size_t fab_addr_size(transport *t)
{
	return 8 + F(t)->addrlen;
}

static mk_status fab_addr(transport *t, void *buf)
{
	fab *f = F(t);
	unsigned char *p = buf;
	uint64_t n = f->addrlen;
	memcpy(p, &n, 8);
	memcpy(p + 8, f->addr, f->addrlen);
	return MK_OK;
}

static mk_status fab_connect(transport *t, const unsigned char *addrs, size_t size)
{
	fab *f = F(t);
	int ret;
	if (!(f->peers = calloc((size_t)t->world, sizeof *f->peers))) {
		tp_fail(t, "out of memory");
		return MK_ERR_NOMEM;
	}
	for (int r = 0; r < t->world; r++) {
		const unsigned char *p = addrs + (size_t)r * size;
		uint64_t n;
		memcpy(&n, p, 8);
		if (n != f->addrlen) {
			tp_fail(t, "rank %d's libfabric address has %llu bytes, ours %zu", r,
				(unsigned long long)n, f->addrlen);
			return MK_ERR_STATE;
		}
		ret = fi_av_insert(f->av, p + 8, 1, &f->peers[r], 0, NULL);
		if (ret != 1) {
			tp_fail(t, "fi_av_insert of rank %d's address: %s", r,
				ret < 0 ? fstr(ret) : "not inserted");
			return MK_ERR_IO;
		}
	}
	return MK_OK;
}

static int fab_post(transport *t, const tp_op *op, int n)
{
	fab *f = F(t);
	int i;
	for (i = 0; i < n; i++) {
		struct iovec iov;
		struct fi_rma_iov rma;
		struct fi_msg_rma msg;
		void *desc = op[i].desc;
		uint64_t flags = FI_COMPLETION;
		fab_ctx *c;
		ssize_t ret;

		if (f->free_ctx < 0)
			return i;   /* every context in flight: poll first */
		c = &f->ctx[f->free_ctx];
		iov.iov_base = op[i].local;
		iov.iov_len = op[i].len;
		rma.addr = op[i].raddr;
		rma.len = op[i].len;
		rma.key = op[i].rkey;
		memset(&msg, 0, sizeof msg);
		msg.msg_iov = &iov;
		msg.desc = &desc;
		msg.iov_count = 1;
		msg.addr = f->peers[op[i].peer];
		msg.rma_iov = &rma;
		msg.rma_iov_count = 1;
		msg.context = c;
		if ((op[i].flags & TP_FENCE) && f->fence)
			flags |= FI_FENCE;
		if (op[i].flags & TP_DELIVERY)
			flags |= FI_DELIVERY_COMPLETE;
		if ((op[i].flags & TP_INLINE) && op[i].len <= f->inject)
			flags |= FI_INJECT;
		ret = fi_writemsg(f->ep, &msg, flags);
		if (ret == -FI_EAGAIN)
			return i;
		if (ret) {
			tp_fail(t, "fi_writemsg of %llu bytes to rank %d: %s",
				(unsigned long long)op[i].len, op[i].peer, fstr((int)ret));
			return TP_ERROR;
		}
		c->ctx = op[i].ctx;
		f->free_ctx = c->next;
		c->next = -2;   /* in flight */
	}
	return i;
}

static int fab_poll(transport *t, tp_completion *out, int max)
{
	fab *f = F(t);
	struct fi_cq_entry e[32];
	ssize_t k;
	int n = 0;

	if (max > 32)
		max = 32;
	k = fi_cq_read(f->cq, e, (size_t)max);
	if (k > 0) {
		for (ssize_t i = 0; i < k; i++) {
			fab_ctx *c = e[i].op_context;
			out[n].ctx = c->ctx;
			out[n++].ok = 1;
			c->next = f->free_ctx;
			f->free_ctx = (int)(c - f->ctx);
		}
		return n;
	}
	if (k == -FI_EAGAIN)
		return 0;
	if (k == -FI_EAVAIL) {
		struct fi_cq_err_entry ee;
		char buf[256];
		const char *pe;
		memset(&ee, 0, sizeof ee);
		if (fi_cq_readerr(f->cq, &ee, 0) != 1) {
			tp_fail(t, "fi_cq_readerr failed");
			return TP_ERROR;
		}
		pe = fi_cq_strerror(f->cq, ee.prov_errno, ee.err_data, buf, sizeof buf);
		tp_fail(t, "write failed: %s (provider: %s)", fstr(ee.err), pe ? pe : "?");
		if (!ee.op_context)
			return TP_ERROR;
		{
			fab_ctx *c = ee.op_context;
			out[0].ctx = c->ctx;
			out[0].ok = 0;
			c->next = f->free_ctx;
			f->free_ctx = (int)(c - f->ctx);
		}
		return 1;
	}
	tp_fail(t, "fi_cq_read: %s", fstr((int)k));
	return TP_ERROR;
}

static void fab_close(transport *t)
{
	fab *f = F(t);
	if (!f)
		return;
	if (f->ep)
		fi_close(&f->ep->fid);
	if (f->av)
		fi_close(&f->av->fid);
	if (f->cq)
		fi_close(&f->cq->fid);
	if (f->domain)
		fi_close(&f->domain->fid);
	if (f->fabric)
		fi_close(&f->fabric->fid);
	if (f->info)
		lib.freeinfo(f->info);
	free(f->peers);
	free(f->ctx);
	free(f);
	t->be = NULL;
}

static const tp_ops fab_ops = {
	"fabric", fab_reg, fab_dereg, fab_addr_size, fab_addr, fab_connect,
	fab_post, fab_poll, fab_close,
};

mk_status tp_fabric_open(transport *t, const transport_opts *o, char *why, size_t n)
{
	const char *prov = o->provider ? o->provider : getenv("MK_FABRIC_PROVIDER");
	uint32_t v;
	struct fi_info *info = NULL;
	struct fi_cq_attr cqa;
	struct fi_av_attr ava;
	fab *f;
	int ret = 0, tried_efa = 0;

	if (!dynlib_need(&lib_dl, "libfabric", why, n))
		return MK_ERR_UNSUPPORTED;
	v = lib.version();
	if (FI_VERSION_LT(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), v))
		v = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);
	if (prov && *prov) {
		if (!(info = query(prov, 1, v, &ret)))
			info = query(prov, 0, v, &ret);
	} else {
		tried_efa = 1;
		if (!(info = query("efa", 1, v, &ret)) && !(info = query("efa", 0, v, &ret))) {
			prov = "tcp";
			if (!(info = query(prov, 1, v, &ret)))
				info = query(prov, 0, v, &ret);
		}
	}
	if (!info) {
		snprintf(why, n, "libfabric %u.%u has no usable provider '%s'%s with RMA on "
			 "reliable datagram endpoints (fi_getinfo: %s)", FI_MAJOR(lib.version()),
			 FI_MINOR(lib.version()), prov ? prov : "?", tried_efa ? " (nor efa)" : "",
			 fstr(ret));
		return MK_ERR_UNSUPPORTED;
	}
	if (!(f = calloc(1, sizeof *f))) {
		lib.freeinfo(info);
		snprintf(why, n, "out of memory");
		return MK_ERR_NOMEM;
	}
	t->be = f;
	t->ops = &fab_ops;
	f->info = info;
	f->mr_mode = info->domain_attr->mr_mode;
	f->fence = (info->caps & FI_FENCE) != 0;
	f->hmem = (info->caps & FI_HMEM) != 0;
	f->inject = info->tx_attr->inject_size;
	f->next_key = 1;
	f->nctx = info->tx_attr->size ? (int)info->tx_attr->size : 256;
	if (f->nctx > 4096)
		f->nctx = 4096;
	if (!(f->ctx = calloc((size_t)f->nctx, sizeof *f->ctx))) {
		snprintf(why, n, "out of memory");
		goto fail;
	}
	for (int i = 0; i < f->nctx; i++)
		f->ctx[i].next = i + 1 < f->nctx ? i + 1 : -1;
	f->free_ctx = 0;
	if ((ret = lib.fabric(info->fabric_attr, &f->fabric, NULL)) ||
	    (ret = fi_domain(f->fabric, info, &f->domain, NULL))) {
		snprintf(why, n, "fi_fabric/fi_domain (%s): %s", info->fabric_attr->prov_name,
			 fstr(ret));
		goto fail;
	}
	memset(&cqa, 0, sizeof cqa);
	cqa.format = FI_CQ_FORMAT_CONTEXT;
	cqa.size = (size_t)f->nctx * 2;
	cqa.wait_obj = FI_WAIT_NONE;
	memset(&ava, 0, sizeof ava);
	ava.type = info->domain_attr->av_type != FI_AV_UNSPEC ? info->domain_attr->av_type
							     : FI_AV_TABLE;
	ava.count = (size_t)t->world;
	if ((ret = fi_cq_open(f->domain, &cqa, &f->cq, NULL)) ||
	    (ret = fi_av_open(f->domain, &ava, &f->av, NULL)) ||
	    (ret = fi_endpoint(f->domain, info, &f->ep, NULL)) ||
	    (ret = fi_ep_bind(f->ep, &f->av->fid, 0)) ||
	    (ret = fi_ep_bind(f->ep, &f->cq->fid, FI_TRANSMIT | FI_RECV)) ||
	    (ret = fi_enable(f->ep))) {
		snprintf(why, n, "setting up the %s endpoint: %s", info->fabric_attr->prov_name,
			 fstr(ret));
		goto fail;
	}
	f->addrlen = sizeof f->addr;
	if ((ret = fi_getname(&f->ep->fid, f->addr, &f->addrlen)) != 0) {
		snprintf(why, n, "fi_getname: %s", fstr(ret));
		goto fail;
	}
	t->ordered = f->fence;
	t->device_memory = f->hmem;
	t->lanes = 1;
	t->max_msg = info->ep_attr->max_msg_size;
	if (t->max_msg > (1ull << 30) || !t->max_msg)
		t->max_msg = 1ull << 30;
	snprintf(t->desc, sizeof t->desc, "libfabric %u.%u %s on %s%s%s",
		 FI_MAJOR(lib.version()), FI_MINOR(lib.version()), info->fabric_attr->prov_name,
		 info->domain_attr->name ? info->domain_attr->name : "?",
		 f->fence ? ", fenced" : ", flag after delivery", f->hmem ? ", GPU memory" : "");
	return MK_OK;
fail:
	fab_close(t);
	t->ops = NULL;
	return MK_ERR_IO;
}
