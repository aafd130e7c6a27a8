/* rdma.h - RDMA between the nodes of a pipeline's mesh: what libmk sets up
 * for a pipeline with RDMA stages in process mode (docs/rdma.md section 5).
 *
 *   rdma_open    the transport over the job's bootstrap, and the one
 *                decision every rank must share: does RDMA-facing memory
 *                (tensors RDMA tasks read or write, the RDMA flag area) live
 *                in GPU memory (every rank's transport registers it) or in
 *                host windows (host memory mapped for the GPU)?  Collective.
 *   rdma_reg     a tensor or the flag area as a transport region
 *   rdma_start   connect (collective), the proxy FIFO (slots and ctl
 *                host-pinned and mapped, head in GPU memory), the proxy thread
 *   rdma_close   flush, a barrier while the proxy still polls (peers' last
 *                writes need this rank's progress), stop, close, free
 *
 * MK_RDMA_MEM=host|device|auto (default auto) overrides the decision;
 * "device" where a transport cannot register GPU memory is an error.
 * Nothing prints; every failure is a status with err[] filled.
 */
#ifndef MK_RDMA_H
#define MK_RDMA_H

#include <stddef.h>

#include "../codegen/mkd/abi.cuh"
#include "bootstrap.h"
#include "cudrv.h"
#include "mk.h"

typedef struct rdma rdma;

/* *host: 1 = RDMA-facing memory in host windows.  log[] gets two lines
 * (the transport chosen and why; where the memory lives and why). */
mk_status rdma_open(bootstrap *b, rdma **out, int *host, char *log, size_t n);
/* Registers region `index` (a tensor index, or MKD_PROXY_REGION_FLAGS) for
 * peers to write into and for this rank's commands to read: addr is the
 * host mapping of a host window, else a device pointer on device `cuda`. */
mk_status rdma_reg(rdma *r, int index, void *addr, size_t len, int host, int cuda, char *err,
		   size_t n);
/* Collective.  *ring gets the kernel's view of the FIFO (device pointers).
 * timeout_ms: a command not delivered in this time fails the proxy. */
mk_status rdma_start(rdma *r, const cudrv *cu, CUdevice dev, unsigned timeout_ms,
		     mkd_proxy_ring *ring, char *log, size_t n);
/* MK_OK while the proxy is healthy; else its failure, msg[] says which
 * command, task and rank. */
mk_status rdma_status(rdma *r, char *msg, size_t n);
/* clean: the pipeline ran to the end here (flush and barrier first; a
 * broken one skips both, and peers see its connections close).  Accepts
 * NULL.  Before the registered memory is freed. */
void rdma_close(rdma *r, int clean);

#endif
