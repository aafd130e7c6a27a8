/* sema_order.c - step 5 of the checks: a topological order of the ops
 * (Kahn, smallest source position first, so a file written in order keeps
 * its order), and the cycles that leave ops out of it, each reported once.
 */
#include "sema_int.h"

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

void sema_order_ops(sema *s)
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
			sema_bad_op(&s->op[i], s);
}
