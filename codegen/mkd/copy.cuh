/* mkd/copy.cuh - moving bytes: 16-byte vectorised copies by a whole CTA.
 *
 * Works for local memory, a peer's memory mapped over NVLink, and other
 * ranks' buffers on the same GPU alike: they are all plain global addresses.
 * Four 16-byte loads are in flight per thread before the first store.
 */
#ifndef MKD_COPY_CUH
#define MKD_COPY_CUH

#include "base.cuh"

MKD_INLINE uint4 mkd_ld16(const void *p)
{
	uint4 v;
	asm volatile("ld.global.v4.u32 {%0,%1,%2,%3}, [%4];"
		     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p) : "memory");
	return v;
}

MKD_INLINE void mkd_st16(void *p, uint4 v)
{
	asm volatile("st.global.v4.u32 [%0], {%1,%2,%3,%4};"
		     :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}

/* rows x row_bytes, strides in bytes; every thread of the CTA takes part. */
MKD_INLINE void mkd_copy_2d(char *dst, i64 dst_ld, const char *src, i64 src_ld,
			    i64 rows, i64 row_bytes)
{
	const int nt = blockDim.x, t = threadIdx.x;
	if (row_bytes == dst_ld && row_bytes == src_ld) {
		row_bytes *= rows;  /* contiguous: one long row */
		rows = 1;
	}
	bool vec = ((((u64)dst | (u64)src | (u64)dst_ld | (u64)src_ld |
		      (u64)row_bytes) & 15) == 0);
	if (vec) {
		const i64 vpr = row_bytes >> 4, total = rows * vpr;
		enum { U = 4 };
		i64 i = t;
		for (; i + (U - 1) * nt < total; i += U * nt) {
			uint4 v[U];
#pragma unroll
			for (int u = 0; u < U; u++) {
				i64 j = i + u * nt, r = j / vpr, c = j - r * vpr;
				v[u] = mkd_ld16(src + r * src_ld + c * 16);
			}
#pragma unroll
			for (int u = 0; u < U; u++) {
				i64 j = i + u * nt, r = j / vpr, c = j - r * vpr;
				mkd_st16(dst + r * dst_ld + c * 16, v[u]);
			}
		}
		for (; i < total; i += nt) {
			i64 r = i / vpr, c = i - r * vpr;
			mkd_st16(dst + r * dst_ld + c * 16, mkd_ld16(src + r * src_ld + c * 16));
		}
		return;
	}
	const i64 total = rows * row_bytes;
	for (i64 i = t; i < total; i += nt) {
		i64 r = i / row_bytes, c = i - r * row_bytes;
		dst[r * dst_ld + c] = src[r * src_ld + c];
	}
}

#endif
