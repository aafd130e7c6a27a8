/* mkd/copy.cuh - moving bytes: a whole CTA copies a 2-D box of bytes.
 *
 * Two methods, same arguments (rows x row_bytes, strides in bytes; every
 * thread of the CTA calls):
 *
 *   mkd_copy_2d       16-byte vector loads and stores by every thread, four
 *                     loads in flight per thread before the first store.
 *                     Any alignment (bytes when not 16-aligned), no shared
 *                     memory, any architecture.  Returns without a barrier.
 *
 *   mkd_copy_bulk_2d  the TMA bulk-copy engine (sm_90): one thread moves the
 *                     box global -> shared -> global in chunks through a
 *                     ring of shared-memory stages; the other threads wait
 *                     at the closing barrier.  Needs 16-byte aligned
 *                     addresses, strides and row_bytes, and scratch shared
 *                     memory; otherwise (or before sm_90) it is mkd_copy_2d.
 *
 * Both work for local memory, a peer's memory mapped over NVLink, and other
 * ranks' buffers on the same GPU alike: all are plain global addresses.
 * docs/copies.md says which to pick.  A gather of rows runs the bulk ring
 * too (mkd_bulk_stages, mkd_bulk_plan.srcv, mkd_bulk_go: the MoE dispatch,
 * mkd/moe.cuh).
 *
 * The bulk protocol.  Scratch layout: smem rounded up to 128 bytes holds S
 * mbarriers (count 1, one per stage) in a 128-byte header, then S stages of
 * C bytes (C = the chunk, 16 KB by default, shrunk so that two stages fit;
 * S = as many as fit, at most 16).  The box is cut into chunks of at most C
 * bytes: whole rows when a row fits in C (one bulk op per row), else pieces
 * of one row.  Chunk j uses stage s = j % S, round r = j / S.  Thread 0:
 *
 *   entry     every thread: fence.proxy.async.shared::cta and .global
 *             (its earlier generic accesses to the scratch, and generic
 *             writes to the source, ordered before the bulk engine's; not
 *             the plain fence.proxy.async, which costs a MEMBAR.GPU), then
 *             __syncthreads.  Thread 0 initialises the mbarriers, then
 *             fence.mbarrier_init.release.cluster.
 *   load j    mbarrier.arrive.expect_tx(full[s], bytes of j), then one
 *             cp.async.bulk.shared::cluster.global.mbarrier::complete_tx
 *             per row piece: the phase of round r completes when all bytes
 *             have landed.  Chunks 0..S-1 are loaded up front.
 *   store j   wait full[s] for parity r & 1, then one
 *             cp.async.bulk.global.shared::cta.bulk_group per row piece and
 *             cp.async.bulk.commit_group (one group per chunk).
 *   refill    after store j: cp.async.bulk.wait_group.read 1 (the store of
 *             chunk j-1 has finished reading its stage; only j's may still
 *             read), then load chunk j-1+S into that stage.  So S-1 loads
 *             and two stores are in flight.
 *   exit      cp.async.bulk.wait_group 0 (not .read: every store's writes
 *             are performed and visible to thread 0), fence.proxy.async
 *             .global and .shared::cta (async-proxy writes ordered before
 *             thread 0's later generic operations: the release that
 *             signals the consumers, and generic reuse of the scratch),
 *             mbarrier.inval, then every thread __syncthreads.  After the
 *             call the destination is written and the scratch is plain
 *             shared memory again, so thread 0 may signal a flag with a
 *             release at once, as the megakernel's task loop does.
 *
 * Nothing is kept across calls: barriers are initialised and invalidated
 * in each.  Waits are bounded: an mbarrier phase that does not complete
 * within MKD_BULK_TIMEOUT_NS traps (a lost transfer, never a slow one).
 */
#ifndef MKD_COPY_CUH
#define MKD_COPY_CUH

#include "base.cuh"
#include "mbar.cuh"

MKD_INLINE uint4 mkd_ld16(const void *p)
{
	uint4 v;
	asm volatile("ld.global.v4.u32 {%0,%1,%2,%3}, [%4];"
		     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p) : "memory");
	return v;
}

/* The same for data read once (evict first): volatile keeps it after an
 * acquire, and without the memory clobber a group of them goes out
 * together (the MoE combine, mkd_choices_sum8). */
MKD_INLINE uint4 mkd_ld16_once(const void *p)
{
	uint4 v;
	asm volatile("ld.global.cs.v4.u32 {%0,%1,%2,%3}, [%4];"
		     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
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

/* ---- TMA bulk copies ------------------------------------------------------ */

#ifndef MKD_BULK_CHUNK
#define MKD_BULK_CHUNK 16384u            /* bytes per stage, by default */
#endif
#ifndef MKD_BULK_TIMEOUT_NS
#define MKD_BULK_TIMEOUT_NS 10000000000ull
#endif
#define MKD_BULK_MAX_STAGES 16
#define MKD_BULK_HEAD 128                /* the stage mbarriers, padded */
#define MKD_BULK_MAX_CHUNK (256u << 10)  /* well under the 2^20-1 tx-count */
/* Scratch to pass for S stages of C bytes: 127 bytes of alignment slack
 * (none needed when smem is 128-byte aligned), the header, the stages. */
#define MKD_BULK_SMEM(S, C) (127 + MKD_BULK_HEAD + (S) * (C))

/* A TMA descriptor (CUtensorMap) as the host encodes it (runtime/tmap.c):
 * 128 opaque bytes.  Kernel parameters (__grid_constant__), constant or
 * global memory. */
struct __align__(64) mkd_tmap {
	u64 w[16];
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define MKD_HAS_BULK 1

/* ---- TMA: boxes of a tensor map (2-D, 128-byte swizzle: runtime/tmap.c) ---- */

/* box at (c0 = column, c1 = row) of the map into smem dst; bytes counted on
 * bar (the whole box: rows past the map's bounds land as zeros) */
MKD_INLINE void mkd_tma_load_2d(u32 dst, const mkd_tmap *map, int c0, int c1, u32 bar)
{
	asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
		     " [%0], [%1, {%2, %3}], [%4];"
		     :: "r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(bar) : "memory");
}
/* the same box into the same smem offset of every CTA of the cluster in
 * mask, bytes counted on each one's barrier at offset bar */
MKD_INLINE void mkd_tma_load_2d_mc(u32 dst, const mkd_tmap *map, int c0, int c1, u32 bar,
				   unsigned short mask)
{
	asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
		     ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;"
		     :: "r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(bar), "h"(mask) : "memory");
}
/* smem src to the box at (c0 = column, c1 = row) of the map, in this
 * thread's current bulk group (clipped at the map's bounds) */
MKD_INLINE void mkd_tma_store_2d(const mkd_tmap *map, u32 src, int c0, int c1)
{
	asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];"
		     :: "l"(map), "r"(src), "r"(c0), "r"(c1) : "memory");
}
MKD_INLINE void mkd_tma_prefetch_desc(const mkd_tmap *map)
{
	asm volatile("prefetch.tensormap [%0];" :: "l"(map) : "memory");
}

/* global -> shared, completion counted on bar */
MKD_INLINE void mkd_bulk_load(u32 dst, const void *src, u32 bytes, u32 bar)
{
	asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
		     " [%0], [%1], %2, [%3];"
		     :: "r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}
/* shared -> global, in the current bulk group of this thread */
MKD_INLINE void mkd_bulk_store(void *dst, u32 src, u32 bytes)
{
	asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
		     :: "l"(dst), "r"(src), "r"(bytes) : "memory");
}
MKD_INLINE void mkd_bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
/* at most N groups pending (their writes may be too); .read: only their
 * reads of shared memory are done */
template <int N> MKD_INLINE void mkd_bulk_wait_group()
{
	asm volatile("cp.async.bulk.wait_group %0;" :: "n"(N) : "memory");
}
template <int N> MKD_INLINE void mkd_bulk_wait_group_read()
{
	asm volatile("cp.async.bulk.wait_group.read %0;" :: "n"(N) : "memory");
}

/* How a box is cut into chunks of at most `chunk` bytes. */
struct mkd_bulk_plan {
	const char *src;
	const char *const *srcv;  /* each row's source (a gather), else 0: src + r * src_ld */
	char *dst;
	i64 src_ld, dst_ld, rows, row_bytes;
	i64 rpc;    /* rows per chunk (row_bytes <= chunk), else 0 */
	i64 ppr;    /* pieces per row (row_bytes > chunk), else 1 */
	i64 n;      /* chunks */
	u32 chunk;

	MKD_INLINE void init(char *d, i64 dld, const char *s, i64 sld, i64 r, i64 rb, u32 c)
	{
		dst = d, dst_ld = dld, src = s, src_ld = sld, rows = r, row_bytes = rb, chunk = c;
		srcv = 0;
		if (rb <= (i64)c) {
			rpc = (i64)c / rb;
			ppr = 1;
			n = (r + rpc - 1) / rpc;
		} else {
			rpc = 0;
			ppr = (rb + c - 1) / c;
			n = r * ppr;
		}
	}
	/* chunk j: rows [r0, r0 + nr), bytes [c0, c0 + nb) of each */
	MKD_INLINE void at(i64 j, i64 &r0, i64 &nr, i64 &c0, u32 &nb) const
	{
		if (rpc) {
			r0 = j * rpc;
			nr = rows - r0 < rpc ? rows - r0 : rpc;
			c0 = 0;
			nb = (u32)row_bytes;
		} else {
			r0 = j / ppr;
			nr = 1;
			c0 = (j - r0 * ppr) * (i64)chunk;
			nb = row_bytes - c0 < (i64)chunk ? (u32)(row_bytes - c0) : chunk;
		}
	}
	MKD_INLINE void load(i64 j, u32 stage, u32 bar) const
	{
		i64 r0, nr, c0;
		u32 nb;
		at(j, r0, nr, c0, nb);
		mkd_mbar_arrive_tx(bar, (u32)nr * nb);
#pragma unroll 1
		for (i64 k = 0; k < nr; k++)
			mkd_bulk_load(stage + (u32)k * nb,
				      (srcv ? srcv[r0 + k] : src + (r0 + k) * src_ld) + c0, nb, bar);
	}
	MKD_INLINE void store(i64 j, u32 stage) const
	{
		i64 r0, nr, c0;
		u32 nb;
		at(j, r0, nr, c0, nb);
#pragma unroll 1
		for (i64 k = 0; k < nr; k++)
			mkd_bulk_store(dst + (r0 + k) * dst_ld + c0, stage + (u32)k * nb, nb);
		mkd_bulk_commit();
	}
};

/* Thread 0's part: the ring (see the top of the file). */
MKD_INLINE void mkd_bulk_run(const mkd_bulk_plan &pl, u32 bars, u32 S)
{
	const u32 ring = bars + MKD_BULK_HEAD;
	const u32 used = pl.n < (i64)S ? (u32)pl.n : S;
#pragma unroll 1
	for (u32 s = 0; s < used; s++)
		mkd_mbar_init(bars + 8 * s, 1);
	asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#pragma unroll 1
	for (u32 s = 0; s < used; s++)
		pl.load(s, ring + s * pl.chunk, bars + 8 * s);
	u32 s = 0, ph = 0, prev = 0;
	for (i64 j = 0; j < pl.n; j++) {
		mkd_mbar_wait(bars + 8 * s, ph, MKD_BULK_TIMEOUT_NS);
		pl.store(j, ring + s * pl.chunk);
		if (j >= 1 && j - 1 + S < pl.n) {  /* refill the stage of chunk j-1 */
			mkd_bulk_wait_group_read<1>();
			pl.load(j - 1 + S, ring + prev * pl.chunk, bars + 8 * prev);
		}
		prev = s;
		if (++s == S) {
			s = 0;
			ph ^= 1;
		}
	}
	mkd_bulk_wait_group<0>();
	asm volatile("fence.proxy.async.global;" ::: "memory");
	asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#pragma unroll 1
	for (u32 k = 0; k < used; k++)
		mkd_mbar_inval(bars + 8 * k);
}

/* The ring's stages and chunk for smem[0, smem_bytes): false when fewer
 * than two stages of 128 bytes fit. */
MKD_INLINE bool mkd_bulk_stages(char *smem, u32 smem_bytes, u32 &chunk, u32 &bars, i64 &S)
{
	const u32 s0 = mkd_smem_addr(smem);
	bars = (s0 + 127) & ~127u;
	const i64 room = (i64)smem_bytes - (i64)(bars - s0) - MKD_BULK_HEAD;
	chunk = (chunk < MKD_BULK_MAX_CHUNK ? chunk : MKD_BULK_MAX_CHUNK) & ~15u;
	S = chunk ? room / chunk : 0;
	if (S < 2) {
		S = 2;
		chunk = room > 0 ? (u32)(room / 2) & ~127u : 0;
	}
	if (S > MKD_BULK_MAX_STAGES)
		S = MKD_BULK_MAX_STAGES;
	return chunk >= 128;
}

/* Every thread's entry fences and barrier, thread 0's ring, the closing
 * barrier (the copy complete). */
MKD_INLINE void mkd_bulk_go(const mkd_bulk_plan &pl, u32 bars, i64 S)
{
	asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
	asm volatile("fence.proxy.async.global;" ::: "memory");
	__syncthreads();
	if (threadIdx.x == 0)
		mkd_bulk_run(pl, bars, (u32)S);
	__syncthreads();
}
#endif /* sm_90 */

/* rows x row_bytes, strides in bytes, through smem[0, smem_bytes) as
 * scratch, chunk bytes per stage; every thread of the CTA calls it, and
 * all return after a barrier, with the copy complete. */
MKD_INLINE void mkd_copy_bulk_2d(char *dst, i64 dst_ld, const char *src, i64 src_ld, i64 rows,
				 i64 row_bytes, char *smem, u32 smem_bytes,
				 u32 chunk = MKD_BULK_CHUNK)
{
#if MKD_HAS_BULK
	if (row_bytes == dst_ld && row_bytes == src_ld) {
		row_bytes *= rows;
		rows = 1;
	}
	u32 bars;
	i64 S;
	const bool ok = mkd_bulk_stages(smem, smem_bytes, chunk, bars, S) &&
			((((u64)dst | (u64)src | (u64)dst_ld | (u64)src_ld | (u64)row_bytes) & 15) == 0);
	if (!ok) {
		mkd_copy_2d(dst, dst_ld, src, src_ld, rows, row_bytes);
		return;
	}
	if (rows <= 0 || row_bytes <= 0)
		return;
	mkd_bulk_plan pl;
	pl.init(dst, dst_ld, src, src_ld, rows, row_bytes, chunk);
	mkd_bulk_go(pl, bars, S);
#else
	mkd_copy_2d(dst, dst_ld, src, src_ld, rows, row_bytes);
#endif
}

/* A box of n0 x n1 x n2 elements of ES bytes from one strided layout to
 * another (strides in elements, one per dimension of the box): the copies
 * of slice, concat, transpose and reshape.  Where both inner strides are 1
 * the rows are contiguous on both sides: n0 mkd_copy_2d's of n1 rows
 * (16-byte vectors where aligned).  Otherwise (a transpose of the last
 * dimension) one element per thread, the box's inner dimension fastest:
 * stores coalesce, loads are strided.  Every thread of the CTA calls; no
 * barrier. */
template <int ES> struct mkd_word;
template <> struct mkd_word<1> { typedef unsigned char t; };
template <> struct mkd_word<2> { typedef unsigned short t; };
template <> struct mkd_word<4> { typedef unsigned int t; };
template <> struct mkd_word<8> { typedef u64 t; };

template <int ES>
MKD_INLINE void mkd_copy_box(char *dst, i64 d0, i64 d1, i64 d2, const char *src, i64 s0,
			     i64 s1, i64 s2, i64 n0, i64 n1, i64 n2)
{
	if (d2 == 1 && s2 == 1) {
		for (i64 a = 0; a < n0; a++)
			mkd_copy_2d(dst + a * d0 * ES, d1 * ES, src + a * s0 * ES, s1 * ES, n1, n2 * ES);
		return;
	}
	typedef typename mkd_word<ES>::t W;
	const i64 total = n0 * n1 * n2;
	for (i64 i = threadIdx.x; i < total; i += blockDim.x) {
		i64 c = i % n2, r = i / n2, b = r % n1, a = r / n1;
		*(W *)(dst + (a * d0 + b * d1 + c * d2) * ES) =
			*(const W *)(src + (a * s0 + b * s1 + c * s2) * ES);
	}
}

#endif
