/* sema_names.c - names for the checks: the symbol table (one namespace for
 * the built-ins, parameters and tensors; stage names have a table of their
 * own), the "did you mean" guesses, reserved names and redefinitions.
 */
#include "sema_int.h"

#include <string.h>

static uint32_t hash(const char *s)
{
	uint32_t h = 2166136261u;
	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

/* Open addressing over a power-of-two table, in the arena. */
sym *sema_tab_find(sym *tab, int cap, const char *name)
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

void sema_tab_add(arena *a, sym **tab, int *cap, int *n, sym y)
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
				sema_tab_add(a, tab, cap, n, old[i]);
	}
	uint32_t m = (uint32_t)*cap - 1;
	uint32_t i = hash(y.name) & m;
	while ((*tab)[i].name)
		i = (i + 1) & m;
	(*tab)[i] = y;
	(*n)++;
}

sym *sema_lookup(sema *s, const char *name)
{
	return sema_tab_find(s->tab, s->tabcap, name);
}

void sema_insert(sema *s, const char *name, int kind, int index)
{
	sema_tab_add(s->a, &s->tab, &s->tabcap, &s->tabn, (sym){name, kind, index});
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
const char *sema_hint_text(sema *s, const guess *g)
{
	if (!g->name)
		return "";
	return arena_printf(s->a, "; did you mean '%s'?", g->name);
}

void sema_hint_note(sema *s, const guess *g)
{
	if (g->name && g->where.file >= 0)
		diag_note(s->d, g->where, "'%s' is defined here", g->name);
}

guess sema_guess_name(sema *s, const char *want, int what)
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

guess sema_guess_word(const char *want, const char *const *words, int n)
{
	guess g = {0};
	for (int i = 0; i < n; i++)
		consider(&g, want, words[i], SPAN_NONE);
	return g;
}

/* Names that cannot be defined: built-ins and element types. */
int sema_reserved(sema *s, ast_ident id)
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

span sema_def_span(sema *s, const sym *y)
{
	if (y->kind == SYM_PARAM)
		return s->p[y->index].p.where;
	if (y->kind == SYM_TENSOR)
		return s->t[y->index].t.where;
	return SPAN_NONE;
}

void sema_redefined(sema *s, ast_ident id, const sym *y)
{
	diag_error(s->d, id.where, "redefinition of '%s'", id.name);
	diag_note(s->d, sema_def_span(s, y), "previous definition is here");
}

int sema_word_index(const char *w, const char *const *words, int n)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(w, words[i]))
			return i;
	return -1;
}
