/* verbs.c - the rdma-core backend: RDMA WRITE on reliable-connected QPs.
 *
 * libibverbs.so.1 is opened with dlopen (MK_LIBIBVERBS names another file).
 * The data path (ibv_post_send, ibv_poll_cq) is inline in verbs.h and goes
 * through the context's operation table; everything else is looked up.
 *
 * Device: opts->ib_device or MK_IB_DEVICE ("mlx5_0" or "mlx5_0:1"), else the
 * first device with an InfiniBand-transport port in the ACTIVE state (EFA
 * and iWARP devices are skipped: EFA has no RC QPs; it goes through
 * libfabric's efa provider).
 *
 * Connections: for every peer (this rank too: a QP may be connected to
 * itself) `lanes` RC QPs (MK_IB_QPS, default 2), all sharing one CQ.  QP
 * numbers, PSNs, LID/GID and MTU travel through the bootstrap; each QP then
 * goes RESET -> INIT -> RTR -> RTS with exactly the attributes
 * ibv_modify_qp(3) lists for RC.  RoCE ports use a GRH with a RoCE v2 GID
 * (MK_IB_GID_INDEX to choose another).
 *
 * Writes: IBV_WR_RDMA_WRITE, every one signaled; the flag is a small
 * IBV_SEND_INLINE write posted after its data on the same QP, which RC
 * executes in order, so the backend is `ordered` (TP_FENCE needs nothing).
 * Memory is registered without IBV_ACCESS_RELAXED_ORDERING, which would
 * allow the NIC to reorder the PCIe writes of data and flag.
 *
 * GPU memory: ibv_reg_dmabuf_mr with the dma-buf of the range (given by the
 * caller, else taken with cuMemGetHandleForAddressRange), falling back to
 * ibv_reg_mr of the device pointer (nvidia-peermem).
 *
 * Errors: a failed call, a QP that cannot change state, a completion with an
 * error status (after which the QP is in the error state and flushes the
 * rest) all become a status and a message naming the peer and the QP.
 *
 * This file has not run on hardware here (no RDMA device, no soft-RoCE);
 * see docs/rdma.md.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "base/dynlib.h"
#include "cudrv.h"
#include "tp_core.h"

/* X(field, entry point ("?": optional), return, (params)) */
#define VERBS_FUNCS(X)                                                                            \
	X(get_device_list, "ibv_get_device_list", struct ibv_device **, (int *))                  \
	X(free_device_list, "ibv_free_device_list", void, (struct ibv_device **))                 \
	X(get_device_name, "ibv_get_device_name", const char *, (struct ibv_device *))            \
	X(open_device, "ibv_open_device", struct ibv_context *, (struct ibv_device *))            \
	X(close_device, "ibv_close_device", int, (struct ibv_context *))                          \
	X(query_device, "ibv_query_device", int,                                                  \
	  (struct ibv_context *, struct ibv_device_attr *))                                       \
	X(query_port, "ibv_query_port", int,                                                      \
	  (struct ibv_context *, uint8_t, struct _compat_ibv_port_attr *))                        \
	X(query_gid, "ibv_query_gid", int, (struct ibv_context *, uint8_t, int, union ibv_gid *)) \
	/* rdma-core >= 32 */                                                                     \
	X(query_gid_ex, "?_ibv_query_gid_ex", int, (struct ibv_context *, uint32_t,               \
	  uint32_t, struct ibv_gid_entry *, uint32_t, size_t))                                    \
	X(alloc_pd, "ibv_alloc_pd", struct ibv_pd *, (struct ibv_context *))                      \
	X(dealloc_pd, "ibv_dealloc_pd", int, (struct ibv_pd *))                                   \
	X(reg_mr, "ibv_reg_mr", struct ibv_mr *, (struct ibv_pd *, void *, size_t, int))          \
	/* rdma-core >= 34 */                                                                     \
	X(reg_dmabuf_mr, "?ibv_reg_dmabuf_mr", struct ibv_mr *,                                   \
	  (struct ibv_pd *, uint64_t, size_t, uint64_t, int, int))                                \
	X(dereg_mr, "ibv_dereg_mr", int, (struct ibv_mr *))                                       \
	X(create_cq, "ibv_create_cq", struct ibv_cq *,                                            \
	  (struct ibv_context *, int, void *, struct ibv_comp_channel *, int))                    \
	X(destroy_cq, "ibv_destroy_cq", int, (struct ibv_cq *))                                   \
	X(create_qp, "ibv_create_qp", struct ibv_qp *,                                            \
	  (struct ibv_pd *, struct ibv_qp_init_attr *))                                           \
	X(modify_qp, "ibv_modify_qp", int, (struct ibv_qp *, struct ibv_qp_attr *, int))          \
	X(destroy_qp, "ibv_destroy_qp", int, (struct ibv_qp *))                                   \
	X(wc_status_str, "ibv_wc_status_str", const char *, (enum ibv_wc_status))

typedef struct verbs_lib {
	VERBS_FUNCS(DYNLIB_FIELD)
} verbs_lib;

typedef struct vctx {
	uint64_t ctx;
	int qp;                  /* index into qps */
	int next;
} vctx;

typedef struct verbs {
	struct ibv_context *dev;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp **qps;     /* [world * lanes], peer-major */
	int *inflight;           /* per QP */
	int sq_depth, cqe;
	uint8_t port, link_layer, mtu;
	int gid_index;
	uint16_t lid;
	union ibv_gid gid;
	uint32_t max_inline;
	char name[64];
	vctx *ctx;
	int nctx, free_ctx;
} verbs;

static verbs_lib lib;

static const char *const lib_syms[] = {VERBS_FUNCS(DYNLIB_NAME) NULL};
DYNLIB_CHECK(lib, lib_syms);
static dynlib lib_dl = {.names = (const char *const[]){"libibverbs.so.1", NULL},
			.env = "MK_LIBIBVERBS", .syms = lib_syms, .table = &lib};

/* ibv_query_port as verbs.h's inline wrapper does it, with our pointer. */
static int query_port(struct ibv_context *c, uint8_t port, struct ibv_port_attr *a)
{
	struct verbs_context *vc = verbs_get_ctx_op(c, query_port);
	if (vc)
		return vc->query_port(c, port, a, sizeof *a);
	memset(a, 0, sizeof *a);
	return lib.query_port(c, port, (struct _compat_ibv_port_attr *)a);
}

static verbs *V(transport *t) { return t->be; }

/* "mlx5_0" or "mlx5_0:2" */
static void parse_dev(const char *s, char *name, size_t n, int *port)
{
	const char *colon = s ? strchr(s, ':') : NULL;
	*port = 0;
	name[0] = 0;
	if (!s)
		return;
	snprintf(name, n, "%.*s", (int)(colon ? (size_t)(colon - s) : strlen(s)), s);
	if (colon)
		*port = atoi(colon + 1);
}

/* Finds a device and an active port.  Returns the open context or NULL. */
static struct ibv_context *find_device(const transport_opts *o, char *name, size_t nn,
				       uint8_t *port_out, char *why, size_t n)
{
	const char *want = o->ib_device ? o->ib_device : getenv("MK_IB_DEVICE");
	char wname[64];
	int wport, ndev = 0, skipped = 0;
	struct ibv_device **list;
	struct ibv_context *found = NULL;

	if (!dynlib_need(&lib_dl, "libibverbs", why, n))
		return NULL;
	parse_dev(want && *want ? want : NULL, wname, sizeof wname, &wport);
	if (o->ib_port > 0)
		wport = o->ib_port;
	errno = 0;
	list = lib.get_device_list(&ndev);
	if (!list) {
		int e = errno;
		snprintf(why, n, "no RDMA device (%sibv_get_device_list: %s)",
			 e == ENOSYS ? "this kernel has no RDMA support loaded; " : "",
			 e ? strerror(e) : "no list");
		return NULL;
	}
	for (int i = 0; i < ndev && !found; i++) {
		const char *dn = lib.get_device_name(list[i]);
		struct ibv_context *c;
		struct ibv_device_attr da;
		if (wname[0] && strcmp(dn, wname))
			continue;
		if (list[i]->transport_type != IBV_TRANSPORT_IB || !strncmp(dn, "efa", 3)) {
			skipped++;   /* iWARP, EFA, ...: no RC QPs over verbs here */
			continue;
		}
		if (!(c = lib.open_device(list[i])))
			continue;
		if (lib.query_device(c, &da) == 0) {
			for (int p = 1; p <= da.phys_port_cnt && !found; p++) {
				struct ibv_port_attr pa;
				if (wport && p != wport)
					continue;
				if (query_port(c, (uint8_t)p, &pa) == 0 && pa.state == IBV_PORT_ACTIVE) {
					found = c;
					*port_out = (uint8_t)p;
					snprintf(name, nn, "%s", dn);
				}
			}
		}
		if (!found)
			lib.close_device(c);
	}
	lib.free_device_list(list);
	if (!found) {
		if (wname[0])
			snprintf(why, n, "no RDMA device %s with an active port%s", want,
				 skipped ? " that supports RC QPs" : "");
		else if (!ndev)
			snprintf(why, n, "no RDMA device (libibverbs found none)");
		else
			snprintf(why, n, "no RDMA device with an active InfiniBand/RoCE port "
				 "(%d device%s, %d without RC)", ndev, ndev > 1 ? "s" : "", skipped);
	}
	return found;
}

int tp_verbs_probe(const transport_opts *o, char *why, size_t n)
{
	char name[64];
	uint8_t port;
	struct ibv_context *c = find_device(o, name, sizeof name, &port, why, n);
	if (!c)
		return 0;
	lib.close_device(c);
	return 1;
}

/* ---- memory ----------------------------------------------------------------- */
static mk_status vb_reg(transport *t, tp_region *r)
{
	verbs *v = V(t);
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	struct ibv_mr *mr = NULL;
	int e = 0;

	if (r->mem.kind == TP_MEM_CUDA && lib.reg_dmabuf_mr) {
		int fd = r->mem.dmabuf_fd, own = 0;
		uint64_t off = r->mem.dmabuf_offset;
		if (fd < 0) {
			/* the dma-buf of the pages around the range */
			const cudrv *cu;
			char cwhy[256];
			long pg = sysconf(_SC_PAGESIZE);
			uint64_t a = (uint64_t)(uintptr_t)r->mem.addr, base = a & ~(uint64_t)(pg - 1);
			uint64_t len = (a - base + r->mem.len + (uint64_t)pg - 1) & ~(uint64_t)(pg - 1);
			if (cudrv_get(&cu, cwhy, sizeof cwhy) == CUDRV_OK &&
			    cu->cuMemGetHandleForAddressRange(&fd, (CUdeviceptr)base, len,
							      CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
							      0) == CUDA_SUCCESS) {
				own = 1;
				off = a - base;
			} else {
				fd = -1;
			}
		}
		if (fd >= 0) {
			mr = lib.reg_dmabuf_mr(v->pd, off, r->mem.len, (uint64_t)(uintptr_t)r->mem.addr,
					       fd, access);
			e = errno;
			if (own)
				close(fd);   /* the MR keeps its own reference */
		}
	}
	if (!mr) {
		mr = lib.reg_mr(v->pd, r->mem.addr, r->mem.len, access);
		if (!mr) {
			tp_fail(t, "ibv_reg_mr of %zu bytes of %s memory failed: %s%s%s", r->mem.len,
				r->mem.kind == TP_MEM_CUDA ? "GPU" : "host", strerror(errno),
				e ? "; before it, ibv_reg_dmabuf_mr: " : "", e ? strerror(e) : "");
			return MK_ERR_IO;
		}
	}
	r->handle = mr;
	r->lkey = mr->lkey;
	r->rkey = mr->rkey;
	r->raddr = (uint64_t)(uintptr_t)r->mem.addr;
	return MK_OK;
}

static void vb_dereg(transport *t, tp_region *r)
{
	(void)t;
	if (r->handle)
		lib.dereg_mr(r->handle);
	r->handle = NULL;
}

/* ---- connecting --------------------------------------------------------------
 * Per rank: u16 lid, u8 port, u8 link layer, u8 mtu, u8 pad[3], gid[16], then
 * for every peer and lane {u32 qpn, u32 psn}. */
#define VB_HDR 24

static size_t vb_addr_size(transport *t)
{
	return VB_HDR + (size_t)t->world * (size_t)t->lanes * 8;
}

static uint32_t psn_of(int rank, int peer, int lane)
{
	return ((uint32_t)rank * 2654435761u ^ (uint32_t)peer * 40503u ^ (uint32_t)lane * 97u) &
	       0xffffffu;
}

static mk_status vb_addr(transport *t, void *buf)
{
	verbs *v = V(t);
	unsigned char *p = buf;
	memcpy(p, &v->lid, 2);
	p[2] = v->port;
	p[3] = v->link_layer;
	p[4] = v->mtu;
	memcpy(p + 8, v->gid.raw, 16);
	for (int peer = 0; peer < t->world; peer++)
		for (int l = 0; l < t->lanes; l++) {
			unsigned char *q = p + VB_HDR + ((size_t)peer * (size_t)t->lanes + (size_t)l) * 8;
			uint32_t qpn = v->qps[peer * t->lanes + l]->qp_num, psn = psn_of(t->rank, peer, l);
			memcpy(q, &qpn, 4);
			memcpy(q + 4, &psn, 4);
		}
	return MK_OK;
}

static int modify(transport *t, struct ibv_qp *qp, struct ibv_qp_attr *a, int mask,
		  const char *state, int peer, int lane)
{
	int e = lib.modify_qp(qp, a, mask);
	if (e) {
		tp_fail(t, "QP %u to rank %d (lane %d): ibv_modify_qp to %s failed: %s", qp->qp_num,
			peer, lane, state, strerror(e));
		return -1;
	}
	return 0;
}

static mk_status vb_connect(transport *t, const unsigned char *addrs, size_t size)
{
	verbs *v = V(t);
	for (int peer = 0; peer < t->world; peer++) {
		const unsigned char *p = addrs + (size_t)peer * size;
		uint16_t lid;
		uint8_t mtu = p[4] < v->mtu ? p[4] : v->mtu;
		memcpy(&lid, p, 2);
		if (p[3] != v->link_layer) {
			tp_fail(t, "rank %d's port is %s, ours %s", peer,
				p[3] == IBV_LINK_LAYER_ETHERNET ? "RoCE" : "InfiniBand",
				v->link_layer == IBV_LINK_LAYER_ETHERNET ? "RoCE" : "InfiniBand");
			return MK_ERR_STATE;
		}
		for (int l = 0; l < t->lanes; l++) {
			struct ibv_qp *qp = v->qps[peer * t->lanes + l];
			const unsigned char *q = p + VB_HDR + ((size_t)t->rank * (size_t)t->lanes +
							       (size_t)l) * 8;
			uint32_t rqpn, rpsn;
			struct ibv_qp_attr a;
			memcpy(&rqpn, q, 4);
			memcpy(&rpsn, q + 4, 4);

			/* RESET -> INIT: state, pkey index, port, access flags */
			memset(&a, 0, sizeof a);
			a.qp_state = IBV_QPS_INIT;
			a.pkey_index = 0;
			a.port_num = v->port;
			a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
			if (modify(t, qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				   IBV_QP_ACCESS_FLAGS, "INIT", peer, l))
				return MK_ERR_IO;

			/* INIT -> RTR: address vector, path MTU, remote QPN, RQ PSN,
			 * responder resources, RNR timer */
			memset(&a, 0, sizeof a);
			a.qp_state = IBV_QPS_RTR;
			a.path_mtu = (enum ibv_mtu)mtu;
			a.dest_qp_num = rqpn;
			a.rq_psn = rpsn;
			a.max_dest_rd_atomic = 1;
			a.min_rnr_timer = 12;
			a.ah_attr.dlid = lid;
			a.ah_attr.sl = 0;
			a.ah_attr.src_path_bits = 0;
			a.ah_attr.port_num = v->port;
			if (v->link_layer == IBV_LINK_LAYER_ETHERNET || v->gid_index >= 0) {
				a.ah_attr.is_global = 1;
				memcpy(a.ah_attr.grh.dgid.raw, p + 8, 16);
				a.ah_attr.grh.sgid_index = (uint8_t)(v->gid_index < 0 ? 0 : v->gid_index);
				a.ah_attr.grh.hop_limit = 64;
				a.ah_attr.grh.traffic_class = 0;
				a.ah_attr.grh.flow_label = 0;
			}
			if (modify(t, qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				   IBV_QP_MIN_RNR_TIMER, "RTR", peer, l))
				return MK_ERR_IO;

			/* RTR -> RTS: SQ PSN, initiator depth, retries, ack timeout */
			memset(&a, 0, sizeof a);
			a.qp_state = IBV_QPS_RTS;
			a.sq_psn = psn_of(t->rank, peer, l);
			a.max_rd_atomic = 1;
			a.retry_cnt = 7;
			a.rnr_retry = 7;
			a.timeout = 14;   /* 4.096 us * 2^14 = 67 ms per try */
			if (modify(t, qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC |
				   IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_TIMEOUT, "RTS", peer,
				   l))
				return MK_ERR_IO;
		}
	}
	return MK_OK;
}

/* ---- the data path -------------------------------------------------------------- */
static int vb_post(transport *t, const tp_op *op, int n)
{
	verbs *v = V(t);
	struct ibv_send_wr wr[16], *bad = NULL;
	struct ibv_sge sge[16];
	int qi = op[0].peer * t->lanes + op[0].lane, k, e, got[16];
	struct ibv_qp *qp = v->qps[qi];

	/* as many as the send queue and the context pool take */
	for (k = 0; k < n && k < 16 && v->inflight[qi] + k < v->sq_depth; k++) {
		if (v->free_ctx < 0)
			break;
		got[k] = v->free_ctx;
		v->free_ctx = v->ctx[got[k]].next;
		v->ctx[got[k]].ctx = op[k].ctx;
		v->ctx[got[k]].qp = qi;
		memset(&wr[k], 0, sizeof wr[k]);
		sge[k].addr = (uint64_t)(uintptr_t)op[k].local;
		sge[k].length = (uint32_t)op[k].len;
		sge[k].lkey = op[k].lkey;
		wr[k].wr_id = (uint64_t)got[k];
		wr[k].sg_list = &sge[k];
		wr[k].num_sge = 1;
		wr[k].opcode = IBV_WR_RDMA_WRITE;
		wr[k].send_flags = IBV_SEND_SIGNALED;
		if ((op[k].flags & TP_INLINE) && op[k].len <= v->max_inline)
			wr[k].send_flags |= IBV_SEND_INLINE;
		wr[k].wr.rdma.remote_addr = op[k].raddr;
		wr[k].wr.rdma.rkey = (uint32_t)op[k].rkey;
		wr[k].next = NULL;
		if (k)
			wr[k - 1].next = &wr[k];
	}
	if (!k)
		return 0;
	e = ibv_post_send(qp, wr, &bad);
	{
		int posted = e ? (int)(bad - wr) : k;
		for (int i = posted; i < k; i++) {   /* give back the unposted contexts */
			v->ctx[got[i]].next = v->free_ctx;
			v->free_ctx = got[i];
		}
		v->inflight[qi] += posted;
		if (e && e != ENOMEM && e != EAGAIN) {
			tp_fail(t, "ibv_post_send to rank %d (QP %u): %s", op[0].peer, qp->qp_num,
				strerror(e));
			return TP_ERROR;
		}
		return posted;
	}
}

static int vb_poll(transport *t, tp_completion *out, int max)
{
	verbs *v = V(t);
	struct ibv_wc wc[32];
	int k, noted = 0;
	if (max > 32)
		max = 32;
	k = ibv_poll_cq(v->cq, max, wc);
	if (k < 0) {
		tp_fail(t, "ibv_poll_cq failed (%d)", k);
		return TP_ERROR;
	}
	for (int i = 0; i < k; i++) {
		vctx *c = &v->ctx[wc[i].wr_id];
		int peer = c->qp / t->lanes, lane = c->qp % t->lanes;
		out[i].ctx = c->ctx;
		out[i].ok = wc[i].status == IBV_WC_SUCCESS;
		if (!out[i].ok && !noted++)   /* the first: later ones are mostly flushes */
			tp_fail(t, "RDMA write to rank %d (QP %u, lane %d): %s (vendor error 0x%x)",
				peer, wc[i].qp_num, lane, lib.wc_status_str(wc[i].status),
				wc[i].vendor_err);
		v->inflight[c->qp]--;
		c->next = v->free_ctx;
		v->free_ctx = (int)wc[i].wr_id;
	}
	return k;
}

static void vb_close(transport *t)
{
	verbs *v = V(t);
	if (!v)
		return;
	for (int i = 0; v->qps && i < t->world * t->lanes; i++)
		if (v->qps[i])
			lib.destroy_qp(v->qps[i]);
	if (v->cq)
		lib.destroy_cq(v->cq);
	if (v->pd)
		lib.dealloc_pd(v->pd);
	if (v->dev)
		lib.close_device(v->dev);
	free(v->qps);
	free(v->inflight);
	free(v->ctx);
	free(v);
	t->be = NULL;
}

static const tp_ops vb_ops = {
	"verbs", vb_reg, vb_dereg, vb_addr_size, vb_addr, vb_connect, vb_post, vb_poll, vb_close,
};

/* A RoCE v2 GID with an IPv4-mapped address, else index 0. */
static int pick_gid(verbs *v, int want)
{
	if (want >= 0)
		return want;
	if (lib.query_gid_ex) {
		for (int i = 0; i < 256; i++) {
			struct ibv_gid_entry e;
			if (lib.query_gid_ex(v->dev, v->port, (uint32_t)i, &e, 0, sizeof e) != 0)
				continue;
			if (e.gid_type == IBV_GID_TYPE_ROCE_V2 && !memcmp(e.gid.raw,
			    "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12))
				return i;
		}
	}
	return 0;
}

mk_status tp_verbs_open(transport *t, const transport_opts *o, char *why, size_t n)
{
	verbs *v;
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	const char *qs = getenv("MK_IB_QPS"), *gs = getenv("MK_IB_GID_INDEX");
	int lanes = o->qps_per_peer > 0 ? o->qps_per_peer : qs && *qs ? atoi(qs) : 2;
	int gid_want = o->gid_index >= 0 ? o->gid_index : gs && *gs ? atoi(gs) : -1;
	int nqp;

	if (lanes < 1 || lanes > 16) {
		snprintf(why, n, "MK_IB_QPS=%d: 1 to 16 QPs per peer", lanes);
		return MK_ERR_INVALID;
	}
	if (!(v = calloc(1, sizeof *v))) {
		snprintf(why, n, "out of memory");
		return MK_ERR_NOMEM;
	}
	t->be = v;
	t->ops = &vb_ops;
	t->lanes = lanes;
	if (!(v->dev = find_device(o, v->name, sizeof v->name, &v->port, why, n)))
		goto fail_unsup;
	if (lib.query_device(v->dev, &da) != 0 || query_port(v->dev, v->port, &pa) != 0) {
		snprintf(why, n, "%s: ibv_query_device/port: %s", v->name, strerror(errno));
		goto fail;
	}
	v->lid = pa.lid;
	v->link_layer = pa.link_layer;
	v->mtu = (uint8_t)pa.active_mtu;
	v->gid_index = v->link_layer == IBV_LINK_LAYER_ETHERNET || gid_want >= 0
			       ? pick_gid(v, gid_want) : -1;
	if (v->gid_index >= 0 && lib.query_gid(v->dev, v->port, v->gid_index, &v->gid) != 0) {
		snprintf(why, n, "%s port %u: ibv_query_gid %d: %s", v->name, v->port, v->gid_index,
			 strerror(errno));
		goto fail;
	}
	nqp = t->world * lanes;
	v->sq_depth = da.max_qp_wr < 256 ? da.max_qp_wr : 256;
	v->cqe = nqp * v->sq_depth;
	if (v->cqe > da.max_cqe)
		v->cqe = da.max_cqe;
	v->nctx = v->cqe;   /* never more in flight than the CQ holds */
	if (!(v->pd = lib.alloc_pd(v->dev))) {
		snprintf(why, n, "%s: ibv_alloc_pd: %s", v->name, strerror(errno));
		goto fail;
	}
	if (!(v->cq = lib.create_cq(v->dev, v->cqe, NULL, NULL, 0))) {
		snprintf(why, n, "%s: ibv_create_cq of %d entries: %s", v->name, v->cqe,
			 strerror(errno));
		goto fail;
	}
	if (!(v->qps = calloc((size_t)nqp, sizeof *v->qps)) ||
	    !(v->inflight = calloc((size_t)nqp, sizeof *v->inflight)) ||
	    !(v->ctx = calloc((size_t)v->nctx, sizeof *v->ctx))) {
		snprintf(why, n, "out of memory");
		goto fail;
	}
	for (int i = 0; i < v->nctx; i++)
		v->ctx[i].next = i + 1 < v->nctx ? i + 1 : -1;
	v->max_inline = 64;
	for (int i = 0; i < nqp; i++) {
		struct ibv_qp_init_attr ia;
		memset(&ia, 0, sizeof ia);
		ia.send_cq = v->cq;
		ia.recv_cq = v->cq;
		ia.qp_type = IBV_QPT_RC;
		ia.sq_sig_all = 0;
		ia.cap.max_send_wr = (uint32_t)v->sq_depth;
		ia.cap.max_recv_wr = 1;
		ia.cap.max_send_sge = 1;
		ia.cap.max_recv_sge = 1;
		ia.cap.max_inline_data = 64;
		if (!(v->qps[i] = lib.create_qp(v->pd, &ia))) {
			snprintf(why, n, "%s: ibv_create_qp (RC) %d of %d: %s", v->name, i + 1, nqp,
				 strerror(errno));
			goto fail;
		}
		if (ia.cap.max_inline_data < v->max_inline)
			v->max_inline = ia.cap.max_inline_data;
	}
	t->ordered = 1;
	t->device_memory = 1;
	t->max_msg = pa.max_msg_sz ? pa.max_msg_sz : (1u << 30);
	snprintf(t->desc, sizeof t->desc, "%s port %u (%s, MTU %d, %d QPs per peer)", v->name,
		 v->port, v->link_layer == IBV_LINK_LAYER_ETHERNET ? "RoCE" : "InfiniBand",
		 128 << v->mtu, lanes);
	return MK_OK;
fail_unsup:
	vb_close(t);
	t->ops = NULL;
	return MK_ERR_UNSUPPORTED;
fail:
	vb_close(t);
	t->ops = NULL;
	return MK_ERR_IO;
}
