/* strbuf.c - see strbuf.h. */
#include "strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sb_init(strbuf *sb)
{
	memset(sb, 0, sizeof *sb);
}

void sb_free(strbuf *sb)
{
	free(sb->s);
	memset(sb, 0, sizeof *sb);
}

static int grow(strbuf *sb, size_t extra)
{
	if (sb->oom)
		return 0;
	if (sb->len + extra + 1 <= sb->cap)
		return 1;
	size_t nc = sb->cap ? sb->cap : 256;
	while (nc < sb->len + extra + 1)
		nc *= 2;
	char *n = realloc(sb->s, nc);
	if (!n) {
		sb->oom = 1;
		return 0;
	}
	sb->s = n;
	sb->cap = nc;
	return 1;
}

void sb_putn(strbuf *sb, const char *s, size_t n)
{
	if (!grow(sb, n))
		return;
	memcpy(sb->s + sb->len, s, n);
	sb->len += n;
	sb->s[sb->len] = 0;
}

void sb_putc(strbuf *sb, char c)
{
	sb_putn(sb, &c, 1);
}

void sb_puts(strbuf *sb, const char *s)
{
	sb_putn(sb, s, strlen(s));
}

void sb_vprintf(strbuf *sb, const char *fmt, va_list ap)
{
	va_list aq;
	va_copy(aq, ap);
	int n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (n < 0 || !grow(sb, (size_t)n))
		return;
	vsnprintf(sb->s + sb->len, (size_t)n + 1, fmt, ap);
	sb->len += (size_t)n;
}

void sb_printf(strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	sb_vprintf(sb, fmt, ap);
	va_end(ap);
}

char *sb_take(strbuf *sb)
{
	char *s = sb->s;
	if (!s)
		s = calloc(1, 1);
	memset(sb, 0, sizeof *sb);
	return s;
}

const char *sb_str(const strbuf *sb)
{
	return sb->s ? sb->s : "";
}
