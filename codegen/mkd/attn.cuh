/* mkd/attn.cuh - an attention tile with online softmax: up to 64 query
 * rows against key/value blocks that arrive one after another (ring
 * attention), state kept in shared memory between blocks.
 *
 * Correct and simple, on CUDA cores: a warp per query row at a time, lanes
 * split the head dimension.  Causal masking compares global positions.
 */
#ifndef MKD_ATTN_CUH
#define MKD_ATTN_CUH

#include "base.cuh"
#include "ew.cuh"

#define MKD_ATTN_ROWS 64

template <int D>
struct mkd_attn_state {
	int ok;
	float scale;
	float m[MKD_ATTN_ROWS], l[MKD_ATTN_ROWS];
	float q[MKD_ATTN_ROWS][D];
	float acc[MKD_ATTN_ROWS][D];
};

template <int D, typename TQ>
MKD_INLINE void mkd_attn_begin(mkd_attn_state<D> *st, const TQ *q, i64 ldq, int rows, float scale)
{
	for (int i = threadIdx.x; i < rows * D; i += blockDim.x) {
		int r = i / D, c = i - r * D;
		st->q[r][c] = mkd_elem<TQ>::ld(q + (i64)r * ldq + c) * scale;
		st->acc[r][c] = 0.f;
	}
	for (int r = threadIdx.x; r < rows; r += blockDim.x) {
		st->m[r] = -3.402823466e38f;
		st->l[r] = 0.f;
	}
	__syncthreads();
}

/* One key/value block of nk rows; qpos0 / kpos0: global positions of the
 * first query and key (causal masking). */
template <int D, typename TK>
MKD_INLINE void mkd_attn_block(mkd_attn_state<D> *st, const TK *k, const TK *v, i64 ldk, int nk,
			       int rows, int causal, i64 qpos0, i64 kpos0)
{
	enum { PER = D / 32 };
	const int lane = threadIdx.x & 31, nw = blockDim.x >> 5;
	for (int r = threadIdx.x >> 5; r < rows; r += nw) {
		float q[PER], acc[PER];
#pragma unroll
		for (int j = 0; j < PER; j++) {
			q[j] = st->q[r][lane + 32 * j];
			acc[j] = st->acc[r][lane + 32 * j];
		}
		float m = st->m[r], l = st->l[r];
		int n = nk;
		if (causal && kpos0 + n - 1 > qpos0 + r)
			n = (int)(qpos0 + r - kpos0 + 1);
		for (int key = 0; key < n; key++) {
			const TK *kr = k + (i64)key * ldk, *vr = v + (i64)key * ldk;
			float s = 0.f;
#pragma unroll
			for (int j = 0; j < PER; j++)
				s += q[j] * mkd_elem<TK>::ld(kr + lane + 32 * j);
			s = mkd_warp_sum(s);
			float mn = fmaxf(m, s), corr = __expf(m - mn), pr = __expf(s - mn);
			l = l * corr + pr;
#pragma unroll
			for (int j = 0; j < PER; j++)
				acc[j] = acc[j] * corr + pr * mkd_elem<TK>::ld(vr + lane + 32 * j);
			m = mn;
		}
#pragma unroll
		for (int j = 0; j < PER; j++)
			st->acc[r][lane + 32 * j] = acc[j];
		if (lane == 0) {
			st->m[r] = m;
			st->l[r] = l;
		}
	}
	__syncthreads();
}

template <int D, typename TO>
MKD_INLINE void mkd_attn_end(mkd_attn_state<D> *st, TO *o, i64 ldo, int rows)
{
	for (int i = threadIdx.x; i < rows * D; i += blockDim.x) {
		int r = i / D, c = i - r * D;
		float l = st->l[r];
		mkd_elem<TO>::st(o + (i64)r * ldo + c, l > 0.f ? st->acc[r][c] / l : 0.f);
	}
	__syncthreads();
}

#endif
