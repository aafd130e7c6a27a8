/* arena.h - memory by lifetime.
 *
 * One arena per compilation: every AST node, checked-program table and
 * schedule array of one compile is carved out of it and freed at once by
 * arena_free.  When malloc fails, arena_alloc returns NULL and sets
 * a->failed; passes check the flag and the compile ends with an
 * out-of-memory status instead of crashing.
 */
#ifndef MK_ARENA_H
#define MK_ARENA_H

#include <stddef.h>

typedef struct arena_block arena_block;
typedef struct arena {
	arena_block *head;
	size_t used;     /* bytes handed out, for statistics */
	int failed;      /* an allocation failed; the compile must stop */
} arena;

void arena_init(arena *a);
void arena_free(arena *a);                       /* frees every block */
void *arena_alloc(arena *a, size_t n);           /* zeroed, 16-byte aligned */
char *arena_strdup(arena *a, const char *s);
char *arena_strndup(arena *a, const char *s, size_t n);
char *arena_printf(arena *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A growable array living in an arena; old storage is abandoned on growth. */
#define ARENA_PUSH(ar, base, count, cap, item)                               \
	do {                                                                 \
		if ((count) == (cap)) {                                      \
			size_t nc_ = (cap) ? (size_t)(cap) * 2 : 8;          \
			void *nb_ = arena_alloc((ar), nc_ * sizeof *(base)); \
			if (!nb_) break;                                     \
			if (count)                                           \
				memcpy(nb_, (base), (size_t)(count) * sizeof *(base)); \
			(base) = nb_;                                        \
			(cap) = (int)nc_;                                    \
		}                                                            \
		(base)[(count)++] = (item);                                  \
	} while (0)

#endif
