/* diag.c - source text bookkeeping and diagnostic rendering; see diag.h. */
#include "diag.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void src_init(srcset *s)
{
	memset(s, 0, sizeof *s);
}

void src_free(srcset *s)
{
	for (int i = 0; i < s->n; i++) {
		free((char *)s->files[i].name);
		free((char *)s->files[i].text);
	}
	free(s->files);
	memset(s, 0, sizeof *s);
}

int src_add(srcset *s, const char *name, const char *text, size_t len)
{
	if (len >= UINT32_MAX)
		return -1;
	if (s->n == s->cap) {
		int nc = s->cap ? s->cap * 2 : 4;
		src_file *nf = realloc(s->files, (size_t)nc * sizeof *nf);
		if (!nf)
			return -1;
		s->files = nf;
		s->cap = nc;
	}
	char *t = malloc(len + 1);
	char *n = strdup(name ? name : "<string>");
	if (!t || !n) {
		free(t);
		free(n);
		return -1;
	}
	memcpy(t, text, len);
	t[len] = 0;
	s->files[s->n] = (src_file){n, t, (uint32_t)len};
	return s->n++;
}

int src_load(srcset *s, const char *path, int *err)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		*err = errno;
		return -1;
	}
	strbuf b;
	sb_init(&b);
	char tmp[65536];
	size_t k;
	while ((k = fread(tmp, 1, sizeof tmp, f)) > 0)
		sb_putn(&b, tmp, k);
	int rerr = ferror(f) ? (errno ? errno : EIO) : 0;
	fclose(f);
	if (rerr || b.oom) {
		*err = rerr ? rerr : ENOMEM;
		sb_free(&b);
		return -1;
	}
	int id = src_add(s, path, sb_str(&b), b.len);
	sb_free(&b);
	if (id < 0)
		*err = b.len >= UINT32_MAX ? EFBIG : ENOMEM;
	return id;
}

void src_linecol(const srcset *s, int file, uint32_t off, int *line, int *col)
{
	*line = 1;
	*col = 1;
	if (file < 0 || file >= s->n)
		return;
	const src_file *f = &s->files[file];
	if (off > f->len)
		off = f->len;
	uint32_t bol = 0;
	for (uint32_t i = 0; i < off; i++)
		if (f->text[i] == '\n') {
			(*line)++;
			bol = i + 1;
		}
	*col = (int)(off - bol) + 1;
}

span span_join(span a, span b)
{
	if (a.file < 0)
		return b;
	if (b.file < 0 || b.file != a.file)
		return a;
	span r = a;
	if (b.start < r.start)
		r.start = b.start;
	if (b.end > r.end)
		r.end = b.end;
	return r;
}

void diag_init(diags *d, const srcset *src, arena *a)
{
	memset(d, 0, sizeof *d);
	d->src = src;
	d->a = a;
	d->max_errors = 100;
}

static void add(diags *d, diag_level lv, span where, const char *fmt, va_list ap)
{
	if (lv == DIAG_ERROR) {
		if (d->nerrors >= d->max_errors) {
			d->truncated = 1;
			d->nerrors++;
			return;
		}
		d->nerrors++;
	} else if (lv == DIAG_WARNING) {
		d->nwarnings++;
	} else if (d->n == 0 || d->truncated) {
		return; /* a note with nothing to attach to */
	}
	va_list aq;
	va_copy(aq, ap);
	int n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	char *m = n >= 0 ? arena_alloc(d->a, (size_t)n + 1) : NULL;
	if (!m)
		return;
	vsnprintf(m, (size_t)n + 1, fmt, ap);
	diag x = {lv, where, m};
	ARENA_PUSH(d->a, d->v, d->n, d->cap, x);
}

#define DEFINE_DIAG(fn, lv)                                        \
	void fn(diags *d, span where, const char *fmt, ...)        \
	{                                                          \
		va_list ap;                                        \
		va_start(ap, fmt);                                 \
		add(d, lv, where, fmt, ap);                        \
		va_end(ap);                                        \
	}
DEFINE_DIAG(diag_error, DIAG_ERROR)
DEFINE_DIAG(diag_warning, DIAG_WARNING)
DEFINE_DIAG(diag_note, DIAG_NOTE)

int diag_has_errors(const diags *d)
{
	return d->nerrors > 0 || (d->werror && d->nwarnings > 0);
}

static const char *level_name[] = {"error", "warning", "note"};
static const char *level_color[] = {"\033[1;31m", "\033[1;35m", "\033[1;36m"};

int utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
	if (n == 0)
		return 0;
	unsigned c = s[0];
	int len;
	uint32_t v, min;
	if (c < 0x80) {
		*cp = c;
		return 1;
	} else if (c >= 0xc2 && c <= 0xdf) {
		len = 2, v = c & 0x1f, min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3, v = c & 0x0f, min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4, v = c & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (n < (size_t)len)
		return 0;
	for (int i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (s[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return len;
}

/* Bytes of the character at i of line [i, eol): a valid UTF-8 sequence
 * counts as one character, every other byte as one on its own. */
static uint32_t char_len(const src_file *f, uint32_t i, uint32_t eol, int *valid)
{
	uint32_t cp;
	int k = utf8_decode((const unsigned char *)f->text + i, eol - i, &cp);
	*valid = k > 0;
	return k > 0 ? (uint32_t)k : 1;
}

/* The source line under a diagnostic, then ^~~~ under its span (clipped to
 * the line).  Tabs are kept in the marker line so the caret lines up; a
 * UTF-8 character takes one column, a byte that is not UTF-8 prints as '?',
 * control characters as spaces.  Of a very long line only a window around
 * the span is shown, between "...", so output stays proportional to the
 * number of diagnostics. */
enum { EXCERPT_BEFORE = 80, EXCERPT_AFTER = 160 };

static void render_excerpt(const src_file *f, span w, strbuf *out, int color)
{
	uint32_t bol = w.start, eol = w.start;
	if (bol > f->len)
		bol = eol = f->len;
	uint32_t start = bol;
	while (bol > 0 && f->text[bol - 1] != '\n' && start - bol <= EXCERPT_BEFORE)
		bol--;
	int cut_left = bol > 0 && f->text[bol - 1] != '\n';
	while (eol < f->len && f->text[eol] != '\n' && eol - start < EXCERPT_AFTER)
		eol++;
	int cut_right = eol < f->len && f->text[eol] != '\n';
	while (cut_right && eol > start && (f->text[eol] & 0xc0) == 0x80)
		eol--;   /* end it on one too */
	while (cut_left && bol < start && (f->text[bol] & 0xc0) == 0x80)
		bol++;   /* start the window on a character */
	sb_puts(out, cut_left ? "  ..." : "  ");
	for (uint32_t i = bol, k; i < eol; i += k) {
		unsigned char c = (unsigned char)f->text[i];
		int valid;
		k = char_len(f, i, eol, &valid);
		if (c >= 0x80)
			sb_putn(out, valid ? f->text + i : "?", valid ? k : 1);
		else
			sb_putc(out, (c == '\t' || c >= 0x20) && c != 0x7f ? (char)c : ' ');
	}
	sb_puts(out, cut_right ? "...\n  " : "\n  ");
	if (cut_left)
		sb_puts(out, "   ");
	uint32_t i = bol, k;
	int valid;
	for (; i < w.start && i < eol; i += k) {
		k = char_len(f, i, eol, &valid);
		sb_putc(out, f->text[i] == '\t' ? '\t' : ' ');
	}
	uint32_t end = w.end > eol ? eol : w.end;
	if (color)
		sb_puts(out, "\033[1;32m");
	sb_putc(out, '^');
	if (i < end)
		i += char_len(f, i, eol, &valid);
	for (; i < end; i += k) {
		k = char_len(f, i, eol, &valid);
		sb_putc(out, '~');
	}
	if (color)
		sb_puts(out, "\033[0m");
	sb_putc(out, '\n');
}

/* Line starts of the files a render touches, built once per render so
 * that many diagnostics in a big file cost O(file + n log n), not O(file * n). */
typedef struct line_index {
	uint32_t *bol;
	uint32_t n;
	int built;
} line_index;

static void locate(const srcset *s, line_index *ix, int file, uint32_t off,
		   int *line, int *col)
{
	line_index *x = ix ? &ix[file] : NULL;
	const src_file *f = &s->files[file];
	if (x && !x->built) {
		x->built = 1;
		uint32_t n = 1;
		for (uint32_t i = 0; i < f->len; i++)
			n += f->text[i] == '\n';
		x->bol = malloc((size_t)n * sizeof *x->bol);
		if (x->bol) {
			x->bol[0] = 0;
			x->n = 1;
			for (uint32_t i = 0; i < f->len; i++)
				if (f->text[i] == '\n')
					x->bol[x->n++] = i + 1;
		}
	}
	if (!x || !x->bol) {
		src_linecol(s, file, off, line, col);
		return;
	}
	if (off > f->len)
		off = f->len;
	uint32_t lo = 0, hi = x->n - 1;
	while (lo < hi) {   /* the last line starting at or before off */
		uint32_t mid = lo + (hi - lo + 1) / 2;
		if (x->bol[mid] <= off)
			lo = mid;
		else
			hi = mid - 1;
	}
	*line = (int)lo + 1;
	*col = (int)(off - x->bol[lo]) + 1;
}

void diag_render(const diags *d, strbuf *out, int color)
{
	line_index *ix = d->src && d->src->n ? calloc((size_t)d->src->n, sizeof *ix) : NULL;
	for (int i = 0; i < d->n; i++) {
		const diag *g = &d->v[i];
		const src_file *f = NULL;
		if (g->where.file >= 0 && d->src && g->where.file < d->src->n)
			f = &d->src->files[g->where.file];
		if (f) {
			int line, col;
			locate(d->src, ix, g->where.file, g->where.start, &line, &col);
			sb_printf(out, "%s:%d:%d: ", f->name, line, col);
		} else {
			sb_puts(out, "mkc: ");
		}
		if (color)
			sb_puts(out, level_color[g->level]);
		sb_printf(out, "%s:", level_name[g->level]);
		if (color)
			sb_puts(out, "\033[0m");
		sb_printf(out, " %s\n", g->msg);
		if (f)
			render_excerpt(f, g->where, out, color);
	}
	if (d->truncated)
		sb_printf(out, "mkc: error: too many errors (%d); stopping\n",
			  d->nerrors);
	if (ix)
		for (int i = 0; i < d->src->n; i++)
			free(ix[i].bol);
	free(ix);
}
