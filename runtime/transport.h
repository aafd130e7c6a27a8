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
#include "tp_core.h"   /* options, memory, completions; what the backends share */

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
/* flags: TP_FENCE, TP_DELIVERY, TP_INLINE (tp_core.h) */
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

#endif
