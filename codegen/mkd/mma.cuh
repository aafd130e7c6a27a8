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
 * The CTA may have more than 8 warps (kernels built for the Hopper engine
 * have 12): all threads load, the first 8 warps compute.
 */
#ifndef MKD_MMA_CUH
#define MKD_MMA_CUH

#include "base.cuh"

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

/* Epilogue functor applied to each fp32 result before the store. */
struct mkd_epi_none { MKD_INLINE float operator()(float x) const { return x; } };

template <typename T, typename TC, int BM, int BN, int BK, int STAGES>
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
	static_assert(sizeof(T) == 2, "mma.sync tile takes 16-bit inputs");
	static_assert(BM % (16 * WARPS_M) == 0 && BN % (8 * WARPS_N) == 0, "tile vs warps");
	static_assert(BK % 16 == 0 && STAGES >= 2, "BK multiple of 16");

	static MKD_INLINE void load_stage(const T *A, i64 lda, const T *B, i64 ldb,
					  int M, int N, int K, int m0, int n0, int k0,
					  T *as, T *bs)
	{
		const int t = threadIdx.x, nt = blockDim.x;
		/* A: BM rows x BK/8 chunks */
		for (int i = t; i < BM * (BK / 8); i += nt) {
			int r = i / (BK / 8), c = (i % (BK / 8)) * 8;
			int gr = m0 + r, gc = k0 + c;
			bool ok = gr < M && gc < K;
			const T *src = ok ? A + (i64)gr * lda + gc : A;
			mkd_cp_async16(mkd_smem_addr(as + r * AS + c), src, ok);
		}
		/* B: BK rows x BN/8 chunks */
		for (int i = t; i < BK * (BN / 8); i += nt) {
			int r = i / (BN / 8), c = (i % (BN / 8)) * 8;
			int gr = k0 + r, gc = n0 + c;
			bool ok = gr < K && gc < N;
			const T *src = ok ? B + (i64)gr * ldb + gc : B;
			mkd_cp_async16(mkd_smem_addr(bs + r * BS + c), src, ok);
		}
	}

	template <typename Epi>
	static __device__ void run(const T *A, i64 lda, const T *B, i64 ldb, TC *C, i64 ldc,
				   int M, int N, int K, int m0, int n0, char *smem, Epi epi)
	{
		T *as = (T *)smem;
		T *bs = as + STAGES * A_ELEMS;
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
					   as + s * A_ELEMS, bs + s * B_ELEMS);
			mkd_cp_async_commit();
		}
		for (int kt = 0; kt < kt_n; kt++) {
			mkd_cp_async_wait<STAGES - 2>();
			__syncthreads();
			int nk = kt + STAGES - 1;
			if (nk < kt_n)
				load_stage(A, lda, B, ldb, M, N, K, m0, n0, nk * BK,
					   as + (nk % STAGES) * A_ELEMS, bs + (nk % STAGES) * B_ELEMS);
			mkd_cp_async_commit();
			const T *a_s = as + (kt % STAGES) * A_ELEMS;
			const T *b_s = bs + (kt % STAGES) * B_ELEMS;
			if (warp >= WARPS_M * WARPS_N)  /* kernels of 3 warpgroups: 4 warps idle */
				continue;
#pragma unroll
			for (int kk = 0; kk < BK / 16; kk++) {
				u32 af[MI][4], bf[NI][2];
#pragma unroll
				for (int i = 0; i < MI; i++) {
					const T *p = a_s + (wm * WM + i * 16 + (lane & 15)) * AS +
						     kk * 16 + (lane >> 4) * 8;
					mkd_ldsm_x4(af[i], mkd_smem_addr(p));
				}
#pragma unroll
				for (int j = 0; j < NI; j++) {
					const T *p = b_s + (kk * 16 + (lane & 15)) * BS + wn * WN + j * 8;
					asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];"
						     : "=r"(bf[j][0]), "=r"(bf[j][1])
						     : "r"(mkd_smem_addr(p)));
				}
#pragma unroll
				for (int i = 0; i < MI; i++)
#pragma unroll
					for (int j = 0; j < NI; j++)
						mkd_mma_op<T>::mma(acc[i][j], af[i], bf[j]);
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
								   epi(acc[i][j][2 * h]),
								   epi(acc[i][j][2 * h + 1]), c + 1 < N);
				}
	}
};

#endif
