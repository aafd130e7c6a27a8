/* sema_layout.c - the checks of the layout ops, which move elements within
 * a rank: heads / merge_heads, slice, concat, transpose and reshape.  Each
 * infers its result's shape and placement and refuses, at the argument,
 * what would move elements between ranks: a slice or a concat along a
 * split dimension, a reshape that would give a rank a piece that is not a
 * contiguous block.  (Their copies: lower_layout.c; the CPU reference:
 * cpuref.c.)
 */
#include "sema_int.h"

#include <string.h>

static int is_split(const sema *s, const ir_tensor *t, int d)
{
	return t->place.kind == PL_SPLIT && t->place.dim == d &&
	       sema_group_size(s, t->place.group) > 1;
}

static void same_as(sema_result *r, const ir_tensor *t)
{
	r->dtype = t->dtype;
	r->ndim = t->ndim;
	memcpy(r->shape, t->shape, sizeof r->shape);
	r->place = t->place;
}

static const ir_tensor *IN(sema *s, const opinfo *oi, int i)
{
	return &s->t[oi->op.in[i]].t;
}

static const char *opname(const opinfo *oi)
{
	return ir_op_name(oi->op.kind);
}

/* A dimension argument (argument `arg`) of x: 0, or -1 when reported. */
static int need_dim(sema *s, const opinfo *oi, int arg, const ir_tensor *x, int d)
{
	if (d >= 0 && d < x->ndim)
		return 0;
	diag_error(s->d, sema_arg_span(oi, arg), "'%s' is %d-D: its dimensions are 0 to %d",
		   x->name, x->ndim, x->ndim - 1);
	return -1;
}

static int at_most_3d(sema *s, const opinfo *oi, const ir_tensor *x)
{
	if (x->ndim <= 3)
		return 0;
	diag_error(s->d, sema_arg_span(oi, 0), "%s takes tensors of up to 3 dimensions; '%s' "
		   "is %s", opname(oi), x->name, sema_type_str(s, x));
	return -1;
}

/* heads(X, H): [T, H*D] -> [H, T, D]; merge_heads(X): back.  Copies (the
 * layout changes in memory).  A split of the heads (X's columns, a
 * result's dim 0) stays a split of the heads over the same group, so each
 * rank keeps its own heads and nothing moves between ranks; a split along
 * the tokens is refused. */
static int check_heads(sema *s, opinfo *oi, sema_result *r)
{
	const ir_tensor *x = IN(s, oi, 0);
	int heads = oi->op.kind == OP_HEADS;
	if (x->place.kind == PL_PARTIAL) {
		diag_error(s->d, sema_arg_span(oi, 0), "'%s' is partial (per-rank sums): reduce "
			   "it first with allreduce or reduce_scatter", x->name);
		return -1;
	}
	if (x->ndim != (heads ? 2 : 3)) {
		diag_error(s->d, sema_arg_span(oi, 0), "%s takes %s; '%s' is %s", opname(oi),
			   heads ? "[tokens, heads * D]" : "[heads, tokens, D]", x->name,
			   sema_type_str(s, x));
		return -1;
	}
	int64_t H = heads ? oi->op.experts : x->shape[0];
	if (heads && (H < 1 || x->shape[1] % H)) {
		diag_error(s->d, sema_arg_span(oi, 1), "%lld heads do not divide '%s''s %lld columns",
			   (long long)H, x->name, (long long)x->shape[1]);
		return -1;
	}
	int hdim = heads ? 1 : 0, tdim = heads ? 0 : 1;
	if (is_split(s, x, tdim)) {
		diag_error(s->d, sema_arg_span(oi, 0), "%s of '%s', %s along its tokens, is not "
			   "supported: split the heads (%s)", opname(oi), x->name,
			   sema_pname(s, x->place), heads ? "split(1)" : "split(0)");
		return -1;
	}
	if (is_split(s, x, hdim) && H % sema_group_size(s, x->place.group)) {
		diag_error(s->d, sema_arg_span(oi, 0), "'%s' is %s: its %lld heads do not divide "
			   "over %s (= %lld); a rank would hold part of a head", x->name,
			   sema_pname(s, x->place), (long long)H, ir_group_name(x->place.group),
			   (long long)sema_group_size(s, x->place.group));
		return -1;
	}
	same_as(r, x);
	if (heads) {
		r->ndim = 3;
		r->shape[0] = H;
		r->shape[1] = x->shape[0];
		r->shape[2] = x->shape[1] / H;
	} else {
		r->ndim = 2;
		r->shape[0] = x->shape[1];
		r->shape[1] = x->shape[0] * x->shape[2];
	}
	if (x->place.kind == PL_SPLIT)
		r->place.dim = heads ? 0 : 1;
	return 0;
}

/* slice(X, d, lo, hi): elements lo .. hi - 1 of dimension d.  The other
 * dimensions and the placement are X's; d must not be split (a rank's
 * slice would be another rank's rows). */
static int check_slice(sema *s, opinfo *oi, sema_result *r)
{
	const ir_tensor *x = IN(s, oi, 0);
	const ir_op *op = &oi->op;
	int d = op->dim;
	if (at_most_3d(s, oi, x) || need_dim(s, oi, 1, x, d))
		return -1;
	if (op->lo < 0 || op->hi > x->shape[d] || op->lo >= op->hi) {
		diag_error(s->d, sema_arg_span(oi, op->lo < 0 || op->lo >= x->shape[d] ? 2 : 3),
			   "slice [%lld, %lld) of dimension %d of '%s' (%lld long) is empty or "
			   "out of range", (long long)op->lo, (long long)op->hi, d, x->name,
			   (long long)x->shape[d]);
		return -1;
	}
	if (is_split(s, x, d)) {
		diag_error(s->d, sema_arg_span(oi, 1), "'%s' is %s: a slice of the split "
			   "dimension would take rows of other ranks; slice a dimension that "
			   "is not split (a fused QKV projection: lay the weight out by head, "
			   "[E, H * 3 * D] split(1), take heads(), then slice the last "
			   "dimension)", x->name, sema_pname(s, x->place));
		return -1;
	}
	same_as(r, x);
	r->shape[d] = op->hi - op->lo;
	return 0;
}

/* concat(A, B, d): B after A along d; the rest alike, d not split. */
static int check_concat(sema *s, opinfo *oi, sema_result *r)
{
	const ir_tensor *a = IN(s, oi, 0), *b = IN(s, oi, 1);
	int d = oi->op.dim;
	if (at_most_3d(s, oi, a) || need_dim(s, oi, 2, a, d))
		return -1;
	if (a->dtype != b->dtype) {
		diag_error(s->d, sema_arg_span(oi, 1), "concat of %s and %s; cast one of them first",
			   ir_dtype_name(a->dtype), ir_dtype_name(b->dtype));
		return -1;
	}
	int same = a->ndim == b->ndim;
	for (int i = 0; same && i < a->ndim; i++)
		same = i == d || a->shape[i] == b->shape[i];
	if (!same) {
		diag_error(s->d, sema_arg_span(oi, 1), "concat along dimension %d joins tensors "
			   "alike in the others; '%s' is %s and '%s' is %s", d, a->name,
			   sema_type_str(s, a), b->name, sema_type_str(s, b));
		return -1;
	}
	ir_place pa = a->place, pb = b->place;
	int place_same = pa.kind == pb.kind && (pa.kind == PL_LOCAL ||
		(pa.group == pb.group && (pa.kind != PL_SPLIT || pa.dim == pb.dim)));
	if (!place_same) {
		diag_error(s->d, sema_arg_span(oi, 1), "concat joins tensors of one placement; "
			   "'%s' is %s and '%s' is %s", a->name, sema_pname(s, pa), b->name,
			   sema_pname(s, pb));
		return -1;
	}
	if (is_split(s, a, d)) {
		diag_error(s->d, sema_arg_span(oi, 2), "'%s' and '%s' are %s: joining them along "
			   "the split dimension would move rows between ranks; concat along a "
			   "dimension that is not split", a->name, b->name, sema_pname(s, pa));
		return -1;
	}
	same_as(r, a);
	r->shape[d] = a->shape[d] + b->shape[d];
	return 0;
}

/* transpose(X, d0, d1): the two dimensions swapped; a split moves with
 * its dimension. */
static int check_transpose(sema *s, opinfo *oi, sema_result *r)
{
	const ir_tensor *x = IN(s, oi, 0);
	int d0 = oi->op.dim, d1 = oi->op.dim2;
	if (at_most_3d(s, oi, x) || need_dim(s, oi, 1, x, d0) || need_dim(s, oi, 2, x, d1))
		return -1;
	if (d0 == d1) {
		diag_error(s->d, sema_arg_span(oi, 2), "transpose swaps two different dimensions; "
			   "both are %d", d0);
		return -1;
	}
	same_as(r, x);
	r->shape[d0] = x->shape[d1];
	r->shape[d1] = x->shape[d0];
	if (x->place.kind == PL_SPLIT)
		r->place.dim = x->place.dim == d0 ? d1 : x->place.dim == d1 ? d0 : x->place.dim;
	return 0;
}

/* reshape(X, n0, ...): the same elements in the same (row-major) order,
 * as the shape written.  Splitting the last dimension in two ([T, H * D] ->
 * [T, H, D]) or merging the last two (back), or the same shape; a split
 * stays on its dimension, and a split of a dimension cut in two must keep
 * whole rows of the new last dimension on each rank. */
static int check_reshape(sema *s, opinfo *oi, sema_result *r)
{
	const ir_tensor *x = IN(s, oi, 0);
	const ir_op *op = &oi->op;
	int n = op->to_ndim;
	if (at_most_3d(s, oi, x))
		return -1;
	int64_t ex = 1, ey = 1;
	for (int i = 0; i < x->ndim; i++)
		ex *= x->shape[i];
	for (int i = 0; i < n; i++) {
		if (op->to_shape[i] < 1) {
			diag_error(s->d, sema_arg_span(oi, 1 + i), "a dimension of %lld; reshape's "
				   "sizes are positive", (long long)op->to_shape[i]);
			return -1;
		}
		if (__builtin_mul_overflow(ey, op->to_shape[i], &ey))
			ey = -1;
	}
	if (ex != ey) {
		diag_error(s->d, sema_arg_span(oi, 1), "'%s' is %s, %lld elements; %s has %lld",
			   x->name, sema_type_str(s, x), (long long)ex,
			   sema_shape_str(s, n, op->to_shape), (long long)ey);
		return -1;
	}
	int same = n == x->ndim, split = n == x->ndim + 1, merge = n + 1 == x->ndim;
	for (int i = 0; i < n && i < x->ndim; i++)
		if (op->to_shape[i] != x->shape[i] && !(i == n - 1 && merge) &&
		    !(i == x->ndim - 1 && split))
			same = split = merge = 0;
	if (same) {
		for (int i = 0; i < n; i++)
			same &= op->to_shape[i] == x->shape[i];
	}
	if (!same && !split && !merge) {
		diag_error(s->d, sema_arg_span(oi, 1), "reshape splits the last dimension in two "
			   "([T, H * D] -> [T, H, D]) or merges the last two; %s -> %s is not "
			   "supported", sema_shape_str(s, x->ndim, x->shape),
			   sema_shape_str(s, n, op->to_shape));
		return -1;
	}
	same_as(r, x);
	r->ndim = n;
	memcpy(r->shape, op->to_shape, sizeof op->to_shape);
	if (x->place.kind != PL_SPLIT || sema_group_size(s, x->place.group) < 2)
		return 0;
	int sd = x->place.dim, k = x->ndim - 1;
	int64_t G = sema_group_size(s, x->place.group);
	if (split && sd == k && op->to_shape[k] % G) {
		diag_error(s->d, sema_arg_span(oi, 1 + k), "'%s' is %s: its %lld rows of %lld do "
			   "not divide over %s (= %lld); a rank's columns would not be whole rows",
			   x->name, sema_pname(s, x->place), (long long)op->to_shape[k],
			   (long long)op->to_shape[k + 1], ir_group_name(x->place.group), (long long)G);
		return -1;
	}
	if (merge && sd == k) {
		diag_error(s->d, sema_arg_span(oi, 0), "'%s' is %s: merging its last two "
			   "dimensions would give each rank a strided piece; split dimension "
			   "%d instead", x->name, sema_pname(s, x->place), k - 1);
		return -1;
	}
	return 0;
}

int sema_check_layout(sema *s, opinfo *oi, sema_result *r)
{
	switch (oi->op.kind) {
	case OP_HEADS:
	case OP_MERGE_HEADS: return check_heads(s, oi, r);
	case OP_SLICE: return check_slice(s, oi, r);
	case OP_CONCAT: return check_concat(s, oi, r);
	case OP_TRANSPOSE: return check_transpose(s, oi, r);
	case OP_RESHAPE: return check_reshape(s, oi, r);
	default: return -1;
	}
}
