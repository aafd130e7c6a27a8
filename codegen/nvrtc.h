/* nvrtc.h - CUDA C to PTX or cubin through NVRTC, with a disk cache.
 *
 * NVRTC is loaded at run time (dlopen of libnvrtc.so.13, .12, then
 * $CUDA_HOME/lib64 and /usr/local/cuda/lib64), so mkc and libmk start on a
 * machine without the CUDA toolkit and say what is missing only when asked
 * to compile.  The device library headers (the .cuh files of codegen/mkd/, embedded in
 * the binary) are handed to NVRTC in memory; nothing is read from disk.
 */
#ifndef MK_NVRTC_H
#define MK_NVRTC_H

#include <stddef.h>

typedef enum cg_status {
	CG_OK = 0,
	CG_ENOMEM,      /* out of memory */
	CG_ENONVRTC,    /* NVRTC library not found or unusable */
	CG_ECOMPILE,    /* NVRTC rejected the source; see log */
	CG_EIO,         /* file error (writing -o, ...) */
	CG_EINVAL,      /* bad argument */
	CG_EEMIT        /* the schedule cannot be generated as CUDA (yet) */
} cg_status;

typedef enum cg_output { CG_PTX, CG_CUBIN } cg_output;

typedef struct cg_compile_opts {
	const char *arch;            /* "sm_90a" when NULL */
	const char *const *extra;    /* extra NVRTC options, e.g. "-DMKD_SCOPE=1" */
	int nextra;
	int lineinfo;                /* -lineinfo */
	int use_cache;               /* look up / store in the disk cache */
	const char *cache_dir;       /* NULL: $XDG_CACHE_HOME/mk or ~/.cache/mk */
} cg_compile_opts;

typedef struct cg_binary {
	void *data;       /* PTX (NUL-terminated) or cubin; malloc'd */
	size_t size;      /* bytes, excluding the PTX's NUL */
	char *log;        /* NVRTC's log with file:line locations; malloc'd, "" if none */
	char *note;       /* one line about the cache ("cache directory ... not
	                     writable; compiling without a cache"), or NULL */
	int from_cache;
	/* Resource use, from ptxas's -v info in the NVRTC log (-1 = unknown). */
	int regs, stack_bytes, spill_stores, spill_loads, smem_bytes;
	double compile_ms;  /* NVRTC time; 0 on a cache hit */
	char key[65];       /* cache key, hex */
} cg_binary;

/* Compiles src (named name, for the log).  On CG_ECOMPILE, out->log holds
 * NVRTC's message.  The caller frees with cg_binary_free. */
cg_status cg_compile(const char *src, const char *name, const cg_compile_opts *o,
		     cg_output kind, cg_binary *out);
void cg_binary_free(cg_binary *b);

/* NVRTC's version, or CG_ENONVRTC with why[] filled. */
cg_status cg_nvrtc_version(int *major, int *minor, char *why, size_t n);
const char *cg_strerror(cg_status s);

/* The embedded device library (generated from codegen/mkd/ at build time). */
typedef struct mkd_file {
	const char *name;   /* "mkd/flags.cuh" */
	const char *text;
} mkd_file;
extern const mkd_file mkd_files[];
extern const int mkd_nfiles;

#endif
