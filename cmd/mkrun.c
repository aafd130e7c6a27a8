/* mkrun.c - run a .mk pipeline end to end and check it.
 *
 *   inputs (seeded random, or .npy) -> the pipeline on the GPU (virtual ranks
 *   in one launch) -> the same pipeline through the CPU reference executor
 *   -> per-output comparison with tolerances for the element type -> timing
 *   (median of --iters runs after warm-up, CUDA events) -> optional trace
 *   and .npy outputs.
 *
 * Exit status: 0 when every output matches, 1 on a mismatch or any error
 * (including "no GPU": then one line says so; --cpu still works), 2 on a
 * bad command line.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../base/parfor.h"
#include "../compiler/cpuref.h"
#include "../grammar/lit.h"
#include "../runtime/cudrv.h"
#include "../runtime/mk.h"
#include "../runtime/mk_int.h"
#include "../runtime/npy.h"

typedef struct opts {
	const char *path, *inputs, *save, *trace;
	mk_param params[64];
	int nparams;
	int ranks, iters, warmup, resident, cpu, quiet;
	int nproc;         /* -n: local processes to start */
	int nocheck;       /* --no-check: no CPU reference (large benchmarks) */
	int check_finite;  /* --check-finite: NaN/Inf in an input or output is an error */
	int compile_only;  /* --compile-only: load (compile into the JIT cache) and stop */
	int process;       /* this process is one rank of a job */
	unsigned timeout_ms;
	unsigned long long seed;
} opts;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mkrun FILE.mk [options]\n"
		"  -D NAME=VALUE     set a parameter (or the mesh: -D nodes=1 -D gpus=R)\n"
		"  --ranks R         virtual ranks sharing this GPU, one launch (default 1)\n"
		"  -n N              N local ranks, one process each (MPS when they share a GPU);\n"
		"                    also runs as one rank under mpirun, srun or torchrun\n"
		"  --iters N         timed runs after warm-up (default 20)\n"
		"  --warmup N        untimed runs first (default 3)\n"
		"  --inputs DIR      read inputs from DIR/NAME.rR.npy (default: random)\n"
		"  --seed S          seed of the random inputs (default 1): uniform in [-1, 1],\n"
		"                    a matmul's weights in [-w, w], w = sqrt(3 / K)\n"
		"  --save DIR        write outputs as DIR/NAME.rR.npy\n"
		"  --trace FILE      per-task begin/end of one run, Chrome trace format\n"
		"  --resident        time the resident kernel (doorbell) instead of launches\n"
		"  --timeout MS      bound on every wait in the kernel (default 5000)\n"
		"  --cpu             run the CPU reference only (no GPU needed)\n"
		"  --quiet           print only the summary line\n"
		"  --no-check        skip the CPU reference (timing large problems)\n"
		"  --check-finite    NaN or Inf in an input (.npy) or an output is an error\n"
		"                    (without it, inputs holding them get a warning)\n"
		"  --compile-only    compile the kernel for this GPU into the JIT cache and\n"
		"                    stop (warms the cache before a job; nothing runs)\n");
}

static int launched_as_rank(void);

static int parse_args(int argc, char **argv, opts *o)
{
	memset(o, 0, sizeof *o);
	o->ranks = 1;
	o->iters = 20;
	o->warmup = 3;
	o->seed = 1;
	o->timeout_ms = 5000;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEEDV()                                                            \
	do {                                                               \
		if (!v) {                                                  \
			fprintf(stderr, "mkrun: %s needs a value\n", a);   \
			return 2;                                          \
		}                                                          \
		i++;                                                       \
	} while (0)
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			exit(0);
		} else if (!strncmp(a, "-D", 2)) {
			const char *d = a[2] ? a + 2 : v;
			if (!a[2])
				NEEDV();
			const char *eq = d ? strchr(d, '=') : NULL;
			int64_t val = 0;
			if (!eq || eq == d || lit_parse_value(eq + 1, &val) != 0 || o->nparams == 64) {
				fprintf(stderr, "mkrun: -D wants NAME=INTEGER (8192, 8K, -1)\n");
				return 2;
			}
			o->params[o->nparams].name = strndup(d, (size_t)(eq - d));
			o->params[o->nparams++].value = val;
		} else if (!strcmp(a, "--ranks") || !strcmp(a, "--iters") || !strcmp(a, "--warmup") ||
			   !strcmp(a, "--timeout") || !strcmp(a, "--seed") || !strcmp(a, "-n")) {
			NEEDV();
			char *end;
			long long n = strtoll(v, &end, 10);
			if (*end || n < 0 || (strcmp(a, "--seed") && n > 1000000)) {
				fprintf(stderr, "mkrun: bad value for %s: %s\n", a, v);
				return 2;
			}
			if (!strcmp(a, "--ranks"))
				o->ranks = (int)n;
			else if (!strcmp(a, "-n"))
				o->nproc = (int)n;
			else if (!strcmp(a, "--iters"))
				o->iters = (int)n;
			else if (!strcmp(a, "--warmup"))
				o->warmup = (int)n;
			else if (!strcmp(a, "--timeout"))
				o->timeout_ms = (unsigned)n;
			else
				o->seed = (unsigned long long)n;
		} else if (!strcmp(a, "--inputs")) {
			NEEDV();
			o->inputs = v;
		} else if (!strcmp(a, "--save")) {
			NEEDV();
			o->save = v;
		} else if (!strcmp(a, "--trace")) {
			NEEDV();
			o->trace = v;
		} else if (!strcmp(a, "--resident")) {
			o->resident = 1;
		} else if (!strcmp(a, "--cpu")) {
			o->cpu = 1;
		} else if (!strcmp(a, "--quiet")) {
			o->quiet = 1;
		} else if (!strcmp(a, "--no-check")) {
			o->nocheck = 1;
		} else if (!strcmp(a, "--check-finite")) {
			o->check_finite = 1;
		} else if (!strcmp(a, "--compile-only")) {
			o->compile_only = 1;
		} else if (a[0] == '-') {
			fprintf(stderr, "mkrun: unknown option '%s'\n", a);
			usage(stderr);
			return 2;
		} else if (o->path) {
			fprintf(stderr, "mkrun: one pipeline file only\n");
			return 2;
		} else {
			o->path = a;
		}
#undef NEEDV
	}
	if (!o->path) {
		usage(stderr);
		return 2;
	}
	if (o->ranks < 1 || o->ranks > 64) {
		fprintf(stderr, "mkrun: --ranks must be 1..64\n");
		return 2;
	}
	if (o->nproc > 256) {
		fprintf(stderr, "mkrun: -n must be 1..256\n");
		return 2;
	}
	if (o->cpu && (o->trace || o->nproc > 1 || o->resident || o->compile_only)) {
		fprintf(stderr, "mkrun: --cpu runs the CPU reference in this process: %s has no "
			"meaning there\n", o->trace ? "--trace FILE (GPU task times)"
			: o->nproc > 1 ? "-n N (processes on the GPU)"
			: o->resident ? "--resident" : "--compile-only (a kernel for the GPU)");
		return 2;
	}
	if (o->compile_only && o->nproc > 1) {
		fprintf(stderr, "mkrun: --compile-only compiles in this process: without -n, the "
			"same kernel a rank of the job compiles is not made here\n");
		return 2;
	}
	if (o->save) {  /* before the run, not after it */
		struct stat st;
		if (mkdir(o->save, 0755) != 0 && errno != EEXIST) {
			fprintf(stderr, "mkrun: --save %s: cannot create the directory: %s\n", o->save,
				strerror(errno));
			return 2;
		}
		if (stat(o->save, &st) != 0 || !S_ISDIR(st.st_mode) || access(o->save, W_OK) != 0) {
			fprintf(stderr, "mkrun: --save %s: not a directory mkrun can write into\n",
				o->save);
			return 2;
		}
	}
	o->process = launched_as_rank();
	if ((o->process || o->nproc > 1) && o->ranks != 1) {
		fprintf(stderr, "mkrun: --ranks (virtual ranks) and -n / a launcher (one process per "
			"rank) do not mix\n");
		return 2;
	}
	return 0;
}

/* ---- host data: bufs[t * world + r], float32, local shapes --------------- */

/* splitmix64: the k-th value (from 1) of the stream seeded s is
 * rng_mix(s + k * RNG_STEP), so a tensor's values can be made on every core
 * and still be the ones one core makes in order. */
#define RNG_STEP 0x9e3779b97f4a7c15ull

static uint64_t rng_mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

typedef struct {
	float *d;
	uint64_t s;      /* the stream's state before d[0] */
	uint64_t bound;  /* i32 values: [0, bound); 0: floats */
	double w;        /* floats: uniform in [-w, w] */
} rng_job;

static void rng_fill(void *arg, size_t lo, size_t hi)
{
	const rng_job *j = arg;
	uint64_t s = j->s + (uint64_t)lo * RNG_STEP;
	for (size_t i = lo; i < hi; i++) {
		uint64_t z = rng_mix(s += RNG_STEP);
		j->d[i] = j->bound ? (float)(z % j->bound)
				   : (float)(((double)(z >> 11) / 9007199254740992.0 * 2.0 - 1.0) * j->w);
	}
}

static float **alloc_bufs(const ir_prog *p)
{
	int n = p->ntensors * p->world;
	float **b = calloc((size_t)n, sizeof *b);
	if (!b)
		return NULL;
	for (int t = 0; t < p->ntensors; t++)
		for (int r = 0; r < p->world; r++) {
			size_t k = (size_t)ir_tensor_elems(&p->tensors[t]);
			b[t * p->world + r] = calloc(k ? k : 1, sizeof(float));
			if (!b[t * p->world + r])
				return NULL;
		}
	return b;
}

static void free_bufs(const ir_prog *p, float **b)
{
	if (!b)
		return;
	for (int i = 0; i < p->ntensors * p->world; i++)
		free(b[i]);
	free(b);
}

/* Bound of the i32 values a tensor may hold: the expert count of a dispatch
 * or combine that reads it as routing indices, else 16. */
static int64_t int_bound(const ir_prog *p, int t)
{
	for (int i = 0; i < p->nops; i++) {
		const ir_op *op = &p->ops[i];
		if (op->kind == OP_DISPATCH && op->nin > 1 && op->in[1] == t)
			return op->experts;
	}
	return 16;
}

/* "(4, 8)", "(7,)", "()": a shape as NumPy prints it. */
static void shape_str(char *buf, size_t n, const int64_t *shape, int nd)
{
	size_t k = (size_t)snprintf(buf, n, "(");
	for (int d = 0; d < nd && k < n; d++)
		k += (size_t)snprintf(buf + k, n - k, "%s%lld", d ? ", " : "", (long long)shape[d]);
	if (k < n)
		snprintf(buf + k, n - k, "%s)", nd == 1 ? "," : "");
}

/* NaN and Inf among n values: 0 when there are none, else a message. */
static int count_nonfinite(const float *d, int64_t n, char *msg, size_t mn)
{
	int64_t nan = 0, inf = 0;
	for (int64_t i = 0; i < n; i++) {
		nan += isnan(d[i]) != 0;
		inf += isinf(d[i]) != 0;
	}
	if (!nan && !inf)
		return 0;
	if (nan && inf)
		snprintf(msg, mn, "%lld NaN and %lld Inf values", (long long)nan, (long long)inf);
	else
		snprintf(msg, mn, "%lld %s value%s", (long long)(nan ? nan : inf), nan ? "NaN" : "Inf",
			 (nan ? nan : inf) > 1 ? "s" : "");
	return 1;
}

/* With --check-finite: every output of ranks [r0, r1) in b must be finite. */
static int outputs_finite(const ir_prog *p, float **b, int r0, int r1, const char *what)
{
	int bad = 0;
	for (int t = 0; t < p->ntensors; t++) {
		const ir_tensor *x = &p->tensors[t];
		char msg[128];
		if (x->kind != TK_OUT)
			continue;
		for (int r = r0; r < r1; r++)
			if (count_nonfinite(b[t * p->world + r], ir_tensor_elems(x), msg, sizeof msg)) {
				fprintf(stderr, "mkrun: %s %s on rank %d holds %s (--check-finite)\n", what,
					x->name, r, msg);
				bad = 1;
			}
	}
	return bad;
}

/* Half-width of a float input's uniform random values: 1, except for the
 * weights a matmul multiplies (its second operand, [.., K, N], or a gate-up
 * matmul's gate weight): sqrt(3 / K),
 * a variance of 1 / K, as models initialise them, so that every product
 * keeps its operand's size.  Unscaled, a layer's activations grow by
 * sqrt(K) per matmul, attention scores of thousands make the softmax an
 * argmax, and rounding the stored values to bf16 alone moved the Llama
 * layer's outputs by up to 60% of their rms: a comparison of such outputs
 * measures that sensitivity, not the kernel. */
static double input_scale(const ir_prog *p, int t)
{
	for (int i = 0; i < p->nops; i++) {
		const ir_op *op = &p->ops[i];
		if (op->kind == OP_MATMUL && ((op->nin > 1 && op->in[1] == t) || op->gate - 1 == t)) {
			const ir_tensor *w = &p->tensors[t];
			int64_t K = w->ndim >= 2 ? w->shape[w->ndim - 2] : 1;
			return K > 1 ? sqrt(3.0 / (double)K) : 1.0;
		}
	}
	return 1.0;
}

static int make_inputs(const ir_prog *p, const opts *o, float **b)
{
	uint64_t s = o->seed;
	for (int t = 0; t < p->ntensors; t++) {
		const ir_tensor *x = &p->tensors[t];
		if (x->kind != TK_IN)
			continue;
		int64_t n = ir_tensor_elems(x);
		for (int r = 0; r < p->world; r++) {
			float *d = b[t * p->world + r];
			if (o->inputs) {
				char path[4096], err[256];
				int64_t shape[NPY_MAXDIM];
				int nd;
				float *data;
				if (npy_path(path, sizeof path, o->inputs, x->name, r) != 0 ||
				    npy_read_f32(path, shape, &nd, NPY_MAXDIM, &data, err, sizeof err) != 0) {
					fprintf(stderr, "mkrun: %s\n", err);
					return -1;
				}
				int ok = nd == x->ndim;
				for (int dd = 0; ok && dd < nd; dd++)
					ok = shape[dd] == x->local[dd];
				if (!ok) {
					char got[400], want[400];
					shape_str(got, sizeof got, shape, nd);
					shape_str(want, sizeof want, x->local, x->ndim);
					fprintf(stderr, "mkrun: %s: shape %s, but %s's piece on rank %d is %s\n",
						path, got, x->name, r, want);
					free(data);
					return -1;
				}
				{
					char msg[128];
					if (count_nonfinite(data, n, msg, sizeof msg)) {
						fprintf(stderr, o->check_finite ? "mkrun: %s holds %s "
							"(--check-finite)\n" : "mkrun: warning: %s holds %s; "
							"outputs may be NaN or Inf too (--check-finite refuses "
							"such inputs)\n", path, msg);
						if (o->check_finite) {
							free(data);
							return -1;
						}
					}
				}
				memcpy(d, data, (size_t)n * sizeof(float));
				free(data);
				continue;
			}
			rng_job j = {d, s, x->dtype == DT_I32 ? (uint64_t)int_bound(p, t) : 0,
				     input_scale(p, t)};
			parfor((size_t)n, 1 << 22, rng_fill, &j);
			s += (uint64_t)n * RNG_STEP;
		}
	}
	return 0;
}

static int save_tensors(const ir_prog *p, float **b, const char *dir, int inputs_too, int r0,
			int r1)
{
	mkdir(dir, 0755);
	for (int t = 0; t < p->ntensors; t++) {
		const ir_tensor *x = &p->tensors[t];
		if (x->kind == TK_TEMP || (x->kind == TK_IN && !inputs_too))
			continue;
		for (int r = r0; r < r1; r++) {
			char path[4096], err[256];
			if (npy_path(path, sizeof path, dir, x->name, r) != 0 ||
			    npy_write_f32(path, x->local, x->ndim, b[t * p->world + r], err, sizeof err)) {
				fprintf(stderr, "mkrun: %s\n", err);
				return -1;
			}
		}
	}
	return 0;
}

/* ---- comparison ------------------------------------------------------------ */

/* Tolerances per element type.  An element passes when
 *   |gpu - ref| <= rtol * |ref| + atol,  atol = 4 * rtol * rms(ref),
 * and the output passes when every element does and the relative l2 error
 * ||gpu - ref|| / ||ref|| stays under l2tol.  Absolute error scales with the
 * output's typical magnitude, not the element's own: roundings of earlier
 * stages reach an element through sums of many terms (a chain of 16 bf16
 * stages shows 1e-3 relative l2 and single elements off by 2% of rms). */
static void tolerances(ir_dtype t, double *rtol, double *l2tol)
{
	switch (t) {
	case DT_BF16: *rtol = 1.0 / 64; *l2tol = 1e-2; break;  /* 4 ulps of bf16 */
	case DT_F16: *rtol = 1.0 / 512; *l2tol = 2e-3; break;
	case DT_E4M3: *rtol = 1.0 / 4; *l2tol = 1e-1; break;
	default: *rtol = 1e-4; *l2tol = 1e-5; break;
	}
}

static int compare(const ir_prog *p, float **ref, float **gpu, int r0, int r1, int quiet)
{
	int bad = 0;
	for (int t = 0; t < p->ntensors; t++) {
		const ir_tensor *x = &p->tensors[t];
		if (x->kind != TK_OUT)
			continue;
		int64_t n = ir_tensor_elems(x);
		double rtol, l2tol;
		tolerances(x->dtype, &rtol, &l2tol);
		for (int r = r0; r < r1; r++) {
			const float *a = gpu[t * p->world + r], *e = ref[t * p->world + r];
			double amax = 0, se = 0, sr = 0, maxabs = 0, maxrel = 0;
			for (int64_t i = 0; i < n; i++) {
				if (fabs(e[i]) > amax)
					amax = fabs(e[i]);
				sr += (double)e[i] * e[i];
			}
			double rms = n ? sqrt(sr / n) : 0;
			double atol = 4 * rtol * (rms > 0 ? rms : 1);
			int64_t fails = 0, first = -1;
			for (int64_t i = 0; i < n; i++) {
				double d = fabs((double)a[i] - e[i]);
				if (isnan(a[i]) != isnan(e[i]) || d > atol + rtol * fabs(e[i])) {
					if (first < 0)
						first = i;
					fails++;
				}
				if (isnan(d)) {
					se = INFINITY;
					continue;
				}
				if (d > maxabs)
					maxabs = d;
				if (fabs(e[i]) > atol && d / fabs(e[i]) > maxrel)
					maxrel = d / fabs(e[i]);
				se += d * d;
			}
			double rl2 = sr > 0 ? sqrt(se / sr) : sqrt(se);
			int off = fails > 0 || !(rl2 <= l2tol);
			if (!quiet || off)
				printf("  %-10s rank %d: max abs err %.3g (rms %.3g, max %.3g), max rel err %.3g, "
				       "rel l2 %.3g  %s\n", x->name, r, maxabs, rms, amax, maxrel, rl2,
				       off ? "MISMATCH" : "ok");
			if (fails)
				printf("    %lld of %lld elements off; first at %lld: gpu %g, ref %g\n",
				       (long long)fails, (long long)n, (long long)first, a[first], e[first]);
			bad |= off;
		}
	}
	return bad;
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

static int run_cpu(const opts *o)
{
	srcset src;
	src_init(&src);
	int err = 0;
	int file = src_load(&src, o->path, &err);
	if (file < 0) {
		fprintf(stderr, "mkrun: cannot read %s: %s\n", o->path, strerror(err));
		return 1;
	}
	arena a;
	arena_init(&a);
	compile_out co;
	strbuf log;
	sb_init(&log);
	mk_status st = mk_compile_only(&src, file, o->params, o->nparams, o->ranks, &a, &co, &log);
	fputs(sb_str(&log), stderr);
	sb_free(&log);
	int rc = 1;
	float **b = NULL;
	if (st != MK_OK) {
		fprintf(stderr, "mkrun: %s\n", mk_strerror(st));
		goto out;
	}
	const ir_prog *p = co.prog;
	b = alloc_bufs(p);
	if (!b || make_inputs(p, o, b) != 0)
		goto out;
	char e2[512];
	cpuref_opts ro = {.round_storage = 1};
	if (cpuref_run(p, b, &ro, e2, sizeof e2) != 0) {
		fprintf(stderr, "mkrun: CPU reference: %s\n", e2);
		goto out;
	}
	for (int t = 0; t < p->ntensors; t++) {
		const ir_tensor *x = &p->tensors[t];
		if (x->kind != TK_OUT)
			continue;
		for (int r = 0; r < p->world; r++) {
			double s = 0, m = 0;
			const float *d = b[t * p->world + r];
			for (int64_t i = 0; i < ir_tensor_elems(x); i++) {
				s += (double)d[i] * d[i];
				if (fabs(d[i]) > m)
					m = fabs(d[i]);
			}
			printf("  %-10s rank %d: l2 %.6g, max |x| %.6g\n", x->name, r, sqrt(s), m);
		}
	}
	if (o->save && save_tensors(p, b, o->save, 1, 0, p->world) != 0)
		goto out;
	if (o->check_finite && outputs_finite(p, b, 0, p->world, "the CPU reference's"))
		goto out;
	printf("mkrun: %s: CPU reference ran on %d rank%s\n", p->name, p->world,
	       p->world > 1 ? "s" : "");
	rc = 0;
out:
	if (co.prog)
		free_bufs(co.prog, b);
	arena_free(&a);
	src_free(&src);
	return rc;
}

/* Which ranks this process holds, and how the job is laid out. */
typedef struct job {
	mk_comm *comm;     /* one process per rank, or NULL (virtual ranks) */
	int first, n;      /* ranks held here */
	int rank;          /* for messages: the comm rank, or -1 */
} job;

static void say(const job *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const job *j, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (j->rank >= 0)
		printf("rank %d: ", j->rank);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
}

static int run_gpu(const opts *o)
{
	mk_ctx *ctx = NULL;
	mk_pipeline *pl = NULL;
	float **ref = NULL, **gpu = NULL;
	float *times = NULL;
	const ir_prog *p = NULL;
	int rc = 1;
	job j = {.first = 0, .n = o->ranks, .rank = -1};
	char err[512];
	mk_status st;
	if (o->process) {
		st = mk_comm_create(&j.comm, err, sizeof err);
		if (st != MK_OK) {
			fprintf(stderr, "mkrun: joining the job: %s: %s\n", mk_strerror(st), err);
			return 1;
		}
		j.rank = j.first = mk_comm_rank(j.comm);
		j.n = 1;
	}
	mk_ctx_opts co = {0};
	if (j.comm) {
		const cudrv *cu;
		int ndev = 1;
		if (cudrv_get(&cu, err, sizeof err) == CUDRV_OK && cu->cuDeviceGetCount(&ndev) == CUDA_SUCCESS &&
		    ndev > 0)
			co.device = mk_comm_local_rank(j.comm) % ndev;
	}
	st = mk_ctx_create(&co, &ctx);
	if (st == MK_ERR_NO_DRIVER || st == MK_ERR_NO_GPU) {
		fprintf(stderr, "mkrun: no GPU here (%s); --cpu runs the CPU reference only\n",
			mk_ctx_error(ctx));
		goto out;
	}
	if (st != MK_OK) {
		fprintf(stderr, "mkrun: %s: %s\n", mk_strerror(st), mk_ctx_error(ctx));
		goto out;
	}
	mk_load_opts lo = MK_LOAD_OPTS_INIT;
	lo.params = o->params;
	lo.nparams = o->nparams;
	lo.ranks = j.comm ? 1 : o->ranks;
	lo.timeout_ms = o->timeout_ms;
	lo.trace = o->trace != NULL;
	lo.comm = j.comm;
	st = mk_pipeline_load_file(ctx, o->path, &lo, &pl);
	fputs(mk_ctx_log(ctx), stderr);
	if (st != MK_OK) {
		fprintf(stderr, "mkrun: %s: %s\n", mk_strerror(st), mk_ctx_error(ctx));
		goto out;
	}
	p = mk_pipeline_prog(pl);
	const ir_sched *s = mk_pipeline_sched(pl);
	if (o->compile_only) {
		if (!o->quiet)
			printf("mkrun: %s compiled for %s (%d rank%s, %d CTAs)\n", p->name,
			       mk_ctx_device(ctx), p->world, p->world > 1 ? "s" : "", s->ctas);
		rc = 0;
		goto out;
	}
	if (!o->quiet && j.rank <= 0) {
		printf("mkrun: %s on %s: %d rank%s%s x %d CTAs (", p->name, mk_ctx_device(ctx), p->world,
		       p->world > 1 ? "s" : "", j.comm ? " (one process each)" : "", s->ctas);
		for (int r = 0; r < s->nroles; r++)
			printf("%s%s %d", r ? ", " : "", ir_role_name(s->roles[r].kind), s->roles[r].ctas);
		printf("), %d tasks and %d flags per rank\n", s->ntasks, s->nflags);
	}
	ref = alloc_bufs(p);
	gpu = alloc_bufs(p);
	if (!ref || !gpu || make_inputs(p, o, ref) != 0)
		goto out;
	for (int t = 0; t < p->ntensors; t++)
		if (p->tensors[t].kind == TK_IN)
			for (int r = j.first; r < j.first + j.n; r++) {
				st = mk_tensor_write_f32(pl, p->tensors[t].name, r, ref[t * p->world + r],
							 (size_t)ir_tensor_elems(&p->tensors[t]));
				if (st != MK_OK) {
					fprintf(stderr, "mkrun: %s\n", mk_ctx_error(ctx));
					goto out;
				}
			}
	cpuref_opts ro = {.round_storage = 1};
	if (!o->nocheck && cpuref_run(p, ref, &ro, err, sizeof err) != 0) {
		fprintf(stderr, "mkrun: CPU reference: %s\n", err);
		goto out;
	}
	const char *kill_ms = getenv("MK_TEST_KILL_AFTER_MS");
	if (kill_ms && j.rank >= 0 && getenv("MK_TEST_KILL_RANK") &&
	    atoi(getenv("MK_TEST_KILL_RANK")) == j.rank) {
		/* tests: this rank dies mid-run, as a crash would */
		struct itimerval it = {{0, 0}, {atoi(kill_ms) / 1000, (atoi(kill_ms) % 1000) * 1000}};
		signal(SIGALRM, SIG_DFL);
		setitimer(ITIMER_REAL, &it, NULL);
	}
	float first_ms = 0;
	st = mk_run_timed(pl, &first_ms);
	if (st != MK_OK) {
		say(&j, "%s: %s\n%s", mk_strerror(st), st == MK_ERR_STALL || st == MK_ERR_DATA ? "" : mk_ctx_error(ctx),
		    mk_stall_report(pl));
		goto out;
	}
	if (o->trace) {
		st = mk_trace_write(pl, o->trace);
		if (st != MK_OK) {
			fprintf(stderr, "mkrun: trace: %s\n", mk_ctx_error(ctx));
			goto out;
		}
	}
	for (int t = 0; t < p->ntensors; t++)
		if (p->tensors[t].kind == TK_OUT)
			for (int r = j.first; r < j.first + j.n; r++)
				if (mk_tensor_read_f32(pl, p->tensors[t].name, r, gpu[t * p->world + r],
						       (size_t)ir_tensor_elems(&p->tensors[t])) != MK_OK) {
					fprintf(stderr, "mkrun: %s\n", mk_ctx_error(ctx));
					goto out;
				}
	if (j.rank >= 0 && !o->quiet)
		printf("rank %d:\n", j.rank);
	int bad = o->nocheck ? 0 : compare(p, ref, gpu, j.first, j.first + j.n, o->quiet);
	if (o->check_finite) {
		bad |= outputs_finite(p, gpu, j.first, j.first + j.n, "the GPU's");
		if (!o->nocheck)
			bad |= outputs_finite(p, ref, j.first, j.first + j.n, "the CPU reference's");
	}

	/* timing */
	int n = o->iters;
	times = calloc((size_t)(n > 0 ? n : 1), sizeof *times);
	if (!times)
		goto out;
	if (o->resident && (st = mk_resident_start(pl)) != MK_OK) {
		say(&j, "%s: %s\n", mk_strerror(st), mk_ctx_error(ctx));
		goto out;
	}
	for (int i = 0; i < o->warmup + n; i++) {
		float ms = 0;
		st = o->resident ? mk_resident_run(pl, &ms) : mk_run_timed(pl, &ms);
		if (st != MK_OK) {
			say(&j, "run %d: %s: %s\n%s", i + 2, mk_strerror(st), mk_ctx_error(ctx),
			    mk_stall_report(pl));
			goto out;
		}
		if (i >= o->warmup)
			times[i - o->warmup] = ms;
	}
	if (o->resident && (st = mk_resident_stop(pl)) != MK_OK) {
		say(&j, "%s: %s\n", mk_strerror(st), mk_ctx_error(ctx));
		goto out;
	}
	/* the repeated runs must give the same outputs, bit for bit */
	int same = 1;
	for (int t = 0; t < p->ntensors && same; t++)
		if (p->tensors[t].kind == TK_OUT)
			for (int r = j.first; r < j.first + j.n && same; r++) {
				size_t k = (size_t)ir_tensor_elems(&p->tensors[t]);
				float *again = malloc(k * sizeof(float) + 1);
				if (!again)
					goto out;
				if (mk_tensor_read_f32(pl, p->tensors[t].name, r, again, k) != MK_OK)
					same = 0;
				else
					same = !memcmp(again, gpu[t * p->world + r], k * sizeof(float));
				free(again);
			}
	if (!same) {
		say(&j, "repeated runs changed the outputs (a race?)\n");
		bad = 1;
	}
	if (o->save && save_tensors(p, gpu, o->save, 0, j.first, j.first + j.n) != 0)
		goto out;
	/* every rank's verdict, for rank 0's summary */
	int all_bad = bad;
	if (j.comm) {
		int *v = calloc((size_t)mk_comm_size(j.comm), sizeof(int));
		if (!v || mk_comm_gather_int(j.comm, bad, v) != MK_OK) {
			free(v);
			say(&j, "collecting the results failed\n");
			goto out;
		}
		for (int r = 0; r < mk_comm_size(j.comm); r++)
			all_bad |= v[r];
		free(v);
	}
	if (j.rank <= 0) {
		if (n > 0) {
			qsort(times, (size_t)n, sizeof *times, cmp_float);
			printf("mkrun: %s: %s; %s median %.1f us over %d runs (min %.1f, max %.1f), "
			       "predicted %.1f us%s\n", p->name,
			       o->nocheck ? "not checked" : all_bad ? "MISMATCH" : "match",
			       o->resident ? "resident" : "one-shot", times[n / 2] * 1e3, n, times[0] * 1e3,
			       times[n - 1] * 1e3, s->predicted_us, j.comm ? " (rank 0's kernel)" : "");
		} else {
			printf("mkrun: %s: %s (first run %.1f us)\n", p->name, all_bad ? "MISMATCH" : "match",
			       first_ms * 1e3);
		}
	}
	rc = all_bad;
out:
	if (p) {
		free_bufs(p, ref);
		free_bufs(p, gpu);
	}
	free(times);
	mk_pipeline_destroy(pl);
	mk_ctx_destroy(ctx);
	mk_comm_destroy(j.comm);
	return rc;
}

/* Is this process one rank of a job started by a launcher (mkrun -n,
 * mpirun, Slurm, torchrun)? */
static int launched_as_rank(void)
{
	static const char *const size_vars[] = {"MK_WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
						"SLURM_NTASKS", "WORLD_SIZE"};
	for (size_t i = 0; i < sizeof size_vars / sizeof size_vars[0]; i++) {
		const char *v = getenv(size_vars[i]);
		if (v)
			return atoi(v) > 1;
	}
	return 0;
}

static int mps_running(void)
{
	const char *dir = getenv("CUDA_MPS_PIPE_DIRECTORY");
	char path[512];
	snprintf(path, sizeof path, "%s/control", dir ? dir : "/tmp/nvidia-mps");
	return access(path, F_OK) == 0;
}

/* mkrun -n N: N local ranks, one process each, this binary again. */
static int spawn(int argc, char **argv, int n)
{
	int ndev = 0;
	const cudrv *cu;
	char why[256];
	if (cudrv_get(&cu, why, sizeof why) != CUDRV_OK || cu->cuDeviceGetCount(&ndev) != CUDA_SUCCESS ||
	    ndev < 1) {
		fprintf(stderr, "mkrun: no GPU here (%s)\n", why);
		return 1;
	}
	if (n > ndev && !mps_running())
		fprintf(stderr,
			"mkrun: warning: %d ranks share %d GPU%s without MPS: their kernels time-slice and "
			"every wait on another rank crawls; start the MPS daemon "
			"(nvidia-cuda-mps-control -d, as root)\n", n, ndev, ndev > 1 ? "s" : "");
	/* the rendezvous: a socket listening on loopback from now on, handed to
	 * rank 0 (MK_ROOT_FD) rather than a port closed here and bound again
	 * there, which another process could take in between */
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof sa;
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) || listen(fd, 1024) ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl)) {
		fprintf(stderr, "mkrun: no local port for the rendezvous: %s\n", strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	int port = ntohs(sa.sin_port);
	/* the job token: 128 bits from the OS, which nobody else can guess */
	char token[2 * 16 + 1];
	{
		unsigned char r[16];
		size_t got = 0;
		while (got < sizeof r) {
			ssize_t k = getrandom(r + got, sizeof r - got, 0);
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0) {
				fprintf(stderr, "mkrun: no random bytes for the job token (getrandom: %s)\n",
					strerror(errno));
				close(fd);
				return 1;
			}
			got += (size_t)k;
		}
		for (int i = 0; i < 16; i++)
			snprintf(token + 2 * i, 3, "%02x", r[i]);
	}
	char **args = calloc((size_t)argc + 1, sizeof *args);
	if (!args)
		return 1;
	int na = 0;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "-n")) {
			i++;
			continue;
		}
		args[na++] = argv[i];
	}
	pid_t *pids = calloc((size_t)n, sizeof *pids);
	if (!pids) {
		close(fd);
		return 1;
	}
	for (int r = 0; r < n; r++) {
		pid_t pid = fork();
		if (pid < 0) {
			fprintf(stderr, "mkrun: fork: %s\n", strerror(errno));
			close(fd);
			return 1;
		}
		if (pid == 0) {
			char v[64];
			snprintf(v, sizeof v, "%d", r);
			setenv("MK_RANK", v, 1);
			setenv("MK_LOCAL_RANK", v, 1);
			snprintf(v, sizeof v, "%d", n);
			setenv("MK_WORLD_SIZE", v, 1);
			setenv("MK_LOCAL_WORLD_SIZE", v, 1);
			snprintf(v, sizeof v, "127.0.0.1:%d", port);
			setenv("MK_ROOT", v, 1);
			setenv("MK_JOB_TOKEN", token, 1);
			if (r == 0) {
				/* rank 0 keeps the listening socket across exec */
				snprintf(v, sizeof v, "%d", fd);
				setenv("MK_ROOT_FD", v, 1);
				fcntl(fd, F_SETFD, 0);
			} else {
				unsetenv("MK_ROOT_FD");   /* the socket closes on exec */
			}
			/* the ranks are all here: libfabric's tcp provider (RDMA between
			 * the mesh's "nodes") on loopback, unless told otherwise */
			setenv("FI_TCP_IFACE", "lo", 0);
			if (n > ndev) {  /* MPS: each rank its share of the SMs */
				snprintf(v, sizeof v, "%d", 100 * ndev / n);
				setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", v, 0);
			}
			execv("/proc/self/exe", args);
			fprintf(stderr, "mkrun: exec: %s\n", strerror(errno));
			_exit(127);
		}
		pids[r] = pid;
	}
	close(fd);   /* rank 0 has it now */
	int worst = 0;
	for (int r = 0; r < n; r++) {
		int status = 0;
		while (waitpid(pids[r], &status, 0) < 0 && errno == EINTR)
			;
		int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		if (rc)
			fprintf(stderr, "mkrun: rank %d %s %d\n", r,
				WIFEXITED(status) ? "exited with" : "was killed by signal",
				WIFEXITED(status) ? rc : WTERMSIG(status));
		if (rc > worst)
			worst = rc;
	}
	free(pids);
	free(args);
	return worst ? 1 : 0;
}

int main(int argc, char **argv)
{
	opts o;
	int rc = parse_args(argc, argv, &o);
	if (rc)
		return rc;
	if (o.nproc > 1 && !o.cpu)
		rc = spawn(argc, argv, o.nproc);
	else
		rc = o.cpu ? run_cpu(&o) : run_gpu(&o);
	for (int i = 0; i < o.nparams; i++)
		free((char *)o.params[i].name);
	return rc;
}
