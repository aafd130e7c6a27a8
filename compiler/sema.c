/* sema.c - the checks: a syntax tree becomes a checked program (ir_prog).
 *
 * Everything is resolved for one binding of the parameters and the mesh
 * (-D nodes=N -D gpus=G, defaults 1 x 1), so every shape is a concrete
 * integer and every question ("is M divisible by world?") has a yes or no.
 *
 * The work, in order:
 *   1. the mesh from -D, and every name registered (one namespace for the
 *      built-ins nodes/gpus/world, parameters and tensors; a statement may
 *      use a tensor assigned further down, but a parameter only after it);
 *   2. parameters evaluated in order (-D overrides), then the -D names
 *      checked against them;
 *   3. declared tensors: element type, shape, placement, divisibility;
 *   4. ops: arguments resolved against each op's signature, writers counted;
 *   5. a topological order of the ops (Kahn, smallest source position
 *      first, so a file written in order keeps its order); cycles reported;
 *   6. each op in that order: element types, shapes, placement inferred
 *      (the rules of docs/language.md, section "Placement") and compared
 *      with the declaration if there is one; hints;
 *   7. whole-program checks: outputs written once, explicit put stages
 *      covering the world, unused tensors, the roles hint;
 *   8. the ir_prog, built only when nothing was wrong.
 *
 * Cascades are avoided by marking a tensor or op `bad` once something about
 * it is reported: later checks that would only repeat the news stay quiet.
 * Integer arithmetic is 64-bit and checked; no recursion is deeper than the
 * parser's expression depth limit.
 */
#include "sema.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../grammar/ast.h"
#include "compile.h"

#define SMS_DEFAULT 132                 /* H200 */
#define SMEM_LIMIT (227 * 1024)         /* dynamic shared memory per CTA */
#define TILE_STAGES 2

/* Argument kinds of each op, one letter per argument:
 *   T tensor  I integer expression  R real constant  D element type
 *   C `causal` or an integer (nonzero = causal) */
static const char *const op_sig[OP_COUNT] = {
	[OP_MATMUL] = "TT",     [OP_ADD] = "TT",        [OP_MUL] = "TT",
	[OP_SCALE] = "TR",      [OP_CAST] = "TD",       [OP_RELU] = "T",
	[OP_SILU] = "T",        [OP_GELU] = "T",        [OP_RMSNORM] = "TT",
	[OP_SOFTMAX] = "T",     [OP_SUM] = "TI",        [OP_ATTENTION] = "TTTC",
	[OP_ALLGATHER] = "TI",  [OP_REDUCE_SCATTER] = "TI",
	[OP_ALLREDUCE] = "T",   [OP_DISPATCH] = "TTII", [OP_COMBINE] = "TTT",
	[OP_RING_SHIFT] = "TI", [OP_PUT] = "T",
};

static const struct { int lo, hi; } op_arity[OP_COUNT] = {
#define X(id, name, cls, lo, hi) [OP_##id] = {lo, hi},
	IR_OPS(X)
#undef X
};

static const char *const group_name[] = {"world", "gpus", "nodes"};
static const char *const kind_name[] = {"in", "out", "temp"};
static const char *const transport_name[] = {"auto", "local", "nvlink", "rdma"};
static const char *const peers_name[] = {"world", "node", "remote"};

enum { SYM_BUILTIN = 1, SYM_PARAM, SYM_TENSOR };
enum { B_NODES, B_GPUS, B_WORLD };

typedef struct sym {
	const char *name;
	int kind;
	int index;
} sym;

typedef struct pinfo {
	ir_param p;
	int done;            /* evaluated: later parameters may use it */
} pinfo;

typedef struct tinfo {
	ir_tensor t;
	const ast_stmt *decl;    /* NULL for a temp made by assignment */
	span decl_place;         /* the placement attribute, if written */
	int known;               /* dtype, shape, placement set */
	int bad;
	int nassign, nput;       /* writers by kind */
	int first_writer;        /* source index of the first writing op */
	int nreads;              /* ops reading it */
	int *readers;            /* ops reading it (each once) */
	int nrd, rdcap;
	int *writers;            /* ops writing it */
	int nwr, wrcap;
} tinfo;

typedef struct opinfo {
	const ast_stmt *s;
	ir_op op;
	int bad;
	int tin[IR_MAXIN];       /* distinct tensor inputs (for the order) */
	int ntin;
	int indeg;
	int emitted;
	int cyc;                 /* reported as part of a cycle */
	int order;               /* index in ir_prog.ops */
} opinfo;

typedef struct sema {
	const compile_opts *o;
	diags *d;
	arena *a;
	const srcset *src;
	int nodes, gpus, world;
	sym *tab;
	int tabcap, tabn;
	pinfo *p;
	int np, pcap;
	tinfo *t;
	int nt, tcap;
	opinfo *op;
	int nop, opcap;
	int *order;              /* ops in execution order */
	int norder;
	const ast_stmt *mesh, *roles;
	ir_role_hint *rh;
	int nrh, rhcap;
	int errors0;             /* errors before this pass */
	int *cyc_pos, *cyc_path; /* report_cycle's walk */
	long guess_budget;       /* names "did you mean" may still compare */
	sym *stages;             /* stage names */
	int stcap, stn;
} sema;

/* ---- small helpers -------------------------------------------------------- */

static int64_t group_size(const sema *s, ir_group g)
{
	return g == GRP_GPUS ? s->gpus : g == GRP_NODES ? s->nodes : s->world;
}

const char *sema_place_name(ir_place pl, char *buf, int n)
{
	switch (pl.kind) {
	case PL_LOCAL: snprintf(buf, (size_t)n, "local"); break;
	case PL_PARTIAL: snprintf(buf, (size_t)n, "partial"); break;
	case PL_SPLIT:
		if (pl.group == GRP_WORLD)
			snprintf(buf, (size_t)n, "split(%d)", pl.dim);
		else
			snprintf(buf, (size_t)n, "split(%d, %s)", pl.dim,
				 group_name[pl.group]);
		break;
	}
	return buf;
}

static const char *pname(sema *s, ir_place pl)
{
	char b[32];
	return arena_strdup(s->a, sema_place_name(pl, b, sizeof b));
}

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

static ir_place mkplace(ir_placekind k, int dim, ir_group g)
{
	ir_place p = {k, dim, g};
	if (k == PL_LOCAL)
		p.dim = 0, p.group = GRP_WORLD;
	if (k == PL_PARTIAL)
		p.dim = 0;
	return p;
}

static int is_split(const ir_tensor *t, int d)
{
	return t->place.kind == PL_SPLIT && t->place.dim == d;
}

/* "[8192, 1024]" */
static const char *shape_str(sema *s, int nd, const int64_t *sh)
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

static const char *type_str(sema *s, const ir_tensor *t)
{
	return arena_printf(s->a, "%s%s", ir_dtype_name(t->dtype),
			    shape_str(s, t->ndim, t->shape));
}

static const char *text(sema *s, span w)
{
	return ast_span_text(s->a, s->src, w, 48);
}

/* "M (= 1000)" for an expression, "1000" where the text is the number */
static const char *valued(sema *s, const ast_expr *e, int64_t v)
{
	const char *n = arena_printf(s->a, "%lld", (long long)v);
	if (!e || !n || !strcmp(text(s, e->where), n) || e->kind == AST_E_INT)
		return n;
	return arena_printf(s->a, "%s (= %s)", text(s, e->where), n);
}

static int is_float(ir_dtype t)
{
	return t == DT_BF16 || t == DT_F16 || t == DT_F32 || t == DT_E4M3;
}

/* ---- names ---------------------------------------------------------------- */

static uint32_t hash(const char *s)
{
	uint32_t h = 2166136261u;
	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

/* Open addressing over a power-of-two table, in the arena. */
static sym *tab_find(sym *tab, int cap, const char *name)
{
	if (!cap)
		return NULL;
	uint32_t m = (uint32_t)cap - 1;
	for (uint32_t i = hash(name) & m;; i = (i + 1) & m) {
		if (!tab[i].name)
			return NULL;
		if (!strcmp(tab[i].name, name))
			return &tab[i];
	}
}

static void tab_add(arena *a, sym **tab, int *cap, int *n, sym y)
{
	if (2 * (*n + 1) > *cap) {
		int nc = *cap ? *cap * 2 : 64;
		sym *nt = arena_alloc(a, (size_t)nc * sizeof *nt);
		if (!nt)
			return;
		sym *old = *tab;
		int oc = *cap;
		*tab = nt;
		*cap = nc;
		*n = 0;
		for (int i = 0; i < oc; i++)
			if (old[i].name)
				tab_add(a, tab, cap, n, old[i]);
	}
	uint32_t m = (uint32_t)*cap - 1;
	uint32_t i = hash(y.name) & m;
	while ((*tab)[i].name)
		i = (i + 1) & m;
	(*tab)[i] = y;
	(*n)++;
}

static sym *lookup(sema *s, const char *name)
{
	return tab_find(s->tab, s->tabcap, name);
}

static void insert(sema *s, const char *name, int kind, int index)
{
	tab_add(s->a, &s->tab, &s->tabcap, &s->tabn, (sym){name, kind, index});
}

/* Edit distance, for "did you mean"; -1 when either name is long. */
static int distance(const char *a, const char *b)
{
	int n = (int)strnlen(a, 41), m = (int)strnlen(b, 41);
	if (n > 40 || m > 40)
		return -1;
	int row[41] = {0};
	for (int j = 0; j <= m; j++)
		row[j] = j;
	for (int i = 1; i <= n; i++) {
		int corner = row[0];
		row[0] = i;
		for (int j = 1; j <= m; j++) {
			int up = row[j];
			int best = corner + (a[i - 1] != b[j - 1]);
			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			corner = up;
		}
	}
	return row[m];
}

typedef struct guess {
	const char *name;
	span where;
	int dist;
} guess;

static void consider(guess *g, const char *want, const char *cand, span where)
{
	/* cheap length filter first: most candidates are far */
	int lw = 0, lc = 0;
	while (want[lw] && lw < 64)
		lw++;
	while (cand[lc] && lc < lw + 4)
		lc++;
	if (lw - lc > 3 || lc - lw > 3)
		return;
	int d = distance(want, cand);
	int n = lw;
	int lim = n <= 3 ? 1 : n <= 6 ? 2 : 3;
	if (d < 0 || d > lim || d >= n || !strcmp(want, cand))
		return;
	if (!g->name || d < g->dist)
		*g = (guess){cand, where, d};
}

/* "; did you mean 'B'?" (or ""), with a note at B's definition if it has
 * one.  Call it between the error and the next diagnostic. */
static const char *hint_text(sema *s, const guess *g)
{
	if (!g->name)
		return "";
	return arena_printf(s->a, "; did you mean '%s'?", g->name);
}

static void hint_note(sema *s, const guess *g)
{
	if (g->name && g->where.file >= 0)
		diag_note(s->d, g->where, "'%s' is defined here", g->name);
}

enum { WANT_INT = 1, WANT_TENSOR = 2 };

static guess guess_name(sema *s, const char *want, int what)
{
	guess g = {0};
	/* Suggestions cost a scan of the names each: past the error limit
	 * they would not be shown, and a budget keeps a file of thousands of
	 * unknown names linear. */
	if (s->d->nerrors >= s->d->max_errors || s->guess_budget <= 0)
		return g;
	s->guess_budget -= s->np + s->nt;
	if (what & WANT_INT) {
		for (int i = 0; i < 3; i++)
			consider(&g, want, (const char *[]){"nodes", "gpus", "world"}[i],
				 SPAN_NONE);
		for (int i = 0; i < s->np; i++)
			consider(&g, want, s->p[i].p.name, s->p[i].p.where);
	}
	if (what & WANT_TENSOR)
		for (int i = 0; i < s->nt; i++)
			consider(&g, want, s->t[i].t.name, s->t[i].t.where);
	return g;
}

static guess guess_word(const char *want, const char *const *words, int n)
{
	guess g = {0};
	for (int i = 0; i < n; i++)
		consider(&g, want, words[i], SPAN_NONE);
	return g;
}

/* Names that cannot be defined: built-ins and element types. */
static int reserved(sema *s, ast_ident id)
{
	if (!strcmp(id.name, "nodes") || !strcmp(id.name, "gpus") ||
	    !strcmp(id.name, "world")) {
		diag_error(s->d, id.where, "'%s' is a built-in name (the mesh)", id.name);
		return 1;
	}
	if (ir_dtype_lookup(id.name, (int)strlen(id.name)) >= 0) {
		diag_error(s->d, id.where, "'%s' is an element type", id.name);
		return 1;
	}
	return 0;
}

static span def_span(sema *s, const sym *y)
{
	if (y->kind == SYM_PARAM)
		return s->p[y->index].p.where;
	if (y->kind == SYM_TENSOR)
		return s->t[y->index].t.where;
	return SPAN_NONE;
}

static void redefined(sema *s, ast_ident id, const sym *y)
{
	diag_error(s->d, id.where, "redefinition of '%s'", id.name);
	diag_note(s->d, def_span(s, y), "previous definition is here");
}

/* ---- expressions ---------------------------------------------------------- */

/* Integer value of e: 0, or -1 after reporting. */
static int eval_int(sema *s, const ast_expr *e, int64_t *out)
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
		diag_error(s->d, e->where, "expected an integer, not '%s'",
			   text(s, e->where));
		return -1;
	case AST_E_NAME: {
		sym *y = lookup(s, e->name);
		if (!y) {
			if (ir_dtype_lookup(e->name, (int)strlen(e->name)) >= 0) {
				diag_error(s->d, e->where,
					   "expected an integer, not the element type '%s'",
					   e->name);
				return -1;
			}
			guess g = guess_name(s, e->name, WANT_INT);
			diag_error(s->d, e->where, "unknown name '%s'%s", e->name,
				   hint_text(s, &g));
			hint_note(s, &g);
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
		if (eval_int(s, e->lhs, &v))
			return -1;
		if (__builtin_sub_overflow((int64_t)0, v, out)) {
			diag_error(s->d, e->where, "integer overflow in '%s'",
				   text(s, e->where));
			return -1;
		}
		return 0;
	}
	case AST_E_BIN: {
		int64_t l, r;
		int bl = eval_int(s, e->lhs, &l);
		int br = eval_int(s, e->rhs, &r);
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
					   text(s, e->where));
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
				   text(s, e->where));
			return -1;
		}
		return 0;
	}
	}
	return -1;
}

static int has_float(const ast_expr *e)
{
	if (!e)
		return 0;
	if (e->kind == AST_E_FLOAT)
		return 1;
	return has_float(e->lhs) || has_float(e->rhs);
}

/* A real constant (scale factors): integers, floats, parameters. */
static int eval_real(sema *s, const ast_expr *e, double *out)
{
	*out = 0;
	if (!e)
		return -1;
	if (!has_float(e)) {
		int64_t v;
		if (eval_int(s, e, &v))
			return -1;
		*out = (double)v;
		return 0;
	}
	switch (e->kind) {
	case AST_E_FLOAT:
		*out = e->fval;
		return 0;
	case AST_E_NEG:
		if (eval_real(s, e->lhs, out))
			return -1;
		*out = -*out;
		return 0;
	case AST_E_BIN: {
		double l, r;
		int bl = eval_real(s, e->lhs, &l);
		int br = eval_real(s, e->rhs, &r);
		if (bl || br)
			return -1;
		switch (e->op) {
		case '+': *out = l + r; break;
		case '-': *out = l - r; break;
		case '*': *out = l * r; break;
		case '/':
			if (r == 0) {
				diag_error(s->d, e->where, "division by zero in '%s'",
					   text(s, e->where));
				return -1;
			}
			*out = l / r;
			break;
		default:
			diag_error(s->d, e->where, "'%%' needs integer operands");
			return -1;
		}
		if (!isfinite(*out)) {
			diag_error(s->d, e->where, "'%s' is out of range",
				   text(s, e->where));
			return -1;
		}
		return 0;
	}
	default:
		return eval_int(s, e, (int64_t[]){0});
	}
}

/* ---- 1. names --------------------------------------------------------------- */

static int new_tensor(sema *s, ast_ident id, ir_tkind k, const ast_stmt *decl)
{
	tinfo ti = {0};
	ti.t.name = id.name;
	ti.t.where = id.where;
	ti.t.kind = k;
	ti.t.producer = -1;
	ti.decl = decl;
	ti.first_writer = -1;
	ARENA_PUSH(s->a, s->t, s->nt, s->tcap, ti);
	insert(s, id.name, SYM_TENSOR, s->nt - 1);
	return s->nt - 1;
}

static void add_op(sema *s, const ast_stmt *st)
{
	opinfo oi = {0};
	oi.s = st;
	oi.op.where = st->where;
	oi.op.out = -1;
	oi.op.dim = -1;
	oi.order = -1;
	ARENA_PUSH(s->a, s->op, s->nop, s->opcap, oi);
}

static void register_names(sema *s, const ast_pipeline *p)
{
	insert(s, "nodes", SYM_BUILTIN, B_NODES);
	insert(s, "gpus", SYM_BUILTIN, B_GPUS);
	insert(s, "world", SYM_BUILTIN, B_WORLD);
	for (int i = 0; i < p->nstmts; i++) {
		const ast_stmt *st = p->stmts[i];
		switch (st->kind) {
		case AST_MESH:
			if (s->mesh) {
				diag_error(s->d, st->where, "a second 'mesh' statement");
				diag_note(s->d, s->mesh->where, "the first is here");
			} else {
				s->mesh = st;
			}
			break;
		case AST_PARAM: {
			ast_ident id = st->u.param.name;
			sym *y = lookup(s, id.name);
			if (reserved(s, id))
				break;
			if (y) {
				redefined(s, id, y);
				break;
			}
			pinfo pi = {0};
			pi.p.name = id.name;
			pi.p.where = id.where;
			ARENA_PUSH(s->a, s->p, s->np, s->pcap, pi);
			insert(s, id.name, SYM_PARAM, s->np - 1);
			break;
		}
		case AST_DECL: {
			ast_ident id = st->u.decl.name;
			sym *y = lookup(s, id.name);
			if (reserved(s, id))
				break;
			if (y) {
				redefined(s, id, y);
				break;
			}
			new_tensor(s, id, (ir_tkind)st->u.decl.kind, st);
			break;
		}
		case AST_ASSIGN:
		case AST_PUT:
			add_op(s, st);
			break;
		case AST_ROLES:
			if (s->roles) {
				diag_error(s->d, st->where, "a second 'roles' hint");
				diag_note(s->d, s->roles->where, "the first is here");
			} else {
				s->roles = st;
			}
			break;
		}
	}
	/* Assignment targets not declared are temps, defined where first
	 * assigned (after the declarations, so a temp assigned before the
	 * declaration of a same-named tensor is no temp). */
	for (int i = 0; i < s->nop; i++) {
		ast_ident id = s->op[i].s->u.op.target;
		sym *y = lookup(s, id.name);
		if (!y) {
			if (reserved(s, id)) {
				s->op[i].bad = 1;
				continue;
			}
			new_tensor(s, id, TK_TEMP, NULL);
			y = lookup(s, id.name);
			if (!y)
				continue;
		}
		if (y->kind != SYM_TENSOR) {
			diag_error(s->d, id.where, "cannot assign to %s '%s'",
				   y->kind == SYM_PARAM ? "parameter" : "the built-in",
				   id.name);
			if (y->kind == SYM_PARAM)
				diag_note(s->d, def_span(s, y), "'%s' is defined here", id.name);
			s->op[i].bad = 1;
			continue;
		}
		s->op[i].op.out = y->index;
	}
}

/* ---- 2. mesh and parameters --------------------------------------------------- */

static const mk_define *find_define(sema *s, const char *name)
{
	const mk_define *r = NULL;
	for (int i = 0; s->o && i < s->o->ndefs; i++)
		if (s->o->defs[i].name && !strcmp(s->o->defs[i].name, name))
			r = &s->o->defs[i];   /* the last one wins */
	return r;
}

static void bind_mesh(sema *s)
{
	int64_t n = 1, g = 1;
	const mk_define *dn = find_define(s, "nodes");
	const mk_define *dg = find_define(s, "gpus");
	int ok = 1;
	if (dn) {
		n = dn->value;
		if (n < 1 || n > IR_MAXRANKS) {
			diag_error(s->d, SPAN_NONE, "-D nodes: %lld is not a node count (1 to %d)",
				   (long long)n, IR_MAXRANKS);
			ok = 0;
		}
	}
	if (dg) {
		g = dg->value;
		if (g < 1 || g > IR_MAXRANKS) {
			diag_error(s->d, SPAN_NONE, "-D gpus: %lld is not a GPU count (1 to %d)",
				   (long long)g, IR_MAXRANKS);
			ok = 0;
		}
	}
	if (ok && n * g > IR_MAXRANKS) {
		diag_error(s->d, SPAN_NONE,
			   "-D nodes: a mesh of %lld x %lld has more than %d ranks",
			   (long long)n, (long long)g, IR_MAXRANKS);
		ok = 0;
	}
	if (find_define(s, "world"))
		diag_error(s->d, SPAN_NONE,
			   "-D world: world is nodes * gpus; set -D nodes and -D gpus");
	if (!ok)
		n = g = 1;
	s->nodes = (int)n;
	s->gpus = (int)g;
	s->world = (int)(n * g);

	const ast_stmt *m = s->mesh;
	if (m) {
		const ast_expr *e[2] = {m->u.mesh.nodes, m->u.mesh.gpus};
		const char *want[2] = {"nodes", "gpus"};
		for (int i = 0; i < 2; i++)
			if (e[i] && (e[i]->kind != AST_E_NAME || strcmp(e[i]->name, want[i]))) {
				diag_error(s->d, e[i]->where,
					   "the mesh is written 'mesh nodes x gpus'; "
					   "its size comes from -D nodes=N -D gpus=G");
				break;
			}
	}
}

static void check_defines(sema *s)
{
	for (int i = 0; s->o && i < s->o->ndefs; i++) {
		const char *n = s->o->defs[i].name;
		if (!n || !strcmp(n, "nodes") || !strcmp(n, "gpus") || !strcmp(n, "world"))
			continue;
		sym *y = lookup(s, n);
		if (y && y->kind == SYM_PARAM)
			continue;
		if (y && y->kind == SYM_TENSOR) {
			diag_error(s->d, SPAN_NONE, "-D %s: '%s' is a tensor, not a parameter",
				   n, n);
			continue;
		}
		guess g = guess_name(s, n, WANT_INT);
		diag_error(s->d, SPAN_NONE, "-D %s: no parameter '%s' in this pipeline%s",
			   n, n, hint_text(s, &g));
	}
}

/* ---- 3. declarations ------------------------------------------------------------ */

/* A dimension index argument: an integer in [0, nd). */
static int eval_dim(sema *s, const ast_expr *e, int nd, const char *what, int *out)
{
	int64_t v;
	*out = 0;
	if (eval_int(s, e, &v))
		return -1;
	if (v < 0 || v >= nd) {
		diag_error(s->d, e->where, "%s %lld is out of range for a %d-D tensor "
			   "(0 to %d)", what, (long long)v, nd, nd - 1);
		return -1;
	}
	*out = (int)v;
	return 0;
}

static int eval_group(sema *s, const ast_expr *e, ir_group *g)
{
	*g = GRP_WORLD;
	if (e->kind == AST_E_NAME) {
		for (int i = 0; i < 3; i++)
			if (!strcmp(e->name, group_name[i])) {
				*g = (ir_group)i;
				return 0;
			}
	}
	diag_error(s->d, e->where, "a split is over world, gpus or nodes, not '%s'",
		   text(s, e->where));
	return -1;
}

/* Checked size of a tensor: elements * element size must fit in 63 bits. */
static int too_big(sema *s, const ir_tensor *t, span w)
{
	int64_t n = ir_dtype_size(t->dtype);
	for (int i = 0; i < t->ndim; i++)
		if (__builtin_mul_overflow(n, t->shape[i], &n)) {
			diag_error(s->d, w, "'%s' is too large (%s has more than 2^63 bytes)",
				   t->name, type_str(s, t));
			return 1;
		}
	return 0;
}

static void set_local(sema *s, ir_tensor *t)
{
	for (int i = 0; i < t->ndim; i++)
		t->local[i] = t->shape[i];
	if (t->place.kind == PL_SPLIT) {
		int64_t g = group_size(s, t->place.group);
		t->local[t->place.dim] = t->shape[t->place.dim] / g;
	}
}

static void check_decl(sema *s, tinfo *ti)
{
	const ast_stmt *st = ti->decl;
	ir_tensor *t = &ti->t;
	int ok = 1;

	ast_ident ty = st->u.decl.dtype;
	int dt = ir_dtype_lookup(ty.name, (int)strlen(ty.name));
	if (dt < 0) {
		static const char *const names[] = {
#define X(id, name, size) name,
			IR_DTYPES(X)
#undef X
		};
		guess g = guess_word(ty.name, names, DT_COUNT);
		diag_error(s->d, ty.where, "unknown element type '%s'%s", ty.name,
			   g.name ? hint_text(s, &g)
				  : "; the types are bf16, f16, f32, i32 and e4m3");
		ok = 0;
		dt = DT_F32;
	}
	t->dtype = (ir_dtype)dt;

	const ast_exprs *dims = &st->u.decl.dims;
	if (dims->n > IR_MAXDIM) {
		diag_error(s->d, st->u.decl.dims_where,
			   "'%s' has %d dimensions; at most %d are supported", t->name,
			   dims->n, IR_MAXDIM);
		ti->bad = 1;
		return;
	}
	t->ndim = dims->n;
	for (int i = 0; i < dims->n; i++) {
		int64_t v;
		if (eval_int(s, dims->v[i], &v)) {
			ok = 0;
			continue;
		}
		if (v <= 0) {
			diag_error(s->d, dims->v[i]->where,
				   "dimension %d of '%s' must be positive; it is %s",
				   i, t->name, valued(s, dims->v[i], v));
			ok = 0;
		}
		t->shape[i] = v;
	}

	t->place = mkplace(PL_LOCAL, 0, GRP_WORLD);
	const ast_attr *placed = NULL;
	for (int i = 0; i < st->u.decl.attrs.n; i++) {
		const ast_attr *at = &st->u.decl.attrs.v[i];
		const char *n = at->name.name;
		static const char *const words[] = {"split", "partial", "local"};
		int w;
		for (w = 0; w < 3 && strcmp(n, words[w]); w++)
			;
		if (w == 3) {
			guess g = guess_word(n, words, 3);
			diag_error(s->d, at->name.where, "unknown placement '%s'%s", n,
				   g.name ? hint_text(s, &g)
					  : "; a placement is split(DIM), partial or local");
			ok = 0;
			continue;
		}
		if (placed) {
			diag_error(s->d, at->where, "'%s' has a second placement", t->name);
			diag_note(s->d, placed->where, "the first is here");
			ok = 0;
			continue;
		}
		placed = at;
		ti->decl_place = at->where;
		if (w != 0) {
			if (at->has_parens) {
				diag_error(s->d, at->where, "'%s' takes no arguments", n);
				ok = 0;
			}
			t->place = mkplace(w == 1 ? PL_PARTIAL : PL_LOCAL, 0, GRP_WORLD);
			continue;
		}
		if (at->args.n < 1 || at->args.n > 2 || !at->has_parens) {
			diag_error(s->d, at->where,
				   "split takes a dimension and an optional group: "
				   "split(DIM) or split(DIM, world|gpus|nodes)");
			ok = 0;
			continue;
		}
		int d;
		ir_group g = GRP_WORLD;
		if (eval_dim(s, at->args.v[0], t->ndim, "split dimension", &d) ||
		    (at->args.n == 2 && eval_group(s, at->args.v[1], &g))) {
			ok = 0;
			continue;
		}
		t->place = mkplace(PL_SPLIT, d, g);
		int64_t gs = group_size(s, g);
		if (ok && t->shape[d] % gs != 0) {
			diag_error(s->d, at->where, "%s is not divisible by %s (= %lld)",
				   valued(s, dims->v[d], t->shape[d]), group_name[g],
				   (long long)gs);
			ok = 0;
		}
	}
	if (ok && too_big(s, t, st->u.decl.dims_where))
		ok = 0;
	if (!ok) {
		ti->bad = 1;
		return;
	}
	set_local(s, t);
	ti->known = 1;
}

/* ---- 4. ops: arguments and writers ------------------------------------------------ */

static void bad_op(opinfo *oi, sema *s)
{
	oi->bad = 1;
	if (oi->op.out >= 0)
		s->t[oi->op.out].bad = 1;
}

/* A tensor argument; -1 after reporting. */
static int tensor_arg(sema *s, const ast_expr *e, const char *opname, int pos)
{
	if (!e || e->kind == AST_E_ERROR)
		return -1;
	if (e->kind != AST_E_NAME) {
		diag_error(s->d, e->where, "argument %d of %s must be a tensor", pos + 1,
			   opname);
		return -1;
	}
	sym *y = lookup(s, e->name);
	if (y && y->kind == SYM_TENSOR)
		return y->index;
	if (y) {
		diag_error(s->d, e->where, "'%s' is %s, not a tensor", e->name,
			   y->kind == SYM_PARAM ? "a parameter" : "a built-in integer");
		return -1;
	}
	guess g = guess_name(s, e->name, WANT_TENSOR);
	diag_error(s->d, e->where, "unknown tensor '%s'%s", e->name, hint_text(s, &g));
	hint_note(s, &g);
	return -1;
}

static void add_input(sema *s, opinfo *oi, int t)
{
	ir_op *op = &oi->op;
	if (op->nin < IR_MAXIN)
		op->in[op->nin++] = t;
	for (int i = 0; i < oi->ntin; i++)
		if (oi->tin[i] == t)
			return;
	oi->tin[oi->ntin++] = t;
}

static const char *const op_names[] = {
#define X(id, name, cls, lo, hi) name,
	IR_OPS(X)
#undef X
};

static void resolve_assign(sema *s, opinfo *oi)
{
	const ast_stmt *st = oi->s;
	ir_op *op = &oi->op;
	const ast_call *c = &st->u.op.call;
	const char *n = c->op.name;
	int k = ir_op_lookup(n, (int)strlen(n));
	if (k < 0) {
		guess g = guess_word(n, op_names, OP_PUT);
		diag_error(s->d, c->op.where, "unknown op '%s'%s", n, hint_text(s, &g));
		bad_op(oi, s);
		return;
	}
	if (k == OP_PUT) {
		diag_error(s->d, c->op.where,
			   "'put' is written as a stage: "
			   "stage NAME : nvlink DST[rows of p] <- SRC@p for p in node");
		bad_op(oi, s);
		return;
	}
	op->kind = (ir_opkind)k;
	int lo = op_arity[k].lo, hi = op_arity[k].hi;
	if (c->args.n < lo || c->args.n > hi) {
		if (lo == hi)
			diag_error(s->d, c->where, "%s takes %d argument%s, not %d", n, lo,
				   lo == 1 ? "" : "s", c->args.n);
		else
			diag_error(s->d, c->where, "%s takes %d to %d arguments, not %d", n,
				   lo, hi, c->args.n);
		bad_op(oi, s);
		return;
	}
	if (st->u.op.staged && strcmp(st->u.op.how.name, "compute")) {
		const char *h = st->u.op.how.name;
		if (!strcmp(h, "nvlink") || !strcmp(h, "rdma") || !strcmp(h, "local"))
			diag_error(s->d, st->u.op.how.where,
				   "a '%s' stage copies pieces: "
				   "stage NAME : %s DST[rows of p] <- SRC@p for p in PEERS; "
				   "an assignment is a 'compute' stage", h, h);
		else
			diag_error(s->d, st->u.op.how.where,
				   "unknown stage kind '%s'; an assignment is a 'compute' stage",
				   h);
		bad_op(oi, s);
		return;
	}
	const char *sig = op_sig[k];
	int bad = 0;
	int64_t ints[2] = {0, 0};
	int nints = 0;
	op->causal = 0;
	for (int i = 0; i < c->args.n; i++) {
		const ast_expr *e = c->args.v[i];
		switch (sig[i]) {
		case 'T': {
			int t = tensor_arg(s, e, n, i);
			if (t < 0)
				bad = 1;
			else
				add_input(s, oi, t);
			break;
		}
		case 'I': {
			int64_t v;
			if (eval_int(s, e, &v))
				bad = 1;
			if (nints < 2)
				ints[nints++] = v;
			break;
		}
		case 'R':
			if (eval_real(s, e, &op->scalar))
				bad = 1;
			break;
		case 'D': {
			int dt = e->kind == AST_E_NAME
				 ? ir_dtype_lookup(e->name, (int)strlen(e->name)) : -1;
			if (dt < 0) {
				diag_error(s->d, e->where,
					   "argument %d of %s must be an element type "
					   "(bf16, f16, f32, i32, e4m3)", i + 1, n);
				bad = 1;
			} else {
				op->to = (ir_dtype)dt;
			}
			break;
		}
		case 'C': {
			if (e->kind == AST_E_NAME && !strcmp(e->name, "causal") &&
			    !lookup(s, "causal")) {
				op->causal = 1;
				break;
			}
			int64_t v;
			if (eval_int(s, e, &v))
				bad = 1;
			op->causal = v != 0;
			break;
		}
		}
	}
	/* integer arguments: a dimension, or dispatch's experts and capacity */
	switch (k) {
	case OP_SUM: case OP_ALLGATHER: case OP_REDUCE_SCATTER: case OP_RING_SHIFT:
		/* out of range (-2) is reported when the op is checked */
		op->dim = !nints ? 0 : ints[0] >= 0 && ints[0] < 64 ? (int)ints[0] : -2;
		break;
	case OP_DISPATCH:
		op->experts = ints[0];
		op->capacity = ints[1];
		break;
	default:
		break;
	}
	if (bad)
		bad_op(oi, s);
}

static int word_index(const char *w, const char *const *words, int n)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(w, words[i]))
			return i;
	return -1;
}

static void resolve_put(sema *s, opinfo *oi)
{
	const ast_stmt *st = oi->s;
	ir_op *op = &oi->op;
	int bad = 0;
	op->kind = OP_PUT;

	static const char *const how[] = {"nvlink", "rdma", "local"};
	static const ir_transport tr[] = {TR_NVLINK, TR_RDMA, TR_LOCAL};
	int h = word_index(st->u.op.how.name, how, 3);
	if (h < 0) {
		if (!strcmp(st->u.op.how.name, "compute"))
			diag_error(s->d, st->u.op.how.where,
				   "a compute stage is an assignment: "
				   "stage NAME : compute DST = op(args)");
		else {
			guess g = guess_word(st->u.op.how.name, how, 3);
			diag_error(s->d, st->u.op.how.where, "unknown transport '%s'%s",
				   st->u.op.how.name,
				   g.name ? hint_text(s, &g) : "; use nvlink, rdma or local");
		}
		bad = 1;
	} else {
		op->transport = tr[h];
	}

	static const char *const parts[] = {"rows", "cols"};
	int part = word_index(st->u.op.part.name, parts, 2);
	if (part < 0) {
		diag_error(s->d, st->u.op.part.where,
			   "expected 'rows' or 'cols', not '%s'", st->u.op.part.name);
		bad = 1;
	}
	op->dim = part < 0 ? 0 : part;

	const char *v = st->u.op.fvar.name;
	const ast_ident *vars[2] = {&st->u.op.pvar, &st->u.op.svar};
	for (int i = 0; i < 2; i++)
		if (strcmp(vars[i]->name, v)) {
			diag_error(s->d, vars[i]->where,
				   "'%s' is not the stage's peer variable '%s'",
				   vars[i]->name, v);
			diag_note(s->d, st->u.op.fvar.where, "'%s' is bound here", v);
			bad = 1;
		}

	static const char *const sets[] = {"world", "node", "remote"};
	int set = word_index(st->u.op.set.name, sets, 3);
	if (set < 0) {
		guess g = guess_word(st->u.op.set.name, sets, 3);
		diag_error(s->d, st->u.op.set.where, "unknown peer set '%s'%s",
			   st->u.op.set.name,
			   g.name ? hint_text(s, &g) : "; use node, remote or world");
		bad = 1;
	} else {
		op->peers = (ir_peers)set;
	}

	/* Which ranks a transport reaches (a static rule for rdma to the node,
	 * mesh-bound where the peer set's extent depends on the mesh). */
	if (h >= 0 && set >= 0) {
		span w = st->u.op.set.where;
		if (tr[h] == TR_NVLINK && op->peers == PEERS_REMOTE) {
			diag_error(s->d, w, "nvlink does not reach other nodes; "
				   "copy from 'remote' peers with rdma");
			bad = 1;
		} else if (tr[h] == TR_NVLINK && op->peers == PEERS_ALL && s->nodes > 1) {
			diag_error(s->d, w, "nvlink does not reach other nodes, and 'world' "
				   "has %d; use 'node' here and an rdma stage for 'remote'",
				   s->nodes);
			bad = 1;
		} else if (tr[h] == TR_RDMA && op->peers == PEERS_NODE) {
			diag_error(s->d, w, "rdma to the GPUs of this node, which NVLink "
				   "reaches; use nvlink for 'node'");
			bad = 1;
		} else if (tr[h] == TR_RDMA && op->peers == PEERS_ALL && s->gpus > 1) {
			diag_error(s->d, w, "'world' includes the GPUs of this node, which "
				   "NVLink reaches; use rdma for 'remote' and nvlink for 'node'");
			bad = 1;
		} else if (tr[h] == TR_LOCAL) {
			int reach = op->peers == PEERS_NODE ? s->gpus
				  : op->peers == PEERS_REMOTE ? 0 : s->world;
			if (reach > 1) {
				diag_error(s->d, w, "a local copy reaches only this rank, and "
					   "'%s' has %d ranks", sets[set],
					   op->peers == PEERS_NODE ? s->gpus : s->world);
				bad = 1;
			}
		}
	}

	int t = tensor_arg(s, &(ast_expr){.kind = AST_E_NAME, .where = st->u.op.src.where,
					  .name = st->u.op.src.name}, "put", 0);
	if (t < 0)
		bad = 1;
	else
		add_input(s, oi, t);
	if (bad)
		bad_op(oi, s);
}

static void resolve_ops(sema *s)
{
	for (int i = 0; i < s->nop; i++) {
		opinfo *oi = &s->op[i];
		if (oi->bad)
			continue;
		oi->op.stage = oi->s->u.op.staged ? oi->s->u.op.stage.name
						  : oi->s->u.op.target.name;
		if (oi->s->kind == AST_PUT)
			resolve_put(s, oi);
		else
			resolve_assign(s, oi);
	}
	/* writers: inputs are not written; outputs once; puts may share */
	for (int i = 0; i < s->nop; i++) {
		opinfo *oi = &s->op[i];
		if (oi->op.out < 0)
			continue;
		tinfo *ti = &s->t[oi->op.out];
		ast_ident id = oi->s->u.op.target;
		int put = oi->s->kind == AST_PUT;
		if (ti->t.kind == TK_IN) {
			diag_error(s->d, id.where, "cannot assign to input '%s'", id.name);
			diag_note(s->d, ti->t.where, "'%s' is declared 'in' here", id.name);
			bad_op(oi, s);
			continue;
		}
		if (ti->first_writer >= 0) {
			const opinfo *f = &s->op[ti->first_writer];
			int fput = f->s->kind == AST_PUT;
			if (!put || !fput) {
				if (put != fput)
					diag_error(s->d, id.where, "'%s' is written both by "
						   "put stages and by an assignment", id.name);
				else
					diag_error(s->d, id.where, "'%s' is assigned twice", id.name);
				diag_note(s->d, f->s->u.op.target.where,
					  "the first assignment is here");
				oi->bad = 1;
				ti->bad = 1;
				continue;
			}
		} else {
			ti->first_writer = i;
		}
		if (put)
			ti->nput++;
		else
			ti->nassign++;
		ARENA_PUSH(s->a, ti->writers, ti->nwr, ti->wrcap, i);
	}
	/* readers */
	for (int i = 0; i < s->nop; i++) {
		opinfo *oi = &s->op[i];
		for (int j = 0; j < oi->ntin; j++) {
			tinfo *ti = &s->t[oi->tin[j]];
			ti->nreads++;
			ARENA_PUSH(s->a, ti->readers, ti->nrd, ti->rdcap, i);
		}
	}
	/* stage names are unique (an unnamed op's is its tensor's name) */
	for (int i = 0; i < s->nop; i++) {
		const ast_stmt *a = s->op[i].s;
		ast_ident id = a->u.op.staged ? a->u.op.stage : a->u.op.target;
		sym *y = tab_find(s->stages, s->stcap, id.name);
		if (!y) {
			tab_add(s->a, &s->stages, &s->stcap, &s->stn,
				(sym){id.name, 0, i});
			continue;
		}
		if (!a->u.op.staged && !s->op[y->index].s->u.op.staged)
			continue;   /* two assignments to one name: reported above */
		const ast_stmt *b = s->op[y->index].s;
		diag_error(s->d, id.where, "a second stage named '%s'", id.name);
		diag_note(s->d, b->u.op.staged ? b->u.op.stage.where : b->u.op.target.where,
			  "the first is here");
	}
}

/* ---- 5. order --------------------------------------------------------------------- */

static void heap_push(int *h, int *n, int v)
{
	int i = (*n)++;
	h[i] = v;
	while (i > 0 && h[(i - 1) / 2] > h[i]) {
		int p = (i - 1) / 2, t = h[p];
		h[p] = h[i];
		h[i] = t;
		i = p;
	}
}

static int heap_pop(int *h, int *n)
{
	int r = h[0];
	h[0] = h[--*n];
	int i = 0;
	for (;;) {
		int l = 2 * i + 1, m = i;
		if (l < *n && h[l] < h[m])
			m = l;
		if (l + 1 < *n && h[l + 1] < h[m])
			m = l + 1;
		if (m == i)
			break;
		int t = h[m];
		h[m] = h[i];
		h[i] = t;
		i = m;
	}
	return r;
}

static void report_cycle(sema *s, int start)
{
	/* Walk from `start` to a not-yet-run writer of one of its inputs until
	 * an op repeats; the loop from there is a cycle.  Every op walked is
	 * marked, and a walk stops at a marked op, so all walks together visit
	 * each op once. */
	int *pos = s->cyc_pos, *path = s->cyc_path;
	int n = 0, cur = start;
	for (;;) {
		if (s->op[cur].cyc)
			goto downstream;
		if (pos[cur] >= 0)
			break;
		pos[cur] = n;
		path[n++] = cur;
		int next = -1;
		const opinfo *oi = &s->op[cur];
		for (int j = 0; j < oi->ntin && next < 0; j++) {
			const tinfo *ti = &s->t[oi->tin[j]];
			for (int k = 0; k < ti->nwr; k++) {
				const opinfo *w = &s->op[ti->writers[k]];
				if (!w->bad && !w->emitted) {
					next = ti->writers[k];
					break;
				}
			}
		}
		if (next < 0)
			goto downstream;
		cur = next;
	}
	{
		int first = pos[cur];
		const opinfo *a = &s->op[cur];
		strbuf m;
		sb_init(&m);
		if (n - first == 1) {
			sb_printf(&m, "'%s' is computed from itself", a->s->u.op.target.name);
		} else {
			sb_puts(&m, "dependency cycle: ");
			for (int i = first; i < n; i++) {
				const opinfo *x = &s->op[path[i]];
				const opinfo *y = &s->op[path[i + 1 < n ? i + 1 : first]];
				sb_printf(&m, "%s'%s' needs '%s'", i > first ? ", " : "",
					  x->s->u.op.target.name, y->s->u.op.target.name);
			}
		}
		diag_error(s->d, a->s->where, "%s", sb_str(&m));
		sb_free(&m);
		for (int i = first + 1; i < n; i++)
			diag_note(s->d, s->op[path[i]].s->where, "'%s' is computed here",
				  s->op[path[i]].s->u.op.target.name);
		for (int i = first; i < n; i++)
			s->op[path[i]].cyc = 1;
	}
downstream:
	for (int i = 0; i < n; i++)
		s->op[path[i]].cyc = 1;
}

static void order_ops(sema *s)
{
	/* in-degree: not-yet-run writers of each distinct input */
	int *nw = arena_alloc(s->a, (size_t)(s->nt + 1) * sizeof *nw);
	int *heap = arena_alloc(s->a, (size_t)(s->nop + 1) * sizeof *heap);
	s->order = arena_alloc(s->a, (size_t)(s->nop + 1) * sizeof *s->order);
	if (!nw || !heap || !s->order)
		return;
	for (int i = 0; i < s->nop; i++)
		if (!s->op[i].bad && s->op[i].op.out >= 0)
			nw[s->op[i].op.out]++;
	int nh = 0;
	for (int i = 0; i < s->nop; i++) {
		opinfo *oi = &s->op[i];
		if (oi->bad)
			continue;
		for (int j = 0; j < oi->ntin; j++)
			oi->indeg += nw[oi->tin[j]];
		if (oi->indeg == 0)
			heap_push(heap, &nh, i);
	}
	while (nh > 0) {
		int i = heap_pop(heap, &nh);
		opinfo *oi = &s->op[i];
		oi->emitted = 1;
		oi->order = s->norder;
		s->order[s->norder++] = i;
		tinfo *ti = &s->t[oi->op.out];
		for (int k = 0; k < ti->nrd; k++) {
			opinfo *r = &s->op[ti->readers[k]];
			if (r->bad || r->emitted)
				continue;
			if (--r->indeg == 0)
				heap_push(heap, &nh, ti->readers[k]);
		}
	}
	s->cyc_pos = arena_alloc(s->a, (size_t)(s->nop + 1) * sizeof *s->cyc_pos);
	s->cyc_path = arena_alloc(s->a, (size_t)(s->nop + 1) * sizeof *s->cyc_path);
	if (!s->cyc_pos || !s->cyc_path)
		return;
	for (int i = 0; i < s->nop; i++)
		s->cyc_pos[i] = -1;
	for (int i = 0; i < s->nop; i++)
		if (!s->op[i].bad && !s->op[i].emitted && !s->op[i].cyc)
			report_cycle(s, i);
	for (int i = 0; i < s->nop; i++)
		if (!s->op[i].bad && !s->op[i].emitted)
			bad_op(&s->op[i], s);
}

/* ---- 6. each op: types, shapes, placements -------------------------------------- */

/* What an op produces, before it is compared with a declaration. */
typedef struct result {
	ir_dtype dtype;
	int ndim;
	int64_t shape[IR_MAXDIM];
	ir_place place;
} result;

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
				   t->name, shape_str(s, t->ndim, t->shape), opname(oi),
				   shape_str(s, r->ndim, r->shape));
			ok = 0;
		} else if (!place_eq(t->place, r->place)) {
			const char *fix = r->place.kind == PL_PARTIAL
				? "; reduce it with allreduce or reduce_scatter"
				: "";
			diag_error(s->d, id.where, "'%s' is declared %s, but %s produces %s%s",
				   t->name, pname(s, t->place), opname(oi),
				   pname(s, r->place), fix);
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
	if (too_big(s, t, id.where)) {
		ti->bad = 1;
		return -1;
	}
	if (t->place.kind == PL_SPLIT &&
	    t->shape[t->place.dim] % group_size(s, t->place.group)) {
		diag_error(s->d, oi->s->u.op.call.where,
			   "dimension %d of '%s' (= %lld) is not divisible by %s (= %lld)",
			   t->place.dim, t->name, (long long)t->shape[t->place.dim],
			   group_name[t->place.group],
			   (long long)group_size(s, t->place.group));
		ti->bad = 1;
		return -1;
	}
	set_local(s, t);
	ti->known = 1;
	return 0;
}

static span arg_span(const opinfo *oi, int i)
{
	if (oi->s->kind == AST_PUT)
		return oi->s->u.op.src.where;
	const ast_exprs *a = &oi->s->u.op.call.args;
	return i < a->n ? a->v[i]->where : oi->s->u.op.call.where;
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
	case OP_DISPATCH: case OP_PUT:
		return 0;
	default:
		break;
	}
	for (int i = 0; i < oi->op.nin; i++)
		if (IN(s, oi, i)->dtype == DT_E4M3) {
			diag_error(s->d, arg_span(oi, i), "%s of e4m3 is not supported; "
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
	diag_error(s->d, arg_span(oi, i), "'%s' is partial (per-rank sums): %s is "
		   "not linear, so reduce it first with allreduce or reduce_scatter",
		   t->name, opname(oi));
	return -1;
}

static int need_float(sema *s, const opinfo *oi, int i)
{
	const ir_tensor *t = IN(s, oi, i);
	if (is_float(t->dtype))
		return 0;
	diag_error(s->d, arg_span(oi, i), "%s needs a floating-point tensor; '%s' is %s",
		   opname(oi), t->name, ir_dtype_name(t->dtype));
	return -1;
}

static int need_dtype(sema *s, const opinfo *oi, int i, ir_dtype want)
{
	const ir_tensor *t = IN(s, oi, i);
	if (t->dtype == want)
		return 0;
	diag_error(s->d, arg_span(oi, i), "%s needs '%s' to be %s, not %s", opname(oi),
		   t->name, ir_dtype_name(want), ir_dtype_name(t->dtype));
	return -1;
}

static int need_ndim(sema *s, const opinfo *oi, int i, int lo, int hi)
{
	const ir_tensor *t = IN(s, oi, i);
	if (t->ndim >= lo && t->ndim <= hi)
		return 0;
	if (lo == hi)
		diag_error(s->d, arg_span(oi, i), "%s needs '%s' to be %d-D; it is %s",
			   opname(oi), t->name, lo, type_str(s, t));
	else
		diag_error(s->d, arg_span(oi, i), "%s needs '%s' to be %d-D to %d-D; it is %s",
			   opname(oi), t->name, lo, hi, type_str(s, t));
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
		   a->n > 1 ? text(s, a->v[1]->where) : "0", t->name, t->ndim);
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
			   type_str(s, a), b->name, type_str(s, b));
		return -1;
	}
	int nd = a->ndim, o = nd - 2;
	if (nd == 3 && a->shape[0] != b->shape[0]) {
		diag_error(s->d, call_span(oi), "matmul batch sizes differ: '%s' is %s, "
			   "'%s' is %s", a->name, type_str(s, a), b->name, type_str(s, b));
		return -1;
	}
	if (a->shape[o + 1] != b->shape[o]) {
		diag_error(s->d, call_span(oi), "matmul inner dimensions differ: '%s' "
			   "is %s, '%s' is %s", a->name, type_str(s, a), b->name,
			   type_str(s, b));
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
			   a->name, group_name[ga], b->name, group_name[gb]);
		return -1;
	}
	if (ra == LOC && rb == LOC) {
		r->place = mkplace(PL_LOCAL, 0, GRP_WORLD);
	} else if (ra == OUTER && rb == LOC) {
		r->place = mkplace(PL_SPLIT, o, ga);
	} else if (ra == LOC && rb == OUTER) {
		r->place = mkplace(PL_SPLIT, o + 1, gb);
	} else if (ra == INNER && rb == INNER) {
		r->place = mkplace(PL_PARTIAL, 0, ga);
	} else if ((ra == BATCH || ra == LOC) && (rb == BATCH || rb == LOC)) {
		r->place = mkplace(PL_SPLIT, 0, ra == BATCH ? ga : gb);
	} else if (ra == INNER || rb == INNER) {
		const ir_tensor *k = ra == INNER ? a : b, *other = ra == INNER ? b : a;
		diag_error(s->d, call_span(oi), "'%s' is split along the contraction "
			   "dimension, but '%s' is %s; split both along it (giving a "
			   "partial result) or gather '%s' first", k->name, other->name,
			   pname(s, other->place), k->name);
		return -1;
	} else if (ra == OUTER && rb == OUTER) {
		diag_error(s->d, call_span(oi), "'%s' split by rows and '%s' split by "
			   "columns would leave each rank one block of the output; "
			   "gather one of them first", a->name, b->name);
		return -1;
	} else {
		diag_error(s->d, call_span(oi), "matmul cannot combine '%s' (%s) with "
			   "'%s' (%s)", a->name, pname(s, a->place), b->name,
			   pname(s, b->place));
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
			   x->name, type_str(s, x), y->name, type_str(s, y));
		return -1;
	}
	if (bcast) {
		if (y->place.kind != PL_LOCAL) {
			diag_error(s->d, arg_span(oi, 1), "'%s' is broadcast over rows, so it "
				   "must be local; it is %s", y->name, pname(s, y->place));
			return -1;
		}
		if (x->place.kind == PL_PARTIAL && oi->op.kind == OP_ADD) {
			diag_error(s->d, arg_span(oi, 0), "adding '%s' to partial sums would "
				   "add it once per rank; reduce '%s' first", y->name, x->name);
			return -1;
		}
	} else {
		if (!place_eq(x->place, y->place)) {
			diag_error(s->d, call_span(oi), "%s of '%s' (%s) and '%s' (%s): "
				   "placements must agree", n, x->name, pname(s, x->place),
				   y->name, pname(s, y->place));
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
			   nd == 3 ? " and heads" : "", shape_str(s, q->ndim, q->shape),
			   shape_str(s, k->ndim, k->shape), shape_str(s, v->ndim, v->shape));
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
			   pname(s, q->place), pname(s, k->place), pname(s, v->place));
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
		r->place = mkplace(PL_LOCAL, 0, GRP_WORLD);
	} else if (is_split(x, 0) && is_split(idx, 0) && x->place.group == idx->place.group) {
		ir_group g = x->place.group;
		if (e % group_size(s, g)) {
			diag_error(s->d, a->v[2]->where, "%s experts cannot be spread evenly "
				   "over %s (= %lld)", valued(s, a->v[2], e), group_name[g],
				   (long long)group_size(s, g));
			return -1;
		}
		r->place = mkplace(PL_SPLIT, 0, g);
	} else {
		diag_error(s->d, call_span(oi), "dispatch needs tokens and indices both "
			   "local or both split(0) over one group; '%s' is %s, '%s' is %s",
			   x->name, pname(s, x->place), idx->name, pname(s, idx->place));
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
			   "index: '%s' is %s, '%s' is %s", idx->name, type_str(s, idx),
			   g->name, type_str(s, g));
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
		r->place = mkplace(PL_LOCAL, 0, GRP_WORLD);
	} else if (spl) {
		r->place = mkplace(PL_SPLIT, 0, idx->place.group);
	} else {
		diag_error(s->d, call_span(oi), "combine needs expert outputs, indices "
			   "and gates all local or all split(0) over one group; they are "
			   "%s, %s, %s", pname(s, ye->place), pname(s, idx->place),
			   pname(s, g->place));
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
				diag_error(s->d, arg_span(oi, 0), "'%s' is partial; sum the "
					   "pieces with allreduce, not allgather", x->name);
			else if (x->place.kind == PL_LOCAL)
				diag_error(s->d, arg_span(oi, 0), "'%s' is local: every rank "
					   "already has all of it", x->name);
			else
				diag_error(s->d, arg_span(oi, 0), "allgather along %d, but "
					   "'%s' is %s", oi->op.dim, x->name, pname(s, x->place));
			return -1;
		}
		same_as(r, x);
		r->place = mkplace(PL_LOCAL, 0, GRP_WORLD);
		return 0;
	case OP_REDUCE_SCATTER:
	case OP_ALLREDUCE: {
		if (oi->op.kind == OP_REDUCE_SCATTER && need_dim(s, oi, x))
			return -1;
		if (x->place.kind == PL_SPLIT) {
			diag_error(s->d, arg_span(oi, 0), "'%s' is %s; %s sums whole "
				   "(partial or local) tensors%s", x->name, pname(s, x->place),
				   n, oi->op.kind == OP_ALLREDUCE
				   ? ": collect pieces with allgather" : "");
			return -1;
		}
		same_as(r, x);
		ir_group g = x->place.kind == PL_PARTIAL ? x->place.group : GRP_WORLD;
		if (oi->op.kind == OP_ALLREDUCE) {
			r->place = mkplace(PL_LOCAL, 0, GRP_WORLD);
			return 0;
		}
		int d = oi->op.dim;
		int64_t gs = group_size(s, g);
		if (x->shape[d] % gs) {
			diag_error(s->d, call_span(oi), "dimension %d of '%s' (= %lld) is not "
				   "divisible by %s (= %lld)", d, x->name,
				   (long long)x->shape[d], group_name[g], (long long)gs);
			return -1;
		}
		r->place = mkplace(PL_SPLIT, d, g);
		return 0;
	}
	case OP_RING_SHIFT:
		if (need_dim(s, oi, x))
			return -1;
		if (x->place.kind == PL_SPLIT && x->place.dim != oi->op.dim) {
			diag_error(s->d, arg_span(oi, 1), "ring_shift along %d, but '%s' is %s",
				   oi->op.dim, x->name, pname(s, x->place));
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
				r->place = mkplace(PL_PARTIAL, 0, x->place.group);
			else if (x->place.dim > d)
				r->place.dim--;
		}
		return 0;
	}
	if (need_float(s, oi, 0) || not_partial(s, oi, 0))
		return -1;
	oi->op.dim = last;
	if (is_split(x, last)) {
		diag_error(s->d, arg_span(oi, 0), "%s works on whole rows, but '%s' is "
			   "split along its last dimension (%s); gather it first",
			   opname(oi), x->name, pname(s, x->place));
		return -1;
	}
	if (oi->op.kind == OP_RMSNORM && oi->op.nin > 1) {
		const ir_tensor *w = IN(s, oi, 1);
		if (need_float(s, oi, 1))
			return -1;
		if (w->ndim != 1 || w->shape[0] != x->shape[last]) {
			diag_error(s->d, arg_span(oi, 1), "the rmsnorm weight must be 1-D of "
				   "'%s''s last dimension (%lld); '%s' is %s", x->name,
				   (long long)x->shape[last], w->name, type_str(s, w));
			return -1;
		}
		if (w->place.kind != PL_LOCAL) {
			diag_error(s->d, arg_span(oi, 1), "the rmsnorm weight '%s' must be "
				   "local; it is %s", w->name, pname(s, w->place));
			return -1;
		}
	}
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
			   part[d], x->name, x->name, d, pname(s, x->place));
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
	r->place = mkplace(PL_LOCAL, 0, GRP_WORLD);
	return 0;
}

/* ---- hints ----------------------------------------------------------------- */

static void check_hints(sema *s, opinfo *oi)
{
	const ast_attrs *hs = &oi->s->u.op.hints;
	ir_op *op = &oi->op;
	char cls = ir_op_class(op->kind);
	const ast_attr *seen[3] = {NULL, NULL, NULL};
	static const char *const names[] = {"tile", "chunk", "tasks"};
	for (int i = 0; i < hs->n; i++) {
		const ast_attr *h = &hs->v[i];
		int k = word_index(h->name.name, names, 3);
		if (k < 0) {
			guess g = guess_word(h->name.name, names, 3);
			diag_error(s->d, h->name.where, "unknown hint '%s'%s", h->name.name,
				   g.name ? hint_text(s, &g) : "; the hints are tile, chunk and tasks");
			continue;
		}
		if (seen[k]) {
			diag_error(s->d, h->where, "a second '%s' hint", names[k]);
			diag_note(s->d, seen[k]->where, "the first is here");
			continue;
		}
		seen[k] = h;
		int64_t v[3] = {0, 0, 0};
		int bad = 0;
		for (int j = 0; j < h->args.n && j < 3; j++)
			if (eval_int(s, h->args.v[j], &v[j]))
				bad = 1;
		if (bad)
			continue;
		if (k == 2) {   /* tasks */
			if (op->kind != OP_MATMUL) {
				diag_error(s->d, h->where, "tasks bounds the tasks of a matmul; "
					   "%s is not one", ir_op_name(op->kind));
				continue;
			}
			if (h->args.n != 1) {
				diag_error(s->d, h->where, "tasks takes one count");
				continue;
			}
			if (v[0] <= 0 || v[0] > (1 << 20)) {
				diag_error(s->d, h->args.v[0]->where, "tasks %s must be between 1 "
					   "and 1048576", valued(s, h->args.v[0], v[0]));
				continue;
			}
			op->hints.tasks = v[0];
			op->hints.tasks_where = h->where;
			continue;
		}
		if (k == 1) {   /* chunk */
			if (cls != 'X') {
				diag_error(s->d, h->where, "chunk sizes communication stages; "
					   "%s computes (use tile)", ir_op_name(op->kind));
				continue;
			}
			if (h->args.n != 1) {
				diag_error(s->d, h->where, "chunk takes one size in bytes");
				continue;
			}
			if (v[0] <= 0 || v[0] % 16) {
				diag_error(s->d, h->args.v[0]->where, "chunk %s must be a "
					   "positive multiple of 16 bytes",
					   valued(s, h->args.v[0], v[0]));
				continue;
			}
			op->hints.chunk = v[0];
			op->hints.chunk_where = h->where;
			continue;
		}
		/* tile */
		if (cls == 'X') {
			diag_error(s->d, h->where, "tile shapes compute stages; %s moves "
				   "data (use chunk)", ir_op_name(op->kind));
			continue;
		}
		int maxn = op->kind == OP_MATMUL ? 3 : 2;
		if (h->args.n > maxn) {
			diag_error(s->d, h->where, "a %s tile has at most %d sizes (%s)",
				   ir_op_name(op->kind), maxn, maxn == 3 ? "m x n x k" : "m x n");
			continue;
		}
		for (int j = 0; j < h->args.n; j++)
			if (v[j] <= 0) {
				diag_error(s->d, h->args.v[j]->where, "tile sizes must be "
					   "positive; %s", valued(s, h->args.v[j], v[j]));
				bad = 1;
			}
		if (!bad && op->kind == OP_MATMUL) {
			const ir_tensor *o = &s->t[op->out].t;
			static const char *const mnk[] = {"m", "n", "k"};
			static const int mult[] = {64, 16, 16};
			for (int j = 0; j < h->args.n && !bad; j++) {
				const ast_expr *e = h->args.v[j];
				if (v[j] % mult[j]) {
					diag_error(s->d, e->where, "tile %s (= %lld) must be a "
						   "multiple of %d", mnk[j], (long long)v[j], mult[j]);
					bad = 1;
				} else if (j == 1 && v[j] > 256) {
					diag_error(s->d, e->where, "tile n (= %lld) is at most 256",
						   (long long)v[j]);
					bad = 1;
				} else if (j < 2 && s->t[op->out].known &&
					   v[j] > o->local[o->ndim - 2 + j]) {
					diag_error(s->d, e->where, "tile %s (= %lld) is larger "
						   "than the output's %lld %s per rank", mnk[j],
						   (long long)v[j],
						   (long long)o->local[o->ndim - 2 + j],
						   j ? "columns" : "rows");
					bad = 1;
				}
			}
			if (!bad && h->args.n == 3) {
				int64_t es = ir_dtype_size(s->t[op->in[0]].t.dtype), a1, a2, sum;
				/* the portable tile's ring (mkd/mma.cuh): rows padded by 8
				 * elements against bank conflicts; compiler/ir.c's rule */
				int ovf = __builtin_mul_overflow(v[0], v[2] + 8, &a1) ||
					  __builtin_mul_overflow(v[2], v[1] + 8, &a2) ||
					  __builtin_add_overflow(a1, a2, &sum) ||
					  __builtin_mul_overflow(sum, es * TILE_STAGES, &sum);
				if (ovf || sum > SMEM_LIMIT) {
					diag_error(s->d, h->where, "tile %lld x %lld x %lld needs "
						   "%s bytes of shared memory for %d stages; %d fit",
						   (long long)v[0], (long long)v[1], (long long)v[2],
						   ovf ? "more than 2^63" : arena_printf(s->a, "%lld", (long long)sum),
						   TILE_STAGES, SMEM_LIMIT);
					bad = 1;
				}
			}
		}
		if (bad)
			continue;
		for (int j = 0; j < h->args.n; j++)
			op->hints.tile[j] = v[j];
		op->hints.ntile = h->args.n;
		op->hints.tile_where = h->where;
	}
}

static void check_op(sema *s, opinfo *oi)
{
	for (int i = 0; i < oi->op.nin; i++) {
		tinfo *t = &s->t[oi->op.in[i]];
		if (t->bad || !t->known) {
			bad_op(oi, s);
			return;
		}
	}
	if (check_e4m3(s, oi)) {
		bad_op(oi, s);
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
		same_as(&r, IN(s, oi, 0));
		rc = need_float(s, oi, 0) || not_partial(s, oi, 0) ? -1 : 0;
		break;
	case OP_RMSNORM:
	case OP_SOFTMAX:
	case OP_SUM: rc = check_rowwise(s, oi, &r); break;
	case OP_ATTENTION: rc = check_attention(s, oi, &r); break;
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
		bad_op(oi, s);
		return;
	}
	check_hints(s, oi);
}

/* ---- 7. whole program -------------------------------------------------------------- */

/* The explicit put stages writing one tensor must, together, copy every
 * shard of the source exactly once.  By symmetry it is enough to look from
 * rank 0: the shards it receives from each stage's peers. */
static void check_coverage(sema *s, int t)
{
	tinfo *ti = &s->t[t];
	int first = ti->first_writer;
	if (first < 0 || ti->nput == 0 || ti->bad)
		return;
	const opinfo *f = &s->op[first];
	if (f->bad)
		return;
	for (int k = 0; k < ti->nwr; k++)
		if (s->op[ti->writers[k]].bad)
			return;   /* already reported */
	const ir_tensor *src = &s->t[f->op.in[0]].t;
	ir_group g = src->place.group;
	int G = (int)group_size(s, g);
	int *by = arena_alloc(s->a, (size_t)G * sizeof *by);
	int *mark = arena_alloc(s->a, (size_t)G * sizeof *mark);
	if (!by || !mark)
		return;
	for (int i = 0; i < G; i++)
		by[i] = -1;
	for (int k = 0; k < ti->nwr; k++) {
		int i = ti->writers[k];
		const opinfo *oi = &s->op[i];
		if (oi->s->kind != AST_PUT)
			continue;
		memset(mark, 0, (size_t)G * sizeof *mark);
		int lo = 0, hi = s->world;   /* peers of rank 0 */
		if (oi->op.peers == PEERS_NODE)
			hi = s->gpus;
		else if (oi->op.peers == PEERS_REMOTE)
			lo = s->gpus;
		for (int p = lo; p < hi; p++) {
			int sh = g == GRP_GPUS ? p % s->gpus : g == GRP_NODES ? p / s->gpus : p;
			if (mark[sh])
				continue;
			mark[sh] = 1;
			if (by[sh] >= 0) {
				const opinfo *o2 = &s->op[by[sh]];
				diag_error(s->d, oi->s->where, "stages '%s' and '%s' both copy "
					   "shard %d of '%s' into '%s'", o2->op.stage,
					   oi->op.stage, sh, src->name, ti->t.name);
				diag_note(s->d, o2->s->where, "'%s' is here", o2->op.stage);
				return;
			}
			by[sh] = i;
		}
	}
	int missing = 0, first_missing = -1;
	for (int i = 0; i < G; i++)
		if (by[i] < 0 && missing++ == 0)
			first_missing = i;
	if (!missing)
		return;
	/* Name the peers nobody copies from. */
	int local_missing = 0, remote_missing = 0;
	for (int p = 0; p < s->world; p++) {
		int sh = g == GRP_GPUS ? p % s->gpus : g == GRP_NODES ? p / s->gpus : p;
		if (by[sh] < 0 && p < s->gpus)
			local_missing++;
		else if (by[sh] < 0)
			remote_missing++;
	}
	const char *who = local_missing && remote_missing ? "any peer"
		: local_missing ? "the GPUs of this node ('node')"
		: "the ranks of other nodes ('remote')";
	diag_error(s->d, f->s->where, "no stage copies into '%s' from %s: %d of %d "
		   "shards of '%s' (the first is shard %d) are never written",
		   ti->t.name, who, missing, G, src->name, first_missing);
}

static void whole_program(sema *s)
{
	for (int i = 0; i < s->nt; i++) {
		tinfo *ti = &s->t[i];
		ir_tensor *t = &ti->t;
		int written = ti->nassign + ti->nput;
		if (t->kind == TK_OUT && !written && !ti->bad)
			diag_error(s->d, t->where, "output '%s' is never assigned", t->name);
		else if (t->kind == TK_TEMP && ti->decl && !written && ti->nreads && !ti->bad)
			diag_error(s->d, t->where, "'%s' is read but never assigned", t->name);
		else if (ti->nput)
			check_coverage(s, i);
	}
}

typedef struct posidx {
	uint32_t start;
	int index;
} posidx;

static int by_position(const void *a, const void *b)
{
	const posidx *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->index - y->index;
}

/* Last, and only when all is well otherwise: after an error, "never used"
 * is more likely its echo than news. */
static void unused(sema *s)
{
	if (s->d->nerrors > s->errors0)
		return;
	/* in source order: temps are numbered after the declarations */
	posidx *ord = arena_alloc(s->a, (size_t)(s->nt + 1) * sizeof *ord);
	if (!ord)
		return;
	for (int i = 0; i < s->nt; i++)
		ord[i] = (posidx){s->t[i].t.where.start, i};
	qsort(ord, (size_t)s->nt, sizeof *ord, by_position);
	for (int k = 0; k < s->nt; k++) {
		tinfo *ti = &s->t[ord[k].index];
		ir_tensor *t = &ti->t;
		if (ti->nreads || ti->bad)
			continue;
		if (t->kind == TK_IN)
			diag_warning(s->d, t->where, "input '%s' is never used", t->name);
		else if (t->kind == TK_TEMP)
			diag_warning(s->d, t->where, ti->nassign + ti->nput
				     ? "'%s' is computed but never used"
				     : "'%s' is declared but never used", t->name);
	}
}

static void check_roles(sema *s)
{
	const ast_stmt *st = s->roles;
	if (!st)
		return;
	int64_t sum = 0;
	int bad = 0;
	static const char *const names[] = {
#define X(id, name) name,
		IR_ROLES(X)
#undef X
	};
	const ast_role *seen[ROLE_COUNT] = {0};
	for (int i = 0; i < st->u.roles.n; i++) {
		const ast_role *r = &st->u.roles.v[i];
		int k = ir_role_lookup(r->name.name, (int)strlen(r->name.name));
		int64_t v;
		int vbad = eval_int(s, r->count, &v);
		if (k < 0) {
			guess g = guess_word(r->name.name, names, ROLE_COUNT);
			diag_error(s->d, r->name.where, "unknown role '%s'%s", r->name.name,
				   g.name ? hint_text(s, &g)
					  : "; the roles are compute, nvlink, rdma and reduce");
			bad = 1;
			continue;
		}
		if (seen[k]) {
			diag_error(s->d, r->where, "role '%s' is given twice", names[k]);
			diag_note(s->d, seen[k]->where, "the first is here");
			bad = 1;
			continue;
		}
		seen[k] = r;
		if (vbad) {
			bad = 1;
			continue;
		}
		if (v <= 0) {
			diag_error(s->d, r->count->where, "role '%s' needs at least one CTA, "
				   "not %lld", names[k], (long long)v);
			bad = 1;
			continue;
		}
		if (v > INT_MAX)
			v = INT_MAX;
		sum += v;
		ir_role_hint h = {(ir_rolekind)k, (int)v, r->where};
		ARENA_PUSH(s->a, s->rh, s->nrh, s->rhcap, h);
	}
	int sms = s->o && s->o->dev && s->o->dev->sms > 0 ? s->o->dev->sms : SMS_DEFAULT;
	if (!bad && sum > sms)
		diag_error(s->d, st->where, "the roles ask for %lld CTAs per rank, but "
			   "the device has %d SMs (a persistent kernel needs all its CTAs "
			   "resident at once)", (long long)sum, sms);
}

/* ---- 8. the program ------------------------------------------------------------------- */

static ir_prog *build(sema *s, const ast_pipeline *ast)
{
	ir_prog *p = arena_alloc(s->a, sizeof *p);
	if (!p)
		return NULL;
	p->name = ast->name.name;
	p->where = ast->where;
	p->nodes = s->nodes;
	p->gpus = s->gpus;
	p->world = s->world;
	p->nparams = s->np;
	p->params = arena_alloc(s->a, (size_t)(s->np + 1) * sizeof *p->params);
	p->ntensors = s->nt;
	p->tensors = arena_alloc(s->a, (size_t)(s->nt + 1) * sizeof *p->tensors);
	p->nops = s->norder;
	p->ops = arena_alloc(s->a, (size_t)(s->norder + 1) * sizeof *p->ops);
	p->nroles = s->nrh;
	p->roles = s->rh;
	p->roles_where = s->roles ? s->roles->where : SPAN_NONE;
	if (!p->params || !p->tensors || !p->ops)
		return NULL;
	for (int i = 0; i < s->np; i++)
		p->params[i] = s->p[i].p;
	for (int i = 0; i < s->nt; i++) {
		p->tensors[i] = s->t[i].t;
		p->tensors[i].producer = -1;
		p->tensors[i].nwriters = 0;
		p->tensors[i].nuses = s->t[i].nreads;
	}
	for (int k = 0; k < s->norder; k++) {
		const opinfo *oi = &s->op[s->order[k]];
		p->ops[k] = oi->op;
		ir_tensor *t = &p->tensors[oi->op.out];
		if (t->producer < 0)
			t->producer = k;
		t->nwriters++;
	}
	return p;
}

ir_prog *sema_check(const struct ast_pipeline *ast, const compile_opts *o,
		    diags *d, arena *a)
{
	if (!ast)
		return NULL;
	sema s0 = {0}, *s = &s0;
	s->o = o;
	s->d = d;
	s->a = a;
	s->src = d->src;
	s->errors0 = d->nerrors;
	s->guess_budget = 1L << 20;

	register_names(s, ast);
	bind_mesh(s);
	/* 2. parameters in order; -D overrides the value, but the expression
	 * is still checked */
	for (int i = 0; i < ast->nstmts; i++) {
		const ast_stmt *st = ast->stmts[i];
		if (st->kind != AST_PARAM)
			continue;
		sym *y = lookup(s, st->u.param.name.name);
		if (!y || y->kind != SYM_PARAM || s->p[y->index].p.where.start !=
		    st->u.param.name.where.start)
			continue;   /* a redefinition, reported */
		pinfo *p = &s->p[y->index];
		int64_t v = 0;
		int bad = eval_int(s, st->u.param.value, &v);
		const mk_define *def = find_define(s, p->p.name);
		if (def) {
			v = def->value;
			p->p.overridden = true;
		} else if (bad) {
			v = 1;   /* keeps later uses quiet-ish; errors stop the compile */
		}
		p->p.value = v;
		p->done = 1;
	}
	check_defines(s);
	for (int i = 0; i < s->nt; i++)
		if (s->t[i].decl)
			check_decl(s, &s->t[i]);
	resolve_ops(s);
	order_ops(s);
	for (int k = 0; k < s->norder; k++) {
		opinfo *oi = &s->op[s->order[k]];
		if (!oi->bad)
			check_op(s, oi);
	}
	whole_program(s);
	check_roles(s);
	unused(s);
	if (a->failed || d->nerrors > s->errors0)
		return NULL;
	return build(s, ast);
}

/* ---- the listing ------------------------------------------------------------------- */

static void dump_shape(strbuf *out, int nd, const int64_t *sh)
{
	sb_putc(out, '[');
	for (int i = 0; i < nd; i++)
		sb_printf(out, "%s%lld", i ? ", " : "", (long long)sh[i]);
	sb_putc(out, ']');
}

/* A table of text cells, printed with every column padded to its widest
 * cell (the last column is not padded). */
enum { NCOL = 7 };
typedef struct table {
	strbuf cell[NCOL];
	char **v;
	int rows, ncol;
} table;

static void table_row(table *tb)
{
	char **nv = realloc(tb->v, (size_t)(tb->rows + 1) * NCOL * sizeof *nv);
	if (!nv)
		return;
	tb->v = nv;
	for (int c = 0; c < NCOL; c++) {
		nv[tb->rows * NCOL + c] = sb_take(&tb->cell[c]);
		sb_init(&tb->cell[c]);
	}
	tb->rows++;
}

static void table_print(table *tb, strbuf *out)
{
	int w[NCOL] = {0};
	for (int r = 0; r < tb->rows; r++)
		for (int c = 0; c < tb->ncol; c++) {
			int n = (int)strlen(tb->v[r * NCOL + c]);
			w[c] = n > w[c] ? n : w[c];
		}
	for (int r = 0; r < tb->rows; r++) {
		strbuf line;
		sb_init(&line);
		for (int c = 0; c < tb->ncol; c++) {
			const char *x = tb->v[r * NCOL + c];
			sb_printf(&line, "  %-*s", c == tb->ncol - 1 ? 0 : w[c], x);
		}
		while (line.len && line.s[line.len - 1] == ' ')
			line.s[--line.len] = 0;
		sb_puts(out, sb_str(&line));
		sb_putc(out, '\n');
		sb_free(&line);
	}
	for (int i = 0; i < tb->rows * NCOL; i++)
		free(tb->v[i]);
	free(tb->v);
	for (int c = 0; c < NCOL; c++)
		sb_free(&tb->cell[c]);
}

void sema_dump(const ir_prog *p, strbuf *out)
{
	if (!p)
		return;
	sb_printf(out, "pipeline %s\n", p->name);
	sb_printf(out, "mesh %d x %d (world %d)\n", p->nodes, p->gpus, p->world);
	for (int i = 0; i < p->nparams; i++)
		sb_printf(out, "param %s = %lld%s\n", p->params[i].name,
			  (long long)p->params[i].value,
			  p->params[i].overridden ? "  (-D)" : "");
	if (p->nroles) {
		sb_puts(out, "roles");
		for (int i = 0; i < p->nroles; i++)
			sb_printf(out, "%s %s %d", i ? "," : "",
				  ir_role_name(p->roles[i].role), p->roles[i].ctas);
		sb_putc(out, '\n');
	}

	table tb = {.ncol = 7};
	for (int c = 0; c < NCOL; c++)
		sb_init(&tb.cell[c]);
	sb_printf(out, "\ntensors (%d):\n", p->ntensors);
	for (int i = 0; i < p->ntensors; i++) {
		const ir_tensor *t = &p->tensors[i];
		char pb[32];
		sb_puts(&tb.cell[0], t->name);
		sb_puts(&tb.cell[1], kind_name[t->kind]);
		sb_puts(&tb.cell[2], ir_dtype_name(t->dtype));
		dump_shape(&tb.cell[2], t->ndim, t->shape);
		sb_puts(&tb.cell[3], sema_place_name(t->place, pb, sizeof pb));
		sb_puts(&tb.cell[4], "per rank ");
		dump_shape(&tb.cell[4], t->ndim, t->local);
		if (t->producer >= 0)
			sb_printf(&tb.cell[5], "from op %d", t->producer);
		if (t->nwriters > 1)
			sb_printf(&tb.cell[5], " (+%d)", t->nwriters - 1);
		sb_printf(&tb.cell[6], "uses %d", t->nuses);
		table_row(&tb);
	}
	table_print(&tb, out);

	table to = {.ncol = 3};
	for (int c = 0; c < NCOL; c++)
		sb_init(&to.cell[c]);
	sb_printf(out, "\nops (%d):\n", p->nops);
	for (int i = 0; i < p->nops; i++) {
		const ir_op *op = &p->ops[i];
		const char *o = p->tensors[op->out].name;
		strbuf *x = &to.cell[2];
		sb_printf(&to.cell[0], "%d", i);
		sb_puts(&to.cell[1], op->stage);
		if (op->kind == OP_PUT) {
			sb_printf(x, "%s[%s of p] <- %s@p for p in %s  %s", o,
				  op->dim ? "cols" : "rows", p->tensors[op->in[0]].name,
				  peers_name[op->peers], transport_name[op->transport]);
		} else {
			sb_printf(x, "%s = %s(", o, ir_op_name(op->kind));
			for (int j = 0; j < op->nin; j++)
				sb_printf(x, "%s%s", j ? ", " : "", p->tensors[op->in[j]].name);
			switch (op->kind) {
			case OP_SCALE: sb_printf(x, ", %g", op->scalar); break;
			case OP_CAST: sb_printf(x, ", %s", ir_dtype_name(op->to)); break;
			case OP_SUM: case OP_ALLGATHER: case OP_REDUCE_SCATTER:
			case OP_RING_SHIFT:
				sb_printf(x, ", %d", op->dim);
				break;
			case OP_ATTENTION:
				if (op->causal)
					sb_puts(x, ", causal");
				break;
			case OP_DISPATCH:
				sb_printf(x, ", %lld, %lld", (long long)op->experts,
					  (long long)op->capacity);
				break;
			default: break;
			}
			sb_putc(x, ')');
		}
		if (op->hints.ntile) {
			sb_puts(x, "  tile ");
			for (int j = 0; j < op->hints.ntile; j++)
				sb_printf(x, "%s%lld", j ? " x " : "",
					  (long long)op->hints.tile[j]);
		}
		if (op->hints.chunk)
			sb_printf(x, "  chunk %lld", (long long)op->hints.chunk);
		if (op->hints.tasks)
			sb_printf(x, "  tasks %lld", (long long)op->hints.tasks);
		if (op->kind == OP_ATTENTION)
			sb_printf(x, "  (scale %.6g)", op->scalar);
		table_row(&to);
	}
	table_print(&to, out);
}
