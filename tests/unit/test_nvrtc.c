/* test_nvrtc.c - NVRTC through cg_compile: PTX, cubin, resource use,
 * errors, and the disk cache.  Needs the CUDA toolkit (libnvrtc), no GPU.
 */
#include "codegen/cache.h"
#include "codegen/nvrtc.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

/* Self-contained: NVRTC here has no CUDA headers.  bf16 operands travel as
 * packed 32-bit registers, as mma.sync takes them. */
static const char KERNEL[] =
	"// test kernel: flags and one tensor-core MMA\n"
	"extern \"C\" __global__ void mkt_kernel(unsigned *flag, const unsigned *a,\n"
	"                                        const unsigned *b, float *c)\n"
	"{\n"
	"\tunsigned v, t = threadIdx.x;\n"
	"\tasm volatile(\"ld.acquire.gpu.global.u32 %0, [%1];\" : \"=r\"(v) : \"l\"(flag) : \"memory\");\n"
	"\tunsigned a0 = a[4 * t], a1 = a[4 * t + 1], a2 = a[4 * t + 2], a3 = a[4 * t + 3];\n"
	"\tunsigned b0 = b[2 * t], b1 = b[2 * t + 1];\n"
	"\tfloat d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = (float)v;\n"
	"\tasm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 \"\n"
	"\t             \"{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\"\n"
	"\t             : \"+f\"(d0), \"+f\"(d1), \"+f\"(d2), \"+f\"(d3)\n"
	"\t             : \"r\"(a0), \"r\"(a1), \"r\"(a2), \"r\"(a3), \"r\"(b0), \"r\"(b1));\n"
	"\tc[4 * t] = d0; c[4 * t + 1] = d1; c[4 * t + 2] = d2; c[4 * t + 3] = d3;\n"
	"\tasm volatile(\"red.release.gpu.global.add.u32 [%0], %1;\" :: \"l\"(flag + 1), \"r\"(1u) : \"memory\");\n"
	"}\n";

/* Shared memory, and spills forced by a register cap: the parser must see
 * figures other than zero too. */
static const char SMEM[] =
	"extern \"C\" __global__ void mkt_smem(int *p)\n"
	"{\n"
	"\t__shared__ int s[256];\n"
	"\ts[threadIdx.x] = p[threadIdx.x];\n"
	"\t__syncthreads();\n"
	"\tp[threadIdx.x] = s[(threadIdx.x + 1) & 255];\n"
	"}\n";
static const char SPILL[] =
	"extern \"C\" __global__ void mkt_spill(float *p)\n"
	"{\n"
	"\tfloat a[24], s = 0.f;\n"
	"#pragma unroll\n"
	"\tfor (int i = 0; i < 24; i++) a[i] = p[i * threadIdx.x];\n"
	"#pragma unroll\n"
	"\tfor (int j = 0; j < 24; j++) s += a[j] * a[23 - j] * a[(j + 5) % 24];\n"
	"\tp[0] = s;\n"
	"}\n";

static const char BAD[] =
	"extern \"C\" __global__ void k(int *p)\n"
	"{\n"
	"\tint x = 1\n"
	"\tp[0] = x;\n"
	"}\n";

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void print_ptxas(const char *log)
{
	const char *p = log;
	while (*p) {
		const char *e = strchr(p, '\n');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		printf("      | %.*s\n", (int)n, p);
		p += n + (e != NULL);
	}
}

/* Removes the files of a directory this test made, then the directory. */
static void rm_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[4096 + 264];

	if (!d)
		return;
	while ((e = readdir(d)) != NULL) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

/* A cache directory of our own: never the user's, and fresh, so the first
 * compile is a miss even when the suite runs twice (plain, sanitized). */
static int make_tmp_cache(char *buf, size_t n)
{
	const char *base = getenv("MK_CACHE_DIR_FOR_TESTS");
	char parent[2048];

	if (!base || !*base)
		base = getenv("TMPDIR");
	if (!base || !*base)
		base = "/tmp";
	if (cg_cache_dir(base, parent, sizeof parent) != CG_OK)
		return -1;
	snprintf(buf, n, "%s/nvrtc.XXXXXX", parent);
	if (!mkdtemp(buf))
		return -1;
	/* cg_compile must create it (0700) itself: hand it a child path. */
	strncat(buf, "/mk", n - strlen(buf) - 1);
	return 0;
}

int main(void)
{
	cg_compile_opts o = { 0 };
	cg_binary b, p, c1, c2, v;
	char why[512], dir[4096], top[4096], path[4200];
	const char *extra[] = { "-DMKT_VARIANT=1" };
	int major = 0, minor = 0;
	cg_status s;
	double t0, cold, warm;
	struct stat st;

	s = cg_nvrtc_version(&major, &minor, why, sizeof why);
	CHECK_SAY(s == CG_OK, "NVRTC loads: version %d.%d%s%s", major, minor, s ? " - " : "", s ? why : "");
	if (s != CG_OK)
		return 1;
	printf("      %d embedded device-library header(s)\n", mkd_nfiles);

	/* cubin, no cache */
	t0 = now_ms();
	s = cg_compile(KERNEL, "mkt.cu", &o, CG_CUBIN, &b);
	cold = now_ms() - t0;
	CHECK_SAY(s == CG_OK, "cubin for sm_90a compiles: %s", cg_strerror(s));
	if (s != CG_OK) {
		printf("%s\n", b.log ? b.log : "");
		return 1;
	}
	CHECK_SAY(b.size > 4 && !memcmp(b.data, "\177ELF", 4), "cubin is an ELF image (%zu bytes)", b.size);
	CHECK_SAY(b.from_cache == 0 && b.note == NULL, "not from cache, no note");
	CHECK_SAY(b.compile_ms > 0, "compile time measured: %.1f ms (wall %.1f ms)", b.compile_ms, cold);
	print_ptxas(b.log);
	CHECK_SAY(b.regs > 0, "registers parsed: %d", b.regs);
	CHECK_SAY(b.spill_stores == 0 && b.spill_loads == 0, "no spills: stores %d, loads %d",
	          b.spill_stores, b.spill_loads);
	CHECK_SAY(b.stack_bytes == 0, "stack frame parsed: %d bytes", b.stack_bytes);
	CHECK_SAY(b.smem_bytes == 0, "smem parsed: %d bytes", b.smem_bytes);
	CHECK_SAY(strlen(b.key) == 64, "key is 64 hex digits: %s", b.key);

	s = cg_compile(SMEM, "smem.cu", &o, CG_CUBIN, &p);
	CHECK_SAY(s == CG_OK && p.smem_bytes == 1024 && p.regs > 0, "smem parsed: %d bytes (1024 declared)",
	          p.smem_bytes);
	cg_binary_free(&p);
	{
		const char *cap[] = { "--maxrregcount=16" };
		cg_compile_opts oc = o;
		oc.extra = cap;
		oc.nextra = 1;
		s = cg_compile(SPILL, "spill.cu", &oc, CG_CUBIN, &p);
		CHECK_SAY(s == CG_OK && p.spill_stores > 0 && p.spill_loads > 0 && p.stack_bytes > 0,
		          "spills parsed under %s: %d B stores, %d B loads, %d B stack", cap[0],
		          p.spill_stores, p.spill_loads, p.stack_bytes);
		cg_binary_free(&p);
	}

	/* PTX */
	s = cg_compile(KERNEL, "mkt.cu", &o, CG_PTX, &p);
	CHECK_SAY(s == CG_OK, "PTX compiles: %s", cg_strerror(s));
	if (s == CG_OK) {
		const char *t = p.data;
		CHECK_SAY(strlen(t) == p.size, "PTX is a C string of size %zu", p.size);
		CHECK_SAY(strstr(t, ".target sm_90a") != NULL, "PTX targets sm_90a");
		CHECK_SAY(strstr(t, "ld.acquire.gpu") != NULL, "PTX has ld.acquire.gpu");
		CHECK_SAY(strstr(t, "red.release.gpu") != NULL, "PTX has red.release.gpu");
		CHECK_SAY(strstr(t, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32") != NULL,
		          "PTX has mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32");
		CHECK_SAY(p.regs == -1, "no ptxas run for PTX: regs %d", p.regs);
		CHECK_SAY(strcmp(p.key, b.key) != 0, "PTX and cubin keys differ");
	}
	cg_binary_free(&p);

	/* compile error */
	s = cg_compile(BAD, "bad.cu", &o, CG_CUBIN, &p);
	CHECK_SAY(s == CG_ECOMPILE, "syntax error gives CG_ECOMPILE: %s", cg_strerror(s));
	CHECK_SAY(p.log && strstr(p.log, "bad.cu(4)") && strstr(p.log, "error"),
	          "log names the file and line: %s", p.log ? strtok(p.log, "\n") : "(null)");
	CHECK_SAY(p.data == NULL && p.size == 0, "no binary on failure");
	cg_binary_free(&p);

	{
		const char *badopt[] = { "--no-such-option" };
		cg_compile_opts ob = o;
		ob.extra = badopt;
		ob.nextra = 1;
		s = cg_compile(KERNEL, "mkt.cu", &ob, CG_PTX, &p);
		CHECK_SAY(s == CG_ECOMPILE && p.log && p.log[0], "bad option is rejected with a log: %s",
		          p.log ? p.log : "(null)");
		cg_binary_free(&p);
	}
	CHECK_SAY(cg_compile(NULL, "x.cu", &o, CG_PTX, &p) == CG_EINVAL, "NULL source is CG_EINVAL");
	cg_binary_free(&p);

	/* the embedded device library, handed over in memory */
	if (mkd_nfiles > 0) {
		char src[8192] = "";
		int i;
		for (i = 0; i < mkd_nfiles; i++) {
			strcat(src, "#include \"");
			strcat(src, mkd_files[i].name);
			strcat(src, "\"\n");
		}
		strcat(src, "extern \"C\" __global__ void mkt_empty() {}\n");
		s = cg_compile(src, "mkd_all.cu", &o, CG_PTX, &p);
		CHECK_SAY(s == CG_OK, "all %d embedded headers compile together (first: %s)", mkd_nfiles,
		          mkd_files[0].name);
		if (s != CG_OK)
			printf("%s\n", p.log);
		cg_binary_free(&p);
	}

	/* the cache */
	if (make_tmp_cache(dir, sizeof dir) != 0) {
		CHECK_SAY(0, "temporary cache directory: %s", strerror(errno));
		return 1;
	}
	snprintf(top, sizeof top, "%.*s", (int)(strlen(dir) - 3), dir);
	o.use_cache = 1;
	o.cache_dir = dir;
	t0 = now_ms();
	s = cg_compile(KERNEL, "mkt.cu", &o, CG_CUBIN, &c1);
	cold = now_ms() - t0;
	CHECK_SAY(s == CG_OK && c1.from_cache == 0 && c1.note == NULL,
	          "first cached compile is a miss, stored without a note (%.1f ms)", cold);
	CHECK_SAY(strcmp(c1.key, b.key) == 0, "key does not depend on use_cache");
	CHECK_SAY(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700, "cache dir created with mode 0700: %o",
	          (unsigned)(st.st_mode & 0777));
	snprintf(path, sizeof path, "%s/%s.cubin", dir, c1.key);
	CHECK_SAY(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600, "entry %s.cubin has mode 0600",
	          c1.key);

	t0 = now_ms();
	s = cg_compile(KERNEL, "mkt.cu", &o, CG_CUBIN, &c2);
	warm = now_ms() - t0;
	CHECK_SAY(s == CG_OK && c2.from_cache == 1, "second compile is a hit (%.2f ms)", warm);
	CHECK_SAY(c2.compile_ms == 0, "no NVRTC time on a hit");
	CHECK_SAY(c2.size == c1.size && c2.size == b.size && !memcmp(c2.data, c1.data, c1.size),
	          "hit returns identical bytes (%zu)", c2.size);
	CHECK_SAY(!strcmp(c2.key, c1.key), "same key");
	CHECK_SAY(c2.regs == c1.regs && c2.spill_stores == c1.spill_stores &&
	          c2.spill_loads == c1.spill_loads && c2.stack_bytes == c1.stack_bytes,
	          "resource use survives the cache: %d registers", c2.regs);
	CHECK_SAY(c2.log && !strcmp(c2.log, c1.log), "log survives the cache");
	printf("      cold compile %.1f ms, cached %.2f ms\n", cold, warm);

	o.extra = extra;
	o.nextra = 1;
	s = cg_compile(KERNEL, "mkt.cu", &o, CG_CUBIN, &v);
	CHECK_SAY(s == CG_OK && v.from_cache == 0 && strcmp(v.key, c1.key) != 0,
	          "another option (%s) gives another key and a miss", extra[0]);
	cg_binary_free(&v);
	o.extra = NULL;
	o.nextra = 0;
	o.lineinfo = 1;
	s = cg_compile(KERNEL, "mkt.cu", &o, CG_CUBIN, &v);
	CHECK_SAY(s == CG_OK && strcmp(v.key, c1.key) != 0, "-lineinfo gives another key");
	cg_binary_free(&v);
	o.lineinfo = 0;
	o.arch = "sm_90";
	s = cg_compile(KERNEL, "mkt.cu", &o, CG_CUBIN, &v);
	CHECK_SAY(s == CG_OK && strcmp(v.key, c1.key) != 0, "another arch (sm_90) gives another key");
	cg_binary_free(&v);
	o.arch = NULL;
	s = cg_compile("// other\n", "mkt.cu", &o, CG_CUBIN, &v);
	CHECK_SAY(strcmp(v.key, c1.key) != 0, "another source gives another key");
	cg_binary_free(&v);

	/* a corrupt entry is recompiled and rewritten */
	{
		FILE *f = fopen(path, "r+b");
		if (f) {
			fseek(f, -10, SEEK_END);
			fputc('X', f);
			fclose(f);
		}
		s = cg_compile(KERNEL, "mkt.cu", &o, CG_CUBIN, &v);
		CHECK_SAY(s == CG_OK && v.from_cache == 0 && v.size == c1.size &&
		          !memcmp(v.data, c1.data, c1.size), "corrupted entry: recompiled, same bytes");
		cg_binary_free(&v);
		s = cg_compile(KERNEL, "mkt.cu", &o, CG_CUBIN, &v);
		CHECK_SAY(s == CG_OK && v.from_cache == 1, "and the entry was rewritten: hit again");
		cg_binary_free(&v);
	}

	cg_binary_free(&b);
	cg_binary_free(&c1);
	cg_binary_free(&c2);
	rm_dir(dir);
	rmdir(top);
	printf("%s\n", failures ? "FAILED" : "all passed");
	return failures != 0;
}
