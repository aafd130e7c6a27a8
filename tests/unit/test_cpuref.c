/* test_cpuref.c - the CPU reference executor on hand-built programs: the
 * ops.
 *
 * Every op but the exchanges on small hand-computed cases (the collectives,
 * put, dispatch and combine are test_cpuref_comm.c); matmul and attention
 * against naive loops written here; storage rounding exhaustively over
 * bf16, f16 and e4m3; malformed programs.  Exit 0 = pass.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/cpuref.h"
#include "tests/unit/cpuref_prog.h"

/* ---- storage rounding ----------------------------------------------------- */

static float from_bits(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static float bf16_val(uint32_t h) { return from_bits(h << 16); }

static float f16_val(uint32_t h)
{
	int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
	float v = e == 0 ? ldexpf((float)m, -24)
		: e == 31 ? (m ? NAN : INFINITY) : ldexpf((float)(1024 + m), e - 25);
	return s ? -v : v;
}

static float e4m3_val(uint32_t h)
{
	int s = h >> 7, e = (h >> 3) & 15, m = h & 7;
	float v = e == 15 && m == 7 ? NAN
		: e == 0 ? ldexpf((float)m, -9) : ldexpf((float)(8 + m), e - 10);
	return s ? -v : v;
}

/* Every finite positive value of a format is kept; the midpoint of two
 * neighbours goes to the one with the even code; just off the midpoint goes
 * to the nearer one; negatives mirror. */
static void round_format(const char *name, ir_dtype t, float (*val)(uint32_t), uint32_t nmax)
{
	int bad = 0;
	for (uint32_t h = 0; h < nmax && bad < 5; h++) {
		float a = val(h), b = val(h + 1);
		if (!isfinite(a) || !isfinite(b))
			continue;
		float m = (float)(((double)a + b) / 2), even = (h & 1) ? b : a;
		float ra = cpuref_round(t, a), rm = cpuref_round(t, m);
		float lo = cpuref_round(t, nextafterf(m, -INFINITY));
		float hi = cpuref_round(t, nextafterf(m, INFINITY));
		float nm = cpuref_round(t, -m);
		int ok = ra == a && rm == even && lo == a && hi == b && nm == -even;
		if (!ok) {
			bad++;
			check(0, "%s code %#x: round(%g)=%g, round(mid %g)=%g want %g, below %g above %g",
			      name, h, a, ra, m, rm, even, lo, hi);
		}
		checks++;
	}
	check(bad == 0, "%s rounding", name);
}

/* bf16 by the usual bit trick, for comparison on random floats. */
static float bf16_bits(float x)
{
	uint32_t u;
	memcpy(&u, &x, 4);
	u = (u + 0x7fff + ((u >> 16) & 1)) & 0xffff0000u;
	return from_bits(u);
}

static void test_round(void)
{
	round_format("bf16", DT_BF16, bf16_val, 0x7f7f);
	round_format("f16", DT_F16, f16_val, 0x7bff);
	round_format("e4m3", DT_E4M3, e4m3_val, 0x7e);

	/* hand cases: ties to even, overflow, NaN, Inf, subnormals */
	near("bf16 1+2^-8 (tie, even down)", cpuref_round(DT_BF16, 1 + 0x1p-8f), 1, 0);
	near("bf16 1+3*2^-8 (tie, even up)", cpuref_round(DT_BF16, 1 + 0x3p-8f), 1 + 0x1p-6, 0);
	near("bf16 1+2^-8+2^-20", cpuref_round(DT_BF16, 1 + 0x1p-8f + 0x1p-20f), 1 + 0x1p-7, 0);
	near("bf16 -1-2^-8", cpuref_round(DT_BF16, -1 - 0x1p-8f), -1, 0);
	check(isinf(cpuref_round(DT_BF16, 3.4028235e38f)), "bf16 FLT_MAX -> inf");
	check(cpuref_round(DT_BF16, -INFINITY) == -INFINITY, "bf16 -inf");
	check(cpuref_round(DT_BF16, INFINITY) == INFINITY, "bf16 inf");
	check(isnan(cpuref_round(DT_BF16, NAN)), "bf16 nan");
	near("bf16 max", cpuref_round(DT_BF16, 0x1.fep127f), 0x1.fep127, 0);
	near("bf16 min subnormal", cpuref_round(DT_BF16, 0x1p-133f), 0x1p-133, 0);
	near("bf16 half min subnormal (tie to 0)", cpuref_round(DT_BF16, 0x1p-134f), 0, 0);
	near("bf16 float subnormal", cpuref_round(DT_BF16, 0x1p-149f), 0, 0);
	near("f16 65504", cpuref_round(DT_F16, 65504), 65504, 0);
	near("f16 65519", cpuref_round(DT_F16, 65519), 65504, 0);
	check(isinf(cpuref_round(DT_F16, 65520)), "f16 65520 -> inf");
	near("f16 2^-24", cpuref_round(DT_F16, 0x1p-24f), 0x1p-24, 0);
	near("f16 2^-25 (tie to 0)", cpuref_round(DT_F16, 0x1p-25f), 0, 0);
	near("f16 3*2^-26", cpuref_round(DT_F16, 0x3p-26f), 0x1p-24, 0);
	check(isnan(cpuref_round(DT_F16, NAN)), "f16 nan");
	near("e4m3 448", cpuref_round(DT_E4M3, 448), 448, 0);
	near("e4m3 464 (tie)", cpuref_round(DT_E4M3, 464), 448, 0);
	near("e4m3 1000 saturates", cpuref_round(DT_E4M3, 1000), 448, 0);
	near("e4m3 -inf saturates", cpuref_round(DT_E4M3, -INFINITY), -448, 0);
	near("e4m3 0.3", cpuref_round(DT_E4M3, 0.3f), 0.3125, 0);
	near("e4m3 2^-9", cpuref_round(DT_E4M3, 0x1p-9f), 0x1p-9, 0);
	near("e4m3 2^-10 (tie to 0)", cpuref_round(DT_E4M3, 0x1p-10f), 0, 0);
	check(isnan(cpuref_round(DT_E4M3, NAN)), "e4m3 nan");
	near("f32 unchanged", cpuref_round(DT_F32, 0.1f), 0.1f, 0);
	near("i32 2.5 -> 2", cpuref_round(DT_I32, 2.5f), 2, 0);
	near("i32 3.5 -> 4", cpuref_round(DT_I32, 3.5f), 4, 0);

	int bad = 0;
	for (int i = 0; i < 200000; i++) {
		rng = rng * 1664525u + 1013904223u;
		float x = from_bits(rng);
		if (isnan(x))
			continue;
		float a = cpuref_round(DT_BF16, x), b = bf16_bits(x);
		if (a != b && bad++ < 5)
			check(0, "bf16 of %a: %a, bit trick %a", x, a, b);
	}
	check(bad == 0, "bf16 random vs bit trick");
}

/* ---- matmul ---------------------------------------------------------------- */

static void naive_mm(const float *a, const float *b, double *c, int M, int K, int N)
{
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++) {
			double s = 0;
			for (int k = 0; k < K; k++)
				s += (double)a[i * K + k] * b[k * N + j];
			c[i * N + j] = s;
		}
}

static void test_matmul(void)
{
	prog b;
	mesh(&b, 1, 1);
	int A = in(&b, "A", LOCAL, SH(2, 2)), B = in(&b, "B", LOCAL, SH(2, 2));
	int C = out(&b, "C", LOCAL, SH(2, 2));
	op(&b, OP_MATMUL, C, 2, A, B);
	alloc(&b);
	fill(&b, A, 0, (float[]){1, 2, 3, 4});
	fill(&b, B, 0, (float[]){5, 6, 7, 8});
	check(!run(&b, 0, 1), "matmul 2x2 runs: %s", err);
	expect("matmul 2x2", P(&b, C, 0), (float[]){19, 22, 43, 50}, 4, 0);
	release(&b);

	/* random, world 1, 2 (rows split), 4 (split(1) x split(0) -> partial) */
	enum { M = 8, K = 12, N = 5 };
	float a[M * K], bb[K * N];
	double want[M * N];
	for (int i = 0; i < M * K; i++)
		a[i] = frand();
	for (int i = 0; i < K * N; i++)
		bb[i] = frand();
	naive_mm(a, bb, want, M, K, N);

	for (int w = 1; w <= 2; w++) {
		mesh(&b, 1, w);
		A = in(&b, "A", SPLIT(0), SH(M, K));
		B = in(&b, "B", LOCAL, SH(K, N));
		C = out(&b, "C", SPLIT(0), SH(M, N));
		op(&b, OP_MATMUL, C, 2, A, B);
		alloc(&b);
		for (int r = 0; r < w; r++) {
			fill(&b, A, r, a + r * (M / w) * K);
			fill(&b, B, r, bb);
		}
		check(!run(&b, 0, 1), "matmul split(0) x local runs: %s", err);
		for (int r = 0; r < w; r++)
			for (int i = 0; i < M / w * N; i++)
				near("matmul split(0) x local", P(&b, C, r)[i], want[r * (M / w) * N + i], 1e-6);
		release(&b);
	}

	/* a fused epilogue (the lowering's fuse_epilogues): silu, and scale,
	 * applied to the fp32 accumulator before the one rounding */
	{
		static const ir_opkind ek[] = {OP_SILU, OP_SCALE, OP_RELU, OP_GELU, OP_GELU_TANH};
		for (int q = 0; q < 5; q++) {
			mesh(&b, 1, 1);
			A = in(&b, "A", LOCAL, SH(M, K));
			B = in(&b, "B", LOCAL, SH(K, N));
			C = out(&b, "C", LOCAL, SH(M, N));
			ir_op *mo = op(&b, OP_MATMUL, C, 2, A, B);
			mo->epi = 1 + (int)ek[q];
			mo->epi_scalar = -0.75;
			alloc(&b);
			fill(&b, A, 0, a);
			fill(&b, B, 0, bb);
			check(!run(&b, 0, 1), "matmul with a %s epilogue runs: %s", ir_op_name(ek[q]), err);
			for (int i = 0; i < M * N; i++) {
				double x = want[i];
				double y = ek[q] == OP_SILU ? x / (1 + exp(-x)) : ek[q] == OP_SCALE ? -0.75 * x
					   : ek[q] == OP_RELU ? (x > 0 ? x : 0)
					   : ek[q] == OP_GELU ? 0.5 * x * (1 + erf(x / sqrt(2.0)))
					   : 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
				near("matmul epilogue", P(&b, C, 0)[i], y, 1e-6);
			}
			release(&b);
		}
	}

	mesh(&b, 1, 4);
	A = in(&b, "A", SPLIT(1), SH(M, K));
	B = in(&b, "B", SPLIT(0), SH(K, N));
	C = out(&b, "C", PARTIAL, SH(M, N));
	op(&b, OP_MATMUL, C, 2, A, B);
	alloc(&b);
	for (int r = 0; r < 4; r++) {
		for (int i = 0; i < M; i++)
			for (int k = 0; k < K / 4; k++)
				P(&b, A, r)[i * (K / 4) + k] = a[i * K + r * (K / 4) + k];
		fill(&b, B, r, bb + r * (K / 4) * N);
	}
	check(!run(&b, 0, 1), "matmul split(1) x split(0) runs: %s", err);
	for (int i = 0; i < M * N; i++) {
		double s = 0;
		for (int r = 0; r < 4; r++)
			s += P(&b, C, r)[i];
		near("matmul partial sums", s, want[i], 1e-5);
	}
	release(&b);

	/* batched, with B per batch and B shared */
	for (int shared = 0; shared < 2; shared++) {
		mesh(&b, 1, 1);
		A = in(&b, "A", LOCAL, SH(2, 3, 4));
		B = shared ? in(&b, "B", LOCAL, SH(4, 5)) : in(&b, "B", LOCAL, SH(2, 4, 5));
		C = out(&b, "C", LOCAL, SH(2, 3, 5));
		op(&b, OP_MATMUL, C, 2, A, B);
		alloc(&b);
		randomize(&b, A);
		randomize(&b, B);
		check(!run(&b, 0, 1), "batched matmul runs: %s", err);
		for (int e = 0; e < 2; e++) {
			double w2[15];
			naive_mm(P(&b, A, 0) + e * 12, P(&b, B, 0) + (shared ? 0 : e * 20), w2, 3, 4, 5);
			for (int i = 0; i < 15; i++)
				near("batched matmul", P(&b, C, 0)[e * 15 + i], w2[i], 1e-6);
		}
		release(&b);
	}

	/* big enough for threads: 4 threads equal 1 thread bit for bit */
	enum { BM = 96, BK = 160, BN = 300 };
	mesh(&b, 1, 1);
	A = in(&b, "A", LOCAL, SH(BM, BK));
	B = in(&b, "B", LOCAL, SH(BK, BN));
	C = out(&b, "C", LOCAL, SH(BM, BN));
	op(&b, OP_MATMUL, C, 2, A, B);
	alloc(&b);
	randomize(&b, A);
	randomize(&b, B);
	check(!run(&b, 0, 1), "big matmul, 1 thread: %s", err);
	float *c1 = malloc(sizeof(float) * BM * BN);
	memcpy(c1, P(&b, C, 0), sizeof(float) * BM * BN);
	check(!run(&b, 0, 4), "big matmul, 4 threads: %s", err);
	check(!memcmp(c1, P(&b, C, 0), sizeof(float) * BM * BN), "threads change nothing");
	free(c1);
	double *w3 = malloc(sizeof(double) * BM * BN);
	naive_mm(P(&b, A, 0), P(&b, B, 0), w3, BM, BK, BN);
	int bad = 0;
	for (int i = 0; i < BM * BN; i++)
		bad += fabs(P(&b, C, 0)[i] - w3[i]) > 1e-5;
	check(!bad, "big matmul vs naive: %d differ", bad);
	free(w3);
	release(&b);

	/* empty pieces are fine */
	mesh(&b, 1, 1);
	A = in(&b, "A", LOCAL, SH(0, 3));
	B = in(&b, "B", LOCAL, SH(3, 2));
	C = out(&b, "C", LOCAL, SH(0, 2));
	op(&b, OP_MATMUL, C, 2, A, B);
	check(!run(&b, 0, 4), "empty matmul: %s", err);
	release(&b);

	/* shapes that do not multiply are an error */
	mesh(&b, 1, 1);
	A = in(&b, "A", LOCAL, SH(2, 3));
	B = in(&b, "B", LOCAL, SH(2, 2));
	C = out(&b, "C", LOCAL, SH(2, 2));
	op(&b, OP_MATMUL, C, 2, A, B);
	check(run(&b, 0, 1) == -1 && strstr(err, "matmul"), "bad matmul rejected: %s", err);
	release(&b);
}

/* ---- elementwise and row-wise --------------------------------------------- */

static void unary(ir_opkind k, const float *x, const float *want, int n, double scalar,
		  ir_dtype to, const char *what)
{
	prog b;
	mesh(&b, 1, 1);
	int X = in(&b, "X", LOCAL, SH(n));
	int Y = out(&b, "Y", LOCAL, SH(n));
	ir_op *o = op(&b, k, Y, 1, X);
	o->scalar = scalar;
	o->to = to;
	alloc(&b);
	fill(&b, X, 0, x);
	check(!run(&b, 0, 1), "%s runs", what);
	expect(what, P(&b, Y, 0), want, n, 1e-7);
	release(&b);
}

static void test_elementwise(void)
{
	prog b;
	/* add / mul, same shape, at world 2 with rows split */
	for (int k = 0; k < 2; k++) {
		mesh(&b, 1, 2);
		int X = in(&b, "X", SPLIT(0), SH(4, 2)), Y = in(&b, "Y", SPLIT(0), SH(4, 2));
		int Z = out(&b, "Z", SPLIT(0), SH(4, 2));
		op(&b, k ? OP_MUL : OP_ADD, Z, 2, X, Y);
		alloc(&b);
		fill(&b, X, 0, (float[]){1, 2, 3, 4});
		fill(&b, X, 1, (float[]){5, 6, 7, 8});
		fill(&b, Y, 0, (float[]){10, 20, 30, 40});
		fill(&b, Y, 1, (float[]){-1, -2, -3, -4});
		check(!run(&b, 0, 1), "add/mul runs: %s", err);
		if (k) {
			expect("mul r0", P(&b, Z, 0), (float[]){10, 40, 90, 160}, 4, 0);
			expect("mul r1", P(&b, Z, 1), (float[]){-5, -12, -21, -32}, 4, 0);
		} else {
			expect("add r0", P(&b, Z, 0), (float[]){11, 22, 33, 44}, 4, 0);
			expect("add r1", P(&b, Z, 1), (float[]){4, 4, 4, 4}, 4, 0);
		}
		release(&b);
	}

	/* broadcast of a 1-D operand over rows; X split on rows, then on cols */
	for (int sd = 0; sd < 2; sd++) {
		mesh(&b, 1, 2);
		int X = in(&b, "X", SPLIT(sd), SH(2, 4)), W = in(&b, "W", LOCAL, SH(4));
		int Z = out(&b, "Z", SPLIT(sd), SH(2, 4));
		op(&b, OP_ADD, Z, 2, X, W);
		alloc(&b);
		for (int r = 0; r < 2; r++) {
			fill(&b, X, r, (float[]){0, 0, 0, 0});
			fill(&b, W, r, (float[]){1, 2, 3, 4});
		}
		check(!run(&b, 0, 1), "broadcast add runs: %s", err);
		if (sd == 0) {
			expect("bcast rows r0", P(&b, Z, 0), (float[]){1, 2, 3, 4}, 4, 0);
			expect("bcast rows r1", P(&b, Z, 1), (float[]){1, 2, 3, 4}, 4, 0);
		} else {
			expect("bcast cols r0", P(&b, Z, 0), (float[]){1, 2, 1, 2}, 4, 0);
			expect("bcast cols r1", P(&b, Z, 1), (float[]){3, 4, 3, 4}, 4, 0);
		}
		release(&b);
	}

	/* operand placements that do not line up are an error */
	mesh(&b, 1, 2);
	int X = in(&b, "X", SPLIT(0), SH(4, 2)), Y = in(&b, "Y", SPLIT(1), SH(4, 2));
	int Z = out(&b, "Z", SPLIT(0), SH(4, 2));
	op(&b, OP_ADD, Z, 2, X, Y);
	check(run(&b, 0, 1) == -1 && strstr(err, "'Y'"), "misplaced operand rejected: %s", err);
	release(&b);

	float x[] = {-2, -0.5f, 0, 1, 3};
	unary(OP_SCALE, x, (float[]){3, 0.75f, 0, -1.5f, -4.5f}, 5, -1.5, DT_F32, "scale");
	unary(OP_RELU, x, (float[]){0, 0, 0, 1, 3}, 5, 0, DT_F32, "relu");
	unary(OP_SILU, x, (float[]){-0.23840584f, -0.18877033f, 0, 0.73105858f, 2.85772238f}, 5,
	      0, DT_F32, "silu");
	unary(OP_GELU, x, (float[]){-0.04550026f, -0.15426877f, 0, 0.84134475f, 2.99595031f}, 5,
	      0, DT_F32, "gelu");
	unary(OP_CAST, (float[]){1 + 0x1p-8f, 1 + 0x3p-8f, 1.0f / 3},
	      (float[]){1, 1 + 0x1p-6f, 0.333984375f}, 3, 0, DT_BF16, "cast bf16");
	unary(OP_CAST, (float[]){1000, 0.3f}, (float[]){448, 0.3125f}, 2, 0, DT_E4M3, "cast e4m3");

	/* storage rounding: inputs are read rounded and outputs stored rounded;
	 * the caller's inputs are not touched */
	mesh(&b, 1, 1);
	X = ten(&b, "X", TK_IN, DT_BF16, LOCAL, SH(3));
	Y = ten(&b, "Y", TK_IN, DT_F32, LOCAL, SH(3));
	Z = ten(&b, "Z", TK_OUT, DT_BF16, LOCAL, SH(3));
	op(&b, OP_ADD, Z, 2, X, Y);
	alloc(&b);
	fill(&b, X, 0, (float[]){1 + 0x1p-9f, 1, 256});
	fill(&b, Y, 0, (float[]){0, 0x1p-9f, 1});
	check(!run(&b, 1, 1), "rounded add runs: %s", err);
	expect("rounded add", P(&b, Z, 0), (float[]){1, 1, 256}, 3, 0);
	near("input kept", P(&b, X, 0)[0], 1 + 0x1p-9, 0);
	check(!run(&b, 0, 1), "unrounded add runs: %s", err);
	expect("unrounded add", P(&b, Z, 0), (float[]){1 + 0x1p-9f, 1 + 0x1p-9f, 257}, 3, 0);
	release(&b);
}

static void test_rowwise(void)
{
	prog b;
	for (int hasw = 0; hasw < 2; hasw++) {
		mesh(&b, 1, 2);
		int X = in(&b, "X", SPLIT(0), SH(2, 2)), W = in(&b, "W", LOCAL, SH(2));
		int Y = out(&b, "Y", SPLIT(0), SH(2, 2));
		if (hasw)
			op(&b, OP_RMSNORM, Y, 2, X, W);
		else
			op(&b, OP_RMSNORM, Y, 1, X);
		alloc(&b);
		fill(&b, X, 0, (float[]){3, 4});
		fill(&b, X, 1, (float[]){1, -1});
		for (int r = 0; r < 2; r++)
			fill(&b, W, r, (float[]){2, 0.5f});
		check(!run(&b, 0, 1), "rmsnorm runs: %s", err);
		double i0 = 1 / sqrt(12.5 + 1e-6), i1 = 1 / sqrt(1 + 1e-6);
		double w0 = hasw ? 2 : 1, w1 = hasw ? 0.5 : 1;
		expect("rmsnorm r0", P(&b, Y, 0), (float[]){(float)(3 * i0 * w0), (float)(4 * i0 * w1)}, 2, 1e-7);
		expect("rmsnorm r1", P(&b, Y, 1), (float[]){(float)(i1 * w0), (float)(-i1 * w1)}, 2, 1e-7);
		release(&b);
	}

	mesh(&b, 1, 1);
	int X = in(&b, "X", LOCAL, SH(2, 3)), Y = out(&b, "Y", LOCAL, SH(2, 3));
	op(&b, OP_SOFTMAX, Y, 1, X);
	alloc(&b);
	fill(&b, X, 0, (float[]){1, 2, 3, 1000, 1000, 1000});
	check(!run(&b, 0, 1), "softmax runs: %s", err);
	expect("softmax", P(&b, Y, 0),
	       (float[]){0.09003057f, 0.24472847f, 0.66524096f, 1.f / 3, 1.f / 3, 1.f / 3}, 6, 1e-7);
	release(&b);

	/* layernorm: (x - mean) / sqrt(var + 1e-5) * w + b, biased variance */
	{
		mesh(&b, 1, 1);
		int X2 = in(&b, "X", LOCAL, SH(1, 4)), W = in(&b, "W", LOCAL, SH(4));
		int B = in(&b, "B", LOCAL, SH(4)), Y2 = out(&b, "Y", LOCAL, SH(1, 4));
		op(&b, OP_LAYERNORM, Y2, 3, X2, W, B);
		alloc(&b);
		fill(&b, X2, 0, (float[]){1, 2, 3, 6});
		fill(&b, W, 0, (float[]){1, 2, 1, 0.5f});
		fill(&b, B, 0, (float[]){0, 0, 1, -1});
		check(!run(&b, 0, 1), "layernorm runs: %s", err);
		double inv = 1 / sqrt(3.5 + 1e-5);   /* mean 3, var (4+1+0+9)/4 */
		expect("layernorm", P(&b, Y2, 0), (float[]){(float)(-2 * inv), (float)(-2 * inv),
		       (float)(0 * inv + 1), (float)(1.5 * inv - 1)}, 4, 1e-7);
		release(&b);
	}

	/* rope, half rotation per head: two heads of D = 4 on one token row
	 * of two tokens; head h of token t: y[j] = x[j] c - x[j+2] s (j < 2),
	 * x[j] c + x[j-2] s after */
	{
		mesh(&b, 1, 1);
		int X2 = in(&b, "X", LOCAL, SH(2, 8)), C = in(&b, "C", LOCAL, SH(2, 4));
		int S = in(&b, "S", LOCAL, SH(2, 4)), Y2 = out(&b, "Y", LOCAL, SH(2, 8));
		op(&b, OP_ROPE, Y2, 3, X2, C, S);
		alloc(&b);
		fill(&b, X2, 0, (float[]){1, 2, 3, 4, 5, 6, 7, 8, 1, 1, 1, 1, 2, 0, 0, 2});
		fill(&b, C, 0, (float[]){1, 1, 1, 1, 0.5f, 0, 0.5f, 0});
		fill(&b, S, 0, (float[]){0, 0, 0, 0, 0.5f, 1, 0.5f, 1});
		check(!run(&b, 0, 1), "rope runs: %s", err);
		/* token 0: cos 1, sin 0: the identity; token 1: head (1,1,1,1)
		 * -> (0.5-0.5, 0-1, 0.5+0.5, 0+1); head (2,0,0,2) -> (1-0, 0-2, 0+1, 0+0) */
		expect("rope", P(&b, Y2, 0), (float[]){1, 2, 3, 4, 5, 6, 7, 8,
		       0, -1, 1, 1, 1, -2, 1, 0}, 16, 1e-7);
		release(&b);
	}

	/* a row split over ranks cannot be normalised locally */
	mesh(&b, 1, 2);
	X = in(&b, "X", SPLIT(1), SH(2, 4));
	Y = out(&b, "Y", SPLIT(1), SH(2, 4));
	op(&b, OP_SOFTMAX, Y, 1, X);
	check(run(&b, 0, 1) == -1 && strstr(err, "last dim"), "split rows rejected: %s", err);
	release(&b);

	/* sum over each dim; over a split dim each rank sums its piece */
	for (int d = 0; d < 2; d++) {
		mesh(&b, 1, 1);
		X = in(&b, "X", LOCAL, SH(2, 3));
		Y = out(&b, "Y", LOCAL, SH(d ? 2 : 3));
		op(&b, OP_SUM, Y, 1, X)->dim = d;
		alloc(&b);
		fill(&b, X, 0, (float[]){1, 2, 3, 4, 5, 6});
		check(!run(&b, 0, 1), "sum runs: %s", err);
		if (d)
			expect("sum dim 1", P(&b, Y, 0), (float[]){6, 15}, 2, 0);
		else
			expect("sum dim 0", P(&b, Y, 0), (float[]){5, 7, 9}, 3, 0);
		release(&b);
	}
	mesh(&b, 1, 2);
	X = in(&b, "X", SPLIT(1), SH(2, 4));
	Y = out(&b, "Y", PARTIAL, SH(2));
	op(&b, OP_SUM, Y, 1, X)->dim = 1;
	alloc(&b);
	mark(&b, X);
	check(!run(&b, 0, 1), "sum over split runs: %s", err);
	expect("sum split r0", P(&b, Y, 0), (float[]){1, 5}, 2, 0);
	expect("sum split r1", P(&b, Y, 1), (float[]){201, 205}, 2, 0);
	release(&b);
}

/* ---- attention --------------------------------------------------------------- */

/* softmax(q k^T * scale + mask) v with a -inf mask, one head. */
static void naive_attn(const float *q, const float *k, const float *v, float *o, int S,
		       int D, int causal)
{
	double s[64];
	for (int i = 0; i < S; i++) {
		double m = -INFINITY, z = 0;
		for (int j = 0; j < S; j++) {
			double x = 0;
			for (int d = 0; d < D; d++)
				x += (double)q[i * D + d] * k[j * D + d];
			s[j] = causal && j > i ? -INFINITY : x / sqrt((double)D);
			m = fmax(m, s[j]);
		}
		for (int j = 0; j < S; j++)
			z += s[j] = exp(s[j] - m);
		for (int d = 0; d < D; d++) {
			double a = 0;
			for (int j = 0; j < S; j++)
				a += s[j] * v[j * D + d];
			o[i * D + d] = (float)(a / z);
		}
	}
}

static void test_attention(void)
{
	prog b;
	/* by hand: a zero query averages V; scores 0 and ln 2 weigh 1:2 */
	mesh(&b, 1, 1);
	int Q = in(&b, "Q", LOCAL, SH(2, 1)), K = in(&b, "K", LOCAL, SH(2, 1));
	int V = in(&b, "V", LOCAL, SH(2, 1)), O = out(&b, "O", LOCAL, SH(2, 1));
	op(&b, OP_ATTENTION, O, 3, Q, K, V);
	alloc(&b);
	fill(&b, Q, 0, (float[]){0, 1});
	fill(&b, K, 0, (float[]){0, (float)log(2.0)});
	fill(&b, V, 0, (float[]){0, 3});
	check(!run(&b, 0, 1), "attention runs: %s", err);
	expect("attention by hand", P(&b, O, 0), (float[]){1.5f, 2}, 2, 1e-6);
	b.o[0].causal = 1;
	check(!run(&b, 0, 1), "causal attention runs: %s", err);
	expect("causal by hand", P(&b, O, 0), (float[]){0, 2}, 2, 1e-6);
	release(&b);

	/* causal and full against the masked naive form, S=12 D=8, 2 heads */
	enum { S = 12, D = 8, H = 2 };
	static float q[H * S * D], k[H * S * D], v[H * S * D], want[H * S * D];
	for (int i = 0; i < H * S * D; i++)
		q[i] = frand(), k[i] = frand(), v[i] = frand();
	for (int causal = 0; causal < 2; causal++) {
		mesh(&b, 1, 1);
		Q = in(&b, "Q", LOCAL, SH(H, S, D));
		K = in(&b, "K", LOCAL, SH(H, S, D));
		V = in(&b, "V", LOCAL, SH(H, S, D));
		O = out(&b, "O", LOCAL, SH(H, S, D));
		op(&b, OP_ATTENTION, O, 3, Q, K, V)->causal = causal;
		alloc(&b);
		fill(&b, Q, 0, q), fill(&b, K, 0, k), fill(&b, V, 0, v);
		check(!run(&b, 0, 1), "batched attention runs: %s", err);
		for (int h = 0; h < H; h++)
			naive_attn(q + h * S * D, k + h * S * D, v + h * S * D, want + h * S * D, S, D, causal);
		expect(causal ? "causal vs masked" : "full vs naive", P(&b, O, 0), want, H * S * D, 1e-5);

		/* ring attention: sequence split over 2, 4 and a 2x2 mesh equals the
		 * local attention on the concatenation; also heads split */
		int meshes[][2] = {{1, 2}, {1, 4}, {2, 2}};
		for (int m = 0; m < 4; m++) {
			prog c;
			int nodes = m < 3 ? meshes[m][0] : 1, gpus = m < 3 ? meshes[m][1] : 2;
			ir_place pl = m < 3 ? SPLIT(1) : SPLIT(0);
			mesh(&c, nodes, gpus);
			int q2 = in(&c, "Q", pl, SH(H, S, D)), k2 = in(&c, "K", pl, SH(H, S, D));
			int v2 = in(&c, "V", pl, SH(H, S, D)), o2 = out(&c, "O", pl, SH(H, S, D));
			op(&c, OP_ATTENTION, o2, 3, q2, k2, v2)->causal = causal;
			alloc(&c);
			int w = c.p.world;
			for (int r = 0; r < w; r++)
				for (int t = 0; t < 3; t++) {
					const float *src = t == 0 ? q : t == 1 ? k : v;
					int64_t lo[3] = {0}, *ls = c.t[t].local;
					lo[pl.dim] = r * ls[pl.dim];
					for (int64_t a = 0; a < ls[0]; a++)
						for (int64_t s = 0; s < ls[1]; s++)
							memcpy(P(&c, t, r) + (a * ls[1] + s) * D,
							       src + ((lo[0] + a) * S + lo[1] + s) * D, D * sizeof(float));
				}
			check(!run(&c, 0, 2), "ring attention runs: %s", err);
			int bad = 0;
			for (int r = 0; r < w; r++) {
				int64_t *ls = c.t[o2].local, lo[3] = {0};
				lo[pl.dim] = r * ls[pl.dim];
				for (int64_t a = 0; a < ls[0]; a++)
					for (int64_t s = 0; s < ls[1]; s++)
						for (int d = 0; d < D; d++)
							bad += fabsf(P(&c, o2, r)[(a * ls[1] + s) * D + d] -
								     P(&b, O, 0)[((lo[0] + a) * S + lo[1] + s) * D + d]) > 1e-6f;
			}
			check(!bad, "ring attention %dx%d %s causal=%d: %d differ", nodes, gpus,
			      m < 3 ? "seq split" : "heads split", causal, bad);
			release(&c);
		}
		release(&b);
	}
}

/* ---- malformed programs ------------------------------------------------------ */

static void test_errors(void)
{
	prog b;
	mesh(&b, 1, 2);
	int X = in(&b, "X", SPLIT(0), SH(4, 2)), Y = out(&b, "Y", SPLIT(0), SH(4, 2));
	op(&b, OP_RELU, Y, 1, X);
	b.t[X].local[0] = 4;  /* not what split(0) over 2 says */
	check(run(&b, 0, 1) == -1 && strstr(err, "tensor 'X'"), "bad local shape: %s", err);
	release(&b);

	mesh(&b, 1, 2);
	X = in(&b, "X", PARTIAL, SH(4, 2));
	Y = out(&b, "Y", PARTIAL, SH(4, 2));
	op(&b, OP_GELU, Y, 1, X);
	check(run(&b, 0, 1) == -1 && strstr(err, "partial"), "gelu of partial: %s", err);
	release(&b);

	mesh(&b, 1, 2);
	X = in(&b, "X", LOCAL, SH(4, 2));
	Y = out(&b, "Y", SPLIT(0), SH(4, 2));
	op(&b, OP_ALLGATHER, Y, 1, X)->dim = 0;
	check(run(&b, 0, 1) == -1 && strstr(err, "op 0 (allgather 'Y')"), "allgather of local: %s", err);
	release(&b);

	mesh(&b, 1, 1);
	b.p.world = 3;
	check(run(&b, 0, 1) == -1 && strstr(err, "mesh"), "bad mesh: %s", err);
	release(&b);
}


int main(void)
{
	test_round();
	test_matmul();
	test_elementwise();
	test_rowwise();
	test_attention();
	test_errors();
	printf("test_cpuref: %d checks, %d failed\n", checks, failures);
	return failures != 0;
}
