/* test_api.c - libmk's API without a GPU: status codes, the no-driver
 * path, loading and its errors, tensors and their size checks, and runs on
 * a CPU context checked against hand-computed results. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/mk.h"

static int fails, checks;
#define CHECK(c)                                                                   \
	do {                                                                       \
		checks++;                                                          \
		if (!(c)) {                                                        \
			fails++;                                                   \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
		}                                                                  \
	} while (0)

static const char *chain =
	"pipeline chain {\n"
	"  param M = 4, N = 2, K = 3\n"
	"  in  X : bf16[M, K]\n"
	"  in  W : bf16[K, N]\n"
	"  out Y : bf16[M, N]\n"
	"  H = matmul(X, W)\n"
	"  Y = relu(H)\n"
	"}\n";

static const char *gather =
	"pipeline ag {\n"
	"  mesh nodes x gpus\n"
	"  param M = 4, N = 2, K = 2\n"
	"  in  A : bf16[M, K] split(0)\n"
	"  in  B : bf16[K, N]\n"
	"  out C : bf16[M, N]\n"
	"  Ag = allgather(A, 0)\n"
	"  C = matmul(Ag, B)\n"
	"}\n";

static void statuses(void)
{
	/* stable values */
	CHECK(MK_OK == 0 && MK_ERR_INVALID == 1 && MK_ERR_NO_DRIVER == 3 && MK_ERR_NO_GPU == 4 &&
	      MK_ERR_SOURCE == 6 && MK_ERR_SIZE == 9 && MK_ERR_STALL == 10 && MK_ERR_PEER == 16 && MK_ERR_DATA == 17);
	for (int s = 0; s <= 16; s++) {
		CHECK(mk_strerror((mk_status)s) && *mk_strerror((mk_status)s));
		CHECK(!strncmp(mk_status_name((mk_status)s), "MK_", 3));
	}
	CHECK(!strcmp(mk_status_name(MK_ERR_NO_GPU), "MK_ERR_NO_GPU"));
	CHECK(!strcmp(mk_strerror((mk_status)999), "unknown status"));
	CHECK(*mk_version());
}

static void no_driver(void)
{
	mk_ctx *c = NULL;
	mk_status st = mk_ctx_create(NULL, &c);
	/* CI has no driver; a machine with one has a GPU: both are fine here,
	 * what matters is a clear status and message, never a crash */
	CHECK(st == MK_OK || st == MK_ERR_NO_DRIVER || st == MK_ERR_NO_GPU || st == MK_ERR_UNSUPPORTED);
	if (st != MK_OK) {
		CHECK(c != NULL && strlen(mk_ctx_error(c)) > 10);
		printf("no-GPU context: %s: %s\n", mk_status_name(st), mk_ctx_error(c));
		/* "no CUDA driver found: no CUDA driver found (...)": the error is
		 * the detail, the status the headline */
		CHECK(strncmp(mk_ctx_error(c), mk_strerror(st), strlen(mk_strerror(st))) != 0);
		mk_pipeline *p = (mk_pipeline *)1;
		CHECK(mk_pipeline_load_string(c, "x", chain, NULL, &p) == MK_ERR_STATE && p == NULL);
	}
	mk_ctx_destroy(c);
	mk_ctx_destroy(NULL);
	mk_pipeline_destroy(NULL);
	mk_comm_destroy(NULL);
	CHECK(mk_ctx_create(NULL, NULL) == MK_ERR_INVALID);
}

static mk_ctx *cpu_ctx(void)
{
	mk_ctx_opts o = {.cpu = 1};
	mk_ctx *c = NULL;
	CHECK(mk_ctx_create(&o, &c) == MK_OK);
	CHECK(strstr(mk_ctx_device(c), "CPU") != NULL);
	return c;
}

static void load_errors(mk_ctx *c)
{
	mk_pipeline *p = NULL;
	mk_load_opts lo = MK_LOAD_OPTS_INIT;
	/* a syntax error: MK_ERR_SOURCE, and the log has file:line:col */
	CHECK(mk_pipeline_load_string(c, "bad.mk", "pipeline x {\n  in A : bf16[4]\n  B = relu(Q)\n}\n", &lo,
				      &p) == MK_ERR_SOURCE);
	CHECK(p == NULL && strstr(mk_ctx_log(c), "bad.mk:3:") != NULL);
	/* an unknown parameter */
	mk_param bad[] = {{"Q", 3}};
	lo.params = bad;
	lo.nparams = 1;
	CHECK(mk_pipeline_load_string(c, "c.mk", chain, &lo, &p) == MK_ERR_SOURCE);
	CHECK(strstr(mk_ctx_log(c), "Q") != NULL);
	/* the mesh must hold exactly the ranks */
	mk_param mesh[] = {{"gpus", 3}};
	lo.params = mesh;
	lo.ranks = 2;
	CHECK(mk_pipeline_load_string(c, "ag.mk", gather, &lo, &p) == MK_ERR_SOURCE);
	CHECK(strstr(mk_ctx_log(c), "-D gpus = 3 does not divide the job's 2 ranks") != NULL);
	/* a split that does not divide */
	mk_param odd[] = {{"M", 5}};
	lo.params = odd;
	CHECK(mk_pipeline_load_string(c, "ag.mk", gather, &lo, &p) == MK_ERR_SOURCE);
	CHECK(strstr(mk_ctx_log(c), "divisible") != NULL);
	lo.ranks = 0;
	lo.params = NULL;
	lo.nparams = 0;
	CHECK(mk_pipeline_load_string(c, "c.mk", chain, &lo, &p) == MK_ERR_INVALID);
	CHECK(mk_pipeline_load_file(c, "/nonexistent/x.mk", NULL, &p) == MK_ERR_IO);
	CHECK(mk_pipeline_load_file(c, NULL, NULL, &p) == MK_ERR_INVALID);
}

static void chain_run(mk_ctx *c)
{
	mk_pipeline *p = NULL;
	CHECK(mk_pipeline_load_string(c, "chain.mk", chain, NULL, &p) == MK_OK);
	if (!p)
		return;
	CHECK(mk_pipeline_ntensors(p) == 4 && mk_pipeline_ranks(p) == 1);
	CHECK(strstr(mk_pipeline_source(p), "extern \"C\" __global__") != NULL);
	CHECK(strstr(mk_pipeline_schedule(p), "roles") != NULL);
	int x = mk_tensor_find(p, "X");
	mk_tensor_info ti;
	CHECK(x >= 0 && mk_tensor_info_get(p, x, &ti) == MK_OK);
	CHECK(!strcmp(ti.dtype, "bf16") && ti.ndim == 2 && ti.shape[0] == 4 && ti.bytes == 4 * 3 * 2);
	CHECK(ti.kind == MK_TENSOR_IN && ti.stored);
	CHECK(mk_tensor_info_get(p, 99, &ti) == MK_ERR_NOT_FOUND);
	/* what the caller provides: X and W in, Y out; H is fused away */
	int nin = 0, nout = 0, nfold = 0;
	for (int i = 0; i < mk_pipeline_ntensors(p); i++) {
		CHECK(mk_tensor_info_get(p, i, &ti) == MK_OK);
		nin += ti.kind == MK_TENSOR_IN && ti.stored;
		nout += ti.kind == MK_TENSOR_OUT && ti.stored;
		nfold += !ti.stored;
		if (!strcmp(ti.name, "Y"))
			CHECK(ti.local[0] == 4 && ti.local[1] == 2 && ti.bytes == 16);
		if (!strcmp(ti.name, "H"))
			CHECK(!ti.stored && ti.kind == MK_TENSOR_TEMP);
	}
	CHECK(nin == 2 && nout == 1 && nfold == 1);
	CHECK(mk_tensor_find(p, "nope") == -1);
	float X[12] = {1, 2, 3, 4, 5, 6, -1, -2, -3, 0, 1, 0};
	float W[6] = {1, -1, 0, 1, 1, 0};
	/* size checks */
	CHECK(mk_tensor_write_f32(p, "X", 0, X, 11) == MK_ERR_SIZE);
	CHECK(mk_tensor_write(p, "X", 0, X, 23) == MK_ERR_SIZE);
	CHECK(mk_tensor_write_f32(p, "nope", 0, X, 12) == MK_ERR_NOT_FOUND);
	CHECK(mk_tensor_write_f32(p, "X", 1, X, 12) == MK_ERR_NOT_FOUND);
	CHECK(mk_tensor_write_f32(p, "X", 0, NULL, 12) == MK_ERR_INVALID);
	CHECK(mk_tensor_read_f32(p, "X", 0, NULL, 12) == MK_ERR_INVALID);
	CHECK(mk_tensor_write_f32(p, "X", 0, X, 12) == MK_OK);
	unsigned short Wb[6];  /* raw bf16: the upper halves of the floats */
	for (int i = 0; i < 6; i++) {
		unsigned u;
		memcpy(&u, &W[i], 4);
		Wb[i] = (unsigned short)(u >> 16);
	}
	CHECK(mk_tensor_write(p, "W", 0, Wb, sizeof Wb) == MK_OK);
	CHECK(mk_run(p) == MK_OK);
	float Y[8];
	CHECK(mk_tensor_read_f32(p, "Y", 0, Y, 8) == MK_OK);
	/* relu(X @ W), by hand */
	const float want[8] = {4, 1, 10, 1, 0, 0, 0, 1};
	for (int i = 0; i < 8; i++)
		CHECK(Y[i] == want[i]);
	/* resident runs give the same */
	CHECK(mk_resident_run(p, NULL) == MK_ERR_STATE);
	CHECK(mk_resident_start(p) == MK_OK && mk_resident_run(p, NULL) == MK_OK &&
	      mk_resident_stop(p) == MK_OK);
	float Y2[8];
	CHECK(mk_tensor_read_f32(p, "Y", 0, Y2, 8) == MK_OK && !memcmp(Y, Y2, sizeof Y));
	unsigned long long d;
	CHECK(mk_tensor_devptr(p, "X", 0, &d) == MK_ERR_UNSUPPORTED);
	CHECK(strstr(mk_ctx_error(c), "CPU context") != NULL);
	CHECK(mk_tensor_devptr(p, "X", 0, NULL) == MK_ERR_INVALID && *mk_ctx_error(c));
	CHECK(mk_tensor_devptr(p, "nope", 0, &d) == MK_ERR_NOT_FOUND &&
	      strstr(mk_ctx_error(c), "'nope'") != NULL);
	CHECK(mk_tensor_bind(p, "X", 0, 4096, 24) == MK_ERR_UNSUPPORTED);
	CHECK(mk_tensor_unbind(p, "X", 0) == MK_ERR_UNSUPPORTED && *mk_ctx_error(c));
	CHECK(mk_tensor_unbind(p, "nope", 0) == MK_ERR_NOT_FOUND);
	/* H went into the matmul's epilogue: its message must not blame a
	 * collective (there is none) */
	float h[8];
	CHECK(mk_tensor_read_f32(p, "H", 0, h, 8) == MK_ERR_NOT_FOUND);
	CHECK(strstr(mk_ctx_error(c), "'H' has no storage") && strstr(mk_ctx_error(c), "fused"));
	/* the stream API on a CPU context: runs at once, nothing to wait for */
	memset(Y2, 0, sizeof Y2);
	CHECK(mk_tensor_write_f32(p, "X", 0, X, 12) == MK_OK);
	CHECK(mk_run_on(p, NULL) == MK_OK && mk_sync(p) == MK_OK);
	CHECK(mk_tensor_read_f32(p, "Y", 0, Y2, 8) == MK_OK && !memcmp(Y, Y2, sizeof Y));
	CHECK(mk_run_on(NULL, NULL) == MK_ERR_INVALID && mk_sync(NULL) == MK_ERR_INVALID);
	CHECK(mk_trace_write(p, "/tmp/x.json") == MK_ERR_UNSUPPORTED);
	CHECK(*mk_stall_report(p) == 0);
	mk_pipeline_destroy(p);
}

static void gather_run(mk_ctx *c)
{
	mk_pipeline *p = NULL;
	mk_load_opts lo = MK_LOAD_OPTS_INIT;
	lo.ranks = 2;
	CHECK(mk_pipeline_load_string(c, "ag.mk", gather, &lo, &p) == MK_OK);
	if (!p)
		return;
	CHECK(mk_pipeline_ranks(p) == 2 && mk_pipeline_first_rank(p) == 0);
	mk_tensor_info ti;
	CHECK(mk_tensor_info_get(p, mk_tensor_find(p, "A"), &ti) == MK_OK);
	CHECK(ti.shape[0] == 4 && ti.local[0] == 2 && ti.local[1] == 2 && ti.bytes == 8 && ti.stored);
	float a0[4] = {1, 2, 3, 4}, a1[4] = {5, 6, 7, 8}, b[4] = {1, 0, 0, 1};
	CHECK(mk_tensor_write_f32(p, "A", 0, a0, 4) == MK_OK);
	CHECK(mk_tensor_write_f32(p, "A", 1, a1, 4) == MK_OK);
	CHECK(mk_tensor_write_f32(p, "A", 2, a1, 4) == MK_ERR_NOT_FOUND);
	for (int r = 0; r < 2; r++)
		CHECK(mk_tensor_write_f32(p, "B", r, b, 4) == MK_OK);
	CHECK(mk_run(p) == MK_OK);
	/* B is the identity: every rank's C is the gathered A */
	for (int r = 0; r < 2; r++) {
		unsigned short raw[8];
		float cf[8];
		CHECK(mk_tensor_read(p, "C", r, raw, sizeof raw) == MK_OK);
		CHECK(mk_tensor_read_f32(p, "C", r, cf, 8) == MK_OK);
		for (int i = 0; i < 8; i++) {
			float f = (float)(i + 1);
			unsigned u;
			memcpy(&u, &f, 4);
			CHECK(cf[i] == f && raw[i] == (unsigned short)(u >> 16));
		}
	}
	mk_pipeline_destroy(p);
}

/* one rank: the allgather is the identity and goes; the matmul reads A */
static void gather_world1(mk_ctx *c)
{
	mk_pipeline *p = NULL;
	mk_load_opts lo = MK_LOAD_OPTS_INIT;
	lo.ranks = 1;
	CHECK(mk_pipeline_load_string(c, "ag.mk", gather, &lo, &p) == MK_OK);
	if (!p)
		return;
	CHECK(strstr(mk_pipeline_schedule(p), "compute") && !strstr(mk_pipeline_schedule(p), "copy"));
	float a[8] = {1, 2, 3, 4, 5, 6, 7, 8}, b[4] = {1, 0, 0, 1}, out[8], tmp[8];
	CHECK(mk_tensor_write_f32(p, "A", 0, a, 8) == MK_OK);
	CHECK(mk_tensor_write_f32(p, "B", 0, b, 4) == MK_OK);
	CHECK(mk_run(p) == MK_OK);
	CHECK(mk_tensor_read_f32(p, "C", 0, out, 8) == MK_OK && !memcmp(out, a, sizeof a));
	CHECK(mk_tensor_read_f32(p, "Ag", 0, tmp, 8) == MK_ERR_NOT_FOUND);
	CHECK(strstr(mk_ctx_error(c), "'Ag' has no storage") != NULL);
	unsigned long long d;
	CHECK(mk_tensor_devptr(p, "Ag", 0, &d) == MK_ERR_NOT_FOUND);
	mk_pipeline_destroy(p);
}

int main(void)
{
	statuses();
	no_driver();
	mk_ctx *c = cpu_ctx();
	load_errors(c);
	chain_run(c);
	gather_run(c);
	gather_world1(c);
	mk_ctx_destroy(c);
	printf("test_api: %d checks, %d failed\n", checks, fails);
	return fails != 0;
}
