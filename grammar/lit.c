/* lit.c - integer literals (see lit.h). */
#include "lit.h"

#include <string.h>

lit_status lit_int(const char *s, int len, int64_t *v, int *end)
{
	int i = 0, big = 0;
	int64_t x = 0;
	while (i < len && s[i] >= '0' && s[i] <= '9') {
		if (__builtin_mul_overflow(x, 10, &x) ||
		    __builtin_add_overflow(x, s[i] - '0', &x))
			big = 1;
		i++;
	}
	*end = i;
	if (i == 0) {
		*v = 0;
		return LIT_NONE;
	}
	int shift = 0;
	if (i < len && (s[i] == 'K' || s[i] == 'M' || s[i] == 'G')) {
		shift = s[i] == 'K' ? 10 : s[i] == 'M' ? 20 : 30;
		*end = ++i;
	}
	if (!big && shift && x > (INT64_MAX >> shift))
		big = 1;
	if (big) {
		*v = 1;
		return LIT_BIG;
	}
	*v = x << shift;
	return LIT_OK;
}

int lit_parse_value(const char *s, int64_t *v)
{
	int neg = s[0] == '-';
	const char *d = s + neg;
	int len = (int)strlen(d), end = 0;
	lit_status st = lit_int(d, len, v, &end);
	if (st == LIT_NONE || end != len)
		return -1;
	if (st == LIT_BIG)
		return -2;
	if (neg)
		*v = -*v;
	return 0;
}
