/* bench_copy.c - the two copy methods of mkd/copy.cuh on one GPU: 16-byte
 * vector loads/stores (mkd_copy_2d) against TMA bulk copies through shared
 * memory (mkd_copy_bulk_2d).
 *
 *   bench_copy                    checks and timings (H200), tables last
 *   bench_copy --compile-only [--cubin FILE]
 *                                 NVRTC only, no GPU: registers, stack and
 *                                 spills (exit 1 on any), the sm_90a cubin
 *                                 to FILE for cuobjdump, and the sm_80
 *                                 build (the bulk path falls back there)
 *
 * Cases:
 *  (a) one CTA copies 64 KB .. 4 MB per call, calls back to back over
 *      128 MB of fresh addresses (so both sides come from HBM, not L2);
 *  (a2) bulk tuning: one CTA, 4 MB per call, chunk x scratch size;
 *  (b) 1..132 CTAs copy a 1 GiB buffer cut in 256 KB or 1 MB chunks
 *      (CTA b takes chunks b, b + grid, ...);
 *  (c) 2-D strided: rows of 2048 B out of a 16 KB stride on both sides
 *      (65536 rows, 128 MB moved), 1 CTA (512 rows a call) and 132 CTAs
 *      (128 rows a call).
 * Every call ends with a CTA barrier, as a task of the megakernel does.
 * Source and destination are separate cuMemAlloc buffers of one GPU, which
 * is what virtual ranks do; peer GPUs over NVLink are measured later.
 *
 * Each configuration is checked: the destination is set to a sentinel,
 * copied once, and every word of it compared on the GPU with what must be
 * there (the source's pattern inside the box, the sentinel outside); then
 * two warm-up and 20 timed launches (CUDA events, median), then checked
 * again.  A wrong copy makes the program exit 1.  GB/s count bytes read plus
 * bytes written (2 x bytes copied), 1 GB = 1e9 B.  Without a GPU it prints
 * one "skipped" line and exits 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/nvrtc.h"
#include "runtime/cudrv.h"

#define RUNS 20
#define WARM 2
#define BUF (1ll << 30)            /* each of source and destination */
#define SENTINEL 0xDEADBEEFu

static const char SRC[] =
	"#include \"mkd/mkd.cuh\"\n"
	"\n"
	"#define MKT_SENTINEL 0xDEADBEEFu\n"
	"// word w of the source; the host never needs it\n"
	"static __device__ __forceinline__ unsigned mkt_pat(unsigned long long w)\n"
	"{\n"
	"\tw = w * 0x9E3779B97F4A7C15ull + 12345;\n"
	"\tw ^= w >> 29;\n"
	"\tw *= 0xBF58476D1CE4E5B9ull;\n"
	"\tunsigned v = (unsigned)(w >> 32);\n"
	"\treturn v == MKT_SENTINEL ? 0u : v;\n"
	"}\n"
	"extern \"C\" __global__ void mkt_fill(unsigned *p, long long nwords)\n"
	"{\n"
	"\tfor (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < nwords;\n"
	"\t     i += (long long)gridDim.x * blockDim.x)\n"
	"\t\tp[i] = mkt_pat((unsigned long long)i);\n"
	"}\n"
	"// every word of dst[0, nwords): the source's inside the box, the sentinel\n"
	"// outside; bad[0] counts mismatches, bad[1] the first bad word\n"
	"extern \"C\" __global__ void mkt_check(const unsigned *dst, long long nwords, long long rows,\n"
	"\t\t\t\t\t  long long row_bytes, long long dst_ld, long long src_ld,\n"
	"\t\t\t\t\t  unsigned long long *bad)\n"
	"{\n"
	"\tunsigned long long n = 0, first = ~0ull;\n"
	"\tfor (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < nwords;\n"
	"\t     i += (long long)gridDim.x * blockDim.x) {\n"
	"\t\tconst long long b = 4 * i, r = b / dst_ld, c = b - r * dst_ld;\n"
	"\t\tconst unsigned want = r < rows && c < row_bytes ?\n"
	"\t\t\tmkt_pat((unsigned long long)((r * src_ld + c) / 4)) : MKT_SENTINEL;\n"
	"\t\tif (dst[i] != want) {\n"
	"\t\t\tn++;\n"
	"\t\t\tif ((unsigned long long)i < first)\n"
	"\t\t\t\tfirst = (unsigned long long)i;\n"
	"\t\t}\n"
	"\t}\n"
	"\tif (n) {\n"
	"\t\tasm volatile(\"red.global.add.u64 [%0], %1;\" :: \"l\"(bad), \"l\"(n) : \"memory\");\n"
	"\t\tasm volatile(\"red.global.min.u64 [%0], %1;\" :: \"l\"(bad + 1), \"l\"(first) : \"memory\");\n"
	"\t}\n"
	"}\n"
	"\n"
	"// rows x row_bytes in calls of chunk_rows rows; CTA b takes calls b, b + grid, ...\n"
	"template <int BULK>\n"
	"static __device__ __forceinline__ void mkt_copy(char *dst, const char *src, i64 rows,\n"
	"\t\t\t\t\t\t i64 row_bytes, i64 dst_ld, i64 src_ld,\n"
	"\t\t\t\t\t\t i64 chunk_rows, unsigned smem_bytes, unsigned chunk)\n"
	"{\n"
	"\textern __shared__ __align__(128) char smem[];\n"
	"\tconst i64 n = (rows + chunk_rows - 1) / chunk_rows;\n"
	"\tfor (i64 k = blockIdx.x; k < n; k += gridDim.x) {\n"
	"\t\tconst i64 r0 = k * chunk_rows, nr = rows - r0 < chunk_rows ? rows - r0 : chunk_rows;\n"
	"\t\tif (BULK) {\n"
	"\t\t\tmkd_copy_bulk_2d(dst + r0 * dst_ld, dst_ld, src + r0 * src_ld, src_ld, nr,\n"
	"\t\t\t\t\t row_bytes, smem, smem_bytes, chunk);\n"
	"\t\t} else {\n"
	"\t\t\tmkd_copy_2d(dst + r0 * dst_ld, dst_ld, src + r0 * src_ld, src_ld, nr, row_bytes);\n"
	"\t\t\t__syncthreads();  // a task ends with a barrier\n"
	"\t\t}\n"
	"\t}\n"
	"}\n"
	"#define MKT_COPY(name, BULK)                                                            \\\n"
	"\textern \"C\" __global__ void __launch_bounds__(384, 1)                                \\\n"
	"\tname(char *dst, const char *src, i64 rows, i64 row_bytes, i64 dst_ld, i64 src_ld,     \\\n"
	"\t     i64 chunk_rows, unsigned smem_bytes, unsigned chunk)                             \\\n"
	"\t{                                                                                   \\\n"
	"\t\tmkt_copy<BULK>(dst, src, rows, row_bytes, dst_ld, src_ld, chunk_rows, smem_bytes, \\\n"
	"\t\t\t       chunk);                                                            \\\n"
	"\t}\n"
	"MKT_COPY(mkt_copy_vec, 0)\n"
	"MKT_COPY(mkt_copy_bulk, 1)\n";

#define CK(call)                                                                      \
	do {                                                                          \
		CUresult r_ = (call);                                                 \
		if (r_ != CUDA_SUCCESS) {                                             \
			fprintf(stderr, "bench_copy: %s:%d: %s: %s\n", __FILE__, __LINE__, #call, \
				cudrv_errstr(r_));                                    \
			exit(1);                                                      \
		}                                                                     \
	} while (0)

static const cudrv *cu;
static CUfunction fill_fn, check_fn, vec_fn, bulk_fn;
static CUdeviceptr src_buf, dst_buf, bad_buf;
static int sms, max_smem, failures;

/* A method: which kernel, threads, and for bulk the scratch and chunk. */
typedef struct method {
	const char *name;
	int bulk, threads;
	unsigned smem, chunk;
} method;

/* MKD_BULK_SMEM(S, C) of copy.cuh: S stages of C bytes */
#define SCRATCH(S, C) (127u + 128u + (S) * (C))

static const method METHODS[] = {
	{"vec 256", 0, 256, 0, 0},
	{"vec 384", 0, 384, 0, 0},
	{"bulk 256 4x16K", 1, 256, SCRATCH(4, 16384), 16384},
	{"bulk 384 4x16K", 1, 384, SCRATCH(4, 16384), 16384},
	{"bulk 256 12x16K", 1, 256, SCRATCH(12, 16384), 16384},
};
#define NMETHODS (int)(sizeof METHODS / sizeof METHODS[0])

/* A copy: rows x row_bytes, strides, rows per call, CTAs. */
typedef struct job {
	long long rows, row_bytes, dst_ld, src_ld, chunk_rows;
	int grid;
} job;

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

static void launch(const method *m, const job *j)
{
	void *args[] = {&dst_buf, &src_buf, (void *)&j->rows, (void *)&j->row_bytes,
			(void *)&j->dst_ld, (void *)&j->src_ld, (void *)&j->chunk_rows,
			(void *)&m->smem, (void *)&m->chunk};
	CK(cu->cuLaunchKernel(m->bulk ? bulk_fn : vec_fn, (unsigned)j->grid, 1, 1,
			      (unsigned)m->threads, 1, 1, m->smem, NULL, args, NULL));
}

/* Every word of the destination buffer against what the job must leave. */
static int check(const method *m, const job *j, const char *when)
{
	unsigned long long bad[2] = {0, ~0ull};
	long long nwords = BUF / 4;
	CK(cu->cuMemcpyHtoD(bad_buf, bad, sizeof bad));
	void *args[] = {&dst_buf, &nwords, (void *)&j->rows, (void *)&j->row_bytes,
			(void *)&j->dst_ld, (void *)&j->src_ld, &bad_buf};
	CK(cu->cuLaunchKernel(check_fn, (unsigned)sms * 4, 1, 1, 512, 1, 1, 0, NULL, args, NULL));
	CK(cu->cuMemcpyDtoH(bad, bad_buf, sizeof bad));
	if (bad[0] == 0)
		return 0;
	unsigned got = 0;
	CK(cu->cuMemcpyDtoH(&got, dst_buf + 4 * bad[1], 4));
	printf("FAIL %s, %lld x %lld B (ld %lld/%lld, %lld rows a call, %d CTAs), %s: %llu words "
	       "wrong, first at byte %llu (holds 0x%08x)\n",
	       m->name, j->rows, j->row_bytes, j->dst_ld, j->src_ld, j->chunk_rows, j->grid, when,
	       bad[0], 4 * bad[1], got);
	failures++;
	return 1;
}

/* Checked, then timed: GB/s (read + written), or 0 when wrong or skipped. */
static double measure(const method *m, const job *j)
{
	if (m->smem > (unsigned)max_smem)
		return 0;
	CK(cu->cuMemsetD32(dst_buf, SENTINEL, BUF / 4));
	launch(m, j);
	CK(cu->cuCtxSynchronize());
	if (check(m, j, "first call"))
		return 0;
	CUevent e[RUNS + 1];
	for (int i = 0; i <= RUNS; i++)
		CK(cu->cuEventCreate(&e[i], 0));
	for (int i = 0; i < WARM; i++)
		launch(m, j);
	CK(cu->cuEventRecord(e[0], NULL));
	for (int i = 0; i < RUNS; i++) {
		launch(m, j);
		CK(cu->cuEventRecord(e[i + 1], NULL));
	}
	CK(cu->cuEventSynchronize(e[RUNS]));
	float t[RUNS];
	for (int i = 0; i < RUNS; i++)
		CK(cu->cuEventElapsedTime(&t[i], e[i], e[i + 1]));
	for (int i = 0; i <= RUNS; i++)
		CK(cu->cuEventDestroy(e[i]));
	if (check(m, j, "after the timed runs"))
		return 0;
	qsort(t, RUNS, sizeof t[0], cmp_float);
	double ms = (t[RUNS / 2 - 1] + t[RUNS / 2]) / 2;
	return 2.0 * (double)(j->rows * j->row_bytes) / (ms * 1e-3) / 1e9;
}

static double memcpy_dtod(void)
{
	CUevent e[RUNS + 1];
	for (int i = 0; i <= RUNS; i++)
		CK(cu->cuEventCreate(&e[i], 0));
	CK(cu->cuMemcpyDtoD(dst_buf, src_buf, BUF));
	CK(cu->cuEventRecord(e[0], NULL));
	for (int i = 0; i < RUNS; i++) {
		CK(cu->cuMemcpyDtoD(dst_buf, src_buf, BUF));
		CK(cu->cuEventRecord(e[i + 1], NULL));
	}
	CK(cu->cuEventSynchronize(e[RUNS]));
	float t[RUNS];
	for (int i = 0; i < RUNS; i++)
		CK(cu->cuEventElapsedTime(&t[i], e[i], e[i + 1]));
	for (int i = 0; i <= RUNS; i++)
		CK(cu->cuEventDestroy(e[i]));
	qsort(t, RUNS, sizeof t[0], cmp_float);
	return 2.0 * (double)BUF / ((t[RUNS / 2 - 1] + t[RUNS / 2]) / 2 * 1e-3) / 1e9;
}

/* ---- compiling -------------------------------------------------------------- */

static void print_ptxas(const char *log)
{
	for (const char *l = log; *l;) {
		const char *e = strchr(l, '\n');
		size_t n = e ? (size_t)(e - l) : strlen(l);
		if (memmem(l, n, "registers", 9) || memmem(l, n, "spill", 5) ||
		    memmem(l, n, "Compiling entry", 15) || memmem(l, n, "stack", 5) ||
		    memmem(l, n, "warning", 7))
			printf("  %.*s\n", (int)n, l);
		l += n + (e != NULL);
	}
}

/* 0 when the kernels build for arch with no stack and no spills. */
static int compile(const char *arch, cg_binary *bin, int verbose)
{
	cg_compile_opts o = {.arch = arch, .use_cache = 1};
	cg_status st = cg_compile(SRC, "bench_copy.cu", &o, CG_CUBIN, bin);
	if (st != CG_OK) {
		fprintf(stderr, "bench_copy: NVRTC (%s): %s\n%s\n", arch, cg_strerror(st),
			bin->log ? bin->log : "");
		cg_binary_free(bin);
		return -1;
	}
	if (verbose)
		print_ptxas(bin->log);
	int clean = bin->spill_stores == 0 && bin->spill_loads == 0 && bin->stack_bytes == 0;
	printf("%-4s %s kernels: at most %d registers, %d bytes stack, %d/%d bytes spilled\n",
	       clean ? "ok" : "FAIL", arch, bin->regs, bin->stack_bytes, bin->spill_stores,
	       bin->spill_loads);
	return clean ? 0 : -1;
}

static int compile_only(const char *cubin_path)
{
	cg_binary bin;
	int rc = compile("sm_90a", &bin, 1) ? 1 : 0;
	if (bin.data && cubin_path) {
		FILE *f = fopen(cubin_path, "wb");
		if (!f || fwrite(bin.data, 1, bin.size, f) != bin.size) {
			fprintf(stderr, "bench_copy: cannot write %s\n", cubin_path);
			rc = 1;
		}
		if (f)
			fclose(f);
	}
	cg_binary_free(&bin);
	rc |= compile("sm_80", &bin, 0) ? 1 : 0;  /* the bulk path falls back there */
	cg_binary_free(&bin);
	return rc;
}

/* ---- main ------------------------------------------------------------------- */

static void print_row(const char *label, const double *g)
{
	int best = 0;
	printf("| %s |", label);
	for (int k = 0; k < NMETHODS; k++) {
		if (g[k] > g[best])
			best = k;
		if (g[k] > 0)
			printf(" %.0f |", g[k]);
		else
			printf(" - |");
	}
	printf(" %s |\n", g[best] > 0 ? METHODS[best].name : "-");
}

static void print_head(const char *first)
{
	printf("| %s |", first);
	for (int k = 0; k < NMETHODS; k++)
		printf(" %s |", METHODS[k].name);
	printf(" best |\n|---|");
	for (int k = 0; k <= NMETHODS; k++)
		printf("---|");
	printf("\n");
}

enum { NSIZES = 4, NGRIDS = 8, NCH = 5, NSCR = 4 };
static const long long SIZES[NSIZES] = {64 << 10, 256 << 10, 1 << 20, 4 << 20};
static const int GRIDS[NGRIDS] = {1, 2, 4, 8, 16, 32, 66, 132};
static const unsigned TUNE_CHUNK[NCH] = {4096, 8192, 16384, 32768, 65536};
static const unsigned TUNE_SCRATCH[NSCR] = {32 << 10, 64 << 10, 128 << 10, 200 << 10};

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);  /* tables survive a timeout */
	const char *cubin_path = NULL;
	int only = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--compile-only"))
			only = 1;
		else if (!strcmp(argv[i], "--cubin") && i + 1 < argc)
			cubin_path = argv[++i];
		else {
			fprintf(stderr, "usage: bench_copy [--compile-only [--cubin FILE]]\n");
			return 2;
		}
	}
	if (only)
		return compile_only(cubin_path);

	char why[256];
	if (cudrv_get(&cu, why, sizeof why) != CUDRV_OK) {
		printf("bench_copy: skipped: %s\n", why);
		return 0;
	}
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	int major = 0;
	char name[128];
	CK(cu->cuDeviceGet(&dev, 0));
	CK(cu->cuDeviceGetName(name, sizeof name, dev));
	CK(cu->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
	CK(cu->cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
	CK(cu->cuDeviceGetAttribute(&max_smem, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
				    dev));
	if (major != 9) {
		printf("bench_copy: skipped: needs an sm_90 GPU (TMA bulk copies), this one is sm_%d\n",
		       major);
		return 0;
	}
	CK(cu->cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(cu->cuCtxSetCurrent(ctx));
	cg_binary bin;
	if (compile("sm_90a", &bin, 0)) {
		cg_binary_free(&bin);
		return 1;
	}
	CK(cu->cuModuleLoadData(&mod, bin.data));
	cg_binary_free(&bin);
	CK(cu->cuModuleGetFunction(&fill_fn, mod, "mkt_fill"));
	CK(cu->cuModuleGetFunction(&check_fn, mod, "mkt_check"));
	CK(cu->cuModuleGetFunction(&vec_fn, mod, "mkt_copy_vec"));
	CK(cu->cuModuleGetFunction(&bulk_fn, mod, "mkt_copy_bulk"));
	CK(cu->cuFuncSetAttribute(bulk_fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, max_smem));
	CK(cu->cuMemAlloc(&src_buf, BUF));
	CK(cu->cuMemAlloc(&dst_buf, BUF));
	CK(cu->cuMemAlloc(&bad_buf, 16));
	{
		long long nwords = BUF / 4;
		void *args[] = {&src_buf, &nwords};
		CK(cu->cuLaunchKernel(fill_fn, (unsigned)sms * 4, 1, 1, 512, 1, 1, 0, NULL, args, NULL));
	}
	printf("bench_copy on %s (%d SMs, %d KB shared memory per block)\n", name, sms, max_smem >> 10);

	/* (a) one CTA, one call per size, 128 MB of fresh addresses a launch */
	double ga[NSIZES][NMETHODS];
	for (int s = 0; s < NSIZES; s++) {
		job j = {(128ll << 20) / SIZES[s], SIZES[s], SIZES[s], SIZES[s], 1, 1};
		for (int k = 0; k < NMETHODS; k++)
			ga[s][k] = measure(&METHODS[k], &j);
	}
	printf("ok   (a) one CTA, 64 KB .. 4 MB a call\n");

	/* (a2) bulk tuning: one CTA, 4 MB a call, 256 threads */
	double gt[NCH][NSCR];
	for (int c = 0; c < NCH; c++)
		for (int s = 0; s < NSCR; s++) {
			method m = {"bulk tune", 1, 256, TUNE_SCRATCH[s], TUNE_CHUNK[c]};
			job j = {32, 4 << 20, 4 << 20, 4 << 20, 1, 1};
			gt[c][s] = measure(&m, &j);
		}
	printf("ok   (a2) bulk chunk x scratch\n");

	/* (b) 1 GiB in 256 KB / 1 MB chunks over 1 .. 132 CTAs */
	double gb[2][NGRIDS][NMETHODS];
	for (int c = 0; c < 2; c++)
		for (int g = 0; g < NGRIDS; g++) {
			long long ch = c ? 1 << 20 : 256 << 10;
			job j = {BUF / ch, ch, ch, ch, 1, GRIDS[g]};
			for (int k = 0; k < NMETHODS; k++)
				gb[c][g][k] = measure(&METHODS[k], &j);
		}
	printf("ok   (b) 1 GiB over 1 .. 132 CTAs\n");

	/* (c) 2048 B rows out of 16 KB strides */
	double gc[2][NMETHODS];
	for (int c = 0; c < 2; c++) {
		job j = {65536, 2048, 16384, 16384, c ? 128 : 512, c ? sms : 1};
		for (int k = 0; k < NMETHODS; k++)
			gc[c][k] = measure(&METHODS[k], &j);
	}
	printf("ok   (c) strided rows\n");
	double dtod = memcpy_dtod();

	/* the tables */
	printf("\nGB/s = (bytes read + bytes written) / time = 2 x bytes copied / time, 1 GB = 1e9 B;\n"
	       "median of %d launches after %d warm-ups; vec = mkd_copy_2d, bulk T SxC = mkd_copy_bulk_2d\n"
	       "with T threads and S stages of C bytes of scratch.  Same GPU, separate buffers.\n"
	       "Reference: cuMemcpyDtoD of 1 GiB: %.0f GB/s.\n",
	       RUNS, WARM, dtod);
	printf("\n(a) one CTA, bytes per call (128 MB per launch, fresh addresses)\n\n");
	print_head("bytes a call");
	for (int s = 0; s < NSIZES; s++) {
		char l[32];
		snprintf(l, sizeof l, "%lld KB", SIZES[s] >> 10);
		print_row(l, ga[s]);
	}
	printf("\n(a2) bulk, one CTA of 256 threads, 4 MB a call: chunk (rows) x scratch (columns)\n\n|"
	       " chunk |");
	for (int s = 0; s < NSCR; s++)
		printf(" %u KB |", TUNE_SCRATCH[s] >> 10);
	printf("\n|---|");
	for (int s = 0; s < NSCR; s++)
		printf("---|");
	printf("\n");
	for (int c = 0; c < NCH; c++) {
		printf("| %u KB |", TUNE_CHUNK[c] >> 10);
		for (int s = 0; s < NSCR; s++)
			printf(gt[c][s] > 0 ? " %.0f |" : " - |", gt[c][s]);
		printf("\n");
	}
	printf("\n(b) 1 GiB, CTA b copies chunks b, b + CTAs, ...\n\n");
	print_head("CTAs x chunk");
	for (int c = 0; c < 2; c++)
		for (int g = 0; g < NGRIDS; g++) {
			char l[32];
			snprintf(l, sizeof l, "%d x %s", GRIDS[g], c ? "1 MB" : "256 KB");
			print_row(l, gb[c][g]);
		}
	printf("\n(c) 2048 B rows, 16 KB stride on both sides, 65536 rows (128 MB copied)\n\n");
	print_head("CTAs x rows a call");
	print_row("1 x 512", gc[0]);
	{
		char l[32];
		snprintf(l, sizeof l, "%d x 128", sms);
		print_row(l, gc[1]);
	}
	printf("\nbench_copy: %s\n", failures ? "WRONG COPIES (see FAIL lines)" : "all copies verified");

	cu->cuMemFree(src_buf);
	cu->cuMemFree(dst_buf);
	cu->cuMemFree(bad_buf);
	cu->cuModuleUnload(mod);
	cu->cuDevicePrimaryCtxRelease(dev);
	return failures != 0;
}
