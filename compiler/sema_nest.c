/* sema_nest.c - nested calls: `A = mul(silu(G), U)` is read as if written
 *
 *     silu(G) = silu(G)        (a temp, named by its source text)
 *     A = mul(silu(G), U)
 *
 * Every call in an argument becomes an assignment of its own, placed before
 * the one that reads it, to a temp whose name is the call's text (blanks
 * squeezed: `silu( G )` is `silu(G)`).  Such a name can never be written by
 * hand, so it clashes with nothing; the same text twice is one temp (names
 * are assigned once, so the same text means the same value).  From here on
 * the temp is an ordinary one: diagnostics, listings and schedules name it
 * by its text, and the expansion fuses it as it would a written temp.
 * Recursion is bounded by the parser's expression depth.
 */
#include "sema_int.h"

#include <string.h>

/* An op statement as an entry of the op table (sema.c adds each statement,
 * after the temps sema_lift_calls makes of its nested calls). */
void sema_add_op(sema *s, const ast_stmt *st, int nested)
{
	opinfo oi = {0};
	oi.s = st;
	oi.nested = nested;
	oi.op.where = st->where;
	oi.op.out = -1;
	oi.op.dim = -1;
	oi.order = -1;
	ARENA_PUSH(s->a, s->op, s->nop, s->opcap, oi);
}

/* The call's text with every run of blanks squeezed to one space, none
 * after '(' or before ')' and ','. */
static const char *call_name(sema *s, span w)
{
	const char *t = ast_span_text(s->a, s->src, w, (int)(w.end - w.start) + 1);
	if (!t)
		return NULL;
	size_t n = strlen(t);
	char *b = arena_alloc(s->a, n + 1);
	if (!b)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		char c = t[i];
		int blank = c == ' ' || c == '\t' || c == '\n' || c == '\r';
		if (blank) {
			size_t j = i;
			while (j + 1 < n && (t[j + 1] == ' ' || t[j + 1] == '\t' ||
					     t[j + 1] == '\n' || t[j + 1] == '\r'))
				j++;
			char next = j + 1 < n ? t[j + 1] : 0;
			if (k && b[k - 1] != '(' && next != ')' && next != ',' && next)
				b[k++] = ' ';
			i = j;
			continue;
		}
		if (c == '#') {   /* a comment inside a wrapped call */
			while (i + 1 < n && t[i + 1] != '\n')
				i++;
			continue;
		}
		b[k++] = c;
	}
	b[k] = 0;
	return b;
}

static int lifted(sema *s, const char *name)
{
	for (int i = 0; i < s->nop; i++)
		if (s->op[i].nested && !strcmp(s->op[i].s->u.op.target.name, name))
			return 1;
	return 0;
}

/* The call's arguments with every nested call replaced by the name of its
 * temp (whose assignment is registered first). */
static ast_exprs lift_args(sema *s, const ast_call *c)
{
	ast_exprs r = c->args;
	int any = 0;
	for (int i = 0; i < c->args.n; i++)
		any |= c->args.v[i] && c->args.v[i]->kind == AST_E_CALL;
	if (!any)
		return r;
	r.v = arena_alloc(s->a, (size_t)(c->args.n + 1) * sizeof *r.v);
	if (!r.v)
		return c->args;
	r.cap = r.n = c->args.n;
	for (int i = 0; i < c->args.n; i++) {
		ast_expr *e = c->args.v[i];
		r.v[i] = e;
		if (!e || e->kind != AST_E_CALL || !e->call ||
		    sema_arg_kind(c->op.name, i) != 'T')
			continue;   /* a call where no tensor is wanted: reported there */
		const char *name = call_name(s, e->where);
		ast_expr *ref = name ? ast_name(s->a, e->where, name) : NULL;
		if (!ref)
			continue;
		r.v[i] = ref;
		if (lifted(s, name))
			continue;
		ast_stmt *st = ast_stmt_new(s->a, AST_ASSIGN, e->where);
		if (!st)
			continue;
		st->u.op.target = (ast_ident){name, e->where};
		st->u.op.call = *e->call;
		st->u.op.call.args = lift_args(s, e->call);
		sema_add_op(s, st, 1);
	}
	return r;
}

const ast_stmt *sema_lift_calls(sema *s, const ast_stmt *st)
{
	const ast_call *c = &st->u.op.call;
	ast_exprs args = lift_args(s, c);
	if (args.v == c->args.v)
		return st;
	ast_stmt *cp = arena_alloc(s->a, sizeof *cp);
	if (!cp)
		return st;
	*cp = *st;
	cp->u.op.call.args = args;
	return cp;
}
