/* ast.c - building the syntax tree (for parse.y) and listing it
 * (mkc --emit=ast).
 *
 * The listing is one node per line, children indented two spaces under
 * their parent, each line ending in @LINE:COL of the node's first byte.  It
 * shows the tree exactly as parsed (nothing resolved or evaluated; `64K` is
 * already 65536), so it is stable across changes to sema.
 */
#include "ast.h"

#include <stdlib.h>
#include <string.h>

static ast_expr *new_expr(arena *a, ast_exprkind k, span w)
{
	ast_expr *e = arena_alloc(a, sizeof *e);
	if (e) {
		e->kind = k;
		e->where = w;
		e->depth = 1;
	}
	return e;
}

ast_expr *ast_int(arena *a, span w, int64_t v)
{
	ast_expr *e = new_expr(a, AST_E_INT, w);
	if (e)
		e->ival = v;
	return e;
}

ast_expr *ast_float(arena *a, span w, double v)
{
	ast_expr *e = new_expr(a, AST_E_FLOAT, w);
	if (e)
		e->fval = v;
	return e;
}

ast_expr *ast_name(arena *a, span w, const char *name)
{
	ast_expr *e = new_expr(a, AST_E_NAME, w);
	if (e)
		e->name = name ? name : "";
	return e;
}

ast_expr *ast_call_expr(arena *a, diags *d, span w, ast_ident op, ast_exprs args)
{
	int depth = 1;
	for (int i = 0; i < args.n; i++) {
		if (args.v[i] && args.v[i]->kind == AST_E_ERROR)
			return args.v[i];
		if (args.v[i] && args.v[i]->depth + 1 > depth)
			depth = args.v[i]->depth + 1;
	}
	if (depth > AST_MAX_EXPR_DEPTH) {
		diag_error(d, w, "expression nested more than %d deep", AST_MAX_EXPR_DEPTH);
		return new_expr(a, AST_E_ERROR, w);
	}
	ast_expr *e = new_expr(a, AST_E_CALL, w);
	ast_call *c = e ? arena_alloc(a, sizeof *c) : NULL;
	if (!c)
		return e;
	c->op = op;
	c->args = args;
	c->where = w;
	e->call = c;
	e->depth = depth;
	return e;
}

/* An operand that is already an error (or missing after an allocation
 * failure) makes the whole expression that error: reported once. */
static ast_expr *absorb(arena *a, span w, ast_expr *l, ast_expr *r)
{
	if (l && l->kind == AST_E_ERROR)
		return l;
	if (r && r->kind == AST_E_ERROR)
		return r;
	if (!l || !r)
		return new_expr(a, AST_E_ERROR, w);
	return NULL;
}

static ast_expr *too_deep(arena *a, diags *d, span w)
{
	diag_error(d, w, "expression nested more than %d deep", AST_MAX_EXPR_DEPTH);
	return new_expr(a, AST_E_ERROR, w);
}

ast_expr *ast_neg(arena *a, diags *d, span w, ast_expr *e)
{
	ast_expr *x = absorb(a, w, e, e);
	if (x)
		return x;
	if (e->depth >= AST_MAX_EXPR_DEPTH)
		return too_deep(a, d, w);
	x = new_expr(a, AST_E_NEG, w);
	if (x) {
		x->lhs = e;
		x->depth = e->depth + 1;
	}
	return x;
}

ast_expr *ast_bin(arena *a, diags *d, span w, char op, ast_expr *l, ast_expr *r)
{
	ast_expr *x = absorb(a, w, l, r);
	if (x)
		return x;
	int depth = (l->depth > r->depth ? l->depth : r->depth) + 1;
	if (depth > AST_MAX_EXPR_DEPTH)
		return too_deep(a, d, w);
	x = new_expr(a, AST_E_BIN, w);
	if (x) {
		x->op = op;
		x->lhs = l;
		x->rhs = r;
		x->depth = depth;
	}
	return x;
}

ast_stmt *ast_stmt_new(arena *a, ast_stmtkind k, span w)
{
	ast_stmt *s = arena_alloc(a, sizeof *s);
	if (s) {
		s->kind = k;
		s->where = w;
	}
	return s;
}

const char *ast_span_text(arena *a, const srcset *src, span w, int max)
{
	if (w.file < 0 || w.file >= src->n || w.end < w.start)
		return "";
	const src_file *f = &src->files[w.file];
	uint32_t s = w.start > f->len ? f->len : w.start;
	uint32_t e = w.end > f->len ? f->len : w.end;
	size_t n = e - s;
	if (max >= 0 && n > (size_t)max)
		n = (size_t)max;
	const char *t = arena_strndup(a, f->text + s, n);
	return t ? t : "";
}

/* ---- the listing ---------------------------------------------------------- */

typedef struct dumper {
	strbuf *out;
	const srcset *src;
	int file;
	uint32_t *bol;   /* offsets where lines begin */
	int nlines;
} dumper;

static void at(dumper *k, span w)
{
	int line = 1, col = 1;
	if (k->bol && w.file == k->file) {
		int lo = 0, hi = k->nlines - 1;
		while (lo < hi) {   /* last line starting at or before w.start */
			int mid = (lo + hi + 1) / 2;
			if (k->bol[mid] <= w.start)
				lo = mid;
			else
				hi = mid - 1;
		}
		line = lo + 1;
		col = (int)(w.start - k->bol[lo]) + 1;
	} else if (k->src && w.file >= 0) {
		src_linecol(k->src, w.file, w.start, &line, &col);
	}
	sb_printf(k->out, " @%d:%d\n", line, col);
}

static void indent(dumper *k, int n)
{
	for (int i = 0; i < n; i++)
		sb_puts(k->out, "  ");
}

static void dump_expr(dumper *k, const ast_expr *e, int ind)
{
	indent(k, ind);
	if (!e) {
		sb_puts(k->out, "(null)\n");
		return;
	}
	switch (e->kind) {
	case AST_E_INT: sb_printf(k->out, "int %lld", (long long)e->ival); break;
	case AST_E_FLOAT: sb_printf(k->out, "float %.17g", e->fval); break;
	case AST_E_NAME: sb_printf(k->out, "name %s", e->name); break;
	case AST_E_NEG: sb_puts(k->out, "neg"); break;
	case AST_E_BIN: sb_printf(k->out, "binop %c", e->op); break;
	case AST_E_CALL: sb_printf(k->out, "call %s", e->call ? e->call->op.name : "?"); break;
	case AST_E_ERROR: sb_puts(k->out, "error"); break;
	}
	at(k, e->where);
	if (e->kind == AST_E_NEG || e->kind == AST_E_BIN)
		dump_expr(k, e->lhs, ind + 1);
	if (e->kind == AST_E_BIN)
		dump_expr(k, e->rhs, ind + 1);
	for (int i = 0; e->kind == AST_E_CALL && e->call && i < e->call->args.n; i++)
		dump_expr(k, e->call->args.v[i], ind + 1);
}

static void dump_exprs(dumper *k, const ast_exprs *v, int ind)
{
	for (int i = 0; i < v->n; i++)
		dump_expr(k, v->v[i], ind);
}

static void dump_ident(dumper *k, const char *what, ast_ident id, int ind)
{
	indent(k, ind);
	sb_printf(k->out, "%s %s", what, id.name ? id.name : "?");
	at(k, id.where);
}

static void dump_attrs(dumper *k, const char *what, const ast_attrs *v, int ind)
{
	for (int i = 0; i < v->n; i++) {
		const ast_attr *x = &v->v[i];
		indent(k, ind);
		sb_printf(k->out, "%s %s%s", what, x->name.name,
			  x->has_parens ? "()" : "");
		at(k, x->where);
		dump_exprs(k, &x->args, ind + 1);
	}
}

static const char *const declkind_name[] = {"in", "out", "temp"};

static void dump_stmt(dumper *k, const ast_stmt *s, int ind)
{
	indent(k, ind);
	switch (s->kind) {
	case AST_MESH:
		sb_puts(k->out, "mesh");
		at(k, s->where);
		dump_expr(k, s->u.mesh.nodes, ind + 1);
		dump_expr(k, s->u.mesh.gpus, ind + 1);
		break;
	case AST_PARAM:
		sb_printf(k->out, "param %s", s->u.param.name.name);
		at(k, s->where);
		dump_expr(k, s->u.param.value, ind + 1);
		break;
	case AST_DECL:
		sb_printf(k->out, "decl %s %s", declkind_name[s->u.decl.kind],
			  s->u.decl.name.name);
		at(k, s->where);
		dump_ident(k, "type", s->u.decl.dtype, ind + 1);
		indent(k, ind + 1);
		sb_puts(k->out, "dims");
		at(k, s->u.decl.dims_where);
		dump_exprs(k, &s->u.decl.dims, ind + 2);
		dump_attrs(k, "attr", &s->u.decl.attrs, ind + 1);
		break;
	case AST_ASSIGN:
	case AST_PUT:
		sb_printf(k->out, "%s %s", s->kind == AST_PUT ? "put" : "assign",
			  s->u.op.target.name);
		at(k, s->where);
		if (s->u.op.staged) {
			dump_ident(k, "stage", s->u.op.stage, ind + 1);
			dump_ident(k, "kind", s->u.op.how, ind + 1);
		}
		if (s->kind == AST_ASSIGN) {
			dump_ident(k, "call", s->u.op.call.op, ind + 1);
			dump_exprs(k, &s->u.op.call.args, ind + 2);
		} else {
			dump_ident(k, "part", s->u.op.part, ind + 1);
			dump_ident(k, "of", s->u.op.pvar, ind + 1);
			dump_ident(k, "from", s->u.op.src, ind + 1);
			dump_ident(k, "at", s->u.op.svar, ind + 1);
			dump_ident(k, "for", s->u.op.fvar, ind + 1);
			dump_ident(k, "in", s->u.op.set, ind + 1);
		}
		dump_attrs(k, "hint", &s->u.op.hints, ind + 1);
		break;
	case AST_ROLES:
		sb_puts(k->out, "roles");
		at(k, s->where);
		for (int i = 0; i < s->u.roles.n; i++) {
			dump_ident(k, "role", s->u.roles.v[i].name, ind + 1);
			dump_expr(k, s->u.roles.v[i].count, ind + 2);
		}
		break;
	}
}

void ast_dump(const struct ast_pipeline *p, const srcset *src, strbuf *out)
{
	if (!p)
		return;
	dumper k = {out, src, p->where.file, NULL, 0};
	if (src && k.file >= 0 && k.file < src->n) {
		const src_file *f = &src->files[k.file];
		int n = 1;
		for (uint32_t i = 0; i < f->len; i++)
			n += f->text[i] == '\n';
		k.bol = malloc((size_t)n * sizeof *k.bol);
		if (k.bol) {
			k.bol[0] = 0;
			k.nlines = 1;
			for (uint32_t i = 0; i < f->len; i++)
				if (f->text[i] == '\n')
					k.bol[k.nlines++] = i + 1;
		}
	}
	sb_printf(out, "pipeline %s", p->name.name ? p->name.name : "?");
	at(&k, p->where);
	for (int i = 0; i < p->nstmts; i++)
		dump_stmt(&k, p->stmts[i], 1);
	free(k.bol);
}
