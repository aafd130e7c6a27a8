/* sema_hints.c - the hints: an op's tile, chunk, tasks and split (each checked
 * against the op; a matmul tile also against the output's per-rank shape
 * and the shared memory of a CTA), and the program's roles hint (CTAs per
 * role, within the device's SMs).
 */
#include "sema_int.h"

#include <limits.h>
#include <string.h>

#define SMS_DEFAULT 132                 /* H200 */

/* ---- an op's hints ----------------------------------------------------- */

/* The largest tile size a hint may name along the output's rows (j = 0) or
 * columns (j = 1) of `extent` per rank.  Rows pad: a tile of up to 128 rows
 * (the Hopper engine's height, which the plan picks for a decode matmul of a
 * single row too) is accepted over fewer rows; columns do not. */
static int64_t tile_hint_max(int64_t extent, int j)
{
	return j == 0 && extent < 128 ? 128 : extent;
}

void sema_check_hints(sema *s, opinfo *oi)
{
	const ast_attrs *hs = &oi->s->u.op.hints;
	ir_op *op = &oi->op;
	char cls = ir_op_class(op->kind);
	const ast_attr *seen[4] = {NULL, NULL, NULL, NULL};
	static const char *const names[] = {"tile", "chunk", "tasks", "split"};
	for (int i = 0; i < hs->n; i++) {
		const ast_attr *h = &hs->v[i];
		int k = sema_word_index(h->name.name, names, 4);
		if (k < 0) {
			guess g = sema_guess_word(h->name.name, names, 4);
			diag_error(s->d, h->name.where, "unknown hint '%s'%s", h->name.name,
				   g.name ? sema_hint_text(s, &g)
					  : "; the hints are tile, chunk, tasks and split");
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
			if (sema_eval_int(s, h->args.v[j], &v[j]))
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
					   "and 1048576", sema_valued(s, h->args.v[0], v[0]));
				continue;
			}
			op->hints.tasks = v[0];
			op->hints.tasks_where = h->where;
			continue;
		}
		if (k == 3) {   /* split: of K (matmul) or of the keys (attention) */
			if (op->kind != OP_MATMUL && op->kind != OP_ATTENTION) {
				diag_error(s->d, h->where, "split cuts the reduction of a matmul (K) or "
					   "the keys of an attention across CTAs; %s is neither",
					   ir_op_name(op->kind));
				continue;
			}
			if (h->args.n != 1) {
				diag_error(s->d, h->where, "split takes one count");
				continue;
			}
			if (v[0] <= 0 || v[0] > 256) {
				diag_error(s->d, h->args.v[0]->where, "split %s must be between 1 and 256",
					   sema_valued(s, h->args.v[0], v[0]));
				continue;
			}
			op->hints.split = v[0];
			op->hints.split_where = h->where;
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
					   sema_valued(s, h->args.v[0], v[0]));
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
					   "positive; %s", sema_valued(s, h->args.v[j], v[j]));
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
					   v[j] > tile_hint_max(o->local[o->ndim - 2 + j], j)) {
					diag_error(s->d, e->where, "tile %s (= %lld) is larger "
						   "than the output's %lld %s per rank%s", mnk[j],
						   (long long)v[j],
						   (long long)o->local[o->ndim - 2 + j],
						   j ? "columns" : "rows",
						   j ? "" : " (fewer rows pad up to 128)");
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

/* ---- the roles hint --------------------------------------------------------- */

void sema_check_roles(sema *s)
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
		int vbad = sema_eval_int(s, r->count, &v);
		if (k < 0) {
			guess g = sema_guess_word(r->name.name, names, ROLE_COUNT);
			diag_error(s->d, r->name.where, "unknown role '%s'%s", r->name.name,
				   g.name ? sema_hint_text(s, &g)
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
