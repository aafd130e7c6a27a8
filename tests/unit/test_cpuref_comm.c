/* test_cpuref_comm.c - the CPU reference executor on hand-built programs:
 * the exchanges.
 *
 * The collectives (allgather, reduce_scatter, allreduce, ring_shift) and
 * put on small hand-computed cases at world 1, 2, 4 and a 2 x 2 mesh, over
 * the world, the GPUs of a node and the nodes; dispatch and combine by hand
 * and on random routing, and the routing errors of dispatch.  Exit 0 = pass.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/cpuref.h"
#include "tests/unit/cpuref_prog.h"

/* ---- collectives and put ------------------------------------------------------- */

static void test_allgather(void)
{
	prog b;
	for (int w = 1; w <= 4; w *= 2) {
		mesh(&b, 1, w);
		int X = in(&b, "X", SPLIT(0), SH(2 * w, 2)), Y = out(&b, "Y", LOCAL, SH(2 * w, 2));
		int X1 = in(&b, "X1", SPLIT(1), SH(2, 2 * w)), Y1 = out(&b, "Y1", LOCAL, SH(2, 2 * w));
		op(&b, OP_ALLGATHER, Y, 1, X)->dim = 0;
		op(&b, OP_ALLGATHER, Y1, 1, X1)->dim = 1;
		alloc(&b);
		mark(&b, X);
		mark(&b, X1);
		check(!run(&b, 0, 1), "allgather runs: %s", err);
		for (int r = 0; r < w; r++)
			for (int s = 0; s < w; s++)
				for (int i = 0; i < 4; i++) {
					near("allgather dim 0", P(&b, Y, r)[s * 4 + i], 100 * s + i, 0);
					near("allgather dim 1", P(&b, Y1, r)[(i / 2) * 2 * w + s * 2 + i % 2],
					     100 * s + i, 0);
				}
		release(&b);
	}
	/* 2x2 mesh: over the world, over the gpus of a node, over the nodes */
	ir_group groups[] = {GRP_WORLD, GRP_GPUS, GRP_NODES};
	for (int g = 0; g < 3; g++) {
		mesh(&b, 2, 2);
		int n = g == GRP_WORLD ? 4 : 2;
		int X = in(&b, "X", SPLITG(0, groups[g]), SH(n, 3));
		int Y = out(&b, "Y", LOCAL, SH(n, 3));
		op(&b, OP_ALLGATHER, Y, 1, X)->dim = 0;
		alloc(&b);
		mark(&b, X);
		check(!run(&b, 0, 1), "mesh allgather runs: %s", err);
		for (int r = 0; r < 4; r++)
			for (int s = 0; s < n; s++) {
				int src = g == GRP_WORLD ? s : g == GRP_GPUS ? (r / 2) * 2 + s : s * 2 + r % 2;
				for (int i = 0; i < 3; i++)
					near("mesh allgather", P(&b, Y, r)[s * 3 + i], 100 * src + i, 0);
			}
		release(&b);
	}
}

static void test_reduce(void)
{
	prog b;
	for (int w = 1; w <= 4; w *= 2) {
		mesh(&b, 1, w);
		int X = in(&b, "X", PARTIAL, SH(2 * w, 2)), Y = out(&b, "Y", SPLIT(0), SH(2 * w, 2));
		int Z = out(&b, "Z", LOCAL, SH(2 * w, 2));
		op(&b, OP_REDUCE_SCATTER, Y, 1, X)->dim = 0;
		op(&b, OP_ALLREDUCE, Z, 1, X);
		alloc(&b);
		mark(&b, X);
		check(!run(&b, 0, 1), "reduce_scatter / allreduce run: %s", err);
		double rs = 0;
		for (int r = 0; r < w; r++)
			rs += 100 * r;
		for (int r = 0; r < w; r++) {
			for (int i = 0; i < 4; i++)
				near("reduce_scatter", P(&b, Y, r)[i], rs + w * (4 * r + i), 0);
			for (int i = 0; i < 4 * w; i++)
				near("allreduce", P(&b, Z, r)[i], rs + w * i, 0);
		}
		release(&b);
	}
	/* 2x2 mesh, dim 1: over the world, and over the gpus of each node */
	for (int g = 0; g < 2; g++) {
		mesh(&b, 2, 2);
		int X = in(&b, "X", PARTIAL, SH(2, 4));
		int Y = out(&b, "Y", SPLITG(1, g ? GRP_GPUS : GRP_WORLD), SH(2, 4));
		op(&b, OP_REDUCE_SCATTER, Y, 1, X)->dim = 1;
		alloc(&b);
		mark(&b, X);
		check(!run(&b, 0, 1), "mesh reduce_scatter runs: %s", err);
		for (int r = 0; r < 4; r++) {
			int64_t cols = b.t[Y].local[1];
			for (int i = 0; i < 2; i++)
				for (int j = 0; j < cols; j++) {
					int x = i * 4 + (int)(g ? (r % 2) * cols : r * cols) + j;
					double want = g ? 100 * ((r / 2) * 2) + 100 * ((r / 2) * 2 + 1) + 2 * x
							: 600 + 4 * x;
					near("mesh reduce_scatter", P(&b, Y, r)[i * cols + j], want, 0);
				}
		}
		release(&b);
	}
}

static void test_ring_shift(void)
{
	prog b;
	mesh(&b, 2, 2);
	int X = in(&b, "X", SPLIT(0), SH(8, 2)), Y = out(&b, "Y", SPLIT(0), SH(8, 2));
	op(&b, OP_RING_SHIFT, Y, 1, X);
	alloc(&b);
	mark(&b, X);
	check(!run(&b, 0, 1), "ring_shift runs: %s", err);
	for (int r = 0; r < 4; r++)
		for (int i = 0; i < 4; i++)
			near("ring_shift", P(&b, Y, r)[i], 100 * ((r + 3) % 4) + i, 0);
	release(&b);
}

static void test_put(void)
{
	prog b;
	/* node + remote puts together make an allgather; all alone does too;
	 * node alone leaves the other node's shards zero */
	for (int v = 0; v < 3; v++) {
		mesh(&b, 2, 2);
		int X = in(&b, "X", SPLIT(0), SH(8, 3)), Y = out(&b, "Y", LOCAL, SH(8, 3));
		if (v == 0) {
			op(&b, OP_PUT, Y, 1, X)->peers = PEERS_NODE;
			op(&b, OP_PUT, Y, 1, X)->peers = PEERS_REMOTE;
		} else {
			op(&b, OP_PUT, Y, 1, X)->peers = v == 1 ? PEERS_ALL : PEERS_NODE;
		}
		alloc(&b);
		mark(&b, X);
		check(!run(&b, 0, 1), "put runs: %s", err);
		for (int r = 0; r < 4; r++)
			for (int s = 0; s < 4; s++)
				for (int i = 0; i < 6; i++) {
					double want = v == 2 && s / 2 != r / 2 ? 0 : 100 * s + i;
					near("put", P(&b, Y, r)[s * 6 + i], want, 0);
				}
		release(&b);
	}
	/* along dim 1 */
	mesh(&b, 1, 2);
	int X = in(&b, "X", SPLIT(1), SH(2, 4)), Y = out(&b, "Y", LOCAL, SH(2, 4));
	ir_op *o = op(&b, OP_PUT, Y, 1, X);
	o->peers = PEERS_ALL;
	o->dim = 1;
	alloc(&b);
	mark(&b, X);
	check(!run(&b, 0, 1), "put dim 1 runs: %s", err);
	for (int r = 0; r < 2; r++)
		expect("put dim 1", P(&b, Y, r), (float[]){0, 1, 100, 101, 2, 3, 102, 103}, 8, 0);
	release(&b);
}

/* ---- dispatch and combine ------------------------------------------------------- */

/* X[T,H], idx[T,k], gate[T,k] split(0); Xe = dispatch; Ye = scale(Xe, 2);
 * Y = combine(Ye, idx, gate). */
typedef struct moe {
	prog b;
	int X, I, G, Xe, Ye, Y;
} moe;

static void moe_build(moe *m, int nodes, int gpus, int64_t T, int64_t k, int64_t E,
		      int64_t C, int64_t H)
{
	prog *b = &m->b;
	mesh(b, nodes, gpus);
	m->X = in(b, "X", SPLIT(0), SH(T, H));
	m->I = ten(b, "idx", TK_IN, DT_I32, SPLIT(0), SH(T, k));
	m->G = in(b, "gate", SPLIT(0), SH(T, k));
	m->Xe = ten(b, "Xe", TK_TEMP, DT_F32, SPLIT(0), SH(E, C, H));
	m->Ye = ten(b, "Ye", TK_TEMP, DT_F32, SPLIT(0), SH(E, C, H));
	m->Y = out(b, "Y", SPLIT(0), SH(T, H));
	ir_op *o = op(b, OP_DISPATCH, m->Xe, 2, m->X, m->I);
	o->experts = E;
	o->capacity = C;
	op(b, OP_SCALE, m->Ye, 1, m->Xe)->scalar = 2;
	op(b, OP_COMBINE, m->Y, 3, m->Ye, m->I, m->G);
	alloc(b);
}

static void test_moe(void)
{
	moe m;
	prog *b = &m.b;
	/* by hand, world 2: T=4 (2 a rank), k=2, E=4 (2 a rank), C=3, H=2.
	 * Global tokens g0 g1 (rank 0), g2 g3 (rank 1), token g = [10g+1, 10g+2].
	 * Routing: g0 -> 1,2; g1 -> 1,3; g2 -> 0,1; g3 -> 3,2.
	 * Buckets in (rank, token, choice) order:
	 *   e0: g2   e1: g0 g1 g2   e2: g0 g3   e3: g1 g3 */
	moe_build(&m, 1, 2, 4, 2, 4, 3, 2);
	fill(b, m.X, 0, (float[]){1, 2, 11, 12});
	fill(b, m.X, 1, (float[]){21, 22, 31, 32});
	fill(b, m.I, 0, (float[]){1, 2, 1, 3});
	fill(b, m.I, 1, (float[]){0, 1, 3, 2});
	fill(b, m.G, 0, (float[]){0.5f, 0.25f, 1, -1});
	fill(b, m.G, 1, (float[]){1, 1, 0.5f, 0.5f});
	check(!run(b, 0, 1), "moe runs: %s", err);
	expect("dispatch rank 0", P(b, m.Xe, 0),
	       (float[]){21, 22, 0, 0, 0, 0, 1, 2, 11, 12, 21, 22}, 12, 0);
	expect("dispatch rank 1", P(b, m.Xe, 1),
	       (float[]){1, 2, 31, 32, 0, 0, 11, 12, 31, 32, 0, 0}, 12, 0);
	/* Y[g] = 2 * sum_j gate * X[g] */
	expect("combine rank 0", P(b, m.Y, 0), (float[]){1.5f, 3, 0, 0}, 4, 0);
	expect("combine rank 1", P(b, m.Y, 1), (float[]){84, 88, 62, 64}, 4, 0);

	/* bad routing ids and overflow: errors naming what went wrong */
	fill(b, m.I, 1, (float[]){0, 4, 3, 2});
	check(run(b, 0, 1) == -1 && strstr(err, "rank 1") && strstr(err, "token 0 choice 1") &&
	      strstr(err, "routes to 4"), "out-of-range id: %s", err);
	fill(b, m.I, 1, (float[]){0, -1, 3, 2});
	check(run(b, 0, 1) == -1 && strstr(err, "routes to -1"), "negative id: %s", err);
	fill(b, m.I, 1, (float[]){0, 1.5f, 3, 2});
	check(run(b, 0, 1) == -1 && strstr(err, "routes to 1.5"), "fractional id: %s", err);
	fill(b, m.I, 1, (float[]){1, 1, 3, 2});
	check(run(b, 0, 1) == -1 && strstr(err, "expert 1 receives 4 tokens") &&
	      strstr(err, "capacity 3"), "overflow: %s", err);
	release(b);

	/* random routing at world 1, 2, 4 and 2x2: with capacity for every
	 * token, combine(2 * dispatch(X)) = 2 * (sum of gates) * X, and every
	 * bucket is filled from slot 0 without gaps */
	int meshes[][2] = {{1, 1}, {1, 2}, {1, 4}, {2, 2}};
	for (int mi = 0; mi < 4; mi++) {
		int w = meshes[mi][0] * meshes[mi][1];
		int64_t T = 8 * w, k = 2, E = 4 * w, C = T, H = 3;
		moe_build(&m, meshes[mi][0], meshes[mi][1], T, k, E, C, H);
		randomize(b, m.X);
		randomize(b, m.G);
		int64_t *count = calloc((size_t)E, sizeof *count);
		for (int r = 0; r < w; r++)
			for (int i = 0; i < 8 * k; i++) {
				rng = rng * 1103515245u + 12345u;
				int e = (int)((rng >> 10) % (unsigned)E);
				P(b, m.I, r)[i] = (float)e;
				count[e]++;
			}
		check(!run(b, 0, 1), "random moe runs: %s", err);
		int bad = 0;
		for (int r = 0; r < w; r++)
			for (int t = 0; t < 8; t++) {
				float *g = P(b, m.G, r) + t * k, *x = P(b, m.X, r) + t * H;
				for (int h = 0; h < H; h++)
					bad += fabs(P(b, m.Y, r)[t * H + h] - 2.0 * (g[0] + g[1]) * x[h]) > 1e-5;
			}
		for (int r = 0; r < w; r++)
			for (int e = 0; e < 4; e++)
				for (int s = 0; s < C; s++) {
					float v = P(b, m.Xe, r)[(e * C + s) * H];
					int used = s < count[r * 4 + e];
					bad += used ? 0 : v != 0;
				}
		check(!bad, "random moe %dx%d: %d wrong", meshes[mi][0], meshes[mi][1], bad);
		free(count);
		release(b);
	}
}

int main(void)
{
	test_allgather();
	test_reduce();
	test_ring_shift();
	test_put();
	test_moe();
	printf("test_cpuref_comm: %d checks, %d failed\n", checks, failures);
	return failures != 0;
}
