/* sample_sched.h - a sample compiled through the verifier, for the unit
 * tests that check schedules (test_verify, test_rdma_sched, test_tmaps).
 * Header-only, each tests/unit/ source being its own program.
 */
#ifndef MKT_SAMPLE_SCHED_H
#define MKT_SAMPLE_SCHED_H

#include <string.h>

#include "compiler/compile.h"

/* The sample at path compiled through the verifier with options o (its
 * sources in src, its memory in a); NULL on failure. */
static inline ir_sched *sample_sched(const char *path, const compile_opts *o, srcset *src, arena *a)
{
	int err;
	src_init(src);
	int file = src_load(src, path, &err);
	if (file < 0)
		return NULL;
	diags d;
	diag_init(&d, src, a);
	compile_out out;
	memset(&out, 0, sizeof out);
	int rc = compile_run(src, file, o, PASS_VERIFY, &d, a, &out);
	return rc == 0 ? out.sched : NULL;
}

#endif
