/* nvrtc.c - CUDA C to PTX or cubin through NVRTC, with the disk cache.
 *
 * NVRTC is opened with dlopen once per process (base/dynlib); every compile
 * then builds its option list, hashes everything that can change the output
 * into the cache key, and either returns a verified cache entry or runs
 * NVRTC and stores the result.  The cache is an optimisation only: when it
 * cannot be used the compile still happens and `note` says why, once per
 * compile.
 *
 * A cache entry's payload is the binary followed by NVRTC's log and a
 * 16-byte trailer {u64 binary size, u64 log size}: the binary starts right
 * after the entry header, and a hit can still report ptxas's resource use
 * (and warnings), which callers print and compare, hit or miss alike.
 *
 * CUDA's nvrtc.h is not included: its name collides with ours, and the few
 * prototypes we call have been stable since CUDA 11.
 */
#include "nvrtc.h"
#include "cache.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/dynlib.h"
#include "base/le.h"

/* ---- loading NVRTC ------------------------------------------------------- */

typedef void *nvprog;  /* nvrtcProgram: an opaque pointer */

#define NVRTC_FUNCS(X)                                                        \
	X(nvrtcVersion, int, (int *, int *))                                  \
	X(nvrtcGetErrorString, const char *, (int))                           \
	X(nvrtcCreateProgram, int, (nvprog *, const char *, const char *, int, \
	  const char *const *, const char *const *))                          \
	X(nvrtcDestroyProgram, int, (nvprog *))                               \
	X(nvrtcCompileProgram, int, (nvprog, int, const char *const *))       \
	X(nvrtcGetProgramLogSize, int, (nvprog, size_t *))                    \
	X(nvrtcGetProgramLog, int, (nvprog, char *))                          \
	X(nvrtcGetPTXSize, int, (nvprog, size_t *))                           \
	X(nvrtcGetPTX, int, (nvprog, char *))                                 \
	X(nvrtcGetCUBINSize, int, (nvprog, size_t *))                         \
	X(nvrtcGetCUBIN, int, (nvprog, char *))

static struct {
#define X(name, ret, params) ret(*name) params;
	NVRTC_FUNCS(X)
#undef X
	int major, minor;
	int ok;
	char why[512];
} nv;
static pthread_once_t nv_once = PTHREAD_ONCE_INIT;

#define X(name, ret, params) #name,
static const char *const nv_syms[] = {NVRTC_FUNCS(X) NULL};
#undef X
static void *nv_fns[sizeof nv_syms / sizeof nv_syms[0]];

/* The sonames, then each in $CUDA_HOME/lib64 and /usr/local/cuda/lib64. */
static void nv_load(void)
{
	static const char *const sonames[] = { "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so" };
	const char *dirs[2] = { getenv("CUDA_HOME"), "/usr/local/cuda" };
	static char paths[6][PATH_MAX];
	static const char *names[10];
	static dynlib lib = {.names = names, .syms = nv_syms, .table = nv_fns};
	int i, j, k = 0, n = 0;

	for (i = 0; i < 3; i++)
		names[k++] = sonames[i];
	for (j = 0; j < 2; j++) {
		if (!dirs[j] || !*dirs[j])
			continue;
		for (i = 0; i < 3; i++) {
			snprintf(paths[n], sizeof paths[n], "%s/lib64/%s", dirs[j], sonames[i]);
			names[k++] = paths[n++];
		}
	}
	names[k] = NULL;
	if (!dynlib_open(&lib)) {
		if (lib.missing >= 0)
			snprintf(nv.why, sizeof nv.why, "NVRTC unusable (no %s in libnvrtc)",
				 nv_syms[lib.missing]);
		else
			snprintf(nv.why, sizeof nv.why, "NVRTC not found (%.400s); install the "
				 "CUDA toolkit or set CUDA_HOME", lib.why);
		return;
	}
	i = 0;
#define X(name, ret, params) nv.name = (ret(*) params)nv_fns[i++];
	NVRTC_FUNCS(X)
#undef X
	if (nv.nvrtcVersion(&nv.major, &nv.minor) != 0) {
		snprintf(nv.why, sizeof nv.why, "NVRTC unusable (nvrtcVersion failed)");
		return;
	}
	nv.ok = 1;  /* the library stays open for the life of the process */
}

static int nv_ready(void)
{
	pthread_once(&nv_once, nv_load);
	return nv.ok;
}

cg_status cg_nvrtc_version(int *major, int *minor, char *why, size_t n)
{
	if (!nv_ready()) {
		if (why && n)
			snprintf(why, n, "%s", nv.why);
		return CG_ENONVRTC;
	}
	if (major)
		*major = nv.major;
	if (minor)
		*minor = nv.minor;
	if (why && n)
		why[0] = '\0';
	return CG_OK;
}

const char *cg_strerror(cg_status s)
{
	switch (s) {
	case CG_OK: return "success";
	case CG_ENOMEM: return "out of memory";
	case CG_ENONVRTC: return "NVRTC library not found or unusable";
	case CG_ECOMPILE: return "CUDA compilation failed";
	case CG_EIO: return "I/O error";
	case CG_EINVAL: return "invalid argument";
	case CG_EEMIT: return "cannot generate CUDA";
	}
	return "unknown status";
}

/* ---- ptxas -v in the log --------------------------------------------------- */

/* The number just before `unit` on the line [line, end), or -1. */
static int num_before(const char *line, const char *end, const char *unit)
{
	const char *u, *p;
	size_t ulen = strlen(unit);

	for (u = line; u + ulen <= end; u++) {
		if (memcmp(u, unit, ulen) != 0)
			continue;
		p = u;
		if (p == line || p[-1] < '0' || p[-1] > '9')
			continue;
		while (p > line && p[-1] >= '0' && p[-1] <= '9')
			p--;
		return (int)strtol(p, NULL, 10);
	}
	return -1;
}

static int maxi(int a, int b) { return a > b ? a : b; }

/* ptxas -v prints, per function:
 *   ptxas info    : Used 40 registers, used 1 barriers, 1024 bytes smem, ...
 *       0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
 * smem is left out when 0.  A module can hold several functions: report
 * the worst of each figure. */
static void parse_resources(const char *log, cg_binary *b)
{
	const char *line, *end;
	int v;

	for (line = log; *line; line = *end ? end + 1 : end) {
		end = strchr(line, '\n');
		if (!end)
			end = line + strlen(line);
		if ((v = num_before(line, end, " registers")) >= 0) {
			b->regs = maxi(b->regs, v);
			v = num_before(line, end, " bytes smem");
			b->smem_bytes = maxi(b->smem_bytes, v < 0 ? 0 : v);
		}
		if ((v = num_before(line, end, " bytes stack frame")) >= 0)
			b->stack_bytes = maxi(b->stack_bytes, v);
		if ((v = num_before(line, end, " bytes spill stores")) >= 0)
			b->spill_stores = maxi(b->spill_stores, v);
		if ((v = num_before(line, end, " bytes spill loads")) >= 0)
			b->spill_loads = maxi(b->spill_loads, v);
	}
}

/* ---- the cache key ------------------------------------------------------- */

/* Each field is length-prefixed, so ("ab","c") and ("a","bc") differ. */
static void hash_field(sha256_ctx *c, const void *p, size_t n)
{
	unsigned char len[8];

	le_put64(len, (uint64_t)n);
	sha256_update(c, len, 8);
	sha256_update(c, p, n);
}

static void hash_str(sha256_ctx *c, const char *s)
{
	hash_field(c, s, strlen(s));
}

/* Everything that can change NVRTC's output: the source and its name (it is
 * in -lineinfo's tables), the options in order, NVRTC's version, the arch,
 * the kind of output, and the embedded headers, which change with mkc
 * itself while the generated source may not. */
static void make_key(const char *src, const char *name, const char *const *opts, int nopts,
		     const char *arch, cg_output kind, char key[65])
{
	sha256_ctx c;
	unsigned char d[32];
	char ver[32];
	int i;

	sha256_init(&c);
	hash_str(&c, "mkc nvrtc cache key v1");
	hash_str(&c, src);
	hash_str(&c, name);
	for (i = 0; i < nopts; i++)
		hash_str(&c, opts[i]);
	snprintf(ver, sizeof ver, "nvrtc %d.%d", nv.major, nv.minor);
	hash_str(&c, ver);
	hash_str(&c, arch);
	hash_str(&c, kind == CG_CUBIN ? "cubin" : "ptx");
	for (i = 0; i < mkd_nfiles; i++) {
		hash_str(&c, mkd_files[i].name);
		hash_str(&c, mkd_files[i].text);
	}
	sha256_final(&c, d);
	sha256_hex(d, key);
}

/* ---- cache payload: binary, log, trailer --------------------------------- */

/* Splits a cached payload into out->data and out->log; 0 on success. */
static int unpack(unsigned char *pay, size_t n, cg_binary *out)
{
	uint64_t bin, log;

	if (n < 16)
		return -1;
	bin = le_get64(pay + n - 16);
	log = le_get64(pay + n - 8);
	if (bin > n - 16 || log != n - 16 - bin)
		return -1;
	out->log = malloc((size_t)log + 1);
	if (!out->log)
		return -1;
	memcpy(out->log, pay + bin, (size_t)log);
	out->log[log] = '\0';
	/* Shrink in place: the binary is already at the front. */
	pay[bin] = '\0';
	out->data = pay;
	out->size = (size_t)bin;
	return 0;
}

static cg_status store(const char *dir, const char *key, const cg_binary *b)
{
	size_t loglen = strlen(b->log), n = b->size + loglen + 16;
	unsigned char *pay = malloc(n);
	cg_status s;

	if (!pay)
		return CG_ENOMEM;
	memcpy(pay, b->data, b->size);
	memcpy(pay + b->size, b->log, loglen);
	le_put64(pay + n - 16, b->size);
	le_put64(pay + n - 8, loglen);
	s = cg_cache_put(dir, key, pay, n);
	free(pay);
	return s;
}

/* ---- compiling ----------------------------------------------------------- */

static char *dupstr(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = malloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* Runs NVRTC; fills data, size, log, compile_ms. */
static cg_status run_nvrtc(const char *src, const char *name, const char *const *opts,
			   int nopts, cg_output kind, cg_binary *out)
{
	const char **hdr = NULL, **hname = NULL;
	nvprog prog = NULL;
	size_t n = 0;
	cg_status s = CG_ENOMEM;
	int i, rc, nh = 0;
	double t0 = now_ms();

	/* NVRTC matches #include names against in-memory headers exactly; it
	 * does not look beside the including header as a compiler on a file
	 * system does.  So each header is also given under its name relative
	 * to its own directory: "base.cuh" from inside mkd/ works as it would
	 * on disk (include guards keep the two names one file). */
	if (mkd_nfiles > 0) {
		hdr = malloc(sizeof *hdr * 2 * (size_t)mkd_nfiles);
		hname = malloc(sizeof *hname * 2 * (size_t)mkd_nfiles);
		if (!hdr || !hname)
			goto done;
		for (i = 0; i < mkd_nfiles; i++) {
			const char *slash = strrchr(mkd_files[i].name, '/');
			hdr[nh] = mkd_files[i].text;
			hname[nh++] = mkd_files[i].name;
			if (slash) {
				hdr[nh] = mkd_files[i].text;
				hname[nh++] = slash + 1;
			}
		}
	}
	rc = nv.nvrtcCreateProgram(&prog, src, name, nh, hdr, hname);
	if (rc != 0) {
		/* NVRTC_ERROR_OUT_OF_MEMORY is 1; anything else is our input. */
		out->log = dupstr(nv.nvrtcGetErrorString(rc));
		s = rc == 1 ? CG_ENOMEM : CG_EINVAL;
		prog = NULL;
		goto done;
	}
	rc = nv.nvrtcCompileProgram(prog, nopts, opts);
	if (nv.nvrtcGetProgramLogSize(prog, &n) != 0 || !(out->log = malloc(n + 1)))
		goto done;
	out->log[0] = '\0';
	if (n && nv.nvrtcGetProgramLog(prog, out->log) != 0)
		out->log[0] = '\0';
	out->log[n] = '\0';
	if (rc != 0) {
		/* A bad option is reported through the same log, prefixed by
		 * NVRTC's status so an empty log still says something. */
		if (!out->log[0]) {
			free(out->log);
			out->log = dupstr(nv.nvrtcGetErrorString(rc));
		}
		s = CG_ECOMPILE;
		goto done;
	}
	if (kind == CG_CUBIN)
		rc = nv.nvrtcGetCUBINSize(prog, &n);
	else
		rc = nv.nvrtcGetPTXSize(prog, &n);
	if (rc != 0 || n == 0) {
		s = CG_ECOMPILE;
		goto done;
	}
	if (!(out->data = malloc(n + 1)))
		goto done;
	rc = kind == CG_CUBIN ? nv.nvrtcGetCUBIN(prog, out->data)
			      : nv.nvrtcGetPTX(prog, out->data);
	if (rc != 0) {
		s = CG_ECOMPILE;
		goto done;
	}
	/* NVRTC's PTX size counts the NUL; ours does not. */
	((char *)out->data)[n] = '\0';
	out->size = kind == CG_PTX ? strlen(out->data) : n;
	s = CG_OK;
done:
	if (prog)
		nv.nvrtcDestroyProgram(&prog);
	free(hdr);
	free(hname);
	out->compile_ms = now_ms() - t0;
	return s;
}

/* PTX for sm_XX is the PTX of compute_XX; asking for it directly spares the
 * ptxas run NVRTC would otherwise do for a cubin nobody takes. */
static void target_arch(const char *arch, cg_output kind, char *buf, size_t n)
{
	if (kind == CG_PTX && strncmp(arch, "sm_", 3) == 0)
		snprintf(buf, n, "compute_%s", arch + 3);
	else
		snprintf(buf, n, "%s", arch);
}

cg_status cg_compile(const char *src, const char *name, const cg_compile_opts *o,
		     cg_output kind, cg_binary *out)
{
	static const cg_compile_opts none;
	const char **opts = NULL;
	const char *arch;
	char archopt[96], tarch[48], dir[PATH_MAX] = "", why[512] = "";
	void *hit = NULL;
	size_t hitn = 0;
	cg_status s;
	int nopts = 0, i, have_dir = 0;

	if (!out)
		return CG_EINVAL;
	memset(out, 0, sizeof *out);
	out->regs = out->stack_bytes = out->spill_stores = out->spill_loads = out->smem_bytes = -1;
	if (!o)
		o = &none;
	if (!src || (kind != CG_PTX && kind != CG_CUBIN) || o->nextra < 0 ||
	    (o->nextra > 0 && !o->extra))
		return CG_EINVAL;
	if (!name || !*name)
		name = "mk.cu";
	arch = o->arch && *o->arch ? o->arch : "sm_90a";
	if (strlen(arch) > 32)
		return CG_EINVAL;
	if (!nv_ready()) {
		out->log = dupstr(nv.why);
		return out->log ? CG_ENONVRTC : CG_ENOMEM;
	}

	target_arch(arch, kind, tarch, sizeof tarch);
	snprintf(archopt, sizeof archopt, "--gpu-architecture=%s", tarch);
	opts = malloc(sizeof *opts * (size_t)(o->nextra + 7));
	if (!opts)
		return CG_ENOMEM;
	opts[nopts++] = archopt;
	opts[nopts++] = "-default-device";
	opts[nopts++] = "-std=c++17";
	if (kind == CG_CUBIN)
		opts[nopts++] = "--ptxas-options=-v";  /* resource use into the log */
	/* NVRTC 12.9+ keeps its own cache in the driver's compute cache when a
	 * driver is present; a hit there skips ptxas and so leaves the log
	 * without resource use (seen on an H200 machine).  Ours keeps it. */
	if (nv.major > 12 || (nv.major == 12 && nv.minor >= 9))
		opts[nopts++] = "--no-cache";
	if (o->lineinfo)
		opts[nopts++] = "-lineinfo";
	for (i = 0; i < o->nextra; i++) {
		if (!o->extra[i]) {
			free(opts);
			return CG_EINVAL;
		}
		opts[nopts++] = o->extra[i];
	}
	make_key(src, name, opts, nopts, arch, kind, out->key);

	if (o->use_cache) {
		if (cg_cache_open(o->cache_dir, dir, sizeof dir, why, sizeof why) == CG_OK)
			have_dir = 1;
		if (have_dir && cg_cache_get(dir, out->key, &hit, &hitn) == CG_OK) {
			if (unpack(hit, hitn, out) == 0) {
				out->from_cache = 1;
				parse_resources(out->log, out);
				free(opts);
				return CG_OK;
			}
			free(hit);  /* a payload of another layout: recompile over it */
			free(out->log);
			out->log = NULL;
		}
	}

	s = run_nvrtc(src, name, opts, nopts, kind, out);
	free(opts);
	if (!out->log)
		out->log = dupstr("");
	if (!out->log) {
		cg_binary_free(out);
		return CG_ENOMEM;
	}
	if (s != CG_OK) {
		free(out->data);
		out->data = NULL;
		out->size = 0;
		return s;
	}
	parse_resources(out->log, out);

	if (o->use_cache) {
		char note[PATH_MAX + 640];
		if (have_dir) {
			if (store(dir, out->key, out) == CG_OK)
				return CG_OK;
			snprintf(why, sizeof why, "not writable (%s)", strerror(errno));
		}
		snprintf(note, sizeof note, "cache directory %s %s; compiling without a cache",
			 dir[0] ? dir : "(unresolved)", why);
		out->note = dupstr(note);  /* NULL on OOM: the note is a courtesy */
	}
	return CG_OK;
}

void cg_binary_free(cg_binary *b)
{
	if (!b)
		return;
	free(b->data);
	free(b->log);
	free(b->note);
	b->data = NULL;
	b->log = NULL;
	b->note = NULL;
	b->size = 0;
}
