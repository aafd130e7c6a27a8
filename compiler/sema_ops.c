/* sema_ops.c - step 6 of the checks: each op, in execution order, gets the
 * element type, shape and placement of its output inferred (the rules of
 * docs/language.md, section "Placement") and compared with the output's
 * declaration if there is one; then its hints (sema_hints.c).
 */
#include "sema_int.h"

#include <math.h>
#include <string.h>

static int place_eq(ir_place a, ir_place b)
{
	if (a.kind != b.kind)
		return 0;
	if (a.kind == PL_SPLIT)
		return a.dim == b.dim && a.group == b.group;
	if (a.kind == PL_PARTIAL)
		return a.group == b.group;
	return 1;
}

static int is_split(const ir_tensor *t, int d)
{
	return t->place.kind == PL_SPLIT && t->place.dim == d;
}

static int is_float(ir_dtype t)
{
	return t == DT_BF16 || t == DT_F16 || t == DT_F32 || t == DT_E4M3;
}

/* What an op produces, before it is compared with a declaration. */
typedef sema_result result;

static const char *opname(const opinfo *oi)
{
	return ir_op_name(oi->op.kind);
}

static const ir_tensor *IN(sema *s, const opinfo *oi, int i)
{
	return &s->t[oi->op.in[i]].t;
}

/* An op's output is fixed by its first writer; a declaration must agree. */
static int produce(sema *s, opinfo *oi, const result *r)
{
	tinfo *ti = &s->t[oi->op.out];
	ir_tensor *t = &ti->t;
	ast_ident id = oi->s->u.op.target;
	if (ti->decl) {
		if (!ti->known)
			return -1;   /* the declaration was reported */
		int ok = 1;
		int f32_ok = oi->op.kind == OP_MATMUL && t->dtype == DT_F32;
		if (t->dtype != r->dtype && !f32_ok) {
			diag_error(s->d, id.where, "'%s' is declared %s, but %s produces %s",
				   t->name, ir_dtype_name(t->dtype), opname(oi),
				   ir_dtype_name(r->dtype));
			ok = 0;
		} else if (t->ndim != r->ndim ||
			   memcmp(t->shape, r->shape, (size_t)r->ndim * sizeof r->shape[0])) {
			diag_error(s->d, id.where, "'%s' is declared %s, but %s produces %s",
				   t->name, sema_shape_str(s, t->ndim, t->shape), opname(oi),
				   sema_shape_str(s, r->ndim, r->shape));
			ok = 0;
		} else if (!place_eq(t->place, r->place)) {
			const char *fix = r->place.kind == PL_PARTIAL
				? "; reduce it with allreduce or reduce_scatter"
				: "";
			diag_error(s->d, id.where, "'%s' is declared %s, but %s produces %s%s",
				   t->name, sema_pname(s, t->place), opname(oi),
				   sema_pname(s, r->place), fix);
			ok = 0;
		}
		if (!ok) {
			diag_note(s->d, ti->decl->where, "'%s' is declared here", t->name);
			ti->bad = 1;
			return -1;
		}
		return 0;
	}
	t->dtype = r->dtype;
	t->ndim = r->ndim;
	memcpy(t->shape, r->shape, sizeof t->shape);
	t->place = r->place;
	if (sema_too_big(s, t, id.where)) {
		ti->bad = 1;
		return -1;
	}
	if (t->place.kind == PL_SPLIT &&
	    t->shape[t->place.dim] % sema_group_size(s, t->place.group)) {
		diag_error(s->d, oi->s->u.op.call.where,
			   "dimension %d of '%s' (= %lld) is not divisible by %s (= %lld)",
			   t->place.dim, t->name, (long long)t->shape[t->place.dim],
			   ir_group_name(t->place.group),
			   (long long)sema_group_size(s, t->place.group));
		ti->bad = 1;
		return -1;
	}
	sema_set_local(s, t);
	ti->known = 1;
	return 0;
}

static span call_span(const opinfo *oi)
{
	return oi->s->kind == AST_PUT ? oi->s->where : oi->s->u.op.call.where;
}

/* Only matmul, cast and data movement take fp8. */
static int check_e4m3(sema *s, const opinfo *oi)
{
	switch (oi->op.kind) {
	case OP_MATMUL: case OP_CAST: case OP_ALLGATHER: case OP_RING_SHIFT:
	case OP_DISPATCH: case OP_PUT: case OP_SLICE: case OP_CONCAT:
	case OP_TRANSPOSE: case OP_RESHAPE:
		return 0;
	default:
		break;
	}
	for (int i = 0; i < oi->op.nin; i++)
		if (IN(s, oi, i)->dtype == DT_E4M3) {
			diag_error(s->d, sema_arg_span(oi, i), "%s of e4m3 is not supported; "
				   "cast '%s' to bf16 first", opname(oi), IN(s, oi, i)->name);
			return -1;
		}
	return 0;
}

static int not_partial(sema *s, const opinfo *oi, int i)
{
	const ir_tensor *t = IN(s, oi, i);
	if (t->place.kind != PL_PARTIAL)
		return 0;
	diag_error(s->d, sema_arg_span(oi, i), "'%s' is partial (per-rank sums): %s is "
		   "not linear, so reduce it first with allreduce or reduce_scatter",
		   t->name, opname(oi));
	return -1;
}

static int need_float(sema *s, const opinfo *oi, int i)
{
	const ir_tensor *t = IN(s, oi, i);
	if (is_float(t->dtype))
		return 0;
	diag_error(s->d, sema_arg_span(oi, i), "%s needs a floating-point tensor; '%s' is %s",
		   opname(oi), t->name, ir_dtype_name(t->dtype));
	return -1;
}

static int need_dtype(sema *s, const opinfo *oi, int i, ir_dtype want)
{
	const ir_tensor *t = IN(s, oi, i);
	if (t->dtype == want)
		return 0;
	diag_error(s->d, sema_arg_span(oi, i), "%s needs '%s' to be %s, not %s", opname(oi),
		   t->name, ir_dtype_name(want), ir_dtype_name(t->dtype));
	return -1;
}

static int need_ndim(sema *s, const opinfo *oi, int i, int lo, int hi)
{
	const ir_tensor *t = IN(s, oi, i);
	if (t->ndim >= lo && t->ndim <= hi)
		return 0;
	if (lo == hi)
		diag_error(s->d, sema_arg_span(oi, i), "%s needs '%s' to be %d-D; it is %s",
			   opname(oi), t->name, lo, sema_type_str(s, t));
	else
		diag_error(s->d, sema_arg_span(oi, i), "%s needs '%s' to be %d-D to %d-D; it is %s",
			   opname(oi), t->name, lo, hi, sema_type_str(s, t));
	return -1;
}

static int need_dim(sema *s, const opinfo *oi, const ir_tensor *t)
{
	int d = oi->op.dim;
	if (d >= 0 && d < t->ndim)
		return 0;
	const ast_exprs *a = &oi->s->u.op.call.args;
	diag_error(s->d, a->n > 1 ? a->v[1]->where : oi->s->u.op.call.where,
		   "dimension %s is out of range for '%s' (%d-D)",
		   a->n > 1 ? sema_text(s, a->v[1]->where) : "0", t->name, t->ndim);
	return -1;
}

static void same_as(result *r, const ir_tensor *t)
{
	r->dtype = t->dtype;
	r->ndim = t->ndim;
	memcpy(r->shape, t->shape, sizeof r->shape);
	r->place = t->place;
}

static int check_matmul(sema *s, opinfo *oi, result *r)
{
	const ir_tensor *a = IN(s, oi, 0), *b = IN(s, oi, 1);
	if (need_float(s, oi, 0) || need_float(s, oi, 1))
		return -1;
	if (a->dtype != b->dtype) {
		diag_error(s->d, call_span(oi), "matmul operands must have the same "
			   "element type: '%s' is %s, '%s' is %s", a->name,
			   ir_dtype_name(a->dtype), b->name, ir_dtype_name(b->dtype));
		return -1;
	}
	if (!((a->ndim == 2 && b->ndim == 2) || (a->ndim == 3 && b->ndim == 3))) {
		diag_error(s->d, call_span(oi), "matmul multiplies 2-D by 2-D or "
			   "(batched) 3-D by 3-D; '%s' is %s and '%s' is %s", a->name,
			   sema_type_str(s, a), b->name, sema_type_str(s, b));
		return -1;
	}
	int nd = a->ndim, o = nd - 2;
	if (nd == 3 && a->shape[0] != b->shape[0]) {
		diag_error(s->d, call_span(oi), "matmul batch sizes differ: '%s' is %s, "
			   "'%s' is %s", a->name, sema_type_str(s, a), b->name,
			   sema_type_str(s, b));
		return -1;
	}
	if (a->shape[o + 1] != b->shape[o]) {
		diag_error(s->d, call_span(oi), "matmul inner dimensions differ: '%s' "
			   "is %s, '%s' is %s", a->name, sema_type_str(s, a), b->name,
			   sema_type_str(s, b));
		return -1;
	}
	if (not_partial(s, oi, 0) || not_partial(s, oi, 1))
		return -1;
	r->dtype = a->dtype == DT_E4M3 ? DT_BF16 : a->dtype;
	r->ndim = nd;
	if (nd == 3)
		r->shape[0] = a->shape[0];
	r->shape[o] = a->shape[o];
	r->shape[o + 1] = b->shape[o + 1];

	/* The roles of each operand's split: batch, rows of A / cols of B, or
	 * the contraction dimension K. */
	enum { LOC, BATCH, OUTER, INNER };
	int ra = a->place.kind == PL_LOCAL ? LOC
	       : nd == 3 && is_split(a, 0) ? BATCH
	       : is_split(a, o) ? OUTER : INNER;
	int rb = b->place.kind == PL_LOCAL ? LOC
	       : nd == 3 && is_split(b, 0) ? BATCH
	       : is_split(b, o + 1) ? OUTER : INNER;
	ir_group ga = a->place.group, gb = b->place.group;
	if (ra != LOC && rb != LOC && ga != gb) {
		diag_error(s->d, call_span(oi), "'%s' is split over %s but '%s' over %s",
			   a->name, ir_group_name(ga), b->name, ir_group_name(gb));
		return -1;
	}
	if (ra == LOC && rb == LOC) {
		r->place = sema_mkplace(PL_LOCAL, 0, GRP_WORLD);
	} else if (ra == OUTER && rb == LOC) {
		r->place = sema_mkplace(PL_SPLIT, o, ga);
	} else if (ra == LOC && rb == OUTER) {
		r->place = sema_mkplace(PL_SPLIT, o + 1, gb);
	} else if (ra == INNER && rb == INNER) {
		r->place = sema_mkplace(PL_PARTIAL, 0, ga);
	} else if ((ra == BATCH || ra == LOC) && (rb == BATCH || rb == LOC)) {
		r->place = sema_mkplace(PL_SPLIT, 0, ra == BATCH ? ga : gb);
	} else if (ra == INNER || rb == INNER) {
		const ir_tensor *k = ra == INNER ? a : b, *other = ra == INNER ? b : a;
		diag_error(s->d, call_span(oi), "'%s' is split along the contraction "
			   "dimension, but '%s' is %s; split both along it (giving a "
			   "partial result) or gather '%s' first", k->name, other->name,
			   sema_pname(s, other->place), k->name);
		return -1;
	} else if (ra == OUTER && rb == OUTER) {
		diag_error(s->d, call_span(oi), "'%s' split by rows and '%s' split by "
			   "columns would leave each rank one block of the output; "
			   "gather one of them first", a->name, b->name);
		return -1;
	} else {
		diag_error(s->d, call_span(oi), "matmul cannot combine '%s' (%s) with "
			   "'%s' (%s)", a->name, sema_pname(s, a->place), b->name,
			   sema_pname(s, b->place));
		return -1;
	}
	return 0;
}

static int check_binary(sema *s, opinfo *oi, result *r)
{
	const ir_tensor *x = IN(s, oi, 0), *y = IN(s, oi, 1);
	const char *n = opname(oi);
	if (x->dtype != y->dtype) {
		diag_error(s->d, call_span(oi), "%s of %s and %s; cast one of them first",
			   n, ir_dtype_name(x->dtype), ir_dtype_name(y->dtype));
		return -1;
	}
	int bcast = 0;
	if (x->ndim == y->ndim &&
	    !memcmp(x->shape, y->shape, (size_t)x->ndim * sizeof x->shape[0])) {
		bcast = 0;
	} else if (y->ndim == 1 && y->shape[0] == x->shape[x->ndim - 1] && x->ndim > 1) {
		bcast = 1;
	} else if (x->ndim == 1 && y->ndim > 1 && x->shape[0] == y->shape[y->ndim - 1]) {
		diag_error(s->d, call_span(oi), "the 1-D operand of %s is broadcast "
			   "over rows and comes second: %s(%s, %s)", n, n, y->name, x->name);
		return -1;
	} else {
		diag_error(s->d, call_span(oi), "%s needs equal shapes (or a 1-D second "
			   "operand of the last dimension): '%s' is %s, '%s' is %s", n,
			   x->name, sema_type_str(s, x), y->name, sema_type_str(s, y));
		return -1;
	}
	if (bcast) {
		if (y->place.kind != PL_LOCAL) {
			diag_error(s->d, sema_arg_span(oi, 1), "'%s' is broadcast over rows, so it "
				   "must be local; it is %s", y->name, sema_pname(s, y->place));
			return -1;
		}
		if (x->place.kind == PL_PARTIAL && oi->op.kind == OP_ADD) {
			diag_error(s->d, sema_arg_span(oi, 0), "adding '%s' to partial sums would "
				   "add it once per rank; reduce '%s' first", y->name, x->name);
			return -1;
		}
	} else {
		if (!place_eq(x->place, y->place)) {
			diag_error(s->d, call_span(oi), "%s of '%s' (%s) and '%s' (%s): "
				   "placements must agree", n, x->name, sema_pname(s, x->place),
				   y->name, sema_pname(s, y->place));
			return -1;
		}
		if (x->place.kind == PL_PARTIAL && oi->op.kind == OP_MUL) {
			diag_error(s->d, call_span(oi), "the product of two partial "
				   "tensors is not the partial of their product; reduce one "
				   "of them first");
			return -1;
		}
	}
	same_as(r, x);
	return 0;
}

static int check_attention(sema *s, opinfo *oi, result *r)
{
	const ir_tensor *q = IN(s, oi, 0), *k = IN(s, oi, 1), *v = IN(s, oi, 2);
	for (int i = 0; i < 3; i++)
		if (need_float(s, oi, i) || need_ndim(s, oi, i, 2, 3) || not_partial(s, oi, i))
			return -1;
	if (k->dtype != q->dtype || v->dtype != q->dtype) {
		diag_error(s->d, call_span(oi), "attention needs Q, K and V of one "
			   "element type: %s, %s, %s", ir_dtype_name(q->dtype),
			   ir_dtype_name(k->dtype), ir_dtype_name(v->dtype));
		return -1;
	}
	int nd = q->ndim;
	if (k->ndim != nd || v->ndim != nd ||
	    memcmp(k->shape, v->shape, (size_t)nd * sizeof k->shape[0]) ||
	    k->shape[nd - 1] != q->shape[nd - 1] || (nd == 3 && k->shape[0] != q->shape[0])) {
		diag_error(s->d, call_span(oi), "attention needs K and V of one shape, "
			   "with Q's head dimension%s: Q is %s, K is %s, V is %s",
			   nd == 3 ? " and heads" : "", sema_shape_str(s, q->ndim, q->shape),
			   sema_shape_str(s, k->ndim, k->shape),
			   sema_shape_str(s, v->ndim, v->shape));
		return -1;
	}
	if (oi->op.causal && k->shape[nd - 2] != q->shape[nd - 2]) {
		diag_error(s->d, call_span(oi), "causal attention needs as many keys as "
			   "queries: Q has %lld, K has %lld", (long long)q->shape[nd - 2],
			   (long long)k->shape[nd - 2]);
		return -1;
	}
	const ir_place p = q->place;
	if (!place_eq(k->place, p) || !place_eq(v->place, p) ||
	    (p.kind == PL_SPLIT && nd == 2 && p.dim != 0) ||
	    (p.kind == PL_SPLIT && nd == 3 && p.dim > 1)) {
		diag_error(s->d, call_span(oi), "attention needs Q, K and V all local or "
			   "all split alike along the sequence%s; they are %s, %s, %s",
			   nd == 3 ? " (dim 1) or the heads (dim 0)" : " (dim 0)",
			   sema_pname(s, q->place), sema_pname(s, k->place),
			   sema_pname(s, v->place));
		return -1;
	}
	same_as(r, q);
	oi->op.dim = p.kind == PL_SPLIT ? p.dim : -1;
	oi->op.scalar = 1.0 / sqrt((double)q->shape[nd - 1]);
	return 0;
}

static int check_dispatch(sema *s, opinfo *oi, result *r)
{
	const ir_tensor *x = IN(s, oi, 0), *idx = IN(s, oi, 1);
	if (need_ndim(s, oi, 0, 2, 2) || need_ndim(s, oi, 1, 2, 2) ||
	    need_dtype(s, oi, 1, DT_I32) || not_partial(s, oi, 0))
		return -1;
	if (idx->shape[0] != x->shape[0]) {
		diag_error(s->d, call_span(oi), "dispatch needs one row of expert indices "
			   "per token: '%s' has %lld rows, '%s' has %lld", x->name,
			   (long long)x->shape[0], idx->name, (long long)idx->shape[0]);
		return -1;
	}
	const ast_exprs *a = &oi->s->u.op.call.args;
	int64_t e = oi->op.experts, c = oi->op.capacity;
	if (e <= 0 || c <= 0) {
		diag_error(s->d, a->v[e <= 0 ? 2 : 3]->where, "the number of %s must be "
			   "positive; it is %lld", e <= 0 ? "experts" : "slots per expert",
			   (long long)(e <= 0 ? e : c));
		return -1;
	}
	r->dtype = x->dtype;
	r->ndim = 3;
	r->shape[0] = e;
	r->shape[1] = c;
	r->shape[2] = x->shape[1];
	if (x->place.kind == PL_LOCAL && idx->place.kind == PL_LOCAL) {
		r->place = sema_mkplace(PL_LOCAL, 0, GRP_WORLD);
	} else if (is_split(x, 0) && is_split(idx, 0) && x->place.group == idx->place.group) {
		ir_group g = x->place.group;
		if (e % sema_group_size(s, g)) {
			diag_error(s->d, a->v[2]->where, "%s experts cannot be spread evenly "
				   "over %s (= %lld)", sema_valued(s, a->v[2], e),
				   ir_group_name(g), (long long)sema_group_size(s, g));
			return -1;
		}
		r->place = sema_mkplace(PL_SPLIT, 0, g);
	} else {
		diag_error(s->d, call_span(oi), "dispatch needs tokens and indices both "
			   "local or both split(0) over one group; '%s' is %s, '%s' is %s",
			   x->name, sema_pname(s, x->place), idx->name, sema_pname(s, idx->place));
		return -1;
	}
	return 0;
}

static int check_combine(sema *s, opinfo *oi, result *r)
{
	const ir_tensor *ye = IN(s, oi, 0), *idx = IN(s, oi, 1), *g = IN(s, oi, 2);
	if (need_ndim(s, oi, 0, 3, 3) || need_ndim(s, oi, 1, 2, 2) ||
	    need_ndim(s, oi, 2, 2, 2) || need_dtype(s, oi, 1, DT_I32) ||
	    need_dtype(s, oi, 2, DT_F32) || need_float(s, oi, 0) || not_partial(s, oi, 0))
		return -1;
	if (memcmp(idx->shape, g->shape, 2 * sizeof idx->shape[0])) {
		diag_error(s->d, call_span(oi), "combine needs one gate per routing "
			   "index: '%s' is %s, '%s' is %s", idx->name, sema_type_str(s, idx),
			   g->name, sema_type_str(s, g));
		return -1;
	}
	r->dtype = ye->dtype;
	r->ndim = 2;
	r->shape[0] = idx->shape[0];
	r->shape[1] = ye->shape[2];
	int loc = ye->place.kind == PL_LOCAL && idx->place.kind == PL_LOCAL &&
		  g->place.kind == PL_LOCAL;
	int spl = is_split(ye, 0) && is_split(idx, 0) && is_split(g, 0) &&
		  ye->place.group == idx->place.group && g->place.group == idx->place.group;
	if (loc) {
		r->place = sema_mkplace(PL_LOCAL, 0, GRP_WORLD);
	} else if (spl) {
		r->place = sema_mkplace(PL_SPLIT, 0, idx->place.group);
	} else {
		diag_error(s->d, call_span(oi), "combine needs expert outputs, indices "
			   "and gates all local or all split(0) over one group; they are "
			   "%s, %s, %s", sema_pname(s, ye->place), sema_pname(s, idx->place),
			   sema_pname(s, g->place));
		return -1;
	}
	return 0;
}

static int check_collective(sema *s, opinfo *oi, result *r)
{
	const ir_tensor *x = IN(s, oi, 0);
	const char *n = opname(oi);
	switch (oi->op.kind) {
	case OP_ALLGATHER:
		if (need_dim(s, oi, x))
			return -1;
		if (!is_split(x, oi->op.dim)) {
			if (x->place.kind == PL_PARTIAL)
				diag_error(s->d, sema_arg_span(oi, 0), "'%s' is partial; sum the "
					   "pieces with allreduce, not allgather", x->name);
			else if (x->place.kind == PL_LOCAL)
				diag_error(s->d, sema_arg_span(oi, 0), "'%s' is local: every rank "
					   "already has all of it", x->name);
			else
				diag_error(s->d, sema_arg_span(oi, 0), "allgather along %d, but "
					   "'%s' is %s", oi->op.dim, x->name,
					   sema_pname(s, x->place));
			return -1;
		}
		same_as(r, x);
		r->place = sema_mkplace(PL_LOCAL, 0, GRP_WORLD);
		return 0;
	case OP_REDUCE_SCATTER:
	case OP_ALLREDUCE: {
		if (oi->op.kind == OP_REDUCE_SCATTER && need_dim(s, oi, x))
			return -1;
		if (x->place.kind == PL_SPLIT) {
			diag_error(s->d, sema_arg_span(oi, 0), "'%s' is %s; %s sums whole "
				   "(partial or local) tensors%s", x->name, sema_pname(s, x->place),
				   n, oi->op.kind == OP_ALLREDUCE
				   ? ": collect pieces with allgather" : "");
			return -1;
		}
		same_as(r, x);
		ir_group g = x->place.kind == PL_PARTIAL ? x->place.group : GRP_WORLD;
		if (oi->op.kind == OP_ALLREDUCE) {
			r->place = sema_mkplace(PL_LOCAL, 0, GRP_WORLD);
			return 0;
		}
		int d = oi->op.dim;
		int64_t gs = sema_group_size(s, g);
		if (x->shape[d] % gs) {
			diag_error(s->d, call_span(oi), "dimension %d of '%s' (= %lld) is not "
				   "divisible by %s (= %lld)", d, x->name,
				   (long long)x->shape[d], ir_group_name(g), (long long)gs);
			return -1;
		}
		r->place = sema_mkplace(PL_SPLIT, d, g);
		return 0;
	}
	case OP_RING_SHIFT:
		if (need_dim(s, oi, x))
			return -1;
		if (x->place.kind == PL_SPLIT && x->place.dim != oi->op.dim) {
			diag_error(s->d, sema_arg_span(oi, 1), "ring_shift along %d, but '%s' is %s",
				   oi->op.dim, x->name, sema_pname(s, x->place));
			return -1;
		}
		same_as(r, x);
		return 0;
	default:
		return -1;
	}
}

static int check_rowwise(sema *s, opinfo *oi, result *r)
{
	const ir_tensor *x = IN(s, oi, 0);
	int last = x->ndim - 1;
	if (oi->op.kind == OP_SUM) {
		if (need_dim(s, oi, x))
			return -1;
		if (x->ndim < 2) {
			diag_error(s->d, call_span(oi), "sum of 1-D '%s' would leave nothing; "
				   "tensors have at least one dimension", x->name);
			return -1;
		}
		int d = oi->op.dim;
		r->dtype = x->dtype;
		r->ndim = x->ndim - 1;
		for (int i = 0, j = 0; i < x->ndim; i++)
			if (i != d)
				r->shape[j++] = x->shape[i];
		r->place = x->place;
		if (x->place.kind == PL_SPLIT) {
			if (x->place.dim == d)
				r->place = sema_mkplace(PL_PARTIAL, 0, x->place.group);
			else if (x->place.dim > d)
				r->place.dim--;
		}
		return 0;
	}
	if (need_float(s, oi, 0) || not_partial(s, oi, 0))
		return -1;
	oi->op.dim = last;
	if (is_split(x, last)) {
		diag_error(s->d, sema_arg_span(oi, 0), "%s works on whole rows, but '%s' is "
			   "split along its last dimension (%s); gather it first",
			   opname(oi), x->name, sema_pname(s, x->place));
		return -1;
	}
	/* rmsnorm's weight, layernorm's weight and bias: one row, local */
	for (int k = 1; (oi->op.kind == OP_RMSNORM || oi->op.kind == OP_LAYERNORM) &&
			k < oi->op.nin; k++) {
		const ir_tensor *w = IN(s, oi, k);
		const char *what = k == 1 ? "weight" : "bias";
		if (need_float(s, oi, k))
			return -1;
		if (w->ndim != 1 || w->shape[0] != x->shape[last]) {
			diag_error(s->d, sema_arg_span(oi, k), "the %s %s must be 1-D of "
				   "'%s''s last dimension (%lld); '%s' is %s", opname(oi), what,
				   x->name, (long long)x->shape[last], w->name, sema_type_str(s, w));
			return -1;
		}
		if (w->place.kind != PL_LOCAL) {
			diag_error(s->d, sema_arg_span(oi, k), "the %s %s '%s' must be "
				   "local; it is %s", opname(oi), what, w->name, sema_pname(s, w->place));
			return -1;
		}
	}
	same_as(r, x);
	return 0;
}

/* rope(X, cos, sin): X [.., T, C] with C a whole number of heads of D,
 * cos and sin [T, D] (D even), local; each head rotated by halves as in
 * Llama.  The token dim must be whole on every rank (the rank's rows are
 * the tokens the tables' rows name); a split of the last dim must keep
 * heads whole. */
static int check_rope(sema *s, opinfo *oi, result *r)
{
	const ir_tensor *x = IN(s, oi, 0);
	if (need_float(s, oi, 0) || not_partial(s, oi, 0))
		return -1;
	if (x->ndim < 2) {
		diag_error(s->d, sema_arg_span(oi, 0), "rope rotates [tokens, heads * D] or "
			   "[heads, tokens, D]; '%s' is %s", x->name, sema_type_str(s, x));
		return -1;
	}
	int last = x->ndim - 1, tok = x->ndim - 2;
	for (int k = 1; k < 3; k++) {
		const ir_tensor *c = IN(s, oi, k);
		const char *what = k == 1 ? "cos" : "sin";
		if (need_float(s, oi, k))
			return -1;
		if (c->ndim != 2 || c->shape[0] != x->shape[tok] || c->shape[1] % 2 ||
		    x->shape[last] % c->shape[1]) {
			diag_error(s->d, sema_arg_span(oi, k), "the rope %s table must be [%lld, D]: "
				   "a row per token of '%s', D even and dividing its last "
				   "dimension (%lld); '%s' is %s", what, (long long)x->shape[tok],
				   x->name, (long long)x->shape[last], c->name, sema_type_str(s, c));
			return -1;
		}
		if (c->place.kind != PL_LOCAL) {
			diag_error(s->d, sema_arg_span(oi, k), "the rope %s table '%s' must be local; "
				   "it is %s", what, c->name, sema_pname(s, c->place));
			return -1;
		}
	}
	int64_t D = IN(s, oi, 1)->shape[1];
	if (IN(s, oi, 2)->shape[1] != D) {
		diag_error(s->d, sema_arg_span(oi, 2), "the rope sin table must be as wide as "
			   "cos (%lld)", (long long)D);
		return -1;
	}
	if (is_split(x, tok)) {
		diag_error(s->d, sema_arg_span(oi, 0), "rope needs each rank's rows to be every "
			   "token, but '%s' is split along its tokens (%s)", x->name,
			   sema_pname(s, x->place));
		return -1;
	}
	if (is_split(x, last) && (x->shape[last] / sema_group_size(s, x->place.group)) % D) {
		diag_error(s->d, sema_arg_span(oi, 0), "'%s' is %s: a rank's %lld columns cut a head "
			   "of %lld in two", x->name, sema_pname(s, x->place),
			   (long long)(x->shape[last] / sema_group_size(s, x->place.group)),
			   (long long)D);
		return -1;
	}
	oi->op.dim = last;
	same_as(r, x);
	return 0;
}

static int check_put(sema *s, opinfo *oi, result *r)
{
	const ir_tensor *x = IN(s, oi, 0);
	int d = oi->op.dim;
	static const char *const part[] = {"rows", "cols"};
	if (d >= x->ndim) {
		diag_error(s->d, oi->s->u.op.part.where, "'%s' is %d-D and has no %s",
			   x->name, x->ndim, part[d]);
		return -1;
	}
	if (!is_split(x, d)) {
		diag_error(s->d, oi->s->u.op.src.where, "a put copies the %s of '%s' "
			   "from the rank that holds them, so '%s' must be split(%d); it is %s",
			   part[d], x->name, x->name, d, sema_pname(s, x->place));
		return -1;
	}
	tinfo *ti = &s->t[oi->op.out];
	int first = ti->first_writer;
	if (first >= 0 && &s->op[first] != oi) {
		const opinfo *f = &s->op[first];
		if (f->bad)
			return -1;
		if (f->op.in[0] != oi->op.in[0] || f->op.dim != d) {
			diag_error(s->d, oi->s->where, "the stages writing '%s' must copy "
				   "one tensor along one dimension", ti->t.name);
			diag_note(s->d, f->s->where, "'%s' copies the %s of '%s'",
				  f->op.stage, part[f->op.dim], s->t[f->op.in[0]].t.name);
			return -2;
		}
		return 1;   /* the first stage made the tensor */
	}
	same_as(r, x);
	r->place = sema_mkplace(PL_LOCAL, 0, GRP_WORLD);
	return 0;
}

void sema_check_op(sema *s, opinfo *oi)
{
	for (int i = 0; i < oi->op.nin; i++) {
		tinfo *t = &s->t[oi->op.in[i]];
		if (t->bad || !t->known) {
			sema_bad_op(oi, s);
			return;
		}
	}
	if (check_e4m3(s, oi)) {
		sema_bad_op(oi, s);
		return;
	}
	result r = {0};
	int rc = 0;
	switch (oi->op.kind) {
	case OP_MATMUL: rc = check_matmul(s, oi, &r); break;
	case OP_ADD:
	case OP_MUL: rc = check_binary(s, oi, &r); break;
	case OP_SCALE:
		same_as(&r, IN(s, oi, 0));
		rc = need_float(s, oi, 0);
		break;
	case OP_CAST:
		same_as(&r, IN(s, oi, 0));
		r.dtype = oi->op.to;
		break;
	case OP_RELU:
	case OP_SILU:
	case OP_GELU:
	case OP_GELU_TANH:
		same_as(&r, IN(s, oi, 0));
		rc = need_float(s, oi, 0) || not_partial(s, oi, 0) ? -1 : 0;
		break;
	case OP_RMSNORM:
	case OP_LAYERNORM:
	case OP_SOFTMAX:
	case OP_SUM: rc = check_rowwise(s, oi, &r); break;
	case OP_ATTENTION: rc = check_attention(s, oi, &r); break;
	case OP_ROPE: rc = check_rope(s, oi, &r); break;
	case OP_HEADS:
	case OP_MERGE_HEADS:
	case OP_SLICE:
	case OP_CONCAT:
	case OP_TRANSPOSE:
	case OP_RESHAPE: rc = sema_check_layout(s, oi, &r); break;
	case OP_ALLGATHER:
	case OP_REDUCE_SCATTER:
	case OP_ALLREDUCE:
	case OP_RING_SHIFT: rc = check_collective(s, oi, &r); break;
	case OP_DISPATCH: rc = check_dispatch(s, oi, &r); break;
	case OP_COMBINE: rc = check_combine(s, oi, &r); break;
	case OP_PUT: rc = check_put(s, oi, &r); break;
	case OP_COUNT: rc = -1; break;
	}
	if (rc < 0 || (rc == 0 && produce(s, oi, &r))) {
		sema_bad_op(oi, s);
		return;
	}
	sema_check_hints(s, oi);
}
