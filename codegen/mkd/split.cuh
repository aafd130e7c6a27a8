/* mkd/split.cuh - adding up what a split plan cut apart (compiler/plan.c).
 *
 * Split-K: a matmul tile's K range was cut into S pieces, each an fp32
 * partial tile in slice s of a workspace [S][rows][cols]; mkd_sumk adds the
 * slices, applies the matmul's epilogue and stores the tile.
 *
 * Split-KV (flash-decoding): a query tile's keys were cut into S ranges,
 * each leaving unnormalised output rows with their running max (log2 units)
 * and sum, [S][rows][D + 2] fp32 (mkd_fa::end_part); mkd_attn_merge
 * rescales every range to the rows' overall max and divides by the total.
 * All threads of the CTA call them; each element is one thread's.
 */
#ifndef MKD_SPLIT_CUH
#define MKD_SPLIT_CUH

#include "base.cuh"
#include "mma.cuh"

/* c[rows][cols] (row stride ldc) = epi(sum over s < S of p[s * slice + r * ldp + col], r, col) */
template <typename TO, typename Epi>
MKD_INLINE void mkd_sumk(const float *p, i64 slice, int S, i64 ldp, TO *c, i64 ldc, int rows,
			 int cols, Epi epi)
{
	if (((cols | ldp | ldc) & 3) == 0 && ((u64)p & 15) == 0) {  /* four columns a thread */
		const int q = cols / 4;
		for (int i = threadIdx.x; i < rows * q; i += blockDim.x) {
			const int r = i / q, col = (i - r * q) * 4;
			const float *x = p + (i64)r * ldp + col;
			float4 a = *(const float4 *)x;
			for (int s = 1; s < S; s++) {
				const float4 b = *(const float4 *)(x + (i64)s * slice);
				a.x += b.x;
				a.y += b.y;
				a.z += b.z;
				a.w += b.w;
			}
			TO *y = c + (i64)r * ldc + col;
			mkd_store2<TO>::st(y, epi(a.x, r, col), epi(a.y, r, col + 1), true);
			mkd_store2<TO>::st(y + 2, epi(a.z, r, col + 2), epi(a.w, r, col + 3), true);
		}
		return;
	}
	for (int i = threadIdx.x; i < rows * cols; i += blockDim.x) {
		const int r = i / cols, col = i - r * cols;
		const float *x = p + (i64)r * ldp + col;
		float a = 0.f;
		for (int s = 0; s < S; s++)
			a += x[(i64)s * slice];
		mkd_store2<TO>::st(c + (i64)r * ldc + col, epi(a, r, col), 0.f, false);
	}
}

/* o[rows][D] (row stride ldo) from the S partial ranges w[s * slice + r *
 * (D + 2) ...]: sum_s 2^(m_s - M) acc_s / sum_s 2^(m_s - M) l_s, M the
 * largest m_s (rows that saw no key: zeros). */
template <typename TO>
MKD_INLINE void mkd_attn_merge(const float *w, i64 slice, int S, int D, TO *o, i64 ldo, int rows)
{
	const int ld = D + 2;
	for (int i = threadIdx.x; i < rows * (D / 2); i += blockDim.x) {
		const int r = i / (D / 2), col = (i - r * (D / 2)) * 2;
		const float *x = w + (i64)r * ld;
		float mx = __uint_as_float(0xff800000u);
		for (int s = 0; s < S; s++)
			mx = fmaxf(mx, x[(i64)s * slice + D]);
		const float base = mx == __uint_as_float(0xff800000u) ? 0.f : mx;
		float l = 0.f, a0 = 0.f, a1 = 0.f;
		for (int s = 0; s < S; s++) {
			const float *y = x + (i64)s * slice;
			float f;
			asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(f) : "f"(y[D] - base));
			l += f * y[D + 1];
			a0 += f * y[col];
			a1 += f * y[col + 1];
		}
		const float inv = l > 0.f ? 1.f / l : 0.f;
		mkd_store2<TO>::st(o + (i64)r * ldo + col, a0 * inv, a1 * inv, true);
	}
}

#endif
