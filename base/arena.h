/* arena.h - memory by lifetime.
 *
 * One arena per compilation: every AST node, checked-program table and
 * schedule array of one compile is carved out of it and freed at once by
 * arena_free.  When malloc fails, arena_alloc returns NULL and sets
 * a->failed; passes check the flag and the compile ends with an
 * out-of-memory status instead of crashing.  A limit bounds the bytes its
 * blocks hold: an allocation past it fails the same way and also sets
 * a->over, so that the owner can report a program too large to compile
 * (after arena_lift) rather than run the machine out of memory.
 */
#ifndef MK_ARENA_H
#define MK_ARENA_H

#include <stddef.h>

typedef struct arena_block arena_block;
typedef struct arena {
	arena_block *head;
	size_t used;     /* bytes handed out, for statistics */
	size_t held;     /* bytes of its blocks: what it costs in memory */
	size_t limit;    /* the most `held` may reach; 0: no bound */
	int failed;      /* an allocation failed; the compile must stop */
	int over;        /* ... because it would pass the limit */
} arena;

void arena_init(arena *a);
void arena_free(arena *a);                       /* frees every block */
void *arena_alloc(arena *a, size_t n);           /* zeroed, 16-byte aligned */
/* After a->over: the limit gone and the failure forgotten, so that the
 * owner can allocate its report (the compile stops there anyway). */
void arena_lift(arena *a);
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
