/* peers.c - shareable device memory and the communicator; see peers.h. */
#include "peers.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static CUmemAllocationProp prop_for(CUdevice dev)
{
	CUmemAllocationProp p;
	memset(&p, 0, sizeof p);
	p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	p.location.id = dev;
	p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	return p;
}

static mk_status map_handle(const cudrv *cu, CUdevice dev, CUmemGenericAllocationHandle h,
			    size_t size, mk_vmm *out, char *err, size_t n)
{
	CUresult r = cu->cuMemAddressReserve(&out->ptr, size, 0, 0, 0);
	if (r != CUDA_SUCCESS) {
		snprintf(err, n, "cuMemAddressReserve: %s", cudrv_errstr(r));
		return MK_ERR_CUDA;
	}
	r = cu->cuMemMap(out->ptr, size, 0, h, 0);
	if (r != CUDA_SUCCESS) {
		cu->cuMemAddressFree(out->ptr, size);
		snprintf(err, n, "cuMemMap: %s", cudrv_errstr(r));
		return MK_ERR_CUDA;
	}
	CUmemAccessDesc a;
	memset(&a, 0, sizeof a);
	a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	a.location.id = dev;
	a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	r = cu->cuMemSetAccess(out->ptr, size, &a, 1);
	if (r != CUDA_SUCCESS) {
		cu->cuMemUnmap(out->ptr, size);
		cu->cuMemAddressFree(out->ptr, size);
		snprintf(err, n, "cuMemSetAccess: %s", cudrv_errstr(r));
		return MK_ERR_CUDA;
	}
	out->h = h;
	out->size = size;
	out->live = 1;
	return MK_OK;
}

mk_status vmm_alloc(const cudrv *cu, CUdevice dev, size_t bytes, mk_vmm *out, char *err, size_t n)
{
	memset(out, 0, sizeof *out);
	out->fd = -1;
	CUmemAllocationProp p = prop_for(dev);
	size_t g = 0;
	CUresult r = cu->cuMemGetAllocationGranularity(&g, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
	if (r != CUDA_SUCCESS || !g) {
		snprintf(err, n, "cuMemGetAllocationGranularity: %s", cudrv_errstr(r));
		return MK_ERR_CUDA;
	}
	size_t size = (bytes ? bytes : 1) + g - 1;
	size -= size % g;
	CUmemGenericAllocationHandle h;
	r = cu->cuMemCreate(&h, size, &p, 0);
	if (r != CUDA_SUCCESS) {
		snprintf(err, n, "cuMemCreate (%zu bytes, exportable): %s", size, cudrv_errstr(r));
		return r == CUDA_ERROR_OUT_OF_MEMORY ? MK_ERR_NOMEM : MK_ERR_CUDA;
	}
	mk_status st = map_handle(cu, dev, h, size, out, err, n);
	if (st != MK_OK)
		cu->cuMemRelease(h);
	return st;
}

mk_status vmm_export(const cudrv *cu, const mk_vmm *m, int *fd, char *err, size_t n)
{
	int f = -1;
	CUresult r = cu->cuMemExportToShareableHandle(&f, m->h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
						      0);
	if (r != CUDA_SUCCESS) {
		snprintf(err, n, "cuMemExportToShareableHandle: %s", cudrv_errstr(r));
		return MK_ERR_CUDA;
	}
	*fd = f;
	return MK_OK;
}

mk_status vmm_import(const cudrv *cu, CUdevice dev, int fd, size_t size, mk_vmm *out, char *err,
		     size_t n)
{
	memset(out, 0, sizeof *out);
	out->fd = -1;
	CUmemGenericAllocationHandle h;
	CUresult r = cu->cuMemImportFromShareableHandle(&h, (void *)(intptr_t)fd,
							CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
	if (r != CUDA_SUCCESS) {
		snprintf(err, n, "cuMemImportFromShareableHandle: %s", cudrv_errstr(r));
		return MK_ERR_CUDA;
	}
	mk_status st = map_handle(cu, dev, h, size, out, err, n);
	if (st != MK_OK)
		cu->cuMemRelease(h);
	return st;
}

/* ---- host windows ------------------------------------------------------------
 * cuMemHostRegister is not in cudrv's table: looked up here, by the name
 * cuda.h gives it (cuMemHostRegister_v2). */
#define STR_(x) #x
#define STR(x) STR_(x)

typedef CUresult (*hostreg_fn)(void *, size_t, unsigned int);
typedef CUresult (*hostunreg_fn)(void *);

static int host_fns(const cudrv *cu, hostreg_fn *reg, hostunreg_fn *unreg)
{
	void *a = cu->lib ? dlsym(cu->lib, STR(cuMemHostRegister)) : NULL;
	void *b = cu->lib ? dlsym(cu->lib, "cuMemHostUnregister") : NULL;
	memcpy(reg, &a, sizeof a);
	memcpy(unreg, &b, sizeof b);
	return a && b;
}

static mk_status map_window(const cudrv *cu, int fd, size_t size, mk_vmm *out, char *err,
			    size_t n)
{
	hostreg_fn reg;
	hostunreg_fn unreg;
	if (!host_fns(cu, &reg, &unreg)) {
		snprintf(err, n, "the CUDA driver has no cuMemHostRegister");
		return MK_ERR_UNSUPPORTED;
	}
	void *h = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (h == MAP_FAILED) {
		snprintf(err, n, "mmap of %zu bytes of host memory: %s", size, strerror(errno));
		return MK_ERR_NOMEM;
	}
	CUresult r = reg(h, size, CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_PORTABLE);
	if (r != CUDA_SUCCESS) {
		munmap(h, size);
		snprintf(err, n, "cuMemHostRegister of %zu bytes: %s", size, cudrv_errstr(r));
		return r == CUDA_ERROR_OUT_OF_MEMORY ? MK_ERR_NOMEM : MK_ERR_CUDA;
	}
	CUdeviceptr d = 0;
	r = cu->cuMemHostGetDevicePointer(&d, h, 0);
	if (r != CUDA_SUCCESS) {
		unreg(h);
		munmap(h, size);
		snprintf(err, n, "cuMemHostGetDevicePointer: %s", cudrv_errstr(r));
		return MK_ERR_CUDA;
	}
	out->ptr = d;
	out->size = size;
	out->host = h;
	out->live = 1;
	return MK_OK;
}

mk_status hostwin_alloc(const cudrv *cu, size_t bytes, mk_vmm *out, char *err, size_t n)
{
	memset(out, 0, sizeof *out);
	out->fd = -1;
	long pg = sysconf(_SC_PAGESIZE);
	size_t g = pg > 0 ? (size_t)pg : 4096;
	size_t size = ((bytes ? bytes : 1) + g - 1) / g * g;
	int fd = memfd_create("mk-rdma", MFD_CLOEXEC);
	if (fd < 0) {
		snprintf(err, n, "memfd_create: %s", strerror(errno));
		return MK_ERR_NOMEM;
	}
	if (ftruncate(fd, (off_t)size) != 0) {
		snprintf(err, n, "sizing %zu bytes of shared host memory: %s", size, strerror(errno));
		close(fd);
		return MK_ERR_NOMEM;
	}
	mk_status st = map_window(cu, fd, size, out, err, n);
	if (st != MK_OK) {
		close(fd);
		return st;
	}
	out->fd = fd;
	return MK_OK;
}

mk_status hostwin_export(const mk_vmm *m, int *fd, char *err, size_t n)
{
	*fd = m->fd >= 0 ? fcntl(m->fd, F_DUPFD_CLOEXEC, 0) : -1;
	if (*fd < 0) {
		snprintf(err, n, "duplicating a host window's descriptor: %s",
			 m->fd >= 0 ? strerror(errno) : "not made here");
		return MK_ERR_IO;
	}
	return MK_OK;
}

mk_status hostwin_import(const cudrv *cu, int fd, size_t size, mk_vmm *out, char *err, size_t n)
{
	memset(out, 0, sizeof *out);
	out->fd = -1;
	struct stat sb;
	if (fstat(fd, &sb) != 0 || (size_t)sb.st_size < size) {
		snprintf(err, n, "a peer's host window is smaller than %zu bytes", size);
		return MK_ERR_PEER;
	}
	return map_window(cu, fd, size, out, err, n);
}

void vmm_free(const cudrv *cu, mk_vmm *m)
{
	if (!m || !m->live)
		return;
	if (m->host) {
		hostreg_fn reg;
		hostunreg_fn unreg;
		if (host_fns(cu, &reg, &unreg))
			unreg(m->host);
		munmap(m->host, m->size);
		if (m->fd >= 0)
			close(m->fd);
	} else {
		cu->cuMemUnmap(m->ptr, m->size);
		cu->cuMemAddressFree(m->ptr, m->size);
		cu->cuMemRelease(m->h);
	}
	memset(m, 0, sizeof *m);
	m->fd = -1;
}

/* ---- the communicator ------------------------------------------------------- */

/* Where every local rank's fd socket is (a random name) and which process
 * holds it, through the bootstrap: the names are bound before they travel,
 * and both ends check SO_PEERCRED against what came here (fdpass.h). */
static mk_status share_endpoints(mk_comm *c, char *err, size_t n)
{
	int w = bootstrap_world(c->b), lw = bootstrap_local_world(c->b);
	unsigned char *all = malloc((size_t)w * FDPASS_EP_WIRE), mine[FDPASS_EP_WIRE];
	fdpass_ep *eps = calloc((size_t)lw, sizeof *eps), me;
	mk_status st = MK_OK;

	if (!all || !eps) {
		free(all);
		free(eps);
		snprintf(err, n, "out of memory");
		return MK_ERR_NOMEM;
	}
	fdpass_self(c->f, &me);
	fdpass_ep_put(mine, &me);
	st = bootstrap_allgather(c->b, mine, all, sizeof mine);
	if (st != MK_OK)
		snprintf(err, n, "sharing the fd sockets: %s", bootstrap_error(c->b));
	for (int i = 0; st == MK_OK && i < lw; i++) {
		int g = bootstrap_local_to_global(c->b, i);
		if (g < 0 || g >= w || fdpass_ep_get(all + (size_t)g * FDPASS_EP_WIRE, &eps[i]) != 0) {
			snprintf(err, n, "rank %d sent a bad fd socket name", g);
			st = MK_ERR_PEER;
		}
	}
	if (st == MK_OK && (st = fdpass_set_peers(c->f, eps)) != MK_OK)
		snprintf(err, n, "%s", fdpass_error(c->f));
	free(all);
	free(eps);
	return st;
}

mk_status mk_comm_create(mk_comm **out, char *err, size_t n)
{
	if (!out)
		return MK_ERR_INVALID;
	*out = NULL;
	mk_comm *c = calloc(1, sizeof *c);
	if (!c)
		return MK_ERR_NOMEM;
	bootstrap_cfg cfg;
	mk_status st = bootstrap_config_env(&cfg, err, n);
	if (st == MK_OK)
		st = bootstrap_create(&cfg, &c->b, err, n);
	if (st != MK_OK) {
		free(c);
		return st;
	}
	int w = bootstrap_world(c->b);
	c->local_of = malloc((size_t)w * sizeof(int));
	if (!c->local_of) {
		mk_comm_destroy(c);
		return MK_ERR_NOMEM;
	}
	for (int r = 0; r < w; r++)
		c->local_of[r] = -1;
	for (int i = 0; i < bootstrap_local_world(c->b); i++) {
		int g = bootstrap_local_to_global(c->b, i);
		if (g >= 0 && g < w)
			c->local_of[g] = i;
	}
	fdpass_cfg fc = {.token = bootstrap_job_id(c->b), .rank = bootstrap_local_rank(c->b),
			 .nranks = bootstrap_local_world(c->b),
			 .timeout_ms = bootstrap_timeout_ms(c->b)};
	st = fdpass_create(&fc, &c->f, err, n);
	if (st == MK_OK)
		st = share_endpoints(c, err, n);
	if (st != MK_OK) {
		mk_comm_destroy(c);
		return st;
	}
	*out = c;
	return MK_OK;
}

void mk_comm_destroy(mk_comm *c)
{
	if (!c)
		return;
	fdpass_destroy(c->f);
	bootstrap_destroy(c->b);
	free(c->local_of);
	free(c);
}

int mk_comm_rank(const mk_comm *c) { return c ? bootstrap_rank(c->b) : 0; }
int mk_comm_size(const mk_comm *c) { return c ? bootstrap_world(c->b) : 1; }
int mk_comm_local_rank(const mk_comm *c) { return c ? bootstrap_local_rank(c->b) : 0; }
int mk_comm_local_size(const mk_comm *c) { return c ? bootstrap_local_world(c->b) : 1; }

mk_status mk_comm_barrier(mk_comm *c)
{
	if (!c)
		return MK_ERR_INVALID;
	mk_status st = bootstrap_barrier(c->b);
	if (st != MK_OK)
		snprintf(c->err, sizeof c->err, "%s", bootstrap_error(c->b));
	return st;
}

mk_status mk_comm_gather_int(mk_comm *c, int mine, int *all)
{
	if (!c || !all)
		return MK_ERR_INVALID;
	mk_status st = bootstrap_allgather(c->b, &mine, all, sizeof mine);
	if (st != MK_OK)
		snprintf(c->err, sizeof c->err, "%s", bootstrap_error(c->b));
	return st;
}

enum { TAG_FDS = 0x4d4b0000u };

mk_status comm_share_fds(mk_comm *c, const int *peers, int npeers, const int *mine,
			 const size_t *my_sizes, int n, int *fds, size_t *sizes)
{
	for (int k = 0; k < npeers * n; k++)
		fds[k] = -1;
	/* send everything first (sends do not block on the peer's receive),
	 * then receive: no ordering deadlock between pairs */
	for (int k = 0; k < npeers; k++) {
		int lp = c->local_of[peers[k]];
		if (lp < 0) {
			snprintf(c->err, sizeof c->err,
				 "rank %d shares a node of the mesh with rank %d but runs on another host",
				 peers[k], mk_comm_rank(c));
			return MK_ERR_INVALID;
		}
		for (int i = 0, part = 0; i < n; i += FDPASS_MAX_FDS, part++) {
			int m = n - i < FDPASS_MAX_FDS ? n - i : FDPASS_MAX_FDS;
			mk_status st = fdpass_send(c->f, lp, TAG_FDS + (uint32_t)part, mine + i, m,
						   my_sizes + i, (size_t)m * sizeof(size_t));
			if (st != MK_OK) {
				snprintf(c->err, sizeof c->err, "%s", fdpass_error(c->f));
				return st;
			}
		}
	}
	for (int k = 0; k < npeers; k++) {
		int lp = c->local_of[peers[k]];
		for (int i = 0, part = 0; i < n; i += FDPASS_MAX_FDS, part++) {
			int m = n - i < FDPASS_MAX_FDS ? n - i : FDPASS_MAX_FDS, got = 0;
			size_t len = 0;
			mk_status st = fdpass_recv(c->f, lp, TAG_FDS + (uint32_t)part, fds + k * n + i, m,
						   &got, sizes + k * n + i, (size_t)m * sizeof(size_t),
						   &len);
			if (st == MK_OK && (got != m || len != (size_t)m * sizeof(size_t))) {
				for (int j = 0; j < got; j++)
					close(fds[k * n + i + j]);
				snprintf(c->err, sizeof c->err,
					 "rank %d sent %d memory handles, expected %d", peers[k], got, m);
				return MK_ERR_PEER;
			}
			if (st != MK_OK) {
				snprintf(c->err, sizeof c->err, "%s", fdpass_error(c->f));
				return st;
			}
		}
	}
	return MK_OK;
}
