/* sema_eval.c - values for the checks: integer and real constant
 * expressions (64-bit, overflow checked), dimension and group arguments,
 * placements and the size of the group they split over, and the text that
 * messages use for values, shapes and placements.
 */
#include "sema_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>


/* ---- placements, and values in messages ----------------------------------- */

int64_t sema_group_size(const sema *s, ir_group g)
{
	return g == GRP_GPUS ? s->gpus : g == GRP_NODES ? s->nodes : s->world;
}

const char *sema_pname(sema *s, ir_place pl)
{
	char b[32];
	return arena_strdup(s->a, ir_place_name(pl, b, sizeof b));
}

ir_place sema_mkplace(ir_placekind k, int dim, ir_group g)
{
	ir_place p = {k, dim, g};
	if (k == PL_LOCAL)
		p.dim = 0, p.group = GRP_WORLD;
	if (k == PL_PARTIAL)
		p.dim = 0;
	return p;
}

/* "[8192, 1024]" */
const char *sema_shape_str(sema *s, int nd, const int64_t *sh)
{
	strbuf b;
	sb_init(&b);
	sb_putc(&b, '[');
	for (int i = 0; i < nd; i++)
		sb_printf(&b, "%s%lld", i ? ", " : "", (long long)sh[i]);
	sb_putc(&b, ']');
	const char *r = arena_strdup(s->a, sb_str(&b));
	sb_free(&b);
	return r ? r : "";
}

const char *sema_type_str(sema *s, const ir_tensor *t)
{
	return arena_printf(s->a, "%s%s", ir_dtype_name(t->dtype),
			    sema_shape_str(s, t->ndim, t->shape));
}

const char *sema_text(sema *s, span w)
{
	return ast_span_text(s->a, s->src, w, 48);
}

/* "M (= 1000)" for an expression, "1000" where the text is the number */
const char *sema_valued(sema *s, const ast_expr *e, int64_t v)
{
	const char *n = arena_printf(s->a, "%lld", (long long)v);
	if (!e || !n || !strcmp(sema_text(s, e->where), n) || e->kind == AST_E_INT)
		return n;
	return arena_printf(s->a, "%s (= %s)", sema_text(s, e->where), n);
}

/* ---- expressions ---------------------------------------------------------- */

/* Integer value of e: 0, or -1 after reporting. */
int sema_eval_int(sema *s, const ast_expr *e, int64_t *out)
{
	*out = 0;
	if (!e)
		return -1;
	switch (e->kind) {
	case AST_E_ERROR:
		return -1;
	case AST_E_INT:
		*out = e->ival;
		return 0;
	case AST_E_FLOAT:
	case AST_E_CALL:
		diag_error(s->d, e->where, "expected an integer, not '%s'",
			   sema_text(s, e->where));
		return -1;
	case AST_E_NAME: {
		sym *y = sema_lookup(s, e->name);
		if (!y) {
			if (ir_dtype_lookup(e->name, (int)strlen(e->name)) >= 0) {
				diag_error(s->d, e->where,
					   "expected an integer, not the element type '%s'",
					   e->name);
				return -1;
			}
			guess g = sema_guess_name(s, e->name, WANT_INT);
			diag_error(s->d, e->where, "unknown name '%s'%s", e->name,
				   sema_hint_text(s, &g));
			sema_hint_note(s, &g);
			return -1;
		}
		if (y->kind == SYM_BUILTIN) {
			*out = y->index == B_NODES ? s->nodes
			     : y->index == B_GPUS ? s->gpus : s->world;
			return 0;
		}
		if (y->kind == SYM_TENSOR) {
			diag_error(s->d, e->where, "'%s' is a tensor, not an integer",
				   e->name);
			return -1;
		}
		pinfo *p = &s->p[y->index];
		if (!p->done) {
			diag_error(s->d, e->where,
				   "parameter '%s' is used before its definition", e->name);
			diag_note(s->d, p->p.where, "'%s' is defined here", e->name);
			return -1;
		}
		*out = p->p.value;
		return 0;
	}
	case AST_E_NEG: {
		int64_t v;
		if (sema_eval_int(s, e->lhs, &v))
			return -1;
		if (__builtin_sub_overflow((int64_t)0, v, out)) {
			diag_error(s->d, e->where, "integer overflow in '%s'",
				   sema_text(s, e->where));
			return -1;
		}
		return 0;
	}
	case AST_E_BIN: {
		int64_t l, r;
		int bl = sema_eval_int(s, e->lhs, &l);
		int br = sema_eval_int(s, e->rhs, &r);
		if (bl || br)
			return -1;
		int ovf = 0;
		switch (e->op) {
		case '+': ovf = __builtin_add_overflow(l, r, out); break;
		case '-': ovf = __builtin_sub_overflow(l, r, out); break;
		case '*': ovf = __builtin_mul_overflow(l, r, out); break;
		case '/':
		case '%':
			if (r == 0) {
				diag_error(s->d, e->where, "%s by zero in '%s'",
					   e->op == '/' ? "division" : "modulo",
					   sema_text(s, e->where));
				return -1;
			}
			if (l == INT64_MIN && r == -1)
				ovf = 1;
			else
				*out = e->op == '/' ? l / r : l % r;
			break;
		}
		if (ovf) {
			diag_error(s->d, e->where, "integer overflow in '%s'",
				   sema_text(s, e->where));
			return -1;
		}
		return 0;
	}
	}
	return -1;
}

/* Whether a real constant must be computed in reals: it holds a float, or
 * a division (a scale of `1 / 8` is 0.125, as written, not 0). */
static int has_float(const ast_expr *e)
{
	if (!e)
		return 0;
	if (e->kind == AST_E_FLOAT || (e->kind == AST_E_BIN && e->op == '/'))
		return 1;
	return has_float(e->lhs) || has_float(e->rhs);
}

/* A real constant (scale factors): integers, floats, parameters; '/' is
 * the division of reals, '%' needs integer operands. */
int sema_eval_real(sema *s, const ast_expr *e, double *out)
{
	*out = 0;
	if (!e)
		return -1;
	if (!has_float(e)) {
		int64_t v;
		if (sema_eval_int(s, e, &v))
			return -1;
		*out = (double)v;
		return 0;
	}
	switch (e->kind) {
	case AST_E_FLOAT:
		*out = e->fval;
		return 0;
	case AST_E_NEG:
		if (sema_eval_real(s, e->lhs, out))
			return -1;
		*out = -*out;
		return 0;
	case AST_E_BIN: {
		double l, r;
		int bl = sema_eval_real(s, e->lhs, &l);
		int br = sema_eval_real(s, e->rhs, &r);
		if (bl || br)
			return -1;
		switch (e->op) {
		case '+': *out = l + r; break;
		case '-': *out = l - r; break;
		case '*': *out = l * r; break;
		case '/':
			if (r == 0) {
				diag_error(s->d, e->where, "division by zero in '%s'",
					   sema_text(s, e->where));
				return -1;
			}
			*out = l / r;
			break;
		default:
			if (has_float(e->lhs) || has_float(e->rhs)) {
				diag_error(s->d, e->where, "'%%' needs integer operands");
				return -1;
			}
			return sema_eval_int(s, e, (int64_t[]){0}) ? -1 :
			       (*out = fmod(l, r), 0);
		}
		if (!isfinite(*out)) {
			diag_error(s->d, e->where, "'%s' is out of range",
				   sema_text(s, e->where));
			return -1;
		}
		return 0;
	}
	default:
		return sema_eval_int(s, e, (int64_t[]){0});
	}
}

/* A dimension index argument: an integer in [0, nd). */
int sema_eval_dim(sema *s, const ast_expr *e, int nd, const char *what, int *out)
{
	int64_t v;
	*out = 0;
	if (sema_eval_int(s, e, &v))
		return -1;
	if (v < 0 || v >= nd) {
		diag_error(s->d, e->where, "%s %lld is out of range for a %d-D tensor "
			   "(0 to %d)", what, (long long)v, nd, nd - 1);
		return -1;
	}
	*out = (int)v;
	return 0;
}

int sema_eval_group(sema *s, const ast_expr *e, ir_group *g)
{
	*g = GRP_WORLD;
	if (e->kind == AST_E_NAME) {
		for (int i = 0; i < 3; i++)
			if (!strcmp(e->name, ir_group_name(i))) {
				*g = (ir_group)i;
				return 0;
			}
	}
	diag_error(s->d, e->where, "a split is over world, gpus or nodes, not '%s'",
		   sema_text(s, e->where));
	return -1;
}
