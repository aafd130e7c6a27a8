/* mkd/base.cuh - integer types, element types and conversions.
 *
 * NVRTC gets no system or toolkit headers from us, so the device library is
 * self-contained: bf16/f16 are 16-bit storage types converted with PTX cvt
 * (round to nearest even), and all arithmetic happens in fp32.
 */
#ifndef MKD_BASE_CUH
#define MKD_BASE_CUH

typedef unsigned long long u64;
typedef long long i64;
typedef unsigned int u32;
typedef unsigned short u16;

#define MKD_INLINE __device__ __forceinline__

struct __align__(2) mkd_bf16 { u16 x; };
struct __align__(2) mkd_f16 { u16 x; };
struct __align__(1) mkd_e4m3 { unsigned char x; };

MKD_INLINE float mkd_bf16_f32(u16 h) { return __uint_as_float((u32)h << 16); }
MKD_INLINE u16 mkd_f32_bf16(float f)
{
	u16 r;
	asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(f));
	return r;
}
MKD_INLINE float mkd_f16_f32(u16 h)
{
	float f;
	asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
	return f;
}
MKD_INLINE u16 mkd_f32_f16(float f)
{
	u16 r;
	asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(f));
	return r;
}
/* two floats -> packed bf16x2 (lo in the low half) */
MKD_INLINE u32 mkd_pack_bf16x2(float lo, float hi)
{
	u32 r;
	asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
	return r;
}
MKD_INLINE u32 mkd_pack_f16x2(float lo, float hi)
{
	u32 r;
	asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
	return r;
}

/* Element-type traits: load to float, store from float; for the 16-bit
 * types also a raw half to float (up) and two floats packed (pk2). */
template <typename T> struct mkd_elem;
template <> struct mkd_elem<mkd_bf16> {
	static MKD_INLINE float ld(const mkd_bf16 *p) { return mkd_bf16_f32(p->x); }
	static MKD_INLINE void st(mkd_bf16 *p, float v) { p->x = mkd_f32_bf16(v); }
	static MKD_INLINE float up(u16 h) { return mkd_bf16_f32(h); }
	static MKD_INLINE u32 pk2(float lo, float hi) { return mkd_pack_bf16x2(lo, hi); }
};
template <> struct mkd_elem<mkd_f16> {
	static MKD_INLINE float ld(const mkd_f16 *p) { return mkd_f16_f32(p->x); }
	static MKD_INLINE void st(mkd_f16 *p, float v) { p->x = mkd_f32_f16(v); }
	static MKD_INLINE float up(u16 h) { return mkd_f16_f32(h); }
	static MKD_INLINE u32 pk2(float lo, float hi) { return mkd_pack_f16x2(lo, hi); }
};
template <> struct mkd_elem<float> {
	static MKD_INLINE float ld(const float *p) { return *p; }
	static MKD_INLINE void st(float *p, float v) { *p = v; }
};
template <> struct mkd_elem<int> {
	static MKD_INLINE float ld(const int *p) { return (float)*p; }
	static MKD_INLINE void st(int *p, float v) { *p = __float2int_rn(v); }
};

/* a generic pointer into shared memory as a 32-bit shared address */
MKD_INLINE u32 mkd_smem_addr(const void *p)
{
	u32 a;
	asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }"
	    : "=r"(a) : "l"(p));
	return a;
}

/* The kernel's dynamic shared memory, rounded up to 1024 bytes (where
 * the Hopper tiles put their rings), as a shared address made from its
 * symbol: ptxas makes it anew at each use instead of keeping (and
 * spilling) a register for it; the tiles' `smem` is this memory. */
MKD_INLINE u32 mkd_dyn_smem_1k()
{
	extern __shared__ __align__(128) char mkd_dyn_smem[];
	return (mkd_smem_addr(mkd_dyn_smem) + 1023) & ~1023u;
}

/* 64 bits at a 32-bit shared address (8-byte aligned) */
MKD_INLINE void mkd_sts_u64(u32 a, u64 v)
{
	asm volatile("st.shared.u64 [%0], %1;" :: "r"(a), "l"(v) : "memory");
}
MKD_INLINE u64 mkd_lds_u64(u32 a)
{
	u64 v;
	asm volatile("ld.shared.u64 %0, [%1];" : "=l"(v) : "r"(a) : "memory");
	return v;
}

/* named barriers: n threads (whole warps) meet at barrier id; arrive does
 * not wait */
MKD_INLINE void mkd_bar_sync(int id, int n)
{
	asm volatile("bar.sync %0, %1;" :: "r"(id), "r"(n) : "memory");
}
MKD_INLINE void mkd_bar_arrive(int id, int n)
{
	asm volatile("bar.arrive %0, %1;" :: "r"(id), "r"(n) : "memory");
}

MKD_INLINE u64 mkd_globaltimer()
{
	u64 t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

#endif
