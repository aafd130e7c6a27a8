/* tp_core.h - what the transport (transport.c, the chooser and the checks)
 * and its backends (verbs.c, fabric.c) share: memory and options, the write
 * a backend is handed, its table of operations, the transport's state, and
 * tp_fail.  The rest of the runtime includes transport.h, which includes
 * this; a backend includes only this, so the arrows run one way: the
 * chooser (transport.c) calls the backends' open functions, and all three
 * build on this file, never on each other.
 */
#ifndef MK_TP_CORE_H
#define MK_TP_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "bootstrap.h"
#include "mk.h"

/* ---- memory and options (transport.h's calls take them too) ------------------ */
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

/* ---- writes and completions ------------------------------------------------------ */
/* tp_write.flags, tp_op.flags */
enum {
	TP_FENCE = 1,       /* not visible before earlier writes on this lane (ordered only) */
	TP_DELIVERY = 2,    /* complete only once visible at the target */
	TP_INLINE = 4,      /* small: the source may be reused when post returns */
};

typedef struct tp_completion {
	uint64_t ctx;
	int ok;             /* 0: failed, transport_error() says why */
} tp_completion;

#define TP_ERROR (-1)

/* ---- what a backend implements ------------------------------------------------ */
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
/* The message transport_error() returns (tp_core.c). */
void tp_fail(transport *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
