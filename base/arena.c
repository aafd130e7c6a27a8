/* arena.c - bump allocator in growing blocks; see arena.h. */
#include "arena.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct arena_block {
	arena_block *next;
	size_t size, off;
	_Alignas(16) unsigned char data[];
};

void arena_init(arena *a)
{
	memset(a, 0, sizeof *a);
}

void arena_free(arena *a)
{
	arena_block *b = a->head;
	while (b) {
		arena_block *n = b->next;
		free(b);
		b = n;
	}
	memset(a, 0, sizeof *a);
}

void *arena_alloc(arena *a, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	if (n == 0)
		n = 16;
	arena_block *b = a->head;
	if (!b || b->size - b->off < n) {
		size_t sz = 64 * 1024;
		if (b && b->size < 16u * 1024 * 1024)
			sz = b->size * 2;
		if (sz < n)
			sz = n;
		if (a->limit && sizeof *b + sz > a->limit - (a->held < a->limit ? a->held : a->limit)) {
			a->failed = a->over = 1;
			return NULL;
		}
		b = malloc(sizeof *b + sz);
		if (!b) {
			a->failed = 1;
			return NULL;
		}
		a->held += sizeof *b + sz;
		b->size = sz;
		b->off = 0;
		b->next = a->head;
		a->head = b;
	}
	void *p = b->data + b->off;
	b->off += n;
	a->used += n;
	memset(p, 0, n);
	return p;
}

void arena_lift(arena *a)
{
	a->limit = 0;
	a->failed = a->over = 0;
}

char *arena_strndup(arena *a, const char *s, size_t n)
{
	char *d = arena_alloc(a, n + 1);
	if (d)
		memcpy(d, s, n);
	return d;
}

char *arena_strdup(arena *a, const char *s)
{
	return arena_strndup(a, s, strlen(s));
}

char *arena_printf(arena *a, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	char *d = arena_alloc(a, (size_t)n + 1);
	if (!d)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(d, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return d;
}
