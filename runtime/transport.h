/* transport.h - RDMA writes between ranks: one small interface, two backends.
 *
 *   verbs   rdma-core (libibverbs.so.1): reliable-connected QPs, RDMA WRITE
 *   fabric  libfabric (libfabric.so.1): RMA writes on an FI_EP_RDM endpoint;
 *           its `efa` provider on AWS, `tcp` wherever there is no RDMA device
 *
 * Both libraries are loaded at run time.  transport_open picks verbs when an
 * RDMA device with an active port is found, else libfabric; MK_TRANSPORT=
 * verbs|fabric forces one, and a forced transport that is unavailable is an
 * error.  The choice and the reason come back as one log line.
 *
 * Use: open, register memory regions (each with an index that means the
 * same thing on every rank: tensor t is region t, the flag array is
 * MKD_PROXY_REGION_FLAGS), connect (collective: endpoint addresses and keys
 * travel through the bootstrap), then post writes and poll completions from
 * ONE thread (the proxy).  Nothing here prints or exits; errors are statuses
 * with a message in transport_error().
 *
 * Ordering: a backend is `ordered` when a write posted after another on the
 * same peer and lane is never visible at the target before it (verbs: RC
 * QPs; libfabric: with FI_FENCE).  The proxy then posts data and flag back to
 * back; otherwise it posts the flag only when the data write has completed
 * with delivery-complete semantics (TP_DELIVERY).  Either way the flag never
 * lands before its data.
 */
#ifndef MK_TRANSPORT_H
#define MK_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "bootstrap.h"
#include "mk.h"

#define TP_MAX_REGIONS 80   /* 0..63 tensors, 64 flags, the rest local-only */
#define TP_ADDR_MAX 1024    /* a backend's endpoint address, per rank */

typedef enum tp_mem_kind { TP_MEM_HOST = 0, TP_MEM_CUDA = 1 } tp_mem_kind;

typedef struct tp_mem {
	void *addr;               /* host pointer, or a CUdeviceptr for TP_MEM_CUDA */
	size_t len;
	tp_mem_kind kind;
	int cuda_device;          /* TP_MEM_CUDA: the device ordinal */
	int dmabuf_fd;            /* TP_MEM_CUDA: dma-buf of the range (from
	                             cuMemGetHandleForAddressRange), or -1 */
	uint64_t dmabuf_offset;   /* of addr within that dma-buf */
	int exported;             /* peers may write into it: its key is exchanged */
} tp_mem;

typedef struct transport_opts {
	const char *force;        /* "verbs" / "fabric"; NULL: MK_TRANSPORT, else automatic */
	const char *provider;     /* libfabric provider; NULL: MK_FABRIC_PROVIDER, else
	                             efa when it is present, else tcp */
	const char *ib_device;    /* NULL: MK_IB_DEVICE, else the first with an active port */
	int ib_port;              /* 0: the first active port */
	int qps_per_peer;         /* verbs lanes; 0: MK_IB_QPS, else 2 */
	int gid_index;            /* RoCE; -1: MK_IB_GID_INDEX, else a RoCE v2 IPv4 GID */
} transport_opts;

#define TRANSPORT_OPTS_INIT {NULL, NULL, NULL, 0, 0, -1}

typedef struct transport transport;

/* Chooses and opens a backend for the ranks of b (kept for connect).  log[]
 * gets one line: which transport, and why ("verbs: mlx5_0 port 1, RDMA
 * device found" / "fabric: tcp;ofi_rxm, no RDMA device (...)"), or on
 * failure the reason. */
mk_status transport_open(const transport_opts *o, bootstrap *b, transport **out, char *log,
			 size_t n);
void transport_close(transport *t);   /* accepts NULL */
const char *transport_error(const transport *t);
const char *transport_kind(const transport *t);   /* "verbs" or "fabric" */
const char *transport_desc(const transport *t);   /* "tcp;ofi_rxm on lo" ... */
int transport_ordered(const transport *t);
int transport_device_memory(const transport *t); /* can register TP_MEM_CUDA */
uint64_t transport_max_msg(const transport *t);
int transport_lanes(const transport *t);
int transport_rank(const transport *t);
int transport_world(const transport *t);

/* Registers region `index` (0 .. TP_MAX_REGIONS-1).  Exported regions must
 * be registered before transport_connect; local ones (sources only) at any
 * time.  TP_MEM_CUDA needs transport_device_memory(); otherwise
 * MK_ERR_UNSUPPORTED (use host-pinned, device-mapped memory instead). */
mk_status transport_reg(transport *t, int index, const tp_mem *m);
/* Drops a local (not exported) region, or any region before connecting. */
mk_status transport_dereg(transport *t, int index);
/* Collective: every rank calls it once, after its exported regions. */
mk_status transport_connect(transport *t);

/* ---- the data path: one thread ------------------------------------------------- */
enum {
	TP_FENCE = 1,       /* not visible before earlier writes on this lane (ordered only) */
	TP_DELIVERY = 2,    /* complete only once visible at the target */
	TP_INLINE = 4,      /* small: the source may be reused when post returns */
};

typedef struct tp_write {
	int peer, lane;
	int src_region;
	uint64_t src_off;
	int dst_region;
	uint64_t dst_off;
	uint64_t len;
	uint64_t ctx;       /* comes back in the completion */
	unsigned flags;
} tp_write;

typedef struct tp_completion {
	uint64_t ctx;
	int ok;             /* 0: failed, transport_error() says why */
} tp_completion;

#define TP_ERROR (-1)

/* Posts w[0..n) in order, all to one peer and lane.  Returns how many were
 * posted (fewer than n when the backend's queue is full: poll, then post
 * the rest), or TP_ERROR (bad region or offset, or the backend failed).
 * Every posted write comes back as exactly one completion. */
int transport_post(transport *t, const tp_write *w, int n);
/* Completions, at most max; also drives progress (software providers need
 * it at the target too: poll even with nothing posted).  Returns the
 * number, or TP_ERROR when the backend itself failed. */
int transport_poll(transport *t, tp_completion *c, int max);
/* Checks a write against the regions without posting it; 0 or TP_ERROR
 * with the reason in transport_error(). */
int transport_check(transport *t, const tp_write *w);

/* ---- backends ------------------------------------------------------------------ */
typedef struct tp_region {
	tp_mem mem;
	int used;
	uint64_t raddr, rkey;     /* what peers put in their writes */
	void *desc;               /* local descriptor (libfabric) */
	uint32_t lkey;            /* local key (verbs) */
	void *handle;             /* the backend's registration */
} tp_region;

typedef struct tp_remote {
	uint64_t addr, key, len;  /* len 0: not exported */
} tp_remote;

/* A write with everything resolved. */
typedef struct tp_op {
	int peer, lane;
	void *local;
	void *desc;
	uint32_t lkey;
	uint64_t raddr, rkey, len, ctx;
	unsigned flags;
} tp_op;

typedef struct tp_ops {
	const char *kind;
	mk_status (*reg)(transport *t, tp_region *r);
	void (*dereg)(transport *t, tp_region *r);
	size_t (*addr_size)(transport *t);
	mk_status (*addr)(transport *t, void *buf);
	mk_status (*connect)(transport *t, const unsigned char *addrs, size_t size);
	int (*post)(transport *t, const tp_op *op, int n);
	int (*poll)(transport *t, tp_completion *c, int max);
	void (*close)(transport *t);
} tp_ops;

struct transport {
	const tp_ops *ops;
	void *be;                 /* the backend's state */
	bootstrap *boot;
	int rank, world;
	tp_region region[TP_MAX_REGIONS];
	tp_remote *remote;        /* [world][TP_MAX_REGIONS] after connect */
	int ordered, device_memory, lanes, connected;
	uint64_t max_msg;
	char desc[256];
	char err[512];
};

/* Each backend: 0 when it can be opened here, else why[] says why not. */
mk_status tp_verbs_open(transport *t, const transport_opts *o, char *why, size_t n);
mk_status tp_fabric_open(transport *t, const transport_opts *o, char *why, size_t n);
/* Does this host have an RDMA device that verbs can use?  1/0, why[] */
int tp_verbs_probe(const transport_opts *o, char *why, size_t n);
void tp_fail(transport *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
