/* bench_case.h - bench_patterns' cases: the four patterns (one X-macro
 * table), and for one pattern, size and world the shapes, the buffers of
 * one rank (shared by the fused pipeline and the layered baseline) and the
 * pipeline's parameters.  Header-only, for bench_patterns.c alone.
 */
#ifndef MKT_BENCH_CASE_H
#define MKT_BENCH_CASE_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runtime/cudrv.h"
#include "runtime/mk.h"
#include "tests/gpu/bench_job.h"

/* ---- the patterns --------------------------------------------------------------------- */

/* X(id, name, output tensor) */
#define PATTERNS(X)                     \
	X(AG_GEMM, "ag_gemm", "C")      \
	X(GEMM_RS, "gemm_rs", "Y")      \
	X(GEMM_AR, "gemm_ar", "Y")      \
	X(TP_MLP, "tp_mlp", "Y")

typedef enum {
#define X(id, name, out) P_##id,
	PATTERNS(X)
#undef X
	NPAT
} pat_id;

static const struct {
	const char *name, *out;
} PAT[] = {
#define X(id, name, out) {name, out},
	PATTERNS(X)
#undef X
};

enum { DO_COMPUTE = 1, DO_COMM = 2, DO_ALL = 3 };
enum { MAXBUF = 8 };

typedef struct buf {
	const char *name;     /* the pipeline's tensor, or NULL (baseline only) */
	long long elems;      /* one rank's piece */
	float scale;          /* inputs: values k/128 * scale; 0: not an input */
	CUdeviceptr d;
} buf;

typedef struct bcase {
	pat_id pat;
	long long size, M, N, K;  /* tp_mlp: M = S, N = H, K = F */
	int world;
	buf b[MAXBUF];
	int nb, out;              /* out: index of the output in b[] */
	long long out_rows, out_cols;
	long long fused_extra;    /* elements the fused pipeline holds beyond b[] */
	double flops;             /* one rank's */
	mk_param params[8];
	int nparams;
	char shape[64];
} bcase;

/* buffer indices per pattern */
enum { AG_A, AG_B, AG_AG, AG_C };
enum { RS_X, RS_W, RS_C, RS_Y };
enum { MLP_X, MLP_W1, MLP_W2, MLP_XG, MLP_U, MLP_P, MLP_Y };

static void add_buf(bcase *c, const char *name, long long elems, float scale)
{
	c->b[c->nb++] = (buf){name, elems, scale, 0};
}

static void add_param(bcase *c, const char *name, long long v)
{
	c->params[c->nparams++] = (mk_param){name, v};
}

/* Shapes and buffers of one case; NULL, or why it cannot run. */
static const char *setup_case(bcase *c, pat_id p, long long size, const job *j, char *why,
			      size_t n)
{
	const long long W = j->world;
	memset(c, 0, sizeof *c);
	c->pat = p;
	c->size = size;
	c->world = j->world;
	if (j->comm && j->world != j->local_size) {  /* several hosts: the mesh */
		add_param(c, "nodes", j->world / j->local_size);
		add_param(c, "gpus", j->local_size);
	}
	switch (p) {
	case P_AG_GEMM:
		c->M = c->K = size, c->N = size / 16;
		snprintf(c->shape, sizeof c->shape, "M=K=%lld N=%lld", c->M, c->N);
		if (size % 16 || c->M % W)
			goto indivisible;
		add_buf(c, "A", c->M / W * c->K, 1);
		add_buf(c, "B", c->K * c->N, (float)(1 / sqrt((double)c->K)));
		add_buf(c, NULL, c->M * c->K, 0);
		add_buf(c, "C", c->M * c->N, 0);
		c->out = AG_C, c->out_rows = c->M, c->out_cols = c->N;
		c->flops = 2.0 * c->M * c->N * c->K;
		break;
	case P_GEMM_RS:
	case P_GEMM_AR:
		c->M = c->N = size, c->K = size / 16;
		snprintf(c->shape, sizeof c->shape, "M=N=%lld K=%lld", c->M, c->K);
		if (size % 16 || c->K % W || (p == P_GEMM_RS && c->M % W))
			goto indivisible;
		add_buf(c, "X", c->M * (c->K / W), 1);
		add_buf(c, "W", c->K / W * c->N, (float)(1 / sqrt((double)c->K)));
		add_buf(c, NULL, c->M * c->N, 0);
		add_buf(c, "Y", (p == P_GEMM_RS ? c->M / W : c->M) * c->N, 0);
		c->out = RS_Y, c->out_rows = p == P_GEMM_RS ? c->M / W : c->M, c->out_cols = c->N;
		c->fused_extra = p == P_GEMM_AR ? 2 * c->M / W * c->N : 0;
		c->flops = 2.0 * c->M * c->N * (c->K / W);
		break;
	case P_TP_MLP:
		c->M = size, c->N = size / 4, c->K = 4 * c->N;
		snprintf(c->shape, sizeof c->shape, "S=%lld H=%lld F=%lld", c->M, c->N, c->K);
		if (size % 4 || c->M % W || c->K % W)
			goto indivisible;
		add_buf(c, "X", c->M / W * c->N, 1);
		add_buf(c, "W1", c->N * (c->K / W), (float)(1 / sqrt((double)c->N)));
		add_buf(c, "W2", c->K / W * c->N, (float)(1 / sqrt((double)c->K)));
		add_buf(c, NULL, c->M * c->N, 0);
		add_buf(c, NULL, c->M * (c->K / W), 0);
		add_buf(c, NULL, c->M * c->N, 0);
		add_buf(c, "Y", c->M / W * c->N, 0);
		c->out = MLP_Y, c->out_rows = c->M / W, c->out_cols = c->N;
		c->fused_extra = c->M * (c->K / W);  /* U and A are separate there */
		c->flops = 2.0 * 2.0 * c->M * c->N * (c->K / W);
		add_param(c, "S", c->M);
		add_param(c, "H", c->N);
		return NULL;
	default:
		return "no such pattern";
	}
	add_param(c, "M", c->M);
	add_param(c, "N", c->N);
	add_param(c, "K", c->K);
	return NULL;
indivisible:
	snprintf(why, n, "size %lld: a split dimension is not divisible by world %d (or size "
		 "by 16)", size, j->world);
	return why;
}

static long long case_bytes(const bcase *c)
{
	long long e = c->fused_extra;
	for (int i = 0; i < c->nb; i++)
		e += 2 * c->b[i].elems;  /* the layered buffers and the pipeline's own */
	return 2 * e;
}

#endif
