/* cpuref.c - the CPU reference executor; see cpuref.h.
 *
 * Here: the pieces and their coordinates, threads, the compute ops and the
 * driver; the exchange ops are cpuref_xchg.c, and what the two share is
 * cpuref_int.h.
 *
 * One function per op, found through the table `ops` indexed by ir_opkind.
 * Each op function runs the op for one rank r: it checks the shapes it is
 * about to use (so a malformed program is an error, never a write past a
 * buffer), then computes rank r's output piece from the local pieces of any
 * rank.  cpuref_run calls it for every op in program order and, within an
 * op, for ranks 0, 1, ... so collectives simply read other ranks' buffers.
 *
 * Coordinates.  A piece stores a box of the tensor's logical coordinates:
 * on dim d it starts at ir_shard_base(t, d, r) and is t->local[d] long.
 * Operands are lined up with the output by logical coordinate (`view`), so
 * placement mistakes show up as an error rather than as quietly wrong data.
 *
 * Groups.  A split over GRP_WORLD puts shard s on rank s; over GRP_GPUS on
 * gpu s of each node (every node holds the whole tensor); over GRP_NODES on
 * node s (every gpu index holds it).  "The group of rank r" is the set of
 * ranks that together hold one whole copy: all ranks, r's node, or the
 * ranks with r's gpu index.
 */
#include "cpuref_int.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


int cr_fail(ctx *c, const char *fmt, ...)
{
	if (!c->err || !c->n)
		return -1;
	int k = 0;
	if (c->opi >= 0) {
		const ir_op *op = &c->p->ops[c->opi];
		k = snprintf(c->err, c->n, "op %d (%s '%s'): ", c->opi,
			     ir_op_name(op->kind), op->stage ? op->stage
			     : c->p->tensors[op->out].name);
		if (k < 0 || (size_t)k >= c->n)
			return -1;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->err + k, c->n - (size_t)k, fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- storage rounding --------------------------------------------------- */

/* x rounded to a binary format with `mant` fraction bits and smallest normal
 * exponent emin (below it, subnormals with the same quantum).  Dividing by
 * a power of two is exact in double, and nearbyint rounds to nearest even. */
static double round_fmt(double x, int mant, int emin)
{
	if (x == 0 || !isfinite(x))
		return x;
	int e;
	frexp(x, &e);            /* |x| = f * 2^e, f in [0.5, 1) */
	e -= 1;                  /* |x| in [2^e, 2^(e+1)) */
	if (e < emin)
		e = emin;
	double q = ldexp(1.0, e - mant);
	return nearbyint(x / q) * q;
}

float cpuref_round(ir_dtype t, float x)
{
	double r;
	switch (t) {
	case DT_BF16:
		if (isnan(x))
			return x;
		r = round_fmt(x, 7, -126);
		return fabs(r) > 0x1.fep127 ? copysignf(INFINITY, x) : (float)r;
	case DT_F16:
		if (isnan(x))
			return x;
		r = round_fmt(x, 10, -14);
		return fabs(r) > 65504.0 ? copysignf(INFINITY, x) : (float)r;
	case DT_E4M3:
		if (isnan(x))
			return x;
		if (isinf(x))
			return copysignf(448.0f, x);
		r = round_fmt(x, 3, -6);
		return fabs(r) > 448.0 ? copysignf(448.0f, x) : (float)r;
	case DT_I32:
		return isfinite(x) ? nearbyintf(x) : x;
	default:
		return x;
	}
}

/* The value stored into tensor t. */
float cr_st(const ctx *c, const ir_tensor *t, double x)
{
	float f = (float)x;
	return c->round ? cpuref_round(t->dtype, f) : f;
}

/* ---- tensors, groups, boxes --------------------------------------------- */

const ir_tensor *cr_T(const ctx *c, int i) { return &c->p->tensors[i]; }
float *cr_piece(const ctx *c, int t, int r) { return c->v[(size_t)t * (size_t)c->world + (size_t)r]; }
float *cr_outp(const ctx *c, int r) { return cr_piece(c, c->p->ops[c->opi].out, r); }

int cr_group_size(const ctx *c, ir_group g)
{
	return g == GRP_GPUS ? c->gpus : g == GRP_NODES ? c->nodes : c->world;
}

int cr_shard_of(const ctx *c, ir_group g, int r)
{
	return g == GRP_GPUS ? r % c->gpus : g == GRP_NODES ? r / c->gpus : r;
}

/* The rank of r's group that holds shard s. */
int cr_rank_of_shard(const ctx *c, ir_group g, int s, int r)
{
	switch (g) {
	case GRP_GPUS: return (r / c->gpus) * c->gpus + s;
	case GRP_NODES: return s * c->gpus + r % c->gpus;
	default: return s;
	}
}

int64_t cr_base(const ctx *c, const ir_tensor *t, int d, int r)
{
	return ir_shard_base(t, d, r, c->nodes, c->gpus);
}

int cr_is_split(const ir_tensor *t, int d)
{
	return t->place.kind == PL_SPLIT && t->place.dim == d;
}

static int64_t elems(const int64_t *shape, int nd)
{
	int64_t k = 1;
	for (int d = 0; d < nd; d++)
		k *= shape[d];
	return k;
}

static void strides(const int64_t *shape, int nd, int64_t *s)
{
	int64_t k = 1;
	for (int d = nd - 1; d >= 0; d--) {
		s[d] = k;
		k *= shape[d];
	}
}

/* Copies the box of extent ext from src (shape ss, at so) to dst (shape ds,
 * at dof).  The caller has checked that the box fits in both. */
void cr_copy_box(float *dst, const int64_t *ds, const int64_t *dof,
		     const float *src, const int64_t *ss, const int64_t *so,
		     const int64_t *ext, int nd)
{
	int64_t dst_s[IR_MAXDIM], src_s[IR_MAXDIM], i[IR_MAXDIM] = {0};
	if (nd == 0) {
		dst[0] = src[0];
		return;
	}
	strides(ds, nd, dst_s);
	strides(ss, nd, src_s);
	int64_t rows = elems(ext, nd - 1), len = ext[nd - 1];
	if (len == 0)
		return;
	for (int64_t k = 0; k < rows; k++) {
		int64_t a = 0, b = 0;
		for (int d = 0; d < nd; d++) {
			a += (dof[d] + i[d]) * dst_s[d];
			b += (so[d] + i[d]) * src_s[d];
		}
		memcpy(dst + a, src + b, (size_t)len * sizeof *dst);
		for (int d = nd - 2; d >= 0; d--) {
			if (++i[d] < ext[d])
				break;
			i[d] = 0;
		}
	}
}

/* Gathers tensor t along dim d for rank r: if t is split on d, the shards
 * of r's group concatenated in shard order; otherwise r's own piece.  dst
 * has t's local shape with dim d widened to t->shape[d] (gshape). */
void cr_gather_dim(const ctx *c, int ti, int d, int r, float *dst,
		       int64_t *gshape)
{
	const ir_tensor *t = cr_T(c, ti);
	int64_t zero[IR_MAXDIM] = {0}, off[IR_MAXDIM] = {0};
	memcpy(gshape, t->local, sizeof t->local);
	if (!cr_is_split(t, d)) {
		memcpy(dst, cr_piece(c, ti, r), (size_t)ir_tensor_elems(t) * sizeof *dst);
		return;
	}
	gshape[d] = t->shape[d];
	ir_group g = t->place.group;
	for (int s = 0; s < cr_group_size(c, g); s++) {
		off[d] = s * t->local[d];
		cr_copy_box(dst, gshape, off, cr_piece(c, ti, cr_rank_of_shard(c, g, s, r)),
			 t->local, zero, t->local, t->ndim);
	}
}

/* An operand lined up with the output: the output's local index i reads
 * p[sum_d (i[d] + off[d]) * stride[d]] (stride 0 broadcasts). */
typedef struct view {
	const float *p;
	int64_t off[IR_MAXDIM], stride[IR_MAXDIM];
} view;

/* Lines operand `in` up with output `out` on rank r, by logical coordinate.
 * A 1-D operand whose length is the output's last logical dim broadcasts
 * over the other dims.  Fails when the operand's shape does not fit or when
 * rank r does not hold the elements it needs. */
static int align(ctx *c, view *v, int ini, int r, const ir_tensor *out)
{
	const ir_tensor *in = cr_T(c, ini);
	int64_t s[IR_MAXDIM];
	int od = out->ndim;
	strides(in->local, in->ndim, s);
	memset(v, 0, sizeof *v);
	v->p = cr_piece(c, ini, r);
	for (int d = 0; d < od; d++) {
		int id;
		if (in->ndim == od && in->shape[d] == out->shape[d])
			id = d;
		else if (in->ndim == 1 && d == od - 1 && in->shape[0] == out->shape[d])
			id = 0;
		else if (in->ndim == 1 && d < od - 1 && in->shape[0] == out->shape[od - 1])
			continue;  /* broadcast over this dim */
		else
			return cr_fail(c, "operand '%s' has a shape that does not match '%s'",
				    in->name, out->name);
		int64_t o = cr_base(c, out, d, r) - cr_base(c, in, id, r);
		if (out->local[d] > 0 && (o < 0 || o + out->local[d] > in->local[id]))
			return cr_fail(c, "rank %d does not hold the part of '%s' that its piece "
				    "of '%s' needs (dim %d)", r, in->name, out->name, d);
		v->off[d] = o;
		v->stride[d] = s[id];
	}
	return 0;
}

int cr_same_local(const ir_tensor *a, const ir_tensor *b)
{
	if (a->ndim != b->ndim)
		return 0;
	for (int d = 0; d < a->ndim; d++)
		if (a->local[d] != b->local[d])
			return 0;
	return 1;
}

/* ---- threads ------------------------------------------------------------- */

typedef void (*rows_fn)(void *arg, int64_t lo, int64_t hi, double *scratch);

typedef struct job {
	rows_fn fn;
	void *arg;
	int64_t lo, hi;
	double *scratch;
} job;

static void *job_main(void *a)
{
	job *j = a;
	j->fn(j->arg, j->lo, j->hi, j->scratch);
	return NULL;
}

/* Runs fn over rows [0, rows) in contiguous slices, one per thread, each
 * with `scratch` doubles of its own.  Small work runs on this thread. */
static int par_rows(ctx *c, int64_t rows, double work, size_t scratch,
		    rows_fn fn, void *arg)
{
	int nt = c->threads;
	if (rows <= 0)
		return 0;
	if (work < 4e6 || rows < 2)
		nt = 1;
	if (nt > rows)
		nt = (int)rows;
	double *mem = malloc((size_t)nt * (scratch ? scratch : 1) * sizeof *mem);
	job *jobs = malloc((size_t)nt * sizeof *jobs);
	pthread_t *tid = malloc((size_t)nt * sizeof *tid);
	int *started = calloc((size_t)nt, sizeof *started);
	if (!mem || !jobs || !tid || !started) {
		free(mem), free(jobs), free(tid), free(started);
		return cr_fail(c, "out of memory");
	}
	for (int k = 0; k < nt; k++)
		jobs[k] = (job){fn, arg, rows * k / nt, rows * (k + 1) / nt,
				mem + (size_t)k * (scratch ? scratch : 1)};
	for (int k = 1; k < nt; k++)
		started[k] = !pthread_create(&tid[k], NULL, job_main, &jobs[k]);
	job_main(&jobs[0]);
	for (int k = 1; k < nt; k++) {
		if (started[k])
			pthread_join(tid[k], NULL);
		else
			job_main(&jobs[k]);
	}
	free(mem), free(jobs), free(tid), free(started);
	return 0;
}

/* ---- compute ops ---------------------------------------------------------- */

typedef struct mm_job {
	const ctx *c;
	const ir_op *epi;        /* the fused elementwise op, or NULL */
	const ir_op *epi2;       /* the fused add or mul, or NULL */
	const ir_op *epi3;       /* the fused elementwise op after it, or NULL */
	view x;                  /* its other operand, lined up with the result */
	const ir_tensor *ot;
	const float *a, *b;
	float *o;
	int64_t M, N, K;
	int bshared;             /* B is [K, N] for every batch */
	const float *g;          /* a gate-up matmul's gate weight [K, N], or NULL */
	const ir_op *gepi;       /* the unary op on A times it, or NULL */
} mm_job;

static double ew_value(const ir_op *op, double a, double b);

/* out = rmsnorm of `rows` rows of len (weight w, or none), rounded to o's type */
static void rms_rows(const ctx *c, const float *x, const float *w, int64_t rows, int64_t len,
		     const ir_tensor *o, float *out)
{
	for (int64_t i = 0; i < rows; i++) {
		const float *xr = x + i * len;
		double ss = 0;
		for (int64_t k = 0; k < len; k++)
			ss += (double)xr[k] * xr[k];
		double inv = 1 / sqrt(ss / (double)len + 1e-6);
		for (int64_t k = 0; k < len; k++)
			out[i * len + k] = cr_st(c, o, xr[k] * inv * (w ? w[k] : 1.0));
	}
}

static void mm_rows(void *arg, int64_t lo, int64_t hi, double *acc)
{
	const mm_job *j = arg;
	for (int64_t row = lo; row < hi; row++) {
		int64_t e = row / j->M;
		const float *a = j->a + row * j->K;
		const float *b = j->b + (j->bshared ? 0 : e * j->K * j->N);
		double *gacc = acc + j->N;  /* A Wg (gate-up) */
		for (int64_t n = 0; n < j->N; n++)
			acc[n] = 0;
		if (j->g)
			for (int64_t n = 0; n < j->N; n++)
				gacc[n] = 0;
		for (int64_t k = 0; k < j->K; k++) {
			double x = a[k];
			const float *bk = b + k * j->N;
			for (int64_t n = 0; n < j->N; n++)
				acc[n] += x * bk[n];
			if (j->g) {
				const float *gk = j->g + k * j->N;
				for (int64_t n = 0; n < j->N; n++)
					gacc[n] += x * gk[n];
			}
		}
		for (int64_t n = 0; n < j->N; n++) {
			double v = j->epi ? ew_value(j->epi, acc[n], 0) : acc[n];
			if (j->g)  /* epi(A B) * act(A Wg), unrounded between (as the tile) */
				v *= j->gepi ? ew_value(j->gepi, gacc[n], 0) : gacc[n];
			if (j->epi2) {  /* (row, n), or (batch, row, n) */
				const int64_t at[3] = {row / j->M, row % j->M, n};
				const int64_t *ix = j->ot->ndim == 3 ? at : at + 1;
				int64_t k = 0;
				for (int d = 0; d < j->ot->ndim; d++)
					k += (ix[d] + j->x.off[d]) * j->x.stride[d];
				v = ew_value(j->epi2, v, j->x.p[k]);
			}
			if (j->epi3)
				v = ew_value(j->epi3, v, 0);
			j->o[row * j->N + n] = cr_st(j->c, j->ot, v);
		}
	}
}

/* matmul(A[M,K], B[K,N]) -> [M,N]; batched A[E,M,K] x B[E,K,N] (or B[K,N]
 * shared) -> [E,M,N]; on the local pieces. */
static int op_matmul(ctx *c, const ir_op *op, int r)
{
	const ir_tensor *a = cr_T(c, op->in[0]), *b = cr_T(c, op->in[1]), *o = cr_T(c, op->out);
	int nd = a->ndim;
	int ok = (nd == 2 || nd == 3) && (b->ndim == nd || b->ndim == 2) && o->ndim == nd;
	int64_t E = nd == 3 ? a->local[0] : 1, M = a->local[nd - 2], K = a->local[nd - 1];
	int64_t N = b->local[b->ndim - 1];
	ok = ok && b->local[b->ndim - 2] == K && o->local[nd - 2] == M && o->local[nd - 1] == N;
	if (ok && nd == 3)
		ok = o->local[0] == E && (b->ndim == 2 || b->local[0] == E);
	if (!ok)
		return cr_fail(c, "local shapes do not multiply: '%s' x '%s' -> '%s'",
			    a->name, b->name, o->name);
	ir_op epi = {0}, epi2 = {0}, epi3 = {0};
	if (op->epi3) {
		epi3.kind = (ir_opkind)(op->epi3 - 1);
		epi3.scalar = op->epi3_scalar;
	}
	if (op->epi) {
		epi.kind = (ir_opkind)(op->epi - 1);
		epi.scalar = op->epi_scalar;
	}
	view x = {0};
	if (op->epi2) {  /* the result's shape, or a bias over its columns */
		if (op->nin != 3 || align(c, &x, op->in[2], r, o))
			return op->nin != 3 ? cr_fail(c, "matmul '%s' fuses an op without its operand",
						      o->name) : -1;
		epi2.kind = (ir_opkind)(op->epi2 - 1);
	} else if (op->nin != 2) {
		return cr_fail(c, "matmul '%s' has %d operands", o->name, op->nin);
	}
	ir_op gepi = {0};
	if (op->gate) {  /* expand.c: 2-D, the gate's weight of B's local shape */
		const ir_tensor *g = cr_T(c, op->gate - 1);
		if (nd != 2 || g->ndim != 2 || g->local[0] != K || g->local[1] != N)
			return cr_fail(c, "gate-up matmul '%s': '%s' is not of '%s''s shape", o->name,
				       g->name, b->name);
		gepi.kind = (ir_opkind)(op->gate_epi - 1);
		gepi.scalar = op->gate_scalar;
	}
	/* an rmsnorm in the tile (expand.c fuse_norms): A = rmsnorm(X, g)
	 * first, rounded to the folded N's type, as the op it replaced */
	float *na = NULL;
	if (op->norm) {
		const ir_tensor *g = op->norm_w ? cr_T(c, op->norm_w - 1) : NULL;
		if (nd != 2 || a->local[1] != a->shape[1] || (g && (g->ndim != 1 || g->local[0] != K)))
			return cr_fail(c, "matmul '%s': the rmsnorm of '%s' needs whole 2-D rows%s",
				       o->name, a->name, g ? " and a weight of their length" : "");
		if (!(na = malloc((size_t)(M * K > 0 ? M * K : 1) * sizeof *na)))
			return cr_fail(c, "out of memory for the rmsnorm of '%s'", a->name);
		rms_rows(c, cr_piece(c, op->in[0], r), g ? cr_piece(c, op->norm_w - 1, r) : NULL, M,
			 K, cr_T(c, op->norm - 1), na);
	}
	mm_job j = {c, op->epi ? &epi : NULL, op->epi2 ? &epi2 : NULL,
		    op->epi2 && op->epi3 ? &epi3 : NULL, x, o,
		    na ? na : cr_piece(c, op->in[0], r), cr_piece(c, op->in[1], r),
		    cr_outp(c, r), M, N, K, b->ndim == 2,
		    op->gate ? cr_piece(c, op->gate - 1, r) : NULL, op->gate_epi ? &gepi : NULL};
	const int rc = par_rows(c, E * M, (double)E * M * N * K * (op->gate ? 2 : 1),
				(size_t)N * (op->gate ? 2 : 1), mm_rows, &j);
	free(na);
	return rc;
}

/* The value of elementwise op `op` at operands a (and b). */
static double ew_value(const ir_op *op, double a, double b)
{
	switch (op->kind) {
	case OP_ADD: return a + b;
	case OP_MUL: return a * b;
	case OP_SCALE: return a * op->scalar;
	case OP_CAST: return cpuref_round(op->to, (float)a);
	case OP_RELU: return a > 0 ? a : 0;
	case OP_SILU: return a / (1 + exp(-a));
	case OP_GELU: return 0.5 * a * (1 + erf(a / sqrt(2.0)));
	case OP_GELU_TANH:
		return 0.5 * a * (1 + tanh(0.7978845608028654 * (a + 0.044715 * a * a * a)));
	default: return NAN;
	}
}

/* add, mul, scale, cast, relu, silu, gelu: one or two operands, lined up
 * with the output by logical coordinate. */
static int op_ew(ctx *c, const ir_op *op, int r)
{
	const ir_tensor *o = cr_T(c, op->out);
	view v[2];
	int nin = op->nin < 2 ? op->nin : 2;
	for (int k = 0; k < nin; k++)
		if (align(c, &v[k], op->in[k], r, o))
			return -1;
	float *out = cr_outp(c, r);
	int64_t i[IR_MAXDIM] = {0}, total = ir_tensor_elems(o);
	for (int64_t x = 0; x < total; x++) {
		double val[2] = {0, 0};
		for (int k = 0; k < nin; k++) {
			int64_t at = 0;
			for (int d = 0; d < o->ndim; d++)
				at += (i[d] + v[k].off[d]) * v[k].stride[d];
			val[k] = v[k].p[at];
		}
		out[x] = cr_st(c, o, ew_value(op, val[0], val[1]));
		for (int d = o->ndim - 1; d >= 0; d--) {
			if (++i[d] < o->local[d])
				break;
			i[d] = 0;
		}
	}
	return 0;
}

/* Row-wise ops need whole rows: X and the output have the same local shape
 * and X is not split on its last dim.  W (rmsnorm) is lined up with a row. */
static int rows_check(ctx *c, const ir_op *op, int r, int64_t *rows, int64_t *len,
		      const float **w)
{
	const ir_tensor *x = cr_T(c, op->in[0]), *o = cr_T(c, op->out);
	if (!cr_same_local(x, o) || x->ndim < 1)
		return cr_fail(c, "'%s' and '%s' differ in local shape", x->name, o->name);
	if (x->local[x->ndim - 1] != x->shape[x->ndim - 1])
		return cr_fail(c, "'%s' is split on its last dim; rows must be whole", x->name);
	if (x->place.kind == PL_PARTIAL && c->world > 1)
		return cr_fail(c, "'%s' is partial: reduce it first", x->name);
	*len = x->local[x->ndim - 1];
	*rows = *len ? ir_tensor_elems(x) / *len : 0;
	if (w) {
		*w = NULL;
		if (op->nin > 1) {
			const ir_tensor *wt = cr_T(c, op->in[1]);
			if (wt->ndim != 1 || wt->local[0] != *len)
				return cr_fail(c, "weight '%s' must be 1-D of length %lld",
					    wt->name, (long long)*len);
			*w = cr_piece(c, op->in[1], r);
		}
	}
	return 0;
}

static int op_rmsnorm(ctx *c, const ir_op *op, int r)
{
	int64_t rows, len;
	const float *w;
	if (rows_check(c, op, r, &rows, &len, &w))
		return -1;
	rms_rows(c, cr_piece(c, op->in[0], r), w, rows, len, cr_T(c, op->out), cr_outp(c, r));
	return 0;
}

/* y = (x - mean) / sqrt(var + 1e-5) * w + b over each row (PyTorch's
 * layer_norm, biased variance). */
static int op_layernorm(ctx *c, const ir_op *op, int r)
{
	int64_t rows, len;
	const float *w;
	if (rows_check(c, op, r, &rows, &len, &w))
		return -1;
	const ir_tensor *bt = cr_T(c, op->in[2]), *o = cr_T(c, op->out);
	if (bt->ndim != 1 || bt->local[0] != len)
		return cr_fail(c, "bias '%s' must be 1-D of length %lld", bt->name, (long long)len);
	const float *b = cr_piece(c, op->in[2], r);
	const float *x = cr_piece(c, op->in[0], r);
	float *out = cr_outp(c, r);
	for (int64_t i = 0; i < rows; i++) {
		const float *xr = x + i * len;
		double m = 0, v = 0;
		for (int64_t k = 0; k < len; k++)
			m += xr[k];
		m /= (double)len;
		for (int64_t k = 0; k < len; k++)
			v += (xr[k] - m) * (xr[k] - m);
		double inv = 1 / sqrt(v / (double)len + 1e-5);
		for (int64_t k = 0; k < len; k++)
			out[i * len + k] = cr_st(c, o, (xr[k] - m) * inv * w[k] + b[k]);
	}
	return 0;
}

/* Rotary embedding, Llama's half rotation: in each head of D columns,
 * y[j] = x[j] cos[t][j] - x[j + D/2] sin[t][j]      (j < D/2)
 * y[j] = x[j] cos[t][j] + x[j - D/2] sin[t][j]      (j >= D/2)
 * with t the row's token: X's rows are [.., tokens], never split. */
static int op_rope(ctx *c, const ir_op *op, int r)
{
	const ir_tensor *x = cr_T(c, op->in[0]), *o = cr_T(c, op->out), *ct = cr_T(c, op->in[1]);
	if (!cr_same_local(x, o) || x->ndim < 2 || ct->ndim != 2)
		return cr_fail(c, "rope: '%s' and '%s' differ in local shape", x->name, o->name);
	int64_t C = x->local[x->ndim - 1], Tn = x->local[x->ndim - 2], D = ct->local[1];
	if (D < 2 || D % 2 || C % D || ct->local[0] != Tn)
		return cr_fail(c, "rope: '%s' does not fit the tables", x->name);
	const float *xv = cr_piece(c, op->in[0], r), *cs = cr_piece(c, op->in[1], r),
		    *sn = cr_piece(c, op->in[2], r);
	float *out = cr_outp(c, r);
	int64_t rows = ir_tensor_elems(x) / C, h = D / 2;
	for (int64_t i = 0; i < rows; i++) {
		int64_t t = i % Tn;
		const float *xr = xv + i * C;
		for (int64_t k = 0; k < C; k++) {
			int64_t j = k % D;
			double rot = j < h ? -(double)xr[k + h] : (double)xr[k - h];
			out[i * C + k] = cr_st(c, o, xr[k] * (double)cs[t * D + j] + rot * sn[t * D + j]);
		}
	}
	return 0;
}

/* heads: local [T, Hl*D] -> [Hl, T, D]; merge_heads: back.  A rank's
 * heads are its own (the split stays on the heads). */
static int op_heads(ctx *c, const ir_op *op, int r)
{
	int heads = op->kind == OP_HEADS;
	const ir_tensor *x = cr_T(c, op->in[0]), *o = cr_T(c, op->out);
	const ir_tensor *h3 = heads ? o : x, *f2 = heads ? x : o;
	if (h3->ndim != 3 || f2->ndim != 2 || f2->local[0] != h3->local[1] ||
	    f2->local[1] != h3->local[0] * h3->local[2])
		return cr_fail(c, "%s: '%s' and '%s' do not match", ir_op_name(op->kind), x->name,
			    o->name);
	int64_t H = h3->local[0], Tn = h3->local[1], D = h3->local[2];
	const float *xv = cr_piece(c, op->in[0], r);
	float *out = cr_outp(c, r);
	for (int64_t h = 0; h < H; h++)
		for (int64_t t = 0; t < Tn; t++)
			for (int64_t d = 0; d < D; d++) {
				int64_t i3 = (h * Tn + t) * D + d, i2 = t * H * D + h * D + d;
				out[heads ? i3 : i2] = xv[heads ? i2 : i3];
			}
	return 0;
}

/* slice, concat, transpose, reshape: rank-local (sema keeps splits off the
 * dimensions they cut, join or regroup), so each rank's piece comes from
 * its own pieces, element by element; a reshape keeps the row-major order
 * of the local piece (its splits leave each rank a contiguous block). */
static int op_layout(ctx *c, const ir_op *op, int r)
{
	const ir_tensor *o = cr_T(c, op->out), *x = cr_T(c, op->in[0]);
	float *out = cr_outp(c, r);
	if (op->kind == OP_RESHAPE) {
		if (ir_tensor_elems(o) != ir_tensor_elems(x))
			return cr_fail(c, "reshape: '%s' and '%s' differ in size", x->name, o->name);
		memcpy(out, cr_piece(c, op->in[0], r), (size_t)ir_tensor_elems(o) * sizeof(float));
		return 0;
	}
	const int nd = o->ndim, d = op->dim;
	if (nd < 1 || nd > 3 || x->ndim != nd || d < 0 || d >= nd)
		return cr_fail(c, "%s: bad dimensions", ir_op_name(op->kind));
	int64_t n = ir_tensor_elems(o), idx[3];
	for (int64_t i = 0; i < n; i++) {
		int64_t q = i;
		for (int k = nd - 1; k >= 0; k--) {
			idx[k] = q % o->local[k];
			q /= o->local[k];
		}
		int src = op->in[0];
		if (op->kind == OP_SLICE) {
			idx[d] += op->lo;
		} else if (op->kind == OP_CONCAT) {
			if (idx[d] >= x->local[d]) {
				idx[d] -= x->local[d];
				src = op->in[1];
			}
		} else {  /* transpose */
			int64_t t = idx[op->dim];
			idx[op->dim] = idx[op->dim2];
			idx[op->dim2] = t;
		}
		const ir_tensor *xs = cr_T(c, src);
		int64_t j = 0;
		for (int k = 0; k < nd; k++) {
			if (idx[k] < 0 || idx[k] >= xs->local[k])
				return cr_fail(c, "%s: an index outside '%s'", ir_op_name(op->kind), xs->name);
			j = j * xs->local[k] + idx[k];
		}
		out[i] = cr_piece(c, src, r)[j];
	}
	return 0;
}

static int op_softmax(ctx *c, const ir_op *op, int r)
{
	int64_t rows, len;
	if (rows_check(c, op, r, &rows, &len, NULL))
		return -1;
	const ir_tensor *o = cr_T(c, op->out);
	const float *x = cr_piece(c, op->in[0], r);
	float *out = cr_outp(c, r);
	for (int64_t i = 0; i < rows; i++) {
		const float *xr = x + i * len;
		double m = -INFINITY, s = 0;
		for (int64_t k = 0; k < len; k++)
			m = xr[k] > m ? xr[k] : m;
		for (int64_t k = 0; k < len; k++)
			s += exp(xr[k] - m);
		for (int64_t k = 0; k < len; k++)
			out[i * len + k] = cr_st(c, o, exp(xr[k] - m) / s);
	}
	return 0;
}

/* sum(X, d): removes dim d of the local piece (a split d gives partial). */
static int op_sum(ctx *c, const ir_op *op, int r)
{
	const ir_tensor *x = cr_T(c, op->in[0]), *o = cr_T(c, op->out);
	int d = op->dim, ok = d >= 0 && d < x->ndim && o->ndim == x->ndim - 1;
	for (int k = 0, j = 0; ok && k < x->ndim; k++)
		if (k != d)
			ok = o->local[j++] == x->local[k];
	if (!ok)
		return cr_fail(c, "'%s' is not '%s' without dim %d", o->name, x->name, d);
	int64_t outer = elems(x->local, d), len = x->local[d];
	int64_t inner = elems(x->local + d + 1, x->ndim - d - 1);
	const float *xp = cr_piece(c, op->in[0], r);
	float *out = cr_outp(c, r);
	for (int64_t a = 0; a < outer; a++)
		for (int64_t b = 0; b < inner; b++) {
			double s = 0;
			for (int64_t k = 0; k < len; k++)
				s += xp[(a * len + k) * inner + b];
			out[a * inner + b] = cr_st(c, o, s);
		}
	return 0;
}

typedef struct attn_job {
	const ctx *c;
	const ir_tensor *ot;
	const float *q, *k, *v;
	float *o;
	int64_t Sq, Sk, D, Dv;
	int64_t qpos;            /* global position of local query 0 */
	int causal;
	double scale;
} attn_job;

/* One (head, query) row per item: scores in double, max-subtracted. */
static void attn_rows(void *arg, int64_t lo, int64_t hi, double *s)
{
	const attn_job *j = arg;
	double *acc = s + j->Sk;
	for (int64_t row = lo; row < hi; row++) {
		int64_t h = row / j->Sq, i = row % j->Sq, pos = j->qpos + i;
		const float *q = j->q + row * j->D;
		const float *k = j->k + h * j->Sk * j->D, *v = j->v + h * j->Sk * j->Dv;
		int64_t nk = j->causal ? (pos + 1 < j->Sk ? pos + 1 : j->Sk) : j->Sk;
		double m = -INFINITY, sum = 0;
		for (int64_t t = 0; t < nk; t++) {
			double x = 0;
			for (int64_t d = 0; d < j->D; d++)
				x += (double)q[d] * k[t * j->D + d];
			s[t] = x * j->scale;
			m = s[t] > m ? s[t] : m;
		}
		for (int64_t d = 0; d < j->Dv; d++)
			acc[d] = 0;
		for (int64_t t = 0; t < nk; t++) {
			double e = exp(s[t] - m);
			sum += e;
			for (int64_t d = 0; d < j->Dv; d++)
				acc[d] += e * v[t * j->Dv + d];
		}
		for (int64_t d = 0; d < j->Dv; d++)
			j->o[row * j->Dv + d] = cr_st(j->c, j->ot, nk ? acc[d] / sum : 0);
	}
}

/* attention(Q, K, V [, causal]): Q[S,D] or [H,S,D].  K and V split on the
 * sequence dim are gathered over the group (ring attention); split on the
 * head dim, each rank has its own heads.  Positions are global. */
static int op_attention(ctx *c, const ir_op *op, int r)
{
	const ir_tensor *q = cr_T(c, op->in[0]), *k = cr_T(c, op->in[1]), *v = cr_T(c, op->in[2]);
	const ir_tensor *o = cr_T(c, op->out);
	int nd = q->ndim, sd = nd - 2;
	if ((nd != 2 && nd != 3) || k->ndim != nd || v->ndim != nd || o->ndim != nd)
		return cr_fail(c, "Q, K, V and the output must all be [S, D] or [H, S, D]");
	const ir_tensor *ts[4] = {q, k, v, o};
	for (int i = 0; i < 4; i++) {
		if (ts[i]->place.kind == PL_PARTIAL)
			return cr_fail(c, "'%s' is partial", ts[i]->name);
		if (ts[i]->local[nd - 1] != ts[i]->shape[nd - 1])
			return cr_fail(c, "'%s' is split on its feature dim", ts[i]->name);
	}
	int64_t H = nd == 3 ? q->local[0] : 1, Sq = q->local[sd], D = q->local[nd - 1];
	int64_t Sk = k->shape[sd], Dv = v->local[nd - 1];
	int ok = k->local[nd - 1] == D && v->shape[sd] == Sk && o->local[sd] == Sq &&
		 o->local[nd - 1] == Dv && cr_base(c, o, sd, r) == cr_base(c, q, sd, r);
	for (int i = 1; ok && nd == 3 && i < 4; i++)
		ok = ts[i]->local[0] == H && cr_base(c, ts[i], 0, r) == cr_base(c, q, 0, r);
	if (!ok)
		return cr_fail(c, "shapes or placements of Q '%s', K '%s', V '%s', out '%s' "
			    "do not line up on rank %d", q->name, k->name, v->name, o->name, r);
	float *kb = malloc((size_t)(H * Sk * D) * sizeof *kb + 1);
	float *vb = malloc((size_t)(H * Sk * Dv) * sizeof *vb + 1);
	if (!kb || !vb) {
		free(kb), free(vb);
		return cr_fail(c, "out of memory");
	}
	int64_t g[IR_MAXDIM];
	cr_gather_dim(c, op->in[1], sd, r, kb, g);
	cr_gather_dim(c, op->in[2], sd, r, vb, g);
	attn_job j = {c, o, cr_piece(c, op->in[0], r), kb, vb, cr_outp(c, r), Sq, Sk, D, Dv,
		      cr_base(c, q, sd, r), op->causal,
		      op->scalar != 0 ? op->scalar : 1 / sqrt((double)D)};
	int rc = par_rows(c, H * Sq, (double)H * Sq * Sk * (D + Dv), (size_t)(Sk + Dv),
			  attn_rows, &j);
	free(kb), free(vb);
	return rc;
}

/* ---- the table and the driver ---------------------------------------------- */

typedef int (*op_fn)(ctx *c, const ir_op *op, int r);

static const struct {
	op_fn fn;
	int min_in, max_in;      /* tensor operands */
} ops[OP_COUNT] = {
	[OP_MATMUL] = {op_matmul, 2, 3},  /* 3: a fused add or mul's operand */
	[OP_ADD] = {op_ew, 2, 2},
	[OP_MUL] = {op_ew, 2, 2},
	[OP_SCALE] = {op_ew, 1, 1},
	[OP_CAST] = {op_ew, 1, 1},
	[OP_RELU] = {op_ew, 1, 1},
	[OP_SILU] = {op_ew, 1, 1},
	[OP_GELU] = {op_ew, 1, 1},
	[OP_GELU_TANH] = {op_ew, 1, 1},
	[OP_RMSNORM] = {op_rmsnorm, 1, 2},
	[OP_LAYERNORM] = {op_layernorm, 3, 3},
	[OP_ROPE] = {op_rope, 3, 3},
	[OP_HEADS] = {op_heads, 1, 1},
	[OP_MERGE_HEADS] = {op_heads, 1, 1},
	[OP_SLICE] = {op_layout, 1, 1},
	[OP_CONCAT] = {op_layout, 2, 2},
	[OP_TRANSPOSE] = {op_layout, 1, 1},
	[OP_RESHAPE] = {op_layout, 1, 1},
	[OP_SOFTMAX] = {op_softmax, 1, 1},
	[OP_SUM] = {op_sum, 1, 1},
	[OP_ATTENTION] = {op_attention, 3, 3},
	[OP_ALLGATHER] = {cr_allgather, 1, 1},
	[OP_REDUCE_SCATTER] = {cr_reduce_scatter, 1, 1},
	[OP_ALLREDUCE] = {cr_allreduce, 1, 1},
	[OP_DISPATCH] = {cr_dispatch, 2, 2},
	[OP_COMBINE] = {cr_combine, 3, 3},
	[OP_RING_SHIFT] = {cr_ring_shift, 1, 1},
	[OP_PUT] = {cr_put, 1, 1},
};

/* Ops whose value on a partial input would not be a partial of anything.
 * (cast is let through: rounding partial sums before reducing them is how
 * a pipeline reduces in bf16.) */
static int nonlinear(ir_opkind k)
{
	return k == OP_RELU || k == OP_SILU || k == OP_GELU || k == OP_GELU_TANH ||
	       k == OP_RMSNORM || k == OP_LAYERNORM || k == OP_ROPE || k == OP_SOFTMAX || k == OP_ATTENTION ||
	       k == OP_DISPATCH || k == OP_COMBINE;
}

/* Every tensor's local shape must be what its placement says. */
static int check_tensor(ctx *c, const ir_tensor *t)
{
	if (t->ndim < 0 || t->ndim > IR_MAXDIM || (unsigned)t->dtype >= DT_COUNT)
		return cr_fail(c, "tensor '%s': bad rank or element type", t->name);
	if (t->place.kind == PL_SPLIT &&
	    (t->place.dim < 0 || t->place.dim >= t->ndim || (unsigned)t->place.group > GRP_NODES))
		return cr_fail(c, "tensor '%s': bad split", t->name);
	for (int d = 0; d < t->ndim; d++) {
		int64_t want = t->shape[d];
		if (cr_is_split(t, d)) {
			int gs = cr_group_size(c, t->place.group);
			if (t->shape[d] % gs)
				return cr_fail(c, "tensor '%s': dim %d (%lld) does not split over %d "
					    "ranks", t->name, d, (long long)t->shape[d], gs);
			want = t->shape[d] / gs;
		}
		if (t->local[d] != want || want < 0)
			return cr_fail(c, "tensor '%s': local dim %d is %lld, its placement says %lld",
				    t->name, d, (long long)t->local[d], (long long)want);
	}
	return 0;
}

static int check_op(ctx *c, const ir_op *op)
{
	const ir_prog *p = c->p;
	if ((unsigned)op->kind >= OP_COUNT || !ops[op->kind].fn)
		return cr_fail(c, "op kind %d is unknown", (int)op->kind);
	if (op->nin < ops[op->kind].min_in || op->nin > ops[op->kind].max_in)
		return cr_fail(c, "%d tensor operands, expected %d..%d", op->nin,
			    ops[op->kind].min_in, ops[op->kind].max_in);
	if (op->out < 0 || op->out >= p->ntensors || p->tensors[op->out].kind == TK_IN)
		return cr_fail(c, "bad output tensor");
	for (int k = 0; k < op->nin; k++) {
		if (op->in[k] < 0 || op->in[k] >= p->ntensors)
			return cr_fail(c, "bad operand %d", k);
		if (op->in[k] == op->out)
			return cr_fail(c, "'%s' is both read and written", p->tensors[op->out].name);
		/* (on one rank a partial is its value: the expansion folds the
		 * reductions of a one-rank world, so ops read partials there) */
		if (nonlinear(op->kind) && p->tensors[op->in[k]].place.kind == PL_PARTIAL &&
		    p->world > 1)
			return cr_fail(c, "'%s' is partial: reduce it first",
				    p->tensors[op->in[k]].name);
	}
	return 0;
}

int cpuref_run(const ir_prog *p, float *const *bufs, const cpuref_opts *o,
	       char *err, size_t n)
{
	ctx c = {p, NULL, p->world, p->nodes, p->gpus, o ? o->round_storage : 0,
		 o ? o->threads : 0, -1, err, n};
	if (err && n)
		err[0] = 0;
	if (p->world < 1 || p->world > IR_MAXRANKS || p->nodes < 1 || p->gpus < 1 ||
	    p->nodes * p->gpus != p->world)
		return cr_fail(&c, "bad mesh %d x %d, world %d", p->nodes, p->gpus, p->world);
	if (c.threads <= 0) {
		long k = sysconf(_SC_NPROCESSORS_ONLN);
		c.threads = k < 1 ? 1 : k > 64 ? 64 : (int)k;
	}
	for (int t = 0; t < p->ntensors; t++)
		if (check_tensor(&c, &p->tensors[t]))
			return -1;
	for (c.opi = 0; c.opi < p->nops; c.opi++)
		if (check_op(&c, &p->ops[c.opi]))
			return -1;
	c.opi = -1;

	/* The pieces: the caller's, except rounded copies of inputs. */
	size_t np = (size_t)p->ntensors * (size_t)p->world;
	c.v = calloc(np + 1, sizeof *c.v);
	if (!c.v)
		return cr_fail(&c, "out of memory");
	int rc = 0;
	for (int t = 0; t < p->ntensors; t++) {
		const ir_tensor *tt = &p->tensors[t];
		int64_t ne = ir_tensor_elems(tt);
		for (int r = 0; r < p->world; r++) {
			size_t i = (size_t)t * (size_t)p->world + (size_t)r;
			c.v[i] = bufs[i];
			if (tt->kind != TK_IN) {
				memset(bufs[i], 0, (size_t)ne * sizeof(float));
			} else if (c.round && tt->dtype != DT_F32) {
				if (!(c.v[i] = malloc((size_t)ne * sizeof(float) + 1))) {
					rc = cr_fail(&c, "out of memory");
					goto out;
				}
				for (int64_t k = 0; k < ne; k++)
					c.v[i][k] = cpuref_round(tt->dtype, bufs[i][k]);
			}
		}
	}
	for (c.opi = 0; c.opi < p->nops && !rc; c.opi++) {
		const ir_op *op = &p->ops[c.opi];
		for (int r = 0; r < p->world && !rc; r++)
			rc = ops[op->kind].fn(&c, op, r);
	}
out:
	for (size_t i = 0; i < np; i++)
		if (c.v[i] && c.v[i] != bufs[i])
			free(c.v[i]);
	free(c.v);
	return rc;
}
