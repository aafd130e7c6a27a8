/* check.h - the unit tests' checks.  A test file includes it once; each
 * failed check counts in `failures`, which main turns into its exit
 * status.
 *
 *   CHECK(cond, fmt, ...)      silent when cond holds; else "FILE:LINE:
 *                              FAIL cond: message" on stderr
 *   CHECK_SAY(cond, fmt, ...)  "ok    message" or "FAIL  message" on
 *                              stdout, for tests that list what they check
 */
#ifndef MK_TESTS_CHECK_H
#define MK_TESTS_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(cond, ...)                                                  \
	do {                                                              \
		if (!(cond)) {                                            \
			failures++;                                       \
			fprintf(stderr, "%s:%d: FAIL %s: ", __FILE__,     \
				__LINE__, #cond);                         \
			fprintf(stderr, __VA_ARGS__);                     \
			fputc('\n', stderr);                              \
		}                                                         \
	} while (0)

#define CHECK_SAY(cond, ...)                                              \
	do {                                                              \
		if (cond) {                                               \
			printf("ok    ");                                 \
		} else {                                                  \
			printf("FAIL  ");                                 \
			failures++;                                       \
		}                                                         \
		printf(__VA_ARGS__);                                      \
		printf("\n");                                             \
	} while (0)

#endif
