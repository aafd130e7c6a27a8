/* mkd/ew.cuh - elementwise and row-wise tiles, computed in fp32.
 *
 * A tile is a box of rows x cols of a row-major tensor; every thread of the
 * CTA takes part.  Unary, binary (the second operand either the same shape
 * or one row broadcast over all rows) and row ops (rmsnorm, softmax: one
 * warp per row, two passes over the row).
 */
#ifndef MKD_EW_CUH
#define MKD_EW_CUH

#include "base.cuh"

struct mkd_relu { MKD_INLINE float operator()(float x) const { return fmaxf(x, 0.f); } };
struct mkd_silu { MKD_INLINE float operator()(float x) const { return x / (1.f + __expf(-x)); } };
struct mkd_gelu {
	MKD_INLINE float operator()(float x) const { return 0.5f * x * (1.f + erff(x * 0.7071067811865476f)); }
};
struct mkd_scale {
	float s;
	MKD_INLINE float operator()(float x) const { return x * s; }
};
struct mkd_ident { MKD_INLINE float operator()(float x) const { return x; } };
struct mkd_add { MKD_INLINE float operator()(float a, float b) const { return a + b; } };
struct mkd_mul { MKD_INLINE float operator()(float a, float b) const { return a * b; } };

template <typename Op, typename TX, typename TY>
MKD_INLINE void mkd_ew1(Op op, const TX *x, i64 ldx, TY *y, i64 ldy, int rows, int cols)
{
	const i64 n = (i64)rows * cols;
	for (i64 i = threadIdx.x; i < n; i += blockDim.x) {
		i64 r = i / cols, c = i - r * cols;
		mkd_elem<TY>::st(y + r * ldy + c, op(mkd_elem<TX>::ld(x + r * ldx + c)));
	}
}

/* y = op(a, b); b_row_bcast: b is one row (ldb ignored) added to every row. */
template <typename Op, typename TA, typename TB, typename TY>
MKD_INLINE void mkd_ew2(Op op, const TA *a, i64 lda, const TB *b, i64 ldb, bool b_row_bcast,
			TY *y, i64 ldy, int rows, int cols)
{
	const i64 n = (i64)rows * cols;
	for (i64 i = threadIdx.x; i < n; i += blockDim.x) {
		i64 r = i / cols, c = i - r * cols;
		float bv = mkd_elem<TB>::ld(b + (b_row_bcast ? c : r * ldb + c));
		mkd_elem<TY>::st(y + r * ldy + c, op(mkd_elem<TA>::ld(a + r * lda + c), bv));
	}
}

MKD_INLINE float mkd_warp_sum(float v)
{
#pragma unroll
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

MKD_INLINE float mkd_warp_max(float v)
{
#pragma unroll
	for (int o = 16; o > 0; o >>= 1)
		v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}

/* rmsnorm over each row: y = x / sqrt(mean(x^2) + eps) * w (w may be 0). */
template <typename TX, typename TW, typename TY>
MKD_INLINE void mkd_rmsnorm(const TX *x, i64 ldx, const TW *w, TY *y, i64 ldy, int rows, int cols)
{
	const int lane = threadIdx.x & 31, nw = blockDim.x >> 5;
	for (int r = threadIdx.x >> 5; r < rows; r += nw) {
		const TX *xr = x + (i64)r * ldx;
		float ss = 0.f;
		for (int c = lane; c < cols; c += 32) {
			float v = mkd_elem<TX>::ld(xr + c);
			ss += v * v;
		}
		ss = mkd_warp_sum(ss);
		float inv = rsqrtf(ss / cols + 1e-6f);
		for (int c = lane; c < cols; c += 32) {
			float v = mkd_elem<TX>::ld(xr + c) * inv;
			if (w)
				v *= mkd_elem<TW>::ld(w + c);
			mkd_elem<TY>::st(y + (i64)r * ldy + c, v);
		}
	}
}

template <typename TX, typename TY>
MKD_INLINE void mkd_softmax(const TX *x, i64 ldx, TY *y, i64 ldy, int rows, int cols)
{
	const int lane = threadIdx.x & 31, nw = blockDim.x >> 5;
	for (int r = threadIdx.x >> 5; r < rows; r += nw) {
		const TX *xr = x + (i64)r * ldx;
		float m = -3.402823466e38f;
		for (int c = lane; c < cols; c += 32)
			m = fmaxf(m, mkd_elem<TX>::ld(xr + c));
		m = mkd_warp_max(m);
		float s = 0.f;
		for (int c = lane; c < cols; c += 32)
			s += __expf(mkd_elem<TX>::ld(xr + c) - m);
		s = mkd_warp_sum(s);
		float inv = 1.f / s;
		for (int c = lane; c < cols; c += 32)
			mkd_elem<TY>::st(y + (i64)r * ldy + c, __expf(mkd_elem<TX>::ld(xr + c) - m) * inv);
	}
}

/* N source boxes of one shape (own strides), held in registers: set()
 * with a loop the compiler unrolls (N is a constant). */
template <typename T, int N>
struct mkd_srcs {
	const T *p[N];
	i64 ld[N];
	MKD_INLINE void set(int k, const T *ptr, i64 stride)
	{
#pragma unroll
		for (int j = 0; j < N; j++)
			if (j == k) {
				p[j] = ptr;
				ld[j] = stride;
			}
	}
};

/* dst = sum of the sources, in fp32; 8 elements a load when 16-bit and
 * every row is 16-byte aligned. */
template <typename TX, int N, typename TY>
MKD_INLINE void mkd_reduce_sum(const mkd_srcs<TX, N> &s, TY *dst, i64 ldd, int rows, int cols)
{
	bool vec = sizeof(TX) == 2 && sizeof(TY) == 2 && (cols & 7) == 0 &&
		   ((u64)dst & 15) == 0 && (ldd & 7) == 0;
#pragma unroll
	for (int k = 0; k < N; k++)
		vec = vec && ((u64)s.p[k] & 15) == 0 && (s.ld[k] & 7) == 0;
	if (vec) {
		const int vpr = cols >> 3;
		const i64 total = (i64)rows * vpr;
		for (i64 i = threadIdx.x; i < total; i += blockDim.x) {
			i64 r = i / vpr, c = (i - r * vpr) * 8;
			float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
#pragma unroll
			for (int k = 0; k < N; k++) {
				uint4 v = *(const uint4 *)(s.p[k] + r * s.ld[k] + c);
				const TX *e = (const TX *)&v;
#pragma unroll
				for (int j = 0; j < 8; j++)
					acc[j] += mkd_elem<TX>::ld(e + j);
			}
			uint4 o;
			TY *oe = (TY *)&o;
#pragma unroll
			for (int j = 0; j < 8; j++)
				mkd_elem<TY>::st(oe + j, acc[j]);
			*(uint4 *)(dst + r * ldd + c) = o;
		}
		return;
	}
	const i64 total = (i64)rows * cols;
	for (i64 i = threadIdx.x; i < total; i += blockDim.x) {
		i64 r = i / cols, c = i - r * cols;
		float acc = 0.f;
#pragma unroll
		for (int k = 0; k < N; k++)
			acc += mkd_elem<TX>::ld(s.p[k] + r * s.ld[k] + c);
		mkd_elem<TY>::st(dst + r * ldd + c, acc);
	}
}

/* y[r] = sum of row r of x (one warp a row). */
template <typename TX, typename TY>
MKD_INLINE void mkd_row_sum(const TX *x, i64 ldx, TY *y, int rows, int cols)
{
	const int lane = threadIdx.x & 31, nw = blockDim.x >> 5;
	for (int r = threadIdx.x >> 5; r < rows; r += nw) {
		float s = 0.f;
		for (int c = lane; c < cols; c += 32)
			s += mkd_elem<TX>::ld(x + (i64)r * ldx + c);
		s = mkd_warp_sum(s);
		if (lane == 0)
			mkd_elem<TY>::st(y + r, s);
	}
}

#endif
