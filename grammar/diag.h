/* diag.h - source files, byte spans and collected diagnostics.
 *
 * Every floor reports through this: a location is a span {file, start, end}
 * of byte offsets into a source text; line and column are computed only when
 * a diagnostic is printed.  Diagnostics are collected, never fatal: a pass
 * reports and carries on, and the caller decides what to do with the count.
 *
 * Rendered form (cproc / chibicc style):
 *
 *   ag.mk:7:14: error: unknown tensor 'Bx'
 *     C = matmul(Ag, Bx)
 *                    ^~
 *   ag.mk:3:3: note: did you mean 'B'?
 */
#ifndef MK_DIAG_H
#define MK_DIAG_H

#include <stddef.h>
#include <stdint.h>

#include "../base/arena.h"
#include "../base/strbuf.h"

typedef struct span {
	int file;          /* index into the srcset; -1 = no location */
	uint32_t start;    /* first byte */
	uint32_t end;      /* one past the last byte (== start for a point) */
} span;

#define SPAN_NONE ((span){-1, 0, 0})

typedef struct src_file {
	const char *name;  /* as given on the command line, or "<string>" */
	const char *text;  /* NUL-terminated copy owned by the srcset */
	uint32_t len;
} src_file;

typedef struct srcset {
	src_file *files;
	int n, cap;
} srcset;

void src_init(srcset *s);
void src_free(srcset *s);
/* Adds a copy of text; returns the file index, or -1 when out of memory or
 * the text is larger than a span can address (4 GiB). */
int src_add(srcset *s, const char *name, const char *text, size_t len);
/* Reads a file; returns its index, or -1 and sets *err to errno. */
int src_load(srcset *s, const char *path, int *err);
/* 1-based line and column (in bytes) of an offset. */
void src_linecol(const srcset *s, int file, uint32_t off, int *line, int *col);
span span_join(span a, span b);
/* Length of the valid UTF-8 sequence at s (n bytes there) and its code
 * point in *cp; 0 when the bytes are not valid UTF-8 (overlong forms and
 * surrogates included). */
int utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);

typedef enum diag_level { DIAG_ERROR, DIAG_WARNING, DIAG_NOTE } diag_level;

typedef struct diag {
	diag_level level;
	span where;
	char *msg;  /* arena string */
} diag;

typedef struct diags {
	const srcset *src;
	arena *a;
	diag *v;
	int n, cap;
	int nerrors, nwarnings;
	int max_errors;   /* stop recording errors past this many (0 = 100) */
	int truncated;    /* errors were dropped past max_errors */
	int werror;       /* count warnings as errors */
} diags;

void diag_init(diags *d, const srcset *src, arena *a);
void diag_error(diags *d, span where, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void diag_warning(diags *d, span where, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A note belongs to the error or warning just before it. */
void diag_note(diags *d, span where, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int diag_has_errors(const diags *d);
/* Renders every diagnostic in order; color 1 adds ANSI colours. */
void diag_render(const diags *d, strbuf *out, int color);

#endif
