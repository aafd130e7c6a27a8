/* strbuf.h - a growable, always NUL-terminated string on the C heap.
 *
 * Used where text leaves a compilation: rendered diagnostics, generated CUDA,
 * JSON.  An allocation failure sticks (sb->oom) and later appends are no-ops,
 * so emitters can append freely and check once at the end.
 */
#ifndef MK_STRBUF_H
#define MK_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct strbuf {
	char *s;
	size_t len, cap;
	int oom;
} strbuf;

void sb_init(strbuf *sb);
void sb_free(strbuf *sb);
void sb_putc(strbuf *sb, char c);
void sb_puts(strbuf *sb, const char *s);
void sb_putn(strbuf *sb, const char *s, size_t n);
void sb_printf(strbuf *sb, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void sb_vprintf(strbuf *sb, const char *fmt, va_list ap);
char *sb_take(strbuf *sb);  /* hands the heap string to the caller */
const char *sb_str(const strbuf *sb);  /* "" when empty */

#endif
