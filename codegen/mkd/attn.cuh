/* mkd/attn.cuh - attention tiles with online softmax: a tile of query rows
 * against key/value blocks that arrive one after another (ring attention).
 * Causal masking compares global positions.
 *
 * mkd_fa: the tensor-core tile for 16-bit inputs (bf16, f16), in the manner
 * of FlashAttention-2: 128 query rows over 8 warps; each block is walked in
 * chunks of keys that cp.async double-buffers in shared memory; S = Q K^T and O += P V are mma.sync m16n8k16 with fp32
 * accumulators; the scores never leave registers (the S accumulator is the
 * A fragment of P V); the output rows and their running max and sum stay in
 * registers from the first block to the last.
 *
 * mkd_attn_*: the CUDA-core tile for fp32 inputs: 64 query rows, a warp per
 * row at a time, lanes split the head dimension, state in shared memory.
 */
#ifndef MKD_ATTN_CUH
#define MKD_ATTN_CUH

#include "base.cuh"
#include "copy.cuh"
#include "ew.cuh"
#include "mma.cuh"

#ifndef MKD_FA_TIMEOUT_NS
#define MKD_FA_TIMEOUT_NS 10000000000ull  /* a stage's copies: a bug past this, never slow */
#endif

#define MKD_FA_ROWS 128

MKD_INLINE float mkd_ninf() { return __uint_as_float(0xff800000u); }
/* 2^x, approximate (MUFU.EX2); 2^-inf = 0 */
MKD_INLINE float mkd_exp2(float x)
{
	float y;
	asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
	return y;
}

/* One tile of up to ROWS query rows (MKD_FA_ROWS; 16 for decode, where a
 * head has a few queries: then each warp takes those 16 rows over its own
 * 16 keys of every 128-key stage, and the 8 warps merge at the end, so
 * that all of them compute while the cache streams).  For D <= 64 each warp owns
 * 32 rows (two m16 tiles share every K and V fragment it loads) and the
 * two warpgroups split the keys: group 0 takes the first BN keys of every
 * stage, group 1 the next BN; at the end group 1 hands its rows' max, sum
 * and output to group 0 through shared memory, which merges them.  Above
 * D = 64 each of the 8 warps owns 16 rows and all take every key: 32 rows
 * of D = 128 outputs take 128 registers a thread, and with the scores and
 * the stage around them the kernel spilled (on the H200 that layout ran
 * D = 128 only 6% faster; docs/perf-notes.md).
 *
 * Shared memory (SMEM bytes): Q [128][D + 8], then NST stages of K and V
 * [KEYS][D + 8] (the plan's ring: 2, or more where the tile streams a
 * long cache for a few queries, split-KV, and only load latency bounds it) (the 8 pad elements put the rows ldmatrix reads together
 * in distinct banks).  All threads of the CTA load; the first 8 warps
 * compute.  Rows must be 16-byte aligned (D a multiple of 8, strides too).
 *
 * BULK (the plan's for 16-row tiles; sm_90, else cp.async as above): K
 * and V come by the TMA engine, the stage's bytes counted on its mbarrier
 * (NST of them past the stages: full[s], count 1, thread 0's arrival with
 * the bytes).  MKD_FA_MAPS (D a multiple of 64, K and V on this rank):
 * thread 0 loads a stage as boxes of the tensor maps (maps()), KEYS rows
 * by 64 columns, D/64 of K and D/64 of V, with the 128-byte swizzle: in a
 * box row r's 16-byte chunk j lies at chunk j ^ (r % 8), which the
 * ldmatrix addresses follow, so the rows need no pad.  The ring then
 * starts 1024 bytes aligned (SMEM counts the slack) and each slot keeps
 * the padded rows' size.  A ragged stage's boxes reach past the block's
 * keys (zeros past the map's rows, else the next rows, which may not
 * have arrived): their scores are masked by a select, and the V values
 * of those keys are zeroed in the registers ldmatrix filled (P is 0
 * there, and 0 times a stale NaN would not vanish).  The ncu of the
 * decode range (docs/perf-notes.md, thirty-seventh session) found half
 * the warp samples in the issue loops of MKD_FA_ROWS_BULK: one copy a K
 * or V row, each thread issuing a few, 256 a stage, which a lane-varying
 * address makes one at a time per warp; the maps take 2 D/64 copies a
 * stage, from one thread.  A decode tile only streams: a CTA's 16-byte
 * cp.async drew ~20 GB/s in the traces where the matmul engine's TMA
 * draws ~30; on the
 * H100 the two measured the same, 1-2% apart, S = 32768 at the card's
 * read rate either way (docs/perf-notes.md, twenty-first session; the
 * H200 not measured yet).  Stage c of the tile (counted over
 * its blocks: `ld`) sits in slot c % NST, round c / NST; the CTA barrier
 * before a stage is refilled orders the warps' reads of it before the copy
 * engine's writes.  MKD_FA_ROWS_BULK: V rows past a block's keys are
 * zeroed by plain stores (P is 0 there, and 0 times a stale NaN would not
 * vanish), then fence.proxy.async so the next round's copies come after
 * them. */
enum { MKD_FA_ASYNC = 0, MKD_FA_ROWS_BULK = 1, MKD_FA_MAPS = 2 };
template <int D, typename T, int NST = 2, int ROWS = MKD_FA_ROWS, int BULK = MKD_FA_ASYNC>
struct mkd_fa {
	enum {
#ifdef MKD_HAS_BULK
		TMA = BULK,                /* K and V by the copy engine (sm_90): rows or maps */
#else
		TMA = MKD_FA_ASYNC,
#endif
		MAPS = TMA == MKD_FA_MAPS,
		FEW = ROWS == 16,          /* decode: a warp's 16 rows, 8 groups of keys */
		MI = FEW ? 1 : D <= 64 ? 2 : 1,  /* m16 tiles per warp */
		SPLIT = FEW ? 8 : MI,      /* groups of warps that split the keys */
		WPG = 8 / SPLIT,           /* warps per group: ROWS rows */
		BN = FEW ? 16 : D <= 64 || D > 128 ? 32 : 64,  /* keys per group and stage */
		KEYS = SPLIT * BN,         /* keys per stage */
		LD = D + 8,
		Q_ELEMS = ROWS * LD,
		KV_ELEMS = KEYS * LD,
		CB = D / 64,               /* MAPS: boxes of 64 columns a row */
		BOX = KEYS * 128,          /* MAPS: bytes of one box */
		/* BULK: the stages' barriers after them, MKD_FA_MAPS the ring's
		 * alignment slack (compiler/plan.c counts both whether or not
		 * this arch uses them) */
		SMEM = (Q_ELEMS + 2 * NST * KV_ELEMS) * 2 + (BULK ? 8 * NST : 0) +
		       (BULK == MKD_FA_MAPS ? 1024 : 0)
	};
	static_assert(BULK != MKD_FA_MAPS || (D % 64 == 0 && ROWS == 16),
		      "K and V by maps: 16-row tiles, D a multiple of 64");
	static_assert(BULK != MKD_FA_MAPS || (KV_ELEMS * 2) % 1024 == 0,
		      "every box of the ring 1024 bytes aligned");
	static_assert(NST >= 2 && NST <= 6, "2..6 stages of K and V");
	static_assert(sizeof(T) == 2, "the tensor-core tile takes 16-bit inputs");
	static_assert(D % 16 == 0 && D <= 256, "head dimension: a multiple of 16, at most 256");
	static_assert(ROWS == MKD_FA_ROWS || ROWS == 16, "tiles of 128 or 16 query rows");
	static_assert(WPG * 16 * MI == ROWS, "8 warps cover the tile");
	static_assert(SPLIT == 1 || ((SPLIT - 1) * ROWS * (D + 2)) * 4 <= 4 * KV_ELEMS * 2,
		      "the merge fits in the stages");

	float o[MI][D / 8][4];  /* rows g, g + 8 of m tile i; columns 8n + 2q, +1 */
	float m[MI][2], l[MI][2];  /* running max (log2 units), this thread's partial sum */
	float scale2;           /* softmax scale times log2(e) */
	T *qs;
	u32 ld;                 /* TMA: the tile's stages loaded so far */
	/* MKD_FA_MAPS: K's map (V's follows) and where K and V start
	 * (mkd_origin); thread 0's, per block: the block's first row and
	 * column in each map */
	const mkd_tmap *tm;
	u64 kbase, vbase;
	int kr, kc, vr, vc;

	/* MKD_FA_MAPS: K's and V's maps of this rank and their origins,
	 * before begin */
	MKD_INLINE void maps(const mkd_tmap *k_map, u64 kb, u64 vb)
	{
		tm = k_map;
		kbase = kb;
		vbase = vb;
	}

	/* the ring's first slot: after Q, 1024 bytes aligned for the maps */
	MKD_INLINE T *ring() const
	{
		if (!MAPS)
			return qs + Q_ELEMS;
		const u32 a = mkd_smem_addr(qs + Q_ELEMS);
		return qs + Q_ELEMS + (((a + 1023u) & ~1023u) - a) / 2;
	}

	/* rows x D starting at src (row stride ld) into dst [nrows][LD], zero past rows */
	static MKD_INLINE void load_rows(T *dst, const T *src, i64 ld, int rows, int nrows)
	{
		for (int i = threadIdx.x; i < nrows * (D / 8); i += blockDim.x) {
			int r = i / (D / 8), c = (i % (D / 8)) * 8;
			bool ok = r < rows;
			mkd_cp_async16(mkd_smem_addr(dst + r * LD + c), ok ? src + (i64)r * ld + c : src, ok);
		}
	}

	/* stage c of a block (KEYS keys from key c * KEYS; zeros past nk) */
	static MKD_INLINE void load_stage(T *dst, const T *k, const T *v, i64 ldk, i64 ldv, int nk,
					  int c)
	{
		int left = nk - c * KEYS;
		left = left < KEYS ? left : KEYS;
		load_rows(dst, k + (i64)c * KEYS * ldk, ldk, left, KEYS);
		load_rows(dst + KV_ELEMS, v + (i64)c * KEYS * ldv, ldv, left, KEYS);
	}

#ifdef MKD_HAS_BULK
	MKD_INLINE u32 full_bar(int s) const
	{
		return mkd_smem_addr(ring() + 2 * NST * KV_ELEMS) + 8 * s;
	}

	/* TMA: stage c of a block into slot s, as load_stage; every thread
	 * calls.  Thread 0 announces the bytes, each thread copies a row or
	 * two of K and V, and zeroes V's rows past the keys. */
	MKD_INLINE void bulk_stage(T *dst, const T *k, const T *v, i64 ldk, i64 ldv, int nk, int c,
				   int s)
	{
		const u32 bar = full_bar(s);
		if (MAPS) {  /* whole boxes, zeros past the maps' rows */
			if (threadIdx.x == 0) {
				const u32 d = mkd_smem_addr(dst);
				mkd_mbar_arrive_tx(bar, 2 * CB * BOX);
#pragma unroll
				for (int b = 0; b < CB; b++)
					mkd_tma_load_2d(d + b * BOX, tm, kc + 64 * b, kr + c * KEYS, bar);
#pragma unroll
				for (int b = 0; b < CB; b++)
					mkd_tma_load_2d(d + KV_ELEMS * 2 + b * BOX, tm + 1, vc + 64 * b,
							vr + c * KEYS, bar);
			}
			return;
		}
		int left = nk - c * KEYS;
		left = left < KEYS ? left : KEYS;
		if (threadIdx.x == 0)
			mkd_mbar_arrive_tx(bar, (u32)(2 * left * D * 2));
		for (int r = threadIdx.x; r < 2 * left; r += blockDim.x) {
			const int kv = r >= left, row = r - kv * left;
			const T *src = kv ? v + (i64)(c * KEYS + row) * ldv : k + (i64)(c * KEYS + row) * ldk;
			mkd_bulk_load(mkd_smem_addr(dst + kv * KV_ELEMS + row * LD), src, D * 2, bar);
		}
		if (left < KEYS) {
			for (int i = threadIdx.x; i < (KEYS - left) * (D / 8); i += blockDim.x)
				*(uint4 *)(dst + KV_ELEMS + (left + i / (D / 8)) * LD + (i % (D / 8)) * 8) =
					make_uint4(0, 0, 0, 0);
			asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
		}
	}
#endif

	MKD_INLINE void begin(const T *q, i64 ldq, int rows, float scale, char *smem)
	{
		qs = (T *)smem;
		load_rows(qs, q, ldq, rows, ROWS);
		mkd_cp_async_commit();
#ifdef MKD_HAS_BULK
		ld = 0;
		if (TMA) {
			/* this CTA's generic writes to the ring (an earlier task's,
			 * the merge's in finish) before the copy engine's */
			asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
			if (threadIdx.x == 0) {
#pragma unroll
				for (int s = 0; s < NST; s++)
					mkd_mbar_init(full_bar(s), 1);
				asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
				if (MAPS) {
					mkd_tma_prefetch_desc(tm);
					mkd_tma_prefetch_desc(tm + 1);
				}
			}
			__syncthreads();  /* the barriers live before any copy */
		}
#endif
		scale2 = scale * 1.44269504088896341f;
#pragma unroll
		for (int i = 0; i < MI; i++) {
#pragma unroll
			for (int n = 0; n < D / 8; n++)
#pragma unroll
				for (int e = 0; e < 4; e++)
					o[i][n][e] = 0.f;
			m[i][0] = m[i][1] = mkd_ninf();
			l[i][0] = l[i][1] = 0.f;
		}
	}

	/* This warp's rows (qs row r0, global position qpos) against nk <= BN
	 * keys at ks / vs (MAPS: row 0 of the keys in the first box, each
	 * box's rows 128 bytes, swizzled), the first at global position kpos. */
	MKD_INLINE void chunk(const T *ks, const T *vs, int nk, bool causal, int r0, i64 qpos, i64 kpos)
	{
		const int lane = threadIdx.x & 31, g = lane >> 2, tq = lane & 3;
		float s[MI][BN / 8][4];
#pragma unroll
		for (int i = 0; i < MI; i++)
#pragma unroll
			for (int j = 0; j < BN / 8; j++)
#pragma unroll
				for (int e = 0; e < 4; e++)
					s[i][j][e] = 0.f;
		/* each lane's ldmatrix row address, once: the unrolled loops add
		 * constants, which fold into the instructions' offsets */
		const u32 qa = mkd_smem_addr(qs + (r0 + (lane & 15)) * LD + (lane >> 4) * 8);
		const u32 ka = mkd_smem_addr(ks + ((lane >> 4) * 8 + (lane & 7)) * LD + ((lane >> 3) & 1) * 8);
		const u32 va = mkd_smem_addr(vs + (lane & 15) * LD + (lane >> 4) * 8);
		/* MAPS: a lane's row is r % 8 = lane & 7 for K and V alike, and
		 * its chunk in a box (8 a 128-byte row) 2 t + its half, t the
		 * 16-column slice in the box: one address for each t */
		u32 kam[4], vam[4];
		if (MAPS)
#pragma unroll
			for (int t = 0; t < 4; t++) {
				kam[t] = mkd_smem_addr(ks) + ((lane >> 4) * 8 + (lane & 7)) * 128 +
					 (((2 * t + ((lane >> 3) & 1)) ^ (lane & 7)) << 4);
				vam[t] = mkd_smem_addr(vs) + (lane & 15) * 128 +
					 (((2 * t + (lane >> 4)) ^ (lane & 7)) << 4);
			}
		/* S = Q K^T: K rows are the columns of B (col-major B, plain ldmatrix) */
#pragma unroll
		for (int kk = 0; kk < D / 16; kk++) {
			u32 a[MI][4];
#pragma unroll
			for (int i = 0; i < MI; i++)
				mkd_ldsm_x4(a[i], qa + (u32)((i * 16 * LD + kk * 16) * 2));
#pragma unroll
			for (int j = 0; j < BN / 8; j += 2) {
				u32 b[4];
				mkd_ldsm_x4(b, MAPS ? kam[kk & 3] + (u32)(j * 8 * 128 + (kk >> 2) * BOX)
						    : ka + (u32)((j * 8 * LD + kk * 16) * 2));
#pragma unroll
				for (int i = 0; i < MI; i++) {
					mkd_mma_op<T>::mma(s[i][j], a[i], b);
					mkd_mma_op<T>::mma(s[i][j + 1], a[i], b + 2);
				}
			}
		}
		/* mask (keys past the chunk, keys after the query), scale, row max;
		 * rescale what came before to the new max */
		const bool mask = nk < BN || (causal && kpos + BN - 1 > qpos);
		/* key j of the chunk lies after query row r (of this warp) when
		 * j > diag + r; diag is small when the chunk needs masking */
		const int diag = causal ? (int)(qpos - kpos) : 1 << 30;
#pragma unroll
		for (int i = 0; i < MI; i++) {
			float mx[2] = {mkd_ninf(), mkd_ninf()};
#pragma unroll
			for (int j = 0; j < BN / 8; j++)
#pragma unroll
				for (int e = 0; e < 4; e++) {
					float x = s[i][j][e] * scale2;
					if (mask) {
						int key = j * 8 + 2 * tq + (e & 1);
						if (key >= nk || key > diag + i * 16 + g + (e >> 1) * 8)
							x = mkd_ninf();
					}
					s[i][j][e] = x;
					mx[e >> 1] = fmaxf(mx[e >> 1], x);
				}
			float base[2];
#pragma unroll
			for (int h = 0; h < 2; h++) {
				mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
				mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
				float mn = fmaxf(m[i][h], mx[h]);
				base[h] = mn == mkd_ninf() ? 0.f : mn;  /* every key so far masked */
				float corr = mkd_exp2(m[i][h] - base[h]);
				m[i][h] = mn;
				l[i][h] *= corr;
#pragma unroll
				for (int n = 0; n < D / 8; n++) {
					o[i][n][2 * h] *= corr;
					o[i][n][2 * h + 1] *= corr;
				}
			}
#pragma unroll
			for (int j = 0; j < BN / 8; j++)
#pragma unroll
				for (int e = 0; e < 4; e++) {
					s[i][j][e] = mkd_exp2(s[i][j][e] - base[e >> 1]);
					l[i][e >> 1] += s[i][j][e];
				}
		}
		/* O += P V: the S accumulators of two key groups are one A fragment;
		 * V rows are the k of B (row-major B, transposing ldmatrix) */
#pragma unroll
		for (int kk = 0; kk < BN / 16; kk++) {
			u32 a[MI][4];
#pragma unroll
			for (int i = 0; i < MI; i++) {
				a[i][0] = mkd_elem<T>::pk2(s[i][2 * kk][0], s[i][2 * kk][1]);
				a[i][1] = mkd_elem<T>::pk2(s[i][2 * kk][2], s[i][2 * kk][3]);
				a[i][2] = mkd_elem<T>::pk2(s[i][2 * kk + 1][0], s[i][2 * kk + 1][1]);
				a[i][3] = mkd_elem<T>::pk2(s[i][2 * kk + 1][2], s[i][2 * kk + 1][3]);
			}
			/* MAPS: V of keys past nk (this thread's b[0] and b[2] hold
			 * keys 2 tq and 2 tq + 1 of the 16, b[1] and b[3] 8 more)
			 * to 0, as the copies zero them otherwise */
			u32 vm[2] = {~0u, ~0u};
			if (MAPS && nk < BN)
#pragma unroll
				for (int h = 0; h < 2; h++) {
					const int key = kk * 16 + 8 * h + 2 * tq;
					vm[h] = (key < nk ? 0xffffu : 0u) | (key + 1 < nk ? 0xffff0000u : 0u);
				}
#pragma unroll
			for (int n = 0; n < D / 8; n += 2) {
				u32 b[4];
				mkd_ldsm_x4_t(b, MAPS ? vam[(n & 7) >> 1] + (u32)(kk * 16 * 128 + (n >> 3) * BOX)
						      : va + (u32)((kk * 16 * LD + n * 8) * 2));
				if (MAPS && nk < BN)
#pragma unroll
					for (int e = 0; e < 4; e++)
						b[e] &= vm[e & 1];
#pragma unroll
				for (int i = 0; i < MI; i++) {
					mkd_mma_op<T>::mma(o[i][n], a[i], b);
					mkd_mma_op<T>::mma(o[i][n + 1], a[i], b + 2);
				}
			}
		}
	}

	/* One key/value block of nk rows (row strides ldk, ldv); qpos0 / kpos0:
	 * global positions of the tile's first query and the block's first key.
	 * Returns with the stages free (all threads call it). */
	MKD_INLINE void block(const T *k, const T *v, i64 ldk, i64 ldv, int nk, int rows,
			      bool causal, i64 qpos0, i64 kpos0)
	{
		if (causal && kpos0 + nk > qpos0 + rows)
			nk = (int)(qpos0 + rows - kpos0);  /* keys after the last query: none needed */
		if (nk <= 0)
			return;
		T *stage = ring();
		const int warp = threadIdx.x >> 5, grp = warp / WPG;
		const int r0 = (warp % WPG) * 16 * MI, nst = (nk + KEYS - 1) / KEYS;
		const i64 qpos = qpos0 + r0;
#ifdef MKD_HAS_BULK
		if (TMA)
			block_bulk(stage, k, v, ldk, ldv, nk, rows, causal, qpos, kpos0, warp, grp, r0, nst);
		else
#endif
			block_async(stage, k, v, ldk, ldv, nk, rows, causal, qpos, kpos0, warp, grp, r0, nst);
	}

	/* block() by cp.async */
	MKD_INLINE void block_async(T *stage, const T *k, const T *v, i64 ldk, i64 ldv, int nk,
				    int rows, bool causal, i64 qpos, i64 kpos0, int warp, int grp, int r0,
				    int nst)
	{
		/* stage c goes to slot c % NST; NST - 1 loads are in flight while a
		 * stage is computed (one cp.async group per stage, empty ones too,
		 * so that wait<NST - 2> always means "stage c has landed") */
#pragma unroll
		for (int c = 0; c < NST - 1; c++) {
			if (c < nst)
				load_stage(stage + c * 2 * KV_ELEMS, k, v, ldk, ldv, nk, c);
			mkd_cp_async_commit();
		}
		for (int c = 0; c < nst; c++) {
			mkd_cp_async_wait<NST - 2>();
			__syncthreads();  /* stage c for all; slot (c - 1) % NST free */
			if (c + NST - 1 < nst)
				load_stage(stage + ((c + NST - 1) % NST) * 2 * KV_ELEMS, k, v, ldk, ldv, nk,
					   c + NST - 1);
			mkd_cp_async_commit();
			compute(stage + (c % NST) * 2 * KV_ELEMS, nk, c, rows, causal, qpos, kpos0, warp,
				grp, r0);
		}
		__syncthreads();  /* the stages are free for the next block */
	}

	/* stage c of the block, in slot st: this warp's keys of it.  Warps
	 * past the tile's rows, past the keys, or whose rows all precede the
	 * chunk sit it out. */
	MKD_INLINE void compute(const T *st, int nk, int c, int rows, bool causal, i64 qpos,
				i64 kpos0, int warp, int grp, int r0)
	{
		const int k0 = c * KEYS + grp * BN, left = nk - k0;
		const i64 kpos = kpos0 + k0;
		if (warp < 8 && r0 < rows && left > 0 && !(causal && kpos > qpos + 16 * MI - 1)) {
			const T *cs = st + grp * BN * (MAPS ? 64 : LD);
			chunk(cs, cs + KV_ELEMS, left < BN ? left : BN, causal, r0, qpos, kpos);
		}
	}

#ifdef MKD_HAS_BULK
	/* block() with the TMA ring: NST - 1 stages in flight while one is
	 * computed, as above; the tile's stage ld + c in slot (ld + c) % NST */
	MKD_INLINE void block_bulk(T *stage, const T *k, const T *v, i64 ldk, i64 ldv, int nk,
				   int rows, bool causal, i64 qpos, i64 kpos0, int warp, int grp, int r0,
				   int nst)
	{
		/* K and V may have been written in this kernel by other CTAs
		 * (seen through the flag acquire and the CTA barrier): ordered
		 * before the copy engine's reads */
		asm volatile("fence.proxy.async.global;" ::: "memory");
		if (MAPS && threadIdx.x == 0) {  /* the block's place in the maps */
			const i64 ek = ((const char *)k - (const char *)kbase) / 2,
				  ev = ((const char *)v - (const char *)vbase) / 2;
			kr = (int)(ek / ldk), kc = (int)(ek % ldk);
			vr = (int)(ev / ldv), vc = (int)(ev % ldv);
		}
		for (int c = 0; c < NST - 1 && c < nst; c++)
			bulk_stage(stage + ((ld + c) % NST) * 2 * KV_ELEMS, k, v, ldk, ldv, nk, c,
				   (int)((ld + c) % NST));
		/* Q (begin) once the first stages are out, not before: a decode
		 * range waited a device-memory latency for its 16 rows before
		 * any key streamed; seen by all at the first barrier below */
		mkd_cp_async_wait<0>();
		for (int c = 0; c < nst; c++) {
			const u32 j = ld + c, s = j % NST;
			mkd_mbar_wait(full_bar((int)s), (j / NST) & 1, MKD_FA_TIMEOUT_NS);
			__syncthreads();  /* slot (j - 1) % NST read by every warp: free */
			if (c + NST - 1 < nst)
				bulk_stage(stage + ((j + NST - 1) % NST) * 2 * KV_ELEMS, k, v, ldk, ldv, nk,
					   c + NST - 1, (int)((j + NST - 1) % NST));
			compute(stage + s * 2 * KV_ELEMS, nk, c, rows, causal, qpos, kpos0, warp, grp, r0);
		}
		ld += nst;
		__syncthreads();  /* the stages are free for the next block */
	}
#endif

	/* TMA: the barriers back to plain shared memory, once every copy has
	 * landed and been waited for (after block(): every thread is past its
	 * waits); a CTA barrier follows before the memory is used otherwise */
	MKD_INLINE void release()
	{
#ifdef MKD_HAS_BULK
		if (TMA && threadIdx.x == 0)
#pragma unroll
			for (int s = 0; s < NST; s++)
				mkd_mbar_inval(full_bar(s));
#endif
	}

	/* a wait failed (between blocks: no copy in flight): the barriers back */
	MKD_INLINE void quit()
	{
		if (TMA) {
			__syncthreads();
			release();
			__syncthreads();
		}
	}

	/* O = acc / sum for the tile's rows (row stride ldo). */
	template <typename TO>
	MKD_INLINE void end(TO *out, i64 ldo, int rows)
	{
		finish<TO, false>(out, ldo, rows);
	}

	/* Split-KV: the tile's rows unnormalised, each followed by its max (log2
	 * units) and sum: out [rows][D + 2] fp32, row stride ldo; mkd_attn_merge
	 * (split.cuh) adds the key ranges up. */
	MKD_INLINE void end_part(float *out, i64 ldo, int rows)
	{
		finish<float, true>(out, ldo, rows);
	}

	template <typename TO, bool PART>
	MKD_INLINE void finish(TO *out, i64 ldo, int rows)
	{
		mkd_cp_async_wait<0>();
		release();  /* block() ended with a CTA barrier; finish() ends with one */
		const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, grp = warp / WPG;
		const int g = lane >> 2, tq = lane & 3, r0 = (warp % WPG) * 16 * MI;
		if (warp < 8)
#pragma unroll
			for (int i = 0; i < MI; i++)
#pragma unroll
				for (int h = 0; h < 2; h++) {
					l[i][h] += __shfl_xor_sync(0xffffffffu, l[i][h], 1);
					l[i][h] += __shfl_xor_sync(0xffffffffu, l[i][h], 2);
				}
		if (SPLIT > 1) {
			/* groups 1.. hand their rows to shared memory (the stages are
			 * free): max, sum, then the outputs, fp32, slot grp - 1 each;
			 * group 0 rescales all to the common max and adds them.  Only
			 * the tile's rows: a decode range of one query moved 16 rows
			 * of 128 outputs through shared memory 7 times for one */
			float *ms = (float *)(qs + Q_ELEMS), *ls = ms + (SPLIT - 1) * ROWS,
			      *os = ls + (SPLIT - 1) * ROWS;
			if (warp < 8 && grp > 0)
#pragma unroll
				for (int i = 0; i < MI; i++)
#pragma unroll
					for (int h = 0; h < 2; h++) {
						const int r = r0 + i * 16 + g + h * 8, x = (grp - 1) * ROWS + r;
						if (r >= rows)
							continue;
						if (tq == 0) {
							ms[x] = m[i][h];
							ls[x] = l[i][h];
						}
#pragma unroll
						for (int n = 0; n < D / 8; n++) {
							os[x * D + n * 8 + 2 * tq] = o[i][n][2 * h];
							os[x * D + n * 8 + 2 * tq + 1] = o[i][n][2 * h + 1];
						}
					}
			__syncthreads();
			if (warp < 8 && grp == 0)
#pragma unroll
				for (int i = 0; i < MI; i++)
#pragma unroll
					for (int h = 0; h < 2; h++) {
						const int r = r0 + i * 16 + g + h * 8;
						if (r >= rows)  /* never stored */
							continue;
						float mn = m[i][h];
						for (int q = 0; q < SPLIT - 1; q++)
							mn = fmaxf(mn, ms[q * ROWS + r]);
						const float base = mn == mkd_ninf() ? 0.f : mn;
						const float c0 = mkd_exp2(m[i][h] - base);
						l[i][h] *= c0;
#pragma unroll
						for (int n = 0; n < D / 8; n++) {
							o[i][n][2 * h] *= c0;
							o[i][n][2 * h + 1] *= c0;
						}
						for (int q = 0; q < SPLIT - 1; q++) {
							const int x = q * ROWS + r;
							const float c1 = mkd_exp2(ms[x] - base);
							l[i][h] += ls[x] * c1;
#pragma unroll
							for (int n = 0; n < D / 8; n++) {
								o[i][n][2 * h] += os[x * D + n * 8 + 2 * tq] * c1;
								o[i][n][2 * h + 1] += os[x * D + n * 8 + 2 * tq + 1] * c1;
							}
						}
						m[i][h] = mn;  /* end_part writes the merged max */
					}
		}
		if (warp < 8 && grp == 0)
#pragma unroll
			for (int i = 0; i < MI; i++)
#pragma unroll
				for (int h = 0; h < 2; h++) {
					const float inv = PART ? 1.f : l[i][h] > 0.f ? 1.f / l[i][h] : 0.f;
					const int r = r0 + i * 16 + g + h * 8;
					if (r < rows) {
#pragma unroll
						for (int n = 0; n < D / 8; n++)
							mkd_store2<TO>::st(out + (i64)r * ldo + n * 8 + 2 * tq,
									   o[i][n][2 * h] * inv,
									   o[i][n][2 * h + 1] * inv, true);
						if (PART && tq == 0)
							mkd_store2<TO>::st(out + (i64)r * ldo + D, m[i][h], l[i][h],
									   true);
					}
				}
		__syncthreads();
	}
};

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

/* One key/value block of nk rows (row strides ldk, ldv); qpos0 / kpos0:
 * global positions of the first query and key (causal masking). */
template <int D, typename TK>
MKD_INLINE void mkd_attn_block(mkd_attn_state<D> *st, const TK *k, const TK *v, i64 ldk, i64 ldv,
			       int nk, int rows, int causal, i64 qpos0, i64 kpos0)
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
			const TK *kr = k + (i64)key * ldk, *vr = v + (i64)key * ldv;
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
