/* test_verify.c - the verifier catches what it claims to (verify.c).
 *
 * Faults planted in verified schedules of the samples must each fail
 * verify_run with the message of the check that owns them:
 *   - an op with work left without a task (check 7).
 * The restored schedule must verify again.  Run from the repository root
 * (tests/run.sh does).  Exit 0 = pass.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/compile.h"

static int failures, checks;

static void check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(int ok, const char *fmt, ...)
{
	checks++;
	if (ok)
		return;
	failures++;
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "FAIL: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = malloc((size_t)n + 1);
	if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
		free(s);
		s = NULL;
	}
	if (s)
		s[n] = 0;
	fclose(f);
	return s;
}

/* Compiles a sample through the verifier; NULL on failure. */
static ir_sched *compile(const char *path, const mk_define *defs, int ndefs, srcset *src,
			 arena *a)
{
	char *text = slurp(path);
	if (!text)
		return NULL;
	src_init(src);
	int file = src_add(src, path, text, strlen(text));
	free(text);
	compile_opts o = {.defs = defs, .ndefs = ndefs, .ranks_per_gpu = 1};
	diags d;
	diag_init(&d, src, a);
	compile_out out;
	memset(&out, 0, sizeof out);
	int rc = compile_run(src, file, &o, PASS_VERIFY, &d, a, &out);
	return rc == 0 ? out.sched : NULL;
}

/* 0 when s verifies; else 1, with the first message in msg. */
static int verify_msg(const ir_sched *s, char *msg, size_t n)
{
	arena a;
	arena_init(&a);
	diags d;
	diag_init(&d, NULL, &a);
	int rc = verify_run(s, &d, &a);
	msg[0] = 0;
	if (d.n > 0)
		snprintf(msg, n, "%s", d.v[0].msg);
	arena_free(&a);
	return rc != 0;
}

/* The planted fault must fail with a message holding `want`. */
static void expect_fail(const char *name, const ir_sched *s, const char *fault, const char *want)
{
	char msg[512];
	int failed = verify_msg(s, msg, sizeof msg);
	check(failed, "%s: %s passed", name, fault);
	if (failed)
		check(strstr(msg, want) != NULL, "%s: %s: message \"%s\" lacks \"%s\"", name, fault,
		      msg, want);
}

static int verifies(const ir_sched *s)
{
	char msg[512];
	int failed = verify_msg(s, msg, sizeof msg);
	if (failed)
		fprintf(stderr, "  %s\n", msg);
	return !failed;
}

/* Check 7: every task of the last op moved to the first one. */
static void fault_no_task(const char *name, ir_sched *s)
{
	const int last = s->prog->nops - 1;
	int *saved = malloc((size_t)s->ntasks * sizeof *saved);
	if (!saved || last < 1)
		return free(saved);
	for (int i = 0; i < s->ntasks; i++) {
		saved[i] = s->tasks[i].op;
		if (s->tasks[i].op == last)
			s->tasks[i].op = 0;
	}
	expect_fail(name, s, "an op without a task", "but has no task");
	for (int i = 0; i < s->ntasks; i++)
		s->tasks[i].op = saved[i];
	free(saved);
}

int main(void)
{
	static const struct {
		const char *sample;
		int nodes, gpus;
	} cases[] = {
		{"chain", 1, 1}, {"mlp_chain", 1, 2}, {"ag_gemm", 2, 8}, {"gemm_rs", 2, 4},
		{"gemm_ar", 4, 2}, {"tp_mlp", 1, 8}, {"ring_attention_causal", 2, 4},
		{"moe_dispatch_gemm", 2, 2},
	};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		char path[256], name[128];
		snprintf(path, sizeof path, "samples/%s.mk", cases[k].sample);
		snprintf(name, sizeof name, "%s %dx%d", cases[k].sample, cases[k].nodes, cases[k].gpus);
		mk_define defs[] = {{"nodes", cases[k].nodes}, {"gpus", cases[k].gpus},
				    {"T", 1024}, {"E", 8}};
		int ndefs = strcmp(cases[k].sample, "moe_dispatch_gemm") ? 2 : 4;
		srcset src;
		arena a;
		arena_init(&a);
		ir_sched *s = compile(path, defs, ndefs, &src, &a);
		check(s != NULL, "%s: does not compile (run from the repository root)", name);
		if (s) {
			check(verifies(s), "%s: the schedule does not verify", name);
			fault_no_task(name, s);
			check(verifies(s), "%s: the restored schedule does not verify", name);
		}
		arena_free(&a);
		src_free(&src);
	}
	printf("test_verify: %d checks, %d failed\n", checks, failures);
	return failures != 0;
}
