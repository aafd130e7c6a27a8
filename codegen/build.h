/* build.h - the back half of the path, one function: a verified schedule
 * becomes CUDA C (emit_cu.c), then PTX or a cubin through NVRTC and the
 * JIT cache (nvrtc.c, cache.c).  The mkc command and libmk's loader both
 * call cg_build, so they make the same code the same way: one default
 * target, one set of NVRTC options.
 */
#ifndef MK_BUILD_H
#define MK_BUILD_H

#include "emit.h"
#include "nvrtc.h"

typedef enum cg_stage { CG_TO_CUDA, CG_TO_PTX, CG_TO_CUBIN } cg_stage;

typedef struct cg_build_opts {
	const char *arch;       /* NVRTC target; NULL: "sm_90a" (cg_arch(9, 0)) */
	int use_cache;          /* the JIT cache (nvrtc.h) */
	const char *cache_dir;  /* NULL: $XDG_CACHE_HOME/mk or ~/.cache/mk */
	cg_emit_opts emit;      /* sys_scope (-1: from the schedule), per_stage */
} cg_build_opts;

typedef struct cg_build_out {
	char *cuda;             /* the generated source (malloc'd), NULL if none */
	cg_binary bin;          /* CG_TO_PTX / CG_TO_CUBIN: the binary, NVRTC's
	                           log, resource use, cache note */
	char arch[32];          /* the target it was built for */
	char err[256];          /* CG_EEMIT: what cannot be generated */
} cg_build_out;

/* Runs emit and, past CG_TO_CUDA, NVRTC (through the cache).  CG_OK, or
 * the first failure: CG_EEMIT (err[]), CG_ENOMEM, or NVRTC's status (its
 * log in bin.log).  Free with cg_build_free, whatever the status. */
cg_status cg_build(const ir_sched *s, cg_stage upto, const cg_build_opts *o,
		   cg_build_out *out);
void cg_build_free(cg_build_out *out);

/* The NVRTC target of a device of compute capability major.minor: the
 * architecture-specific sm_90a on Hopper (wgmma, setmaxnreg), sm_XY
 * elsewhere. */
void cg_arch(int major, int minor, char *buf, size_t n);

#endif
