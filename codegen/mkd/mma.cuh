/* mkd/mma.cuh - a portable tensor-core GEMM tile (sm_80+): C[BM x BN] =
 * A[BM x K] * B[K x BN] with mma.sync m16n8k16, fp32 accumulators.
 *
 * The fallback engine and the reference for the Hopper wgmma engine: any
 * arch, any tile that the 8 warps divide.  cp.async brings 16-byte pieces of
 * A and B into a STAGES-deep shared-memory ring (zero-filled past the edges,
 * so M, N and K need not be tile multiples; rows must be 16-byte aligned,
 * which the checker guarantees: K and N multiples of 8); ldmatrix feeds the
 * fragments; the epilogue converts and stores straight from registers.
 *
 * Layouts: A row-major [M][lda], B row-major [K][ldb], C row-major [M][ldc].
 * e4m3 operands (8-byte aligned rows) are widened to f16 as they are
 * loaded (plain loads and stores instead of cp.async: the ring's slot
 * discipline is the same) and multiplied by the f16 mma, exactly.
 * The CTA may have more than 8 warps (kernels built for the Hopper engine
 * have 12): all threads load, the first 8 warps compute.
 * NORM (an rmsnorm folded into the tile, compiler/expand.c fuse_norms): A
 * is X, each chunk multiplied by the rmsnorm's weight at its columns as it
 * is loaded (plain loads); the stage gives the rows' 1/rms to the
 * epilogue (mkd_epi_rows, with mkd_rms_rows of ew.cuh).
 */
#ifndef MKD_MMA_CUH
#define MKD_MMA_CUH

#include "base.cuh"
#include "ew.cuh"

MKD_INLINE void mkd_cp_async16(u32 dst, const void *src, bool full)
{
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
		     :: "r"(dst), "l"(src), "r"(full ? 16 : 0) : "memory");
}
MKD_INLINE void mkd_cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> MKD_INLINE void mkd_cp_async_wait()
{
	asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory");
}

/* Four 8 x 8 matrices of 16-bit elements from shared memory (each lane
 * names a row: lanes 8m .. 8m+7 those of matrix m), as mma fragments;
 * _t: transposed. */
MKD_INLINE void mkd_ldsm_x4(u32 *r, u32 addr)
{
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
		     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
MKD_INLINE void mkd_ldsm_x4_t(u32 *r, u32 addr)
{
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
		     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

template <typename T> struct mkd_mma_op;
template <> struct mkd_mma_op<mkd_bf16> {
	static MKD_INLINE void mma(float *c, const u32 *a, const u32 *b)
	{
		asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
			     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
			     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
			     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
	}
};
template <> struct mkd_mma_op<mkd_f16> {
	static MKD_INLINE void mma(float *c, const u32 *a, const u32 *b)
	{
		asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
			     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
			     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
			     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
	}
};

/* The element type of the shared-memory ring for operands of type T: T
 * itself, except e4m3, which is widened to f16 on the way in (exact: every
 * e4m3 value is an f16 value) and multiplied by the f16 mma. */
template <typename T> struct mkd_mma_smem { typedef T type; };
template <> struct mkd_mma_smem<mkd_e4m3> { typedef mkd_f16 type; };

/* Four e4m3 (a little-endian word) as four f16, in order, in two words. */
MKD_INLINE void mkd_e4m3x4_f16(u32 w, u32 &lo, u32 &hi)
{
#if __CUDA_ARCH__ >= 890
	asm("{ .reg .b16 a, b;\n\tmov.b32 {a, b}, %2;\n"
	    "\tcvt.rn.f16x2.e4m3x2 %0, a;\n\tcvt.rn.f16x2.e4m3x2 %1, b; }"
	    : "=r"(lo), "=r"(hi) : "r"(w));
#else
	u32 h[4];
	for (int i = 0; i < 4; i++) {  /* s eeee mmm -> s eeeee mmmmmmmmmm */
		const u32 b = (w >> (8 * i)) & 0xff, s = (b & 0x80) << 8, e = (b >> 3) & 15, m = b & 7;
		if ((b & 0x7f) == 0x7f)
			h[i] = s | 0x7e00;                       /* NaN */
		else if (e)
			h[i] = s | ((e + 8) << 10) | (m << 7);   /* bias 7 -> 15 */
		else if (m) {                                    /* subnormal: m * 2^-9 */
			int k = 0;
			u32 mm = m;
			while (!(mm & 8)) {
				mm <<= 1;
				k++;
			}
			h[i] = s | ((u32)(9 - k) << 10) | ((mm & 7) << 7);
		} else
			h[i] = s;
	}
	lo = h[0] | (h[1] << 16);
	hi = h[2] | (h[3] << 16);
#endif
}

/* 8 elements of a row into a 16-byte chunk of the ring (zeros when !ok):
 * cp.async for 16-bit types; e4m3 is loaded, widened and stored. */
template <typename T, typename S>
MKD_INLINE void mkd_mma_chunk(S *dst, const T *src, bool ok)
{
	mkd_cp_async16(mkd_smem_addr(dst), src, ok);
}
MKD_INLINE void mkd_mma_chunk(mkd_f16 *dst, const mkd_e4m3 *src, bool ok)
{
	uint4 v = make_uint4(0, 0, 0, 0);
	if (ok) {
		const uint2 w = *(const uint2 *)src;
		mkd_e4m3x4_f16(w.x, v.x, v.y);
		mkd_e4m3x4_f16(w.y, v.z, v.w);
	}
	*(uint4 *)dst = v;
}

/* Store two adjacent fp32 results as the output type. */
template <typename TC> struct mkd_store2;
template <> struct mkd_store2<mkd_bf16> {
	static MKD_INLINE void st(mkd_bf16 *p, float a, float b, bool both)
	{
		if (both) *(u32 *)p = mkd_pack_bf16x2(a, b);
		else p->x = mkd_f32_bf16(a);
	}
};
template <> struct mkd_store2<mkd_f16> {
	static MKD_INLINE void st(mkd_f16 *p, float a, float b, bool both)
	{
		if (both) *(u32 *)p = mkd_pack_f16x2(a, b);
		else p->x = mkd_f32_f16(a);
	}
};
template <> struct mkd_store2<float> {
	static MKD_INLINE void st(float *p, float a, float b, bool both)
	{
		p[0] = a;
		if (both) p[1] = b;
	}
};

/* Epilogues.  An engine calls epi(v, r, c) on each fp32 result v before
 * its store, r and c its row and column in the tile it was given (from
 * the C pointer it was passed). */
struct mkd_epi_none {
	MKD_INLINE float operator()(float v, int, int) const { return v; }
};
/* a unary functor of ew.cuh (relu, silu, gelu, scale) */
template <typename F> struct mkd_epi1 {
	F f;
	MKD_INLINE float operator()(float v, int, int) const { return f(v); }
};
/* F (mkd_ident: none), then Op (mkd_add, mkd_mul) with x[r][c], then G:
 * x has the result's shape, points at the tile's first element, rows ldx
 * apart (a residual, the gate of a gated MLP), or is a bias, ldx 0
 * (compiler/expand.c fuses them) */
template <typename F, typename Op, typename TX, typename G> struct mkd_epi2 {
	F f;
	const TX *x;
	int ldx;  /* (an i64 here spilled mlp_chain on 8 ranks) */
	G g;
	MKD_INLINE float operator()(float v, int r, int c) const
	{
		return g(Op()(f(v), mkd_elem<TX>::ld(x + (i64)r * ldx + c)));
	}
};

/* epi(v * rs[r], r, c): the rows' 1/rms of a NORM tile */
template <typename Epi> struct mkd_epi_rows {
	const float *rs;
	Epi e;
	MKD_INLINE float operator()(float v, int r, int c) const { return e(v * rs[r], r, c); }
};
template <typename Epi> MKD_INLINE mkd_epi_rows<Epi> mkd_by_rows(const float *rs, Epi e)
{
	return mkd_epi_rows<Epi>{rs, e};
}

template <typename T, typename TC, int BM, int BN, int BK, int STAGES, bool NORM = false>
struct mkd_mma_tile {
	enum {
		THREADS = 256,
		WARPS_N = (BN % 32 == 0 && BM % 32 == 0) ? 4 : (BN % 16 == 0 ? 2 : 1),
		WARPS_M = 8 / WARPS_N,
		WM = BM / WARPS_M,
		WN = BN / WARPS_N,
		MI = WM / 16,
		NI = WN / 8,
		AS = BK + 8,     /* padded rows: ldmatrix rows land in distinct banks */
		BS = BN + 8,
		A_ELEMS = BM * AS,
		B_ELEMS = BK * BS,
		SMEM = STAGES * (A_ELEMS + B_ELEMS) * 2
	};
	typedef typename mkd_mma_smem<T>::type S;  /* the ring's element type */
	static_assert(sizeof(S) == 2, "mma.sync tile takes 16-bit inputs (or e4m3, widened)");
	static_assert(BM % (16 * WARPS_M) == 0 && BN % (8 * WARPS_N) == 0, "tile vs warps");
	static_assert(BK % 16 == 0 && STAGES >= 2, "BK multiple of 16");

	static MKD_INLINE void load_stage(const T *A, i64 lda, const T *B, i64 ldb,
					  int M, int N, int K, int m0, int n0, int k0,
					  S *as, S *bs, const T *nw)
	{
		const int t = threadIdx.x, nt = blockDim.x;
		/* A: BM rows x BK/8 chunks */
		for (int i = t; i < BM * (BK / 8); i += nt) {
			int r = i / (BK / 8), c = (i % (BK / 8)) * 8;
			int gr = m0 + r, gc = k0 + c;
			bool ok = gr < M && gc < K;
			const T *src = ok ? A + (i64)gr * lda + gc : A;
			if constexpr (NORM) {  /* X's 8 values (a 16-byte piece) times the weight's */
				uint4 v = make_uint4(0, 0, 0, 0);
				if (ok) {
					float f[8];
					mkd_vec8<T>::get(f, *(const uint4 *)src);
					if (nw) {
#pragma unroll
						for (int e = 0; e < 8; e++)
							f[e] *= mkd_elem<T>::ld(nw + gc + e);
					}
					v = mkd_vec8<T>::pack(f);
				}
				*(uint4 *)(as + r * AS + c) = v;
			} else {
				mkd_mma_chunk(as + r * AS + c, src, ok);
			}
		}
		/* B: BK rows x BN/8 chunks */
		for (int i = t; i < BK * (BN / 8); i += nt) {
			int r = i / (BN / 8), c = (i % (BN / 8)) * 8;
			int gr = k0 + r, gc = n0 + c;
			bool ok = gr < K && gc < N;
			const T *src = ok ? B + (i64)gr * ldb + gc : B;
			mkd_mma_chunk(bs + r * BS + c, src, ok);
		}
	}

	/* NORM: nw is the rmsnorm's weight at A's column 0 (nullptr: none) */
	template <typename Epi>
	static __device__ void run(const T *A, i64 lda, const T *B, i64 ldb, TC *C, i64 ldc,
				   int M, int N, int K, int m0, int n0, char *smem, Epi epi,
				   const T *nw = nullptr)
	{
		S *as = (S *)smem;
		S *bs = as + STAGES * A_ELEMS;
		const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
		const int wm = warp / WARPS_N, wn = warp % WARPS_N;
		float acc[MI][NI][4];
#pragma unroll
		for (int i = 0; i < MI; i++)
#pragma unroll
			for (int j = 0; j < NI; j++)
#pragma unroll
				for (int k = 0; k < 4; k++)
					acc[i][j][k] = 0.f;

		const int kt_n = (K + BK - 1) / BK;
#pragma unroll
		for (int s = 0; s < STAGES - 1; s++) {
			if (s < kt_n)
				load_stage(A, lda, B, ldb, M, N, K, m0, n0, s * BK,
					   as + s * A_ELEMS, bs + s * B_ELEMS, nw);
			mkd_cp_async_commit();
		}
		for (int kt = 0; kt < kt_n; kt++) {
			mkd_cp_async_wait<STAGES - 2>();
			__syncthreads();
			int nk = kt + STAGES - 1;
			if (nk < kt_n)
				load_stage(A, lda, B, ldb, M, N, K, m0, n0, nk * BK,
					   as + (nk % STAGES) * A_ELEMS, bs + (nk % STAGES) * B_ELEMS, nw);
			mkd_cp_async_commit();
			const S *a_s = as + (kt % STAGES) * A_ELEMS;
			const S *b_s = bs + (kt % STAGES) * B_ELEMS;
			if (warp >= WARPS_M * WARPS_N)  /* kernels of 3 warpgroups: 4 warps idle */
				continue;
#pragma unroll
			for (int kk = 0; kk < BK / 16; kk++) {
				u32 af[MI][4], bf[NI][2];
#pragma unroll
				for (int i = 0; i < MI; i++) {
					const S *p = a_s + (wm * WM + i * 16 + (lane & 15)) * AS +
						     kk * 16 + (lane >> 4) * 8;
					mkd_ldsm_x4(af[i], mkd_smem_addr(p));
				}
#pragma unroll
				for (int j = 0; j < NI; j++) {
					const S *p = b_s + (kk * 16 + (lane & 15)) * BS + wn * WN + j * 8;
					asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];"
						     : "=r"(bf[j][0]), "=r"(bf[j][1])
						     : "r"(mkd_smem_addr(p)));
				}
#pragma unroll
				for (int i = 0; i < MI; i++)
#pragma unroll
					for (int j = 0; j < NI; j++)
						mkd_mma_op<S>::mma(acc[i][j], af[i], bf[j]);
			}
		}
		mkd_cp_async_wait<0>();
		__syncthreads();  /* the ring is free for the next task */

		const int g = lane >> 2, tq = lane & 3;
		if (warp >= WARPS_M * WARPS_N)
			return;
#pragma unroll
		for (int i = 0; i < MI; i++)
#pragma unroll
			for (int j = 0; j < NI; j++)
#pragma unroll
				for (int h = 0; h < 2; h++) {
					int r = m0 + wm * WM + i * 16 + g + h * 8;
					int c = n0 + wn * WN + j * 8 + tq * 2;
					if (r < M && c < N)
						mkd_store2<TC>::st(C + (i64)r * ldc + c,
								   epi(acc[i][j][2 * h], r, c),
								   c + 1 < N ? epi(acc[i][j][2 * h + 1], r, c + 1) : 0.f,
								   c + 1 < N);
				}
	}
};

#endif
