/* lit.h - integer literals of the language: digits with an optional K, M
 * or G scale (`64K` = 64 * 2^10, `4M` = 4 * 2^20, `1G` = 2^30), a signed
 * 64-bit value.  One reader for the lexer and for every command line that
 * takes a value of the language (`-D M=8K` in mkc and mkrun).
 */
#ifndef MK_LIT_H
#define MK_LIT_H

#include <stdint.h>

typedef enum lit_status {
	LIT_OK,        /* s[0, *end) is the literal */
	LIT_NONE,      /* no digit at s[0] */
	LIT_BIG        /* the value does not fit in 64 bits; *v = 1 */
} lit_status;

/* Reads digits and an optional scale from s[0, len).  *end is where the
 * literal stops (a suffix or anything else may follow: the caller decides
 * whether that is an error). */
lit_status lit_int(const char *s, int len, int64_t *v, int *end);

/* A whole command-line value: an optional '-', then one literal and nothing
 * else.  0 on success; -1 when it is no literal, -2 when it is too big. */
int lit_parse_value(const char *s, int64_t *v);

#endif
