/* mkc.c - the mkc command: read one .mk file, run the passes up to what
 * --emit asks for (compile_run, then cg_build for CUDA, PTX and cubins),
 * print it.  A driver: it sits above every floor it calls.
 *
 * Exit status: 0 success, 1 errors in the input (a -D value it cannot
 * take among them) or an output that cannot be written, 2 bad command line
 * (-o a directory or into a missing one, an unknown --arch, a large output
 * onto a terminal), 3 internal error.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../codegen/build.h"
#include "../compiler/compile.h"
#include "../compiler/costmodel.h"
#include "../compiler/inspect.h"
#include "../grammar/ast.h"
#include "../grammar/lit.h"

/* X(id, name, last pass, what) */
#define EMITS(X)                                                            \
	X(AST, "ast", PASS_PARSE, "the syntax tree")                        \
	X(CHECK, "check", PASS_CHECK, "what mkc understood: tensors, placements, ops") \
	X(EXPAND, "expand", PASS_EXPAND, "the program after the rewrites (expand.c)") \
	X(PLAN, "plan", PASS_PLAN, "each op's kernel plan: tiles, engines, shared memory") \
	X(GRAPH, "graph", PASS_LOWER, "the tile graph as text")             \
	X(SCHEDULE, "schedule", PASS_VERIFY, "roles, CTAs and task lists, with predicted times") \
	X(JSON, "json", PASS_VERIFY, "the schedule for tools (docs/schedule.md)") \
	X(DOT, "dot", PASS_VERIFY, "the tile graph for Graphviz")           \
	X(SVG, "svg", PASS_VERIFY, "a timeline of the predicted schedule")  \
	X(CU, "cu", PASS_VERIFY, "the generated CUDA C")                    \
	X(PTX, "ptx", PASS_VERIFY, "PTX, through NVRTC")                    \
	X(CUBIN, "cubin", PASS_VERIFY, "a cubin, through NVRTC")

enum emit {
#define X(id, name, pass, what) EMIT_##id,
	EMITS(X)
#undef X
	EMIT_COUNT
};

static const struct {
	const char *name;
	compile_pass pass;
	const char *what;
} emits[] = {
#define X(id, name, pass, what) {name, pass, what},
	EMITS(X)
#undef X
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mkc [options] FILE.mk\n"
		"  --emit=KIND        what to print (default: check)\n");
	for (int i = 0; i < EMIT_COUNT; i++)
		fprintf(f, "      %-8s %s\n", emits[i].name, emits[i].what);
	fprintf(f,
		"  -D NAME=VALUE      set a parameter, or the mesh: -D nodes=2 -D gpus=8\n"
		"  --ranks-per-gpu=R  schedule for R virtual ranks sharing one GPU\n"
		"  --arch=ARCH        NVRTC target for ptx/cubin (default sm_90a)\n"
		"  --device=FILE      cost-model constants (see docs/costmodel.md)\n"
		"  --no-cache         do not use the JIT cache for ptx/cubin\n"
		"  --max-memory=MB    bound on the compile's memory (default 4096): a\n"
		"                     larger program is an error, not an exhausted machine\n"
		"  -o FILE            write the output to FILE\n"
		"  -Werror            treat warnings as errors\n"
		"  --time-passes      print each pass's wall time (ms) on stderr\n"
		"  --help, --version\n");
}

/* NAME=VALUE, in place: the name ends where '=' was (argv is ours). */
static int parse_define(char *arg, mk_define *d)
{
	char *eq = strchr(arg, '=');
	if (!eq || eq == arg)
		return -1;
	int64_t v;
	if (lit_parse_value(eq + 1, &v) != 0)
		return -1;
	*eq = 0;
	d->name = arg;
	d->value = v;
	return 0;
}

static int write_out(const char *path, const void *data, size_t n)
{
	FILE *f = path ? fopen(path, "wb") : stdout;
	if (!f) {
		fprintf(stderr, "mkc: cannot open %s: %s\n", path, strerror(errno));
		return 1;
	}
	size_t w = fwrite(data, 1, n, f);
	int bad = w != n || fflush(f) != 0;
	if (path)
		bad |= fclose(f) != 0;
	if (bad) {
		fprintf(stderr, "mkc: cannot write %s: %s\n", path ? path : "output",
			strerror(errno));
		return 1;
	}
	return 0;
}

/* -o FILE, checked before any pass runs (NVRTC takes seconds): not a
 * directory, and its directory exists and takes files. */
static int check_outpath(const char *path)
{
	struct stat st;
	if (!stat(path, &st) && S_ISDIR(st.st_mode)) {
		fprintf(stderr, "mkc: -o %s: is a directory; -o wants a file name\n", path);
		return -1;
	}
	char dir[4096];
	const char *slash = strrchr(path, '/');
	if (!slash)
		snprintf(dir, sizeof dir, ".");
	else
		snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
	if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "mkc: -o %s: no directory %s\n", path, dir);
		return -1;
	}
	if (access(dir, W_OK)) {
		fprintf(stderr, "mkc: -o %s: cannot write into %s: %s\n", path, dir, strerror(errno));
		return -1;
	}
	return 0;
}

/* --arch: sm_XY, sm_XYZ, compute_XY with an optional a or f (NVRTC's
 * spellings), checked before the passes run. */
static int check_arch(const char *a)
{
	const char *d = !strncmp(a, "sm_", 3) ? a + 3 : !strncmp(a, "compute_", 8) ? a + 8 : NULL;
	size_t n = d ? strspn(d, "0123456789") : 0;
	if (d && (n == 2 || n == 3) && (!d[n] || ((d[n] == 'a' || d[n] == 'f') && !d[n + 1])))
		return 0;
	fprintf(stderr, "mkc: --arch=%s: not a GPU architecture (e.g. sm_90a, sm_100a, sm_80)\n", a);
	return -1;
}

/* More than this much text onto a terminal is a mistake (a 2 x 8 mesh's
 * JSON schedule is 20 MB): mkc asks for -o or a pipe instead. */
enum { TTY_LIMIT = 1 << 20 };

static int refuse_tty(const char *outpath, size_t n, const char *what)
{
	if (outpath || n <= TTY_LIMIT || !isatty(1))
		return 0;
	fprintf(stderr, "mkc: the %s is %.1f MB: not printed on the terminal; write it with "
		"-o FILE or pipe it\n", what, n / 1048576.0);
	return 1;
}

/* --emit=cu|ptx|cubin: the back half (codegen/build.c), then the output */
static int build(const ir_sched *s, enum emit e, const char *arch, int use_cache,
		 const char *outpath)
{
	cg_build_opts bo = {.arch = arch, .use_cache = use_cache, .emit = {.sys_scope = -1}};
	cg_build_out b;
	cg_stage upto = e == EMIT_CU ? CG_TO_CUDA : e == EMIT_PTX ? CG_TO_PTX : CG_TO_CUBIN;
	cg_status st = cg_build(s, upto, &bo, &b);
	int rc = 0;
	if (st == CG_EEMIT) {
		fprintf(stderr, "mkc: cannot generate CUDA: %s\n", b.err);
		rc = 1;
	} else if (st == CG_ENOMEM) {
		fprintf(stderr, "mkc: out of memory\n");
		rc = 3;
	} else if (upto == CG_TO_CUDA) {
		rc = refuse_tty(outpath, strlen(b.cuda), "CUDA source") ? 2
		     : write_out(outpath, b.cuda, strlen(b.cuda));
	} else {
		if (b.bin.note)
			fprintf(stderr, "mkc: note: %s\n", b.bin.note);
		if (st != CG_OK) {
			fprintf(stderr, "mkc: NVRTC: %s\n%s", cg_strerror(st),
				b.bin.log ? b.bin.log : "");
			rc = 3;
		} else {
			/* NVRTC's warnings (ptxas's among them), ptxas's
			 * performance advisories, and its notes on wgmma code it
			 * changed (C7519: an arrive injected, which may close
			 * every group early) are worth seeing */
			for (const char *l = b.bin.log ? b.bin.log : ""; *l;) {
				const char *nl = strchr(l, '\n');
				size_t n = nl ? (size_t)(nl - l) : strlen(l);
				if (memmem(l, n, "warning", 7) || memmem(l, n, "Performance Loss", 16) ||
				    memmem(l, n, "(C7519)", 7))
					fprintf(stderr, "%.*s\n", (int)n, l);
				l += n + (nl != NULL);
			}
			/* ptxas ran only for a cubin: PTX has no registers yet */
			if (b.bin.regs >= 0)
				fprintf(stderr, "mkc: %s: %d registers, %d bytes stack, %d/%d bytes "
					"spilled (stores/loads)%s\n", b.arch, b.bin.regs,
					b.bin.stack_bytes, b.bin.spill_stores, b.bin.spill_loads,
					b.bin.from_cache ? ", from cache" : "");
			else
				fprintf(stderr, "mkc: %s: PTX%s (registers and spills: --emit=cubin)\n",
					b.arch, b.bin.from_cache ? ", from cache" : "");
			if (upto == CG_TO_CUBIN && !outpath && isatty(1)) {
				fprintf(stderr, "mkc: a cubin is binary: not printed on the terminal; "
					"write it with -o FILE\n");
				rc = 2;
			} else {
				rc = refuse_tty(outpath, b.bin.size, "PTX") ? 2
				     : write_out(outpath, b.bin.data, b.bin.size);
			}
		}
	}
	cg_build_free(&b);
	return rc;
}

int main(int argc, char **argv)
{
	enum emit emit = EMIT_CHECK;
	const char *path = NULL, *outpath = NULL, *arch = NULL, *devfile = NULL;
	mk_define defs[64];
	int ndefs = 0, werror = 0, use_cache = 1, rpg = 1, time_passes = 0;
	int64_t max_mem = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "--version")) {
			printf("mkc %s\n", MK_VERSION);
			return 0;
		} else if (!strncmp(a, "--emit=", 7)) {
			int k;
			for (k = 0; k < EMIT_COUNT; k++)
				if (!strcmp(a + 7, emits[k].name))
					break;
			if (k == EMIT_COUNT) {
				fprintf(stderr, "mkc: unknown --emit kind '%s'\n", a + 7);
				usage(stderr);
				return 2;
			}
			emit = (enum emit)k;
		} else if (!strcmp(a, "-D") || !strncmp(a, "-D", 2)) {
			char *v = a[2] ? argv[i] + 2 : (i + 1 < argc ? argv[++i] : NULL);
			if (!v || ndefs == 64 || parse_define(v, &defs[ndefs]) != 0) {
				/* a value the pipeline cannot take (gpus=0 from the
				 * compiler, gpus=abc here): bad input, exit 1 both */
				const char *eq = v ? strchr(v, '=') : NULL;
				if (eq && eq != v && ndefs < 64) {
					fprintf(stderr, "mkc: error: -D %.*s: '%s' is not an integer "
						"(8192, 8K, -1)\n", (int)(eq - v), v, eq + 1);
					return 1;
				}
				fprintf(stderr, "mkc: -D wants NAME=INTEGER (8192, 8K, -1)%s%s\n",
					v ? ", got " : "", v ? v : "");
				return 2;
			}
			ndefs++;
		} else if (!strcmp(a, "-o")) {
			if (i + 1 >= argc) {
				fprintf(stderr, "mkc: -o needs a file name\n");
				return 2;
			}
			outpath = argv[++i];
		} else if (!strncmp(a, "--arch=", 7)) {
			arch = a + 7;
		} else if (!strncmp(a, "--device=", 9)) {
			devfile = a + 9;
		} else if (!strncmp(a, "--ranks-per-gpu=", 16)) {
			char *end;
			long v = strtol(a + 16, &end, 10);
			if (*end || v < 1 || v > 64) {
				fprintf(stderr, "mkc: --ranks-per-gpu wants 1..64\n");
				return 2;
			}
			rpg = (int)v;
		} else if (!strncmp(a, "--max-memory=", 13)) {
			char *end;
			long long v = strtoll(a + 13, &end, 10);
			if (*end || end == a + 13 || v < 1 || v > (1ll << 30)) {
				fprintf(stderr, "mkc: --max-memory wants MB, 1..%lld\n", 1ll << 30);
				return 2;
			}
			max_mem = (int64_t)v << 20;
		} else if (!strcmp(a, "--no-cache")) {
			use_cache = 0;
		} else if (!strcmp(a, "-Werror")) {
			werror = 1;
		} else if (!strcmp(a, "--time-passes")) {
			time_passes = 1;
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "mkc: unknown option '%s'\n", a);
			usage(stderr);
			return 2;
		} else if (path) {
			fprintf(stderr, "mkc: one input file only ('%s' and '%s')\n", path, a);
			return 2;
		} else {
			path = a;
		}
	}
	if (!path) {
		usage(stderr);
		return 2;
	}
	if ((outpath && check_outpath(outpath) != 0) || (arch && check_arch(arch) != 0))
		return 2;

	ir_device dev = costmodel_h200();
	if (devfile) {
		char why[256];
		if (costmodel_load(devfile, &dev, why, sizeof why) != 0) {
			fprintf(stderr, "mkc: %s\n", why);
			return 2;
		}
	}

	srcset src;
	src_init(&src);
	int err = 0;
	int file = strcmp(path, "-") ? src_load(&src, path, &err) : -1;
	if (!strcmp(path, "-")) {
		strbuf in;
		sb_init(&in);
		char buf[65536];
		size_t k;
		while ((k = fread(buf, 1, sizeof buf, stdin)) > 0)
			sb_putn(&in, buf, k);
		file = src_add(&src, "<stdin>", sb_str(&in), in.len);
		sb_free(&in);
		err = ENOMEM;
	}
	if (file < 0) {
		fprintf(stderr, "mkc: cannot read %s: %s\n", path, strerror(err));
		return 1;
	}

	arena a;
	arena_init(&a);
	diags d;
	diag_init(&d, &src, &a);
	d.werror = werror;
	compile_opts o = {.defs = defs, .ndefs = ndefs, .ranks_per_gpu = rpg, .dev = &dev,
			  .max_mem = max_mem};
	compile_out out;
	int rc = compile_run(&src, file, &o, emits[emit].pass, &d, &a, &out);
	if (time_passes) {
		fputs("mkc: passes (ms):", stderr);
		for (int k = 0; k <= (int)emits[emit].pass; k++)
			fprintf(stderr, "%s %s %.1f", k ? "," : "", compile_pass_name((compile_pass)k),
				out.pass_ms[k]);
		fputc('\n', stderr);
	}

	strbuf msg;
	sb_init(&msg);
	diag_render(&d, &msg, isatty(2));
	fputs(sb_str(&msg), stderr);
	sb_free(&msg);

	if (rc == 0) {
		strbuf o2;
		sb_init(&o2);
		int binary = 0;
		switch (emit) {
		case EMIT_AST: ast_dump(out.ast, &src, &o2); break;
		case EMIT_CHECK:
		case EMIT_EXPAND: inspect_program(out.prog, &o2); break;
		case EMIT_PLAN:
			inspect_program(out.prog, &o2);
			sb_putc(&o2, '\n');
			inspect_plans(out.prog, &o2);
			break;
		case EMIT_GRAPH: inspect_graph(out.sched, &o2); break;
		case EMIT_SCHEDULE: inspect_schedule(out.sched, &o2); break;
		case EMIT_JSON: inspect_json(out.sched, &o2); break;
		case EMIT_DOT: inspect_dot(out.sched, &o2); break;
		case EMIT_SVG: inspect_svg(out.sched, &o2); break;
		case EMIT_CU:
		case EMIT_PTX:
		case EMIT_CUBIN:
			binary = 1;
			rc = build(out.sched, emit, arch, use_cache, outpath);
			break;
		default: break;
		}
		if (o2.oom) {
			fprintf(stderr, "mkc: out of memory\n");
			rc = 3;
		} else if (!binary) {
			rc = refuse_tty(outpath, o2.len, "output") ? 2
			     : write_out(outpath, sb_str(&o2), o2.len);
		}
		sb_free(&o2);
	}
	if (a.failed) {
		fprintf(stderr, "mkc: out of memory\n");
		rc = 3;
	}
	arena_free(&a);
	src_free(&src);
	return rc;
}
