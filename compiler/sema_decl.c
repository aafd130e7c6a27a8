/* sema_decl.c - steps 3 and 4 of the checks: the declared tensors (element
 * type, shape, placement, divisibility), then each op's arguments resolved
 * against its signature, and the writers and readers of every tensor.
 */
#include "sema_int.h"

#include <string.h>

/* Argument kinds of each op, one letter per argument:
 *   T tensor  I integer expression  R real constant  D element type
 *   C `causal` or an integer (nonzero = causal)
 *   P a routing policy: `drop` or `strict` */
static const char *const op_sig[OP_COUNT] = {
	[OP_MATMUL] = "TT",     [OP_ADD] = "TT",        [OP_MUL] = "TT",
	[OP_SCALE] = "TR",      [OP_CAST] = "TD",       [OP_RELU] = "T",
	[OP_SILU] = "T",        [OP_GELU] = "T",        [OP_RMSNORM] = "TT",
	[OP_GELU_TANH] = "T",   [OP_LAYERNORM] = "TTT",  [OP_ROPE] = "TTT",
	[OP_HEADS] = "TI",      [OP_MERGE_HEADS] = "T",
	[OP_SLICE] = "TIII",    [OP_CONCAT] = "TTI",    [OP_TRANSPOSE] = "TII",
	[OP_RESHAPE] = "TIII",
	[OP_SOFTMAX] = "T",     [OP_SUM] = "TI",        [OP_ATTENTION] = "TTTC",
	[OP_ALLGATHER] = "TI",  [OP_REDUCE_SCATTER] = "TI",
	[OP_ALLREDUCE] = "T",   [OP_DISPATCH] = "TTIIP", [OP_COMBINE] = "TTT",
	[OP_RING_SHIFT] = "TI", [OP_PUT] = "T",
};

/* What argument i of the op named `name` wants: 'T' tensor, 'I' integer,
 * 'R' real, 'D' element type, 'C' causal; 'T' for an unknown op or
 * position (its errors come when it is resolved). */
char sema_arg_kind(const char *name, int i)
{
	int k = ir_op_lookup(name, (int)strlen(name));
	if (k < 0 || !op_sig[k] || i >= (int)strlen(op_sig[k]))
		return 'T';
	return op_sig[k][i];
}

static const struct { int lo, hi; } op_arity[OP_COUNT] = {
#define X(id, name, cls, lo, hi) [OP_##id] = {lo, hi},
	IR_OPS(X)
#undef X
};

/* ---- 3. declarations ------------------------------------------------------------ */

/* Checked size of a tensor: elements * element size must fit in 63 bits. */
int sema_too_big(sema *s, const ir_tensor *t, span w)
{
	int64_t n = ir_dtype_size(t->dtype);
	for (int i = 0; i < t->ndim; i++)
		if (__builtin_mul_overflow(n, t->shape[i], &n)) {
			diag_error(s->d, w, "'%s' is too large (%s has more than 2^63 bytes)",
				   t->name, sema_type_str(s, t));
			return 1;
		}
	return 0;
}

void sema_set_local(sema *s, ir_tensor *t)
{
	for (int i = 0; i < t->ndim; i++)
		t->local[i] = t->shape[i];
	if (t->place.kind == PL_SPLIT) {
		int64_t g = sema_group_size(s, t->place.group);
		t->local[t->place.dim] = t->shape[t->place.dim] / g;
	}
}

void sema_check_decl(sema *s, tinfo *ti)
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
		guess g = sema_guess_word(ty.name, names, DT_COUNT);
		diag_error(s->d, ty.where, "unknown element type '%s'%s", ty.name,
			   g.name ? sema_hint_text(s, &g)
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
		if (sema_eval_int(s, dims->v[i], &v)) {
			ok = 0;
			continue;
		}
		if (v <= 0) {
			diag_error(s->d, dims->v[i]->where,
				   "dimension %d of '%s' must be positive; it is %s",
				   i, t->name, sema_valued(s, dims->v[i], v));
			ok = 0;
		}
		t->shape[i] = v;
	}

	t->place = sema_mkplace(PL_LOCAL, 0, GRP_WORLD);
	const ast_attr *placed = NULL;
	for (int i = 0; i < st->u.decl.attrs.n; i++) {
		const ast_attr *at = &st->u.decl.attrs.v[i];
		const char *n = at->name.name;
		static const char *const words[] = {"split", "partial", "local"};
		int w;
		for (w = 0; w < 3 && strcmp(n, words[w]); w++)
			;
		if (w == 3) {
			guess g = sema_guess_word(n, words, 3);
			diag_error(s->d, at->name.where, "unknown placement '%s'%s", n,
				   g.name ? sema_hint_text(s, &g)
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
			t->place = sema_mkplace(w == 1 ? PL_PARTIAL : PL_LOCAL, 0, GRP_WORLD);
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
		if (sema_eval_dim(s, at->args.v[0], t->ndim, "split dimension", &d) ||
		    (at->args.n == 2 && sema_eval_group(s, at->args.v[1], &g))) {
			ok = 0;
			continue;
		}
		t->place = sema_mkplace(PL_SPLIT, d, g);
		int64_t gs = sema_group_size(s, g);
		if (ok && t->shape[d] % gs != 0) {
			diag_error(s->d, at->where, "%s is not divisible by %s (= %lld)",
				   sema_valued(s, dims->v[d], t->shape[d]), ir_group_name(g),
				   (long long)gs);
			ok = 0;
		}
	}
	if (ok && sema_too_big(s, t, st->u.decl.dims_where))
		ok = 0;
	if (!ok) {
		ti->bad = 1;
		return;
	}
	sema_set_local(s, t);
	ti->known = 1;
}

/* ---- 4. ops: arguments and writers ------------------------------------------------ */

/* Where argument i of an op is written (the call, past its last one). */
span sema_arg_span(const opinfo *oi, int i)
{
	if (oi->s->kind == AST_PUT)
		return oi->s->u.op.src.where;
	const ast_exprs *a = &oi->s->u.op.call.args;
	return i < a->n ? a->v[i]->where : oi->s->u.op.call.where;
}

void sema_bad_op(opinfo *oi, sema *s)
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
	sym *y = sema_lookup(s, e->name);
	if (y && y->kind == SYM_TENSOR)
		return y->index;
	if (y) {
		diag_error(s->d, e->where, "'%s' is %s, not a tensor", e->name,
			   y->kind == SYM_PARAM ? "a parameter" : "a built-in integer");
		return -1;
	}
	guess g = sema_guess_name(s, e->name, WANT_TENSOR);
	diag_error(s->d, e->where, "unknown tensor '%s'%s", e->name, sema_hint_text(s, &g));
	sema_hint_note(s, &g);
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

/* "matmul, add, ..., ring_shift": every op an assignment may call (put is
 * a stage), from the one op table. */
static const char *op_list(sema *s)
{
	size_t n = 1;
	for (int k = 0; k < OP_PUT; k++)
		n += strlen(op_names[k]) + 2;
	char *b = arena_alloc(s->a, n);
	if (!b)
		return "";
	b[0] = 0;
	for (int k = 0; k < OP_PUT; k++) {
		if (k)
			strcat(b, ", ");
		strcat(b, op_names[k]);
	}
	return b;
}

static void resolve_assign(sema *s, opinfo *oi)
{
	const ast_stmt *st = oi->s;
	ir_op *op = &oi->op;
	const ast_call *c = &st->u.op.call;
	const char *n = c->op.name;
	int k = ir_op_lookup(n, (int)strlen(n));
	if (k < 0) {
		guess g = sema_guess_word(n, op_names, OP_PUT);
		diag_error(s->d, c->op.where, "unknown op '%s'%s", n, sema_hint_text(s, &g));
		diag_note(s->d, c->op.where, "the ops are %s", op_list(s));
		sema_bad_op(oi, s);
		return;
	}
	if (k == OP_PUT) {
		diag_error(s->d, c->op.where,
			   "'put' is written as a stage: "
			   "stage NAME : nvlink DST[rows of p] <- SRC@p for p in node");
		sema_bad_op(oi, s);
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
		sema_bad_op(oi, s);
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
		sema_bad_op(oi, s);
		return;
	}
	const char *sig = op_sig[k];
	int bad = 0;
	int64_t ints[3] = {0, 0, 0};
	int nints = 0;
	op->causal = 0;
	op->drop = 0;
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
			if (sema_eval_int(s, e, &v))
				bad = 1;
			if (nints < 3)
				ints[nints++] = v;
			break;
		}
		case 'R':
			if (sema_eval_real(s, e, &op->scalar))
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
		case 'P':
			if (e->kind == AST_E_NAME && (!strcmp(e->name, "drop") ||
						      !strcmp(e->name, "strict"))) {
				op->drop = e->name[0] == 'd';
				break;
			}
			diag_error(s->d, e->where, "argument %d of %s is its routing policy: "
				   "'drop' (choices past an expert's capacity are dropped) or "
				   "'strict' (they stop the run), not '%s'", i + 1, n,
				   sema_text(s, e->where));
			bad = 1;
			break;
		case 'C': {
			if (e->kind == AST_E_NAME && !strcmp(e->name, "causal") &&
			    !sema_lookup(s, "causal")) {
				op->causal = 1;
				break;
			}
			int64_t v;
			if (sema_eval_int(s, e, &v))
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
	case OP_HEADS:
		op->experts = ints[0];   /* the head count */
		break;
	case OP_SLICE:       /* slice(X, dim, lo, hi) */
	case OP_CONCAT:      /* concat(A, B, dim) */
	case OP_TRANSPOSE:   /* transpose(X, dim, dim2) */
		op->dim = ints[0] >= 0 && ints[0] < 64 ? (int)ints[0] : -2;
		op->dim2 = ints[1] >= 0 && ints[1] < 64 ? (int)ints[1] : -2;
		op->lo = ints[1];
		op->hi = ints[2];
		break;
	case OP_RESHAPE:     /* reshape(X, n0, n1, n2): the result's shape */
		op->to_ndim = nints;
		for (int i = 0; i < nints; i++)
			op->to_shape[i] = ints[i];
		break;
	case OP_DISPATCH:
		op->experts = ints[0];
		op->capacity = ints[1];
		break;
	default:
		break;
	}
	if (bad)
		sema_bad_op(oi, s);
}

static void resolve_put(sema *s, opinfo *oi)
{
	const ast_stmt *st = oi->s;
	ir_op *op = &oi->op;
	int bad = 0;
	op->kind = OP_PUT;

	static const char *const how[] = {"nvlink", "rdma", "local"};
	static const ir_transport tr[] = {TR_NVLINK, TR_RDMA, TR_LOCAL};
	int h = sema_word_index(st->u.op.how.name, how, 3);
	if (h < 0) {
		if (!strcmp(st->u.op.how.name, "compute"))
			diag_error(s->d, st->u.op.how.where,
				   "a compute stage is an assignment: "
				   "stage NAME : compute DST = op(args)");
		else {
			guess g = sema_guess_word(st->u.op.how.name, how, 3);
			diag_error(s->d, st->u.op.how.where, "unknown transport '%s'%s",
				   st->u.op.how.name,
				   g.name ? sema_hint_text(s, &g) : "; use nvlink, rdma or local");
		}
		bad = 1;
	} else {
		op->transport = tr[h];
	}

	static const char *const parts[] = {"rows", "cols"};
	int part = sema_word_index(st->u.op.part.name, parts, 2);
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
	int set = sema_word_index(st->u.op.set.name, sets, 3);
	if (set < 0) {
		guess g = sema_guess_word(st->u.op.set.name, sets, 3);
		diag_error(s->d, st->u.op.set.where, "unknown peer set '%s'%s",
			   st->u.op.set.name,
			   g.name ? sema_hint_text(s, &g) : "; use node, remote or world");
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
		sema_bad_op(oi, s);
}

void sema_resolve_ops(sema *s)
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
			sema_bad_op(oi, s);
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
		sym *y = sema_tab_find(s->stages, s->stcap, id.name);
		if (!y) {
			sema_tab_add(s->a, &s->stages, &s->stcap, &s->stn,
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
