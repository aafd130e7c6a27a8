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
/* the tanh form (PyTorch's gelu(approximate='tanh')) */
struct mkd_gelu_tanh {
	MKD_INLINE float operator()(float x) const
	{
		return 0.5f * x * (1.f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
	}
};
struct mkd_scale {
	float s;
	MKD_INLINE float operator()(float x) const { return x * s; }
};
struct mkd_ident { MKD_INLINE float operator()(float x) const { return x; } };
struct mkd_add { MKD_INLINE float operator()(float a, float b) const { return a + b; } };
struct mkd_mul { MKD_INLINE float operator()(float a, float b) const { return a * b; } };

/* 8 16-bit elements in a uint4 <-> 8 floats, without taking addresses
 * (that would put the vectors in local memory). */
template <typename T> struct mkd_vec8 {  /* T: mkd_bf16 or mkd_f16 */
	static MKD_INLINE void add(float *a, uint4 v)
	{
		u32 w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
		for (int j = 0; j < 4; j++) {
			a[2 * j] += mkd_elem<T>::up((u16)(w[j] & 0xffffu));
			a[2 * j + 1] += mkd_elem<T>::up((u16)(w[j] >> 16));
		}
	}
	static MKD_INLINE void get(float *a, uint4 v)
	{
		a[0] = a[1] = a[2] = a[3] = a[4] = a[5] = a[6] = a[7] = 0.f;
		add(a, v);
	}
	static MKD_INLINE uint4 pack(const float *a)
	{
		return make_uint4(mkd_elem<T>::pk2(a[0], a[1]), mkd_elem<T>::pk2(a[2], a[3]),
				  mkd_elem<T>::pk2(a[4], a[5]), mkd_elem<T>::pk2(a[6], a[7]));
	}
};
template <typename T> struct mkd_is16 { enum { value = 0 }; };
template <> struct mkd_is16<mkd_bf16> { enum { value = 1 }; };
template <> struct mkd_is16<mkd_f16> { enum { value = 1 }; };

MKD_INLINE bool mkd_al16(const void *p, i64 ld) { return (((u64)p & 15) | (ld & 7)) == 0; }

/* 8 weights of a row op: a 16-byte load when 16-bit, else one by one */
template <typename TW, bool V = mkd_is16<TW>::value> struct mkd_row_w {
	static MKD_INLINE void get(float *g, const TW *w)
	{
#pragma unroll
		for (int j = 0; j < 8; j++)
			g[j] = mkd_elem<TW>::ld(w + j);
	}
};
template <typename TW> struct mkd_row_w<TW, true> {
	static MKD_INLINE void get(float *g, const TW *w) { mkd_vec8<TW>::get(g, *(const uint4 *)w); }
};

/* 16-bit in and out, rows 16-byte aligned: 8 elements a load, no divisions
 * per element; false (and nothing done) otherwise. */
template <typename TX, typename TZ, typename TY,
	  bool V = mkd_is16<TX>::value && mkd_is16<TY>::value && mkd_is16<TZ>::value>
struct mkd_ew_vec {
	template <typename F>
	static MKD_INLINE bool run(F, const TX *, i64, const TZ *, i64, bool, TY *, i64, int, int)
	{
		return false;
	}
};
template <typename TX, typename TZ, typename TY>
struct mkd_ew_vec<TX, TZ, TY, true> {
	/* f(x[8], z[8]) in place on x; z is 0 for unary ops */
	template <typename F>
	static MKD_INLINE bool run(F f, const TX *x, i64 ldx, const TZ *z, i64 ldz, bool bcast, TY *y,
				   i64 ldy, int rows, int cols)
	{
		if ((cols & 7) || !mkd_al16(x, ldx) || !mkd_al16(y, ldy) || (z && !mkd_al16(z, bcast ? 0 : ldz)))
			return false;
		const int vpr = cols >> 3, total = rows * vpr;
		for (int i = threadIdx.x; i < total; i += blockDim.x) {
			const int r = i / vpr, c = (i - r * vpr) * 8;
			float a[8], b[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
			mkd_vec8<TX>::get(a, *(const uint4 *)(x + (i64)r * ldx + c));
			if (z)
				mkd_vec8<TZ>::get(b, *(const uint4 *)(z + (bcast ? 0 : (i64)r * ldz) + c));
			f(a, b);
			*(uint4 *)(y + (i64)r * ldy + c) = mkd_vec8<TY>::pack(a);
		}
		return true;
	}
};

template <typename Op> struct mkd_apply1 {
	Op op;
	MKD_INLINE void operator()(float *a, const float *) const
	{
#pragma unroll
		for (int j = 0; j < 8; j++)
			a[j] = op(a[j]);
	}
};
template <typename Op> struct mkd_apply2 {
	Op op;
	MKD_INLINE void operator()(float *a, const float *b) const
	{
#pragma unroll
		for (int j = 0; j < 8; j++)
			a[j] = op(a[j], b[j]);
	}
};

template <typename Op, typename TX, typename TY>
MKD_INLINE void mkd_ew1(Op op, const TX *x, i64 ldx, TY *y, i64 ldy, int rows, int cols)
{
	if (mkd_ew_vec<TX, TX, TY>::run(mkd_apply1<Op>{op}, x, ldx, (const TX *)0, 0, false, y, ldy,
					 rows, cols))
		return;
	for (int r = 0; r < rows; r++)
		for (int c = threadIdx.x; c < cols; c += blockDim.x)
			mkd_elem<TY>::st(y + (i64)r * ldy + c, op(mkd_elem<TX>::ld(x + (i64)r * ldx + c)));
}

/* y = op(a, b); b_row_bcast: b is one row (ldb ignored) added to every row. */
template <typename Op, typename TA, typename TB, typename TY>
MKD_INLINE void mkd_ew2(Op op, const TA *a, i64 lda, const TB *b, i64 ldb, bool b_row_bcast,
			TY *y, i64 ldy, int rows, int cols)
{
	if (mkd_ew_vec<TA, TB, TY>::run(mkd_apply2<Op>{op}, a, lda, b, ldb, b_row_bcast, y, ldy, rows,
					 cols))
		return;
	for (int r = 0; r < rows; r++)
		for (int c = threadIdx.x; c < cols; c += blockDim.x) {
			float bv = mkd_elem<TB>::ld(b + (b_row_bcast ? 0 : (i64)r * ldb) + c);
			mkd_elem<TY>::st(y + (i64)r * ldy + c, op(mkd_elem<TA>::ld(a + (i64)r * lda + c), bv));
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

/* Row ops on 16-bit rows, 16-byte loads.  softmax on rows of up to 32
 * lanes x 4 vectors x 8 elements (1024): the warp keeps its row in
 * registers (one read of memory, the loads all in flight), computes the
 * statistic, writes once; rmsnorm reads a row twice (long_rows). */
enum { MKD_ROW_VECS = 4 };

template <typename TX, typename TY, typename TW,
	  bool V = mkd_is16<TX>::value && mkd_is16<TY>::value>
struct mkd_row_vec {
	static MKD_INLINE bool rmsnorm(const TX *, i64, const TW *, TY *, i64, int, int) { return false; }
	static MKD_INLINE bool softmax(const TX *, i64, TY *, i64, int, int) { return false; }
};
template <typename TX, typename TY, typename TW>
struct mkd_row_vec<TX, TY, TW, true> {
	static MKD_INLINE bool ok(const void *x, i64 ldx, const void *y, i64 ldy, int cols)
	{
		return (cols & 7) == 0 && cols <= 32 * 8 * MKD_ROW_VECS && mkd_al16(x, ldx) && mkd_al16(y, ldy);
	}
	static MKD_INLINE bool rmsnorm(const TX *x, i64 ldx, const TW *w, TY *y, i64 ldy, int rows,
				       int cols)
	{
		if (w && (!mkd_is16<TW>::value || ((u64)w & 15)))
			return false;
		if ((cols & 7) == 0 && mkd_al16(x, ldx) && mkd_al16(y, ldy) && rows * 2 <= (int)(blockDim.x >> 5))
			return few_rows(x, ldx, w, y, ldy, rows, cols);
		/* no row kept in registers, as softmax keeps it: in a noinline
		 * stage beside 128 x 256 matmul tiles that made ptxas spill 1.2 KB
		 * in the kernel (samples/llama_layer.mk: 24 bytes without it, with
		 * CUDA 13.0); rows of up to 1024 read twice, the second time from
		 * the cache, as longer ones always were */
		return (cols & 7) == 0 && mkd_al16(x, ldx) && mkd_al16(y, ldy) &&
		       long_rows(x, ldx, w, y, ldy, rows, cols);
	}
	/* rows fewer than half the CTA's warps (decode: a token or two): g =
	 * warps / rows warps a row, each over every g-th group of 32 vectors,
	 * their sums of squares through shared memory; w goes to the L2 while
	 * they are made, so that the second pass does not wait for device
	 * memory twice.  One warp a row read a Llama row (4096) in 10 us,
	 * which every later stage waited for.  All threads of the CTA call it
	 * (two CTA barriers).  Its loads stay two at a time: more in flight
	 * (four, eight, twelve a thread over the whole task) took registers
	 * the kernel's matmul stages needed across the call, and ptxas
	 * spilled 0.1-1.7 KB in mlp_chain and llama_layer (thirty-fifth
	 * session). */
	static __device__ __noinline__ bool few_rows(const TX *x, i64 ldx, const TW *w, TY *y,
						     i64 ldy, int rows, int cols)
	{
		__shared__ float part[32];
		const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nv = cols >> 3;
		const int g = (int)(blockDim.x >> 5) / rows, r = wid / g, j = wid - r * g;
		const bool on = r < rows;
		const TX *xr = x + (i64)(on ? r : 0) * ldx;
		float ss = 0.f;
		if (on) {
#pragma unroll 2
			for (int c = lane + 32 * j; c < nv; c += 32 * g) {
				float f[8];
				mkd_vec8<TX>::get(f, *(const uint4 *)(xr + 8 * c));
				if (w && r == 0)  /* w to the L2 while the sums are made */
					asm volatile("prefetch.global.L2 [%0];" ::"l"(w + 8 * c));
#pragma unroll
				for (int k = 0; k < 8; k++)
					ss += f[k] * f[k];
			}
		}
		ss = mkd_warp_sum(ss);
		if (lane == 0)
			part[wid] = ss;
		__syncthreads();
		if (on) {
			float tot = 0.f;
			for (int k = 0; k < g; k++)
				tot += part[r * g + k];
			const float inv = rsqrtf(tot / cols + 1e-6f);
#pragma unroll 1
			for (int c = lane + 32 * j; c < nv; c += 32 * g) {
				float f[8], gw[8] = {1.f, 1.f, 1.f, 1.f, 1.f, 1.f, 1.f, 1.f};
				mkd_vec8<TX>::get(f, *(const uint4 *)(xr + 8 * c));
				if (w)
					mkd_row_w<TW>::get(gw, w + 8 * c);
#pragma unroll
				for (int k = 0; k < 8; k++)
					f[k] *= inv * gw[k];
				*(uint4 *)(y + (i64)r * ldy + 8 * c) = mkd_vec8<TY>::pack(f);
			}
		}
		__syncthreads();  /* part[] free for the next call */
		return true;
	}
	/* rmsnorm, a warp a row: 16-byte loads, unrolled so that several are
	 * in flight a lane, over the row twice (the second pass hits the
	 * cache).  Keeping the row's vectors live, as softmax does, made
	 * ptxas spill the kernel's matmul stages (samples/mlp_chain.mk: 3.4
	 * KB; samples/llama_layer.mk: 1.2 KB) */
	static MKD_INLINE bool long_rows(const TX *x, i64 ldx, const TW *w, TY *y, i64 ldy, int rows,
					 int cols)
	{
		const int lane = threadIdx.x & 31, nw = blockDim.x >> 5, nv = cols >> 3;
		for (int r = threadIdx.x >> 5; r < rows; r += nw) {
			const TX *xr = x + (i64)r * ldx;
			float ss = 0.f;
#pragma unroll 4
			for (int c = lane; c < nv; c += 32) {
				float f[8];
				mkd_vec8<TX>::get(f, *(const uint4 *)(xr + 8 * c));
#pragma unroll
				for (int j = 0; j < 8; j++)
					ss += f[j] * f[j];
			}
			ss = mkd_warp_sum(ss);
			const float inv = rsqrtf(ss / cols + 1e-6f);
#pragma unroll 2
			for (int c = lane; c < nv; c += 32) {
				float f[8], g[8] = {1.f, 1.f, 1.f, 1.f, 1.f, 1.f, 1.f, 1.f};
				mkd_vec8<TX>::get(f, *(const uint4 *)(xr + 8 * c));
				if (w)
					mkd_row_w<TW>::get(g, w + 8 * c);
#pragma unroll
				for (int j = 0; j < 8; j++)
					f[j] *= inv * g[j];
				*(uint4 *)(y + (i64)r * ldy + 8 * c) = mkd_vec8<TY>::pack(f);
			}
		}
		return true;
	}
	static MKD_INLINE bool softmax(const TX *x, i64 ldx, TY *y, i64 ldy, int rows, int cols)
	{
		if (!ok(x, ldx, y, ldy, cols))
			return false;
		const int lane = threadIdx.x & 31, nw = blockDim.x >> 5, nv = cols >> 3;
		for (int r = threadIdx.x >> 5; r < rows; r += nw) {
			const TX *xr = x + (i64)r * ldx;
			uint4 v[MKD_ROW_VECS];
			float m = -3.402823466e38f;
#pragma unroll
			for (int k = 0; k < MKD_ROW_VECS; k++)
				if (lane + 32 * k < nv)
					v[k] = *(const uint4 *)(xr + 8 * (lane + 32 * k));
#pragma unroll
			for (int k = 0; k < MKD_ROW_VECS; k++)
				if (lane + 32 * k < nv) {
					float f[8];
					mkd_vec8<TX>::get(f, v[k]);
#pragma unroll
					for (int j = 0; j < 8; j++)
						m = fmaxf(m, f[j]);
				}
			m = mkd_warp_max(m);
			float sum = 0.f;
#pragma unroll
			for (int k = 0; k < MKD_ROW_VECS; k++)
				if (lane + 32 * k < nv) {
					float f[8];
					mkd_vec8<TX>::get(f, v[k]);
#pragma unroll
					for (int j = 0; j < 8; j++)
						sum += __expf(f[j] - m);
				}
			const float inv = 1.f / mkd_warp_sum(sum);
#pragma unroll
			for (int k = 0; k < MKD_ROW_VECS; k++) {
				int c = lane + 32 * k;
				if (c >= nv)
					continue;
				float f[8];
				mkd_vec8<TX>::get(f, v[k]);
#pragma unroll
				for (int j = 0; j < 8; j++)
					f[j] = __expf(f[j] - m) * inv;
				*(uint4 *)(y + (i64)r * ldy + 8 * c) = mkd_vec8<TY>::pack(f);
			}
		}
		return true;
	}
};

/* rmsnorm over each row: y = x / sqrt(mean(x^2) + eps) * w (w may be 0). */
template <typename TX, typename TW, typename TY>
MKD_INLINE void mkd_rmsnorm(const TX *x, i64 ldx, const TW *w, TY *y, i64 ldy, int rows, int cols)
{
	if (mkd_row_vec<TX, TY, TW>::rmsnorm(x, ldx, w, y, ldy, rows, cols))
		return;
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

/* rs[r] = 1 / sqrt(mean(x[r]^2) + eps) for rows < `rows`, one warp a row:
 * the portable tile's rmsnorm folded into a matmul (mkd_mma_tile NORM; on
 * sm_90a the Hopper tile sums the squares as its stages pass).  All
 * threads of the CTA call it; a CTA barrier before it (a task's last tile
 * may still read rs in its epilogue) and after it. */
template <typename TX>
MKD_INLINE void mkd_rms_rows(const TX *x, i64 ldx, int rows, int cols, float *rs)
{
	const int lane = threadIdx.x & 31, nw = blockDim.x >> 5;
	__syncthreads();
	for (int r = threadIdx.x >> 5; r < rows; r += nw) {
		const TX *xr = x + (i64)r * ldx;
		float ss = 0.f;
		for (int c = lane; c < cols; c += 32) {
			const float v = mkd_elem<TX>::ld(xr + c);
			ss += v * v;
		}
		ss = mkd_warp_sum(ss);
		if (lane == 0)
			rs[r] = rsqrtf(ss / cols + 1e-6f);
	}
	__syncthreads();
}

/* layernorm over each row: y = (x - mean) / sqrt(var + 1e-5) * w + b, the
 * biased variance (PyTorch's layer_norm); one warp a row, two passes. */
template <typename TX, typename TW, typename TB, typename TY>
MKD_INLINE void mkd_layernorm(const TX *x, i64 ldx, const TW *w, const TB *b, TY *y, i64 ldy,
			      int rows, int cols)
{
	const int lane = threadIdx.x & 31, nw = blockDim.x >> 5;
	for (int r = threadIdx.x >> 5; r < rows; r += nw) {
		const TX *xr = x + (i64)r * ldx;
		float s = 0.f;
		for (int c = lane; c < cols; c += 32)
			s += mkd_elem<TX>::ld(xr + c);
		const float m = mkd_warp_sum(s) / cols;
		float v = 0.f;
		for (int c = lane; c < cols; c += 32) {
			float d = mkd_elem<TX>::ld(xr + c) - m;
			v += d * d;
		}
		const float inv = rsqrtf(mkd_warp_sum(v) / cols + 1e-5f);
		for (int c = lane; c < cols; c += 32)
			mkd_elem<TY>::st(y + (i64)r * ldy + c,
					 (mkd_elem<TX>::ld(xr + c) - m) * inv * mkd_elem<TW>::ld(w + c) +
					 mkd_elem<TB>::ld(b + c));
	}
}

/* 8 table entries (fp32: two 16-byte loads; else one by one) */
template <typename TC> struct mkd_tab8 {
	static MKD_INLINE void get(float *g, const TC *t)
	{
#pragma unroll
		for (int j = 0; j < 8; j++)
			g[j] = mkd_elem<TC>::ld(t + j);
	}
	static MKD_INLINE bool al(const TC *, i64) { return true; }
};
template <> struct mkd_tab8<float> {
	static MKD_INLINE void get(float *g, const float *t)
	{
		const float4 a = *(const float4 *)t, b = *(const float4 *)(t + 4);
		g[0] = a.x, g[1] = a.y, g[2] = a.z, g[3] = a.w;
		g[4] = b.x, g[5] = b.y, g[6] = b.z, g[7] = b.w;
	}
	static MKD_INLINE bool al(const float *t, i64 ld) { return (((u64)t & 15) | (ld & 3)) == 0; }
};

/* 16-bit rows, 16-byte aligned, half a head a multiple of 8: a thread
 * rotates 8 pairs (x[j], x[j + D/2]) at once -- two 16-byte loads of x, the
 * tables' 8 entries at j and at j + D/2, two 16-byte stores -- with 32-bit
 * index arithmetic; false (nothing done) otherwise. */
template <typename TX, typename TC, typename TS, typename TY,
	  bool V = mkd_is16<TX>::value && mkd_is16<TY>::value>
struct mkd_rope_vec {
	static MKD_INLINE bool run(const TX *, i64, const TC *, const TS *, i64, TY *, i64, int, int)
	{
		return false;
	}
};
template <typename TX, typename TC, typename TS, typename TY>
struct mkd_rope_vec<TX, TC, TS, TY, true> {
	static MKD_INLINE bool run(const TX *x, i64 ldx, const TC *cs, const TS *sn, i64 ldc, TY *y,
				   i64 ldy, int rows, int cols)
	{
		const int D = (int)ldc, h = D >> 1;
		if ((h & 7) || cols % D || !mkd_al16(x, ldx) || !mkd_al16(y, ldy) ||
		    !mkd_tab8<TC>::al(cs, ldc) || !mkd_tab8<TS>::al(sn, ldc))
			return false;
		const int g = h >> 3, per = cols / D * g;  /* 8-pair groups: a head's, a row's */
		const int n = rows * per;
		for (int i = threadIdx.x; i < n; i += blockDim.x) {
			const int r = i / per, k = i - r * per, j = (k % g) << 3;
			const int c = (k / g) * D + j;  /* the group's first column */
			const TX *xr = x + (i64)r * ldx + c;
			float a[8], b[8], ca[8], cb[8], sa[8], sb[8];
			mkd_vec8<TX>::get(a, *(const uint4 *)xr);
			mkd_vec8<TX>::get(b, *(const uint4 *)(xr + h));
			mkd_tab8<TC>::get(ca, cs + (i64)r * ldc + j);
			mkd_tab8<TC>::get(cb, cs + (i64)r * ldc + j + h);
			mkd_tab8<TS>::get(sa, sn + (i64)r * ldc + j);
			mkd_tab8<TS>::get(sb, sn + (i64)r * ldc + j + h);
			float lo[8], hi[8];
#pragma unroll
			for (int e = 0; e < 8; e++) {
				lo[e] = a[e] * ca[e] - b[e] * sa[e];
				hi[e] = b[e] * cb[e] + a[e] * sb[e];
			}
			TY *yr = y + (i64)r * ldy + c;
			*(uint4 *)yr = mkd_vec8<TY>::pack(lo);
			*(uint4 *)(yr + h) = mkd_vec8<TY>::pack(hi);
		}
		return true;
	}
};

/* Rotary embedding, Llama's half rotation, on rows of whole heads: row r is
 * token r of the tables cs, sn (rows of ldc, D = ldc wide); in each head of
 * D columns y[j] = x[j] cs[j] - x[j + D/2] sn[j] for j < D/2, and
 * x[j] cs[j] + x[j - D/2] sn[j] after.  A box is at most 64 KB: 32-bit
 * indices. */
template <typename TX, typename TC, typename TS, typename TY>
MKD_INLINE void mkd_rope(const TX *x, i64 ldx, const TC *cs, const TS *sn, i64 ldc, TY *y, i64 ldy,
			 int rows, int cols)
{
	if (mkd_rope_vec<TX, TC, TS, TY>::run(x, ldx, cs, sn, ldc, y, ldy, rows, cols))
		return;
	const int D = (int)ldc, h = D >> 1;
	const int n = rows * cols;
	for (int i = threadIdx.x; i < n; i += blockDim.x) {
		const int r = i / cols, c = i - r * cols, j = c % D;
		const TX *xr = x + (i64)r * ldx;
		const float o = j < h ? -mkd_elem<TX>::ld(xr + c + h) : mkd_elem<TX>::ld(xr + c - h);
		mkd_elem<TY>::st(y + (i64)r * ldy + c,
				 mkd_elem<TX>::ld(xr + c) * mkd_elem<TC>::ld(cs + (i64)r * ldc + j) +
				 o * mkd_elem<TS>::ld(sn + (i64)r * ldc + j));
	}
}

template <typename TX, typename TY>
MKD_INLINE void mkd_softmax(const TX *x, i64 ldx, TY *y, i64 ldy, int rows, int cols)
{
	if (mkd_row_vec<TX, TY, TX>::softmax(x, ldx, y, ldy, rows, cols))
		return;
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

/* dst = sum of n sources (boxes of one shape, own strides), in fp32; 8
 * elements a load when 16-bit and every row is 16-byte aligned.  The
 * sources' pointers and strides sit in shared memory: up to 17 of them kept
 * out of registers, which the kernel's inlined GEMM engine needs.  Call
 * after a barrier that publishes p[] and ld[]. */
template <typename TX, typename TY, bool V = mkd_is16<TX>::value && mkd_is16<TY>::value>
struct mkd_reduce_n_vec {
	static MKD_INLINE bool run(const TX *const *, const int *, int, TY *, i64, int, int)
	{
		return false;
	}
};
template <typename TX, typename TY>
struct mkd_reduce_n_vec<TX, TY, true> {
	static MKD_INLINE bool run(const TX *const *p, const int *ld, int n, TY *dst, i64 ldd, int rows,
				   int cols)
	{
		bool vec = (cols & 7) == 0 && mkd_al16(dst, ldd);
		for (int k = 0; k < n && vec; k++)
			vec = mkd_al16(p[k], ld[k]);
		if (!vec)
			return false;
		const int vpr = cols >> 3, total = rows * vpr;
		for (int i = threadIdx.x; i < total; i += blockDim.x) {
			const int r = i / vpr, c = (i - r * vpr) * 8;
			float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
#pragma unroll 1
			for (int k = 0; k < n; k++)
				mkd_vec8<TX>::add(acc, *(const uint4 *)(p[k] + (i64)r * ld[k] + c));
			*(uint4 *)(dst + (i64)r * ldd + c) = mkd_vec8<TY>::pack(acc);
		}
		return true;
	}
};

template <typename TX, typename TY>
MKD_INLINE void mkd_reduce_sum_n(const TX *const *p, const int *ld, int n, TY *dst, i64 ldd,
				 int rows, int cols)
{
	if (mkd_reduce_n_vec<TX, TY>::run(p, ld, n, dst, ldd, rows, cols))
		return;
	const int total = rows * cols;
	for (int i = threadIdx.x; i < total; i += blockDim.x) {
		const int r = i / cols, c = i - r * cols;
		float acc = 0.f;
		for (int k = 0; k < n; k++)
			acc += mkd_elem<TX>::ld(p[k] + (i64)r * ld[k] + c);
		mkd_elem<TY>::st(dst + (i64)r * ldd + c, acc);
	}
}

/* y[i * ldy + j] = sum over k < nk of x[i * sa + j * sb + k * sk], for
 * i < na, j < nb: a sum over a dimension other than the last (one thread
 * an output element, neighbouring threads on neighbouring j; fp32, k in
 * order). */
template <typename TX, typename TY>
MKD_INLINE void mkd_axis_sum(const TX *x, i64 sa, i64 sb, i64 sk, int na, int nb, int nk, TY *y,
			     i64 ldy)
{
	for (int e = threadIdx.x; e < na * nb; e += blockDim.x) {
		const int i = e / nb, j = e % nb;
		const TX *q = x + (i64)i * sa + (i64)j * sb;
		float s = 0.f;
		for (int k = 0; k < nk; k++)
			s += mkd_elem<TX>::ld(q + (i64)k * sk);
		mkd_elem<TY>::st(y + (i64)i * ldy + j, s);
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
