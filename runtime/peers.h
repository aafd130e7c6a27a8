/* peers.h - memory that other processes of the node can map, and the
 * communicator that shares it.
 *
 * A rank's tensors and flags live in cuMemCreate allocations whose handles
 * can be exported as POSIX file descriptors.  The descriptors travel to the
 * ranks of the same node over a Unix socket (fdpass.c); each peer imports
 * them, maps them into its own address space and gets read/write access on
 * its device, whether that is another GPU or the same one.  No NVLink
 * multicast is used anywhere.
 *
 * Host windows are the other kind: host memory (a memfd, mmap'ed) that the
 * GPU maps (cuMemHostRegister with DEVICEMAP) and that node peers map the
 * same way from the same descriptor.  They hold what an RDMA transport must
 * reach when it cannot register GPU memory (libfabric's tcp provider).
 */
#ifndef MK_PEERS_H
#define MK_PEERS_H

#include <stddef.h>

#include "bootstrap.h"
#include "cudrv.h"
#include "fdpass.h"
#include "mk.h"

typedef struct mk_vmm {
	CUdeviceptr ptr;
	size_t size;              /* mapped bytes (granularity-rounded) */
	CUmemGenericAllocationHandle h;
	int live;
	void *host;               /* a host window: its mapping here, else NULL */
	int fd;                   /* a host window made here: its memfd, else -1 */
} mk_vmm;

mk_status vmm_alloc(const cudrv *cu, CUdevice dev, size_t bytes, mk_vmm *out, char *err,
		    size_t n);
mk_status vmm_export(const cudrv *cu, const mk_vmm *m, int *fd, char *err, size_t n);
/* Imports a peer's descriptor (the caller keeps and closes fd). */
mk_status vmm_import(const cudrv *cu, CUdevice dev, int fd, size_t size, mk_vmm *out, char *err,
		     size_t n);
void vmm_free(const cudrv *cu, mk_vmm *m);   /* either kind */

/* Host windows (page-rounded, zeroed).  export gives a new descriptor for
 * the caller to pass on and close; import maps a peer's. */
mk_status hostwin_alloc(const cudrv *cu, size_t bytes, mk_vmm *out, char *err, size_t n);
mk_status hostwin_export(const mk_vmm *m, int *fd, char *err, size_t n);
mk_status hostwin_import(const cudrv *cu, int fd, size_t size, mk_vmm *out, char *err,
			 size_t n);

struct mk_comm {
	bootstrap *b;
	fdpass *f;
	int *local_of;            /* global rank -> local rank on this host, -1 */
	char err[512];
};

/* Sends my descriptors (with their sizes) to every rank in peers[] and
 * receives theirs: fds[k * n + i], sizes[k * n + i] for peer k. */
mk_status comm_share_fds(mk_comm *c, const int *peers, int npeers, const int *mine,
			 const size_t *my_sizes, int n, int *fds, size_t *sizes);

#endif
