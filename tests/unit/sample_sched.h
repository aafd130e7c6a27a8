/* sample_sched.h - a file's text, and a sample compiled through the
 * verifier, for the unit tests that check schedules (test_verify,
 * test_rdma_sched, test_tmaps; test_threads reads the text only).
 * Header-only, each tests/unit/ source being its own program; static
 * inline, so that a test need not use both.
 */
#ifndef MKT_SAMPLE_SCHED_H
#define MKT_SAMPLE_SCHED_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/compile.h"

/* The file's bytes, NUL-terminated (malloc'd); NULL where it cannot be read. */
static inline char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
	if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
		free(s);
		s = NULL;
	}
	if (s)
		s[n] = 0;
	fclose(f);
	return s;
}

/* The sample at path compiled through the verifier with options o (its
 * sources in src, its memory in a); NULL on failure. */
static inline ir_sched *sample_sched(const char *path, const compile_opts *o, srcset *src, arena *a)
{
	char *text = slurp(path);
	if (!text)
		return NULL;
	src_init(src);
	int file = src_add(src, path, text, strlen(text));
	free(text);
	diags d;
	diag_init(&d, src, a);
	compile_out out;
	memset(&out, 0, sizeof out);
	int rc = compile_run(src, file, o, PASS_VERIFY, &d, a, &out);
	return rc == 0 ? out.sched : NULL;
}

#endif
