/* nccl.h - NCCL loaded at run time (base/dynlib, once per process), for the
 * GPU benchmarks: the few pieces of the NCCL 2.x ABI they use, checked
 * against nccl.h where the build has it, so that they build where it does
 * not.  Header-only: each tests/gpu/ source is its own program.
 *
 * Looked for in $MK_NCCL_DIR, then on the loader's path, then in the Python
 * nvidia-nccl wheel directories, $CUDA_HOME/lib64, /usr/local/cuda/lib64 and
 * /usr/lib/x86_64-linux-gnu.
 */
#ifndef MKT_NCCL_H
#define MKT_NCCL_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/dynlib.h"
#include "runtime/cudrv.h"
#include "tests/gpu/findlib.h"

typedef struct mkt_nccl_comm_s *mkt_nccl_comm;
typedef struct mkt_nccl_id { char internal[128]; } mkt_nccl_id;
enum { MKT_NCCL_BF16 = 9, MKT_NCCL_SUM = 0 };
#if defined(__has_include)
#if __has_include(<nccl.h>)
#include <nccl.h>
_Static_assert(sizeof(ncclUniqueId) == sizeof(mkt_nccl_id), "ncclUniqueId size");
_Static_assert((int)ncclBfloat16 == (int)MKT_NCCL_BF16 && (int)ncclSum == (int)MKT_NCCL_SUM,
	       "NCCL enum values");
#endif
#endif

#define MKT_NCCL_FUNCS(X)                                                                 \
	X(GetVersion, "ncclGetVersion", int, (int *))                                     \
	X(GetErrorString, "ncclGetErrorString", const char *, (int))                      \
	X(GetUniqueId, "ncclGetUniqueId", int, (mkt_nccl_id *))                           \
	X(CommInitRank, "ncclCommInitRank", int, (mkt_nccl_comm *, int, mkt_nccl_id, int)) \
	X(CommDestroy, "ncclCommDestroy", int, (mkt_nccl_comm))                           \
	X(AllGather, "ncclAllGather", int,                                                \
	  (const void *, void *, size_t, int, mkt_nccl_comm, CUstream))                   \
	X(ReduceScatter, "ncclReduceScatter", int,                                        \
	  (const void *, void *, size_t, int, int, mkt_nccl_comm, CUstream))              \
	X(AllReduce, "ncclAllReduce", int,                                                \
	  (const void *, void *, size_t, int, int, mkt_nccl_comm, CUstream))

static struct mkt_nccl_fns {
	MKT_NCCL_FUNCS(DYNLIB_FIELD)
} mkt_nccl_fn;
static const char *const mkt_nccl_syms[] = {MKT_NCCL_FUNCS(DYNLIB_NAME) NULL};
DYNLIB_CHECK(struct mkt_nccl_fns, mkt_nccl_syms);
static dynlib mkt_nccl_dl = {.syms = mkt_nccl_syms, .table = &mkt_nccl_fn};

typedef struct mkt_nccl {
	mkt_nccl_comm comm;  /* the user's communicator; NULL: none */
	int version;         /* major * 10000 + minor * 100 + patch, 0: unknown */
	char path[1024];     /* the file opened */
	char why[2048];      /* why not */
} mkt_nccl;

/* The library (no GPU needed): 0, or -1 with n->why. */
static __attribute__((unused)) int mkt_nccl_load(mkt_nccl *n)
{
	static const char *const names[] = {"libnccl.so.2", "libnccl.so", NULL};
	char cuda_dir[300];
	const char *ch = getenv("CUDA_HOME");
	snprintf(cuda_dir, sizeof cuda_dir, "%.280s/lib64", ch && *ch ? ch : "/usr/local/cuda");
	const char *const dirs[] = {
		"/usr/local/lib/python3*/dist-packages/nvidia/nccl/lib",
		"/usr/local/lib/python3*/site-packages/nvidia/nccl/lib",
		"/opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl/lib",
		"/usr/lib/python3*/dist-packages/nvidia/nccl/lib",
		"/usr/lib/python3/dist-packages/nvidia/nccl/lib",
		cuda_dir, "/usr/local/cuda/lib64", "/usr/lib/x86_64-linux-gnu", NULL};
	int r = mkt_findlib(&mkt_nccl_dl, names, getenv("MK_NCCL_DIR"), dirs, n->path,
			    sizeof n->path);
	if (r == 0) {
		snprintf(n->why, sizeof n->why,
			 "no libnccl.so.2 (looked in $MK_NCCL_DIR, the loader's path, the Python "
			 "nvidia-nccl wheel directories, %s); set MK_NCCL_DIR", cuda_dir);
		return -1;
	}
	if (r < 0) {
		snprintf(n->why, sizeof n->why, "%s lacks an entry point: %s", n->path,
			 mkt_findlib_missing(&mkt_nccl_dl));
		return -1;
	}
	if (mkt_nccl_fn.GetVersion(&n->version) != 0)
		n->version = 0;
	return 0;
}

#endif
