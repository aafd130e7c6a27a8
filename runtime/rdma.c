/* rdma.c - transport, proxy FIFO and proxy thread of one pipeline; see
 * rdma.h.  The pieces are transport.c and proxy.c; this file only wires
 * them to a GPU and a job, in the order docs/rdma.md section 5 gives.
 */
#include "rdma.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy.h"
#include "transport.h"

#define RING_SLOTS 1024   /* commands in flight per GPU: 64 KB of host memory */

struct rdma {
	bootstrap *b;
	transport *tp;
	proxy *px;
	const cudrv *cu;
	void *slots, *ctl;        /* host-pinned, mapped */
	CUdeviceptr head;         /* GPU memory */
	unsigned timeout_ms;
};

mk_status rdma_open(bootstrap *b, rdma **out, int *host, char *log, size_t n)
{
	char tlog[512] = "";
	*out = NULL;
	rdma *r = calloc(1, sizeof *r);
	if (!r) {
		snprintf(log, n, "rdma: out of memory");
		return MK_ERR_NOMEM;
	}
	r->b = b;
	const char *want = getenv("MK_RDMA_MEM");
	if (want && *want && strcmp(want, "host") && strcmp(want, "device") && strcmp(want, "auto")) {
		free(r);
		snprintf(log, n, "rdma: MK_RDMA_MEM=%s: expected host, device or auto", want);
		return MK_ERR_INVALID;
	}
	mk_status st = transport_open(NULL, b, &r->tp, tlog, sizeof tlog);
	/* every rank says what it can (-1: no transport), so that all fail
	 * together or agree on one memory kind */
	int32_t mine = st != MK_OK ? -1 : transport_device_memory(r->tp) ? 1 : 0;
	int w = bootstrap_world(b);
	int32_t *all = calloc((size_t)w, sizeof *all);
	if (!all) {
		rdma_close(r, 0);
		snprintf(log, n, "rdma: out of memory");
		return MK_ERR_NOMEM;
	}
	mk_status gs = bootstrap_allgather(b, &mine, all, sizeof mine);
	if (st != MK_OK || gs != MK_OK) {
		free(all);
		rdma_close(r, 0);
		if (st != MK_OK)
			snprintf(log, n, "%s", tlog);
		else
			snprintf(log, n, "%s\nrdma: agreeing on RDMA memory: %s", tlog, bootstrap_error(b));
		return st != MK_OK ? st : gs;
	}
	int dev = 1, bad = -1;
	for (int k = 0; k < w; k++) {
		if (all[k] < 0 && bad < 0)
			bad = k;
		dev &= all[k] > 0;
	}
	free(all);
	if (bad >= 0) {
		rdma_close(r, 0);
		snprintf(log, n, "%s\nrdma: rank %d has no RDMA transport (see its log)", tlog, bad);
		return MK_ERR_PEER;
	}
	const char *why;
	if (want && !strcmp(want, "host")) {
		dev = 0;
		why = "MK_RDMA_MEM=host";
	} else if (want && !strcmp(want, "device") && !dev) {
		rdma_close(r, 0);
		snprintf(log, n, "%s\nrdma: MK_RDMA_MEM=device, but %s", tlog,
			 transport_device_memory(r->tp) ? "another rank's transport cannot register GPU memory"
							: "this transport cannot register GPU memory");
		return MK_ERR_UNSUPPORTED;
	} else {
		why = dev ? "every rank's transport registers GPU memory"
			  : "the transport cannot register GPU memory here";
	}
	*host = !dev;
	snprintf(log, n, "%s\nrdma: tensors that RDMA reads or writes, and the RDMA flags, in %s (%s)",
		 tlog, dev ? "GPU memory" : "host memory mapped for the GPU", why);
	*out = r;
	return MK_OK;
}

mk_status rdma_reg(rdma *r, int index, void *addr, size_t len, int host, int cuda, char *err,
		   size_t n)
{
	tp_mem m;
	memset(&m, 0, sizeof m);
	m.addr = addr;
	m.len = len ? len : 1;
	m.kind = host ? TP_MEM_HOST : TP_MEM_CUDA;
	m.cuda_device = cuda;
	m.dmabuf_fd = -1;   /* verbs asks cuMemGetHandleForAddressRange itself */
	m.exported = 1;
	mk_status st = transport_reg(r->tp, index, &m);
	if (st != MK_OK)
		snprintf(err, n, "registering %s %d (%zu bytes of %s memory): %s",
			 index == MKD_PROXY_REGION_FLAGS ? "the RDMA flag area, region" : "tensor", index,
			 len, host ? "host" : "GPU", transport_error(r->tp));
	return st;
}

static void *host_mapped(const cudrv *cu, size_t bytes, CUdeviceptr *dev)
{
	void *h = NULL;
	if (cu->cuMemHostAlloc(&h, bytes, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE) !=
	    CUDA_SUCCESS)
		return NULL;
	memset(h, 0, bytes);
	if (cu->cuMemHostGetDevicePointer(dev, h, 0) != CUDA_SUCCESS) {
		cu->cuMemFreeHost(h);
		return NULL;
	}
	return h;
}

mk_status rdma_start(rdma *r, const cudrv *cu, CUdevice dev, unsigned timeout_ms,
		     mkd_proxy_ring *ring, char *log, size_t n)
{
	char plog[320] = "", bus[32] = "";
	CUdeviceptr d_slots = 0, d_ctl = 0;
	mk_status st;

	r->cu = cu;
	r->timeout_ms = timeout_ms;
	if ((st = transport_connect(r->tp)) != MK_OK) {
		snprintf(log, n, "rdma: connecting: %s", transport_error(r->tp));
		return st;
	}
	r->slots = host_mapped(cu, RING_SLOTS * sizeof(mkd_proxy_cmd), &d_slots);
	r->ctl = host_mapped(cu, sizeof(mkd_proxy_ctl), &d_ctl);
	if (!r->slots || !r->ctl || cu->cuMemAlloc(&r->head, 64) != CUDA_SUCCESS ||
	    cu->cuMemsetD8(r->head, 0, 64) != CUDA_SUCCESS) {
		snprintf(log, n, "rdma: no memory for the proxy FIFO");
		return MK_ERR_NOMEM;
	}
	cu->cuDeviceGetPCIBusId(bus, sizeof bus, dev);
	proxy_opts po = PROXY_OPTS_INIT;
	po.ring.slots = r->slots;
	po.ring.ctl = r->ctl;
	po.ring.nslots = RING_SLOTS;
	po.tp = r->tp;
	po.timeout_ms = timeout_ms;
	po.pci_bus_id = bus[0] ? bus : NULL;
	if ((st = proxy_start(&po, &r->px, plog, sizeof plog)) != MK_OK) {
		snprintf(log, n, "rdma: %s", plog);
		return st;
	}
	snprintf(log, n, "rdma: %s; FIFO of %d commands", plog, RING_SLOTS);
	memset(ring, 0, sizeof *ring);
	ring->slots = (mkd_proxy_cmd *)(uintptr_t)d_slots;
	ring->ctl = (mkd_proxy_ctl *)(uintptr_t)d_ctl;
	ring->head = (unsigned long long *)(uintptr_t)r->head;
	ring->nslots = RING_SLOTS;
	return MK_OK;
}

mk_status rdma_status(rdma *r, char *msg, size_t n)
{
	if (!r || !r->px) {
		if (msg && n)
			msg[0] = 0;
		return MK_OK;
	}
	return proxy_status(r->px, msg, n);
}

void rdma_close(rdma *r, int clean)
{
	if (!r)
		return;
	if (r->px) {
		if (clean && proxy_flush(r->px, r->timeout_ms ? r->timeout_ms : 10000) == MK_OK)
			bootstrap_barrier(r->b);   /* peers' last writes land while we poll */
		proxy_destroy(r->px);
	}
	transport_close(r->tp);
	if (r->cu) {
		if (r->slots)
			r->cu->cuMemFreeHost(r->slots);
		if (r->ctl)
			r->cu->cuMemFreeHost(r->ctl);
		if (r->head)
			r->cu->cuMemFree(r->head);
	}
	free(r);
}
