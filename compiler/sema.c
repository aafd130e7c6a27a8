/* sema.c - the checks: a syntax tree becomes a checked program (ir_prog).
 *
 * Everything is resolved for one binding of the parameters and the mesh
 * (-D nodes=N -D gpus=G, defaults 1 x 1), so every shape is a concrete
 * integer and every question ("is M divisible by world?") has a yes or no.
 *
 * The work, in order:
 *   1. the mesh (the file's `mesh 2 x 8`, -D, the job's rank count), and
 *      every name registered (one namespace for the
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
 * Steps 1, 2, 7 and 8 are here; 3 and 4 are sema_decl.c, 5 sema_order.c,
 * 6 sema_ops.c, with the hints (and the roles hint of 7) in sema_hints.c.
 * Beneath them sema_names.c keeps the symbol table, the "did you mean"
 * guesses and the reserved names, and sema_eval.c evaluates constant
 * expressions and writes values, shapes and placements for messages.
 * The --emit=check listing is inspect_program (inspect.c).  sema_int.h is
 * what the pieces share.
 *
 * Cascades are avoided by marking a tensor or op `bad` once something about
 * it is reported: later checks that would only repeat the news stay quiet.
 * Integer arithmetic is 64-bit and checked; no recursion is deeper than the
 * parser's expression depth limit.
 */
#include "sema_int.h"

#include <stdlib.h>
#include <string.h>

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
	sema_insert(s, id.name, SYM_TENSOR, s->nt - 1);
	return s->nt - 1;
}

static void register_names(sema *s, const ast_pipeline *p)
{
	sema_insert(s, "nodes", SYM_BUILTIN, B_NODES);
	sema_insert(s, "gpus", SYM_BUILTIN, B_GPUS);
	sema_insert(s, "world", SYM_BUILTIN, B_WORLD);
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
			sym *y = sema_lookup(s, id.name);
			if (sema_reserved(s, id))
				break;
			if (y) {
				sema_redefined(s, id, y);
				break;
			}
			pinfo pi = {0};
			pi.p.name = id.name;
			pi.p.where = id.where;
			ARENA_PUSH(s->a, s->p, s->np, s->pcap, pi);
			sema_insert(s, id.name, SYM_PARAM, s->np - 1);
			break;
		}
		case AST_DECL: {
			ast_ident id = st->u.decl.name;
			sym *y = sema_lookup(s, id.name);
			if (sema_reserved(s, id))
				break;
			if (y) {
				sema_redefined(s, id, y);
				break;
			}
			new_tensor(s, id, (ir_tkind)st->u.decl.kind, st);
			break;
		}
		case AST_ASSIGN:
			sema_add_op(s, sema_lift_calls(s, st), 0);
			break;
		case AST_PUT:
			sema_add_op(s, st, 0);
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
		sym *y = sema_lookup(s, id.name);
		if (!y) {
			if (sema_reserved(s, id)) {
				s->op[i].bad = 1;
				continue;
			}
			new_tensor(s, id, TK_TEMP, NULL);
			y = sema_lookup(s, id.name);
			if (!y)
				continue;
		}
		if (y->kind != SYM_TENSOR) {
			diag_error(s->d, id.where, "cannot assign to %s '%s'",
				   y->kind == SYM_PARAM ? "parameter" : "the built-in",
				   id.name);
			if (y->kind == SYM_PARAM)
				diag_note(s->d, sema_def_span(s, y), "'%s' is defined here",
					  id.name);
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

/* One side of the mesh: the file's literal (`mesh 2 x 8`), else -D, else
 * what the job's rank count leaves (the runtime's world), else 1. */
typedef struct mesh_side {
	const char *name;       /* "nodes" | "gpus" */
	int64_t v;
	int known;
	const ast_expr *lit;    /* the file fixes it here */
	const mk_define *def;   /* -D NAME= */
} mesh_side;

static int mesh_count_ok(sema *s, mesh_side *m, span w)
{
	if (m->v >= 1 && m->v <= IR_MAXRANKS)
		return 1;
	if (m->lit)
		diag_error(s->d, w, "%lld is not a %s count (1 to %d)", (long long)m->v,
			   m->name[0] == 'n' ? "node" : "GPU", IR_MAXRANKS);
	else
		diag_error(s->d, SPAN_NONE, "-D %s: %lld is not a %s count (1 to %d)", m->name,
			   (long long)m->v, m->name[0] == 'n' ? "node" : "GPU", IR_MAXRANKS);
	return 0;
}

/* The mesh statement's side i: the built-in of its place (open) or an
 * integer literal (fixed).  0 when it is neither (reported). */
static int mesh_literal(sema *s, mesh_side *m, const ast_expr *e)
{
	if (!e || e->kind == AST_E_ERROR)
		return 0;
	if (e->kind == AST_E_NAME && !strcmp(e->name, m->name))
		return 1;
	if (e->kind == AST_E_INT) {
		m->lit = e;
		m->v = e->ival;
		m->known = 1;
		return mesh_count_ok(s, m, e->where);
	}
	diag_error(s->d, e->where, "the mesh's %s is an integer ('mesh 2 x 8') or the "
		   "built-in '%s' ('mesh nodes x gpus': set at launch)",
		   m->name[0] == 'n' ? "first size (nodes)" : "second size (GPUs per node)",
		   m->name);
	return 0;
}

static void bind_mesh(sema *s)
{
	mesh_side m[2] = {{.name = "nodes"}, {.name = "gpus"}};
	const ast_stmt *st = s->mesh;
	int ok = 1;
	for (int i = 0; i < 2; i++) {
		mesh_side *x = &m[i];
		x->def = find_define(s, x->name);
		if (st && !mesh_literal(s, x, i ? st->u.mesh.gpus : st->u.mesh.nodes)) {
			ok = 0;
			continue;
		}
		if (!x->def)
			continue;
		if (x->lit && x->def->value != x->v) {
			diag_error(s->d, x->lit->where, "-D %s=%lld conflicts with the mesh "
				   "this file fixes: %lld %s", x->name, (long long)x->def->value,
				   (long long)x->v, x->name);
			diag_note(s->d, st->where, "drop -D %s, or write 'mesh %s' to set it "
				  "at launch", x->name, i ? "... x gpus" : "nodes x ...");
			ok = 0;
		} else if (!x->lit) {
			x->v = x->def->value;
			x->known = 1;
			ok &= mesh_count_ok(s, x, SPAN_NONE);
		}
	}
	if (find_define(s, "world"))
		diag_error(s->d, SPAN_NONE,
			   "-D world: world is nodes * gpus; set -D nodes and -D gpus");
	/* The job's rank count (the runtime: virtual ranks or processes)
	 * fills an open side, and must agree with fixed ones. */
	int64_t W = s->o ? s->o->world : 0;
	if (ok && W > 0) {
		if (!m[0].known && !m[1].known) {
			m[0].v = 1;
			m[1].v = W;
		} else if (m[0].known != m[1].known) {
			mesh_side *k = m[0].known ? &m[0] : &m[1];
			mesh_side *u = m[0].known ? &m[1] : &m[0];
			if (W % k->v == 0) {
				u->v = W / k->v;
			} else {
				diag_error(s->d, k->lit ? k->lit->where : SPAN_NONE,
					   "%s%s%s = %lld does not divide the job's %lld ranks "
					   "(mkrun --ranks, or the processes launched)",
					   k->lit ? "" : "-D ", k->lit ? "" : k->name, k->lit ? k->name : "",
					   (long long)k->v, (long long)W);
				ok = 0;
			}
		} else if (m[0].v * m[1].v != W) {
			const ast_stmt *at = m[0].lit || m[1].lit ? st : NULL;
			diag_error(s->d, at ? at->where : SPAN_NONE,
				   "%sthe mesh %lld x %lld has %lld ranks, but the job has %lld "
				   "(mkrun --ranks, or the processes launched)",
				   at ? "" : "-D nodes, -D gpus: ", (long long)m[0].v,
				   (long long)m[1].v, (long long)(m[0].v * m[1].v), (long long)W);
			ok = 0;
		}
	}
	for (int i = 0; i < 2; i++)
		if (m[i].v < 1 || m[i].v > IR_MAXRANKS)
			m[i].v = 1;
	if (ok && m[0].v * m[1].v > IR_MAXRANKS) {
		diag_error(s->d, st && (m[0].lit || m[1].lit) ? st->where : SPAN_NONE,
			   "%sa mesh of %lld x %lld has more than %d ranks",
			   st && (m[0].lit || m[1].lit) ? "" : "-D nodes: ",
			   (long long)m[0].v, (long long)m[1].v, IR_MAXRANKS);
		ok = 0;
	}
	/* After an error the file's own sizes (or 1 x 1) keep the other
	 * checks going, so the mesh hides none of the file's errors. */
	if (!ok) {
		for (int i = 0; i < 2; i++)
			if (!m[i].lit || m[i].v < 1 || m[i].v > IR_MAXRANKS)
				m[i].v = 1;
		if (m[0].v * m[1].v > IR_MAXRANKS)
			m[0].v = m[1].v = 1;
	}
	s->nodes = (int)m[0].v;
	s->gpus = (int)m[1].v;
	s->world = (int)(m[0].v * m[1].v);
}

static void check_defines(sema *s)
{
	for (int i = 0; s->o && i < s->o->ndefs; i++) {
		const char *n = s->o->defs[i].name;
		if (!n || !strcmp(n, "nodes") || !strcmp(n, "gpus") || !strcmp(n, "world"))
			continue;
		sym *y = sema_lookup(s, n);
		if (y && y->kind == SYM_PARAM)
			continue;
		if (y && y->kind == SYM_TENSOR) {
			diag_error(s->d, SPAN_NONE, "-D %s: '%s' is a tensor, not a parameter",
				   n, n);
			continue;
		}
		guess g = sema_guess_name(s, n, WANT_INT);
		diag_error(s->d, SPAN_NONE, "-D %s: no parameter '%s' in this pipeline%s",
			   n, n, sema_hint_text(s, &g));
	}
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
	int G = (int)sema_group_size(s, g);
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
		sym *y = sema_lookup(s, st->u.param.name.name);
		if (!y || y->kind != SYM_PARAM || s->p[y->index].p.where.start !=
		    st->u.param.name.where.start)
			continue;   /* a redefinition, reported */
		pinfo *p = &s->p[y->index];
		int64_t v = 0;
		int bad = sema_eval_int(s, st->u.param.value, &v);
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
			sema_check_decl(s, &s->t[i]);
	sema_resolve_ops(s);
	sema_order_ops(s);
	for (int k = 0; k < s->norder; k++) {
		opinfo *oi = &s->op[s->order[k]];
		if (!oi->bad)
			sema_check_op(s, oi);
	}
	whole_program(s);
	sema_check_roles(s);
	unused(s);
	if (a->failed || d->nerrors > s->errors0)
		return NULL;
	return build(s, ast);
}
