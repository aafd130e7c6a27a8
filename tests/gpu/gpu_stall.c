/* gpu_stall.c - a planted stall: a schedule with one signal removed must
 * end with MK_ERR_STALL within its timeout, and the report must name a
 * task that waits on the missing flag, with the flag and its values. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "runtime/mk.h"
#include "runtime/mk_int.h"

static int dropped_flag = -1;

/* drop the signals of the first copy task: its consumers never see them */
static void plant(ir_sched *s)
{
	for (int i = 0; i < s->ntasks; i++)
		if (s->tasks[i].kind == TASK_COPY && s->tasks[i].nsignals > 0) {
			dropped_flag = s->tasks[i].signals[0].index;
			s->tasks[i].nsignals = 0;
			return;
		}
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int main(void)
{
	mk_ctx *ctx = NULL;
	mk_pipeline *pl = NULL;
	int rc = 1;
	if (mk_ctx_create(NULL, &ctx) != MK_OK) {
		fprintf(stderr, "gpu_stall: %s\n", mk_ctx_error(ctx));
		goto out;
	}
	mk_param prm[] = {{"M", 1024}, {"N", 256}, {"K", 512}};
	mk_load_opts lo = MK_LOAD_OPTS_INIT;
	lo.params = prm;
	lo.nparams = 3;
	lo.ranks = 2;
	lo.timeout_ms = 300;
	mk_test_sched_hook = plant;
	mk_status st = mk_pipeline_load_file(ctx, "samples/ag_gemm.mk", &lo, &pl);
	mk_test_sched_hook = NULL;
	if (st != MK_OK || dropped_flag < 0) {
		fprintf(stderr, "gpu_stall: load: %s: %s\n%s", mk_strerror(st), mk_ctx_error(ctx),
			mk_ctx_log(ctx));
		goto out;
	}
	double t0 = now();
	st = mk_run(pl);
	double dt = now() - t0;
	const char *rep = mk_stall_report(pl);
	printf("%s", rep);
	char want[64];
	snprintf(want, sizeof want, "on flag %d of rank", dropped_flag);
	int ok = st == MK_ERR_STALL && dt < 2.0 && strstr(rep, want) &&
		 strstr(rep, "matmul of stage 'C'") && strstr(rep, "expected 1, saw 0");
	/* the next run stalls again (the signal is still missing) and still returns */
	double t1 = now();
	mk_status st2 = mk_run(pl);
	double dt2 = now() - t1;
	ok = ok && st2 == MK_ERR_STALL && dt2 < 2.0;
	printf("gpu_stall: %s after %.2f s and %.2f s (timeout 0.3 s), flag %d: %s\n",
	       mk_strerror(st), dt, dt2, dropped_flag, ok ? "ok" : "WRONG");
	rc = !ok;
out:
	mk_pipeline_destroy(pl);
	mk_ctx_destroy(ctx);
	return rc;
}
