/* mkd/attn_wg.cuh - the Hopper attention tile (sm_90a): TMA, mbarriers,
 * wgmma, in the manner of FlashAttention-3.  Same interface as mkd_fa
 * (attn.cuh): begin, block for each key/value block as it arrives (ring
 * attention), end or end_part (split-KV); the same state conventions (max
 * in log2 units, unnormalised sums), so split.cuh merges either's partials.
 *
 * 256 threads in two consumer warpgroups, WG0 on query rows 0..63 of the
 * tile and WG1 on rows 64..127.  No warp only loads: thread 0 issues the
 * TMA loads of Q (in begin) and of a block's first STAGES chunks of BN keys
 * (K and V) into the ring, and the last of the 8 consumer warps to be done
 * with a stage loads the chunk STAGES further into it (an arrival count per
 * stage in shared memory).  So a consumer thread has the registers of a
 * 256-thread CTA, 255, enough for S beside P V at D = 128 (OVERLAP); where
 * the kernel runs 384 threads (a matmul on the Hopper engine beside it,
 * 168 registers) threads 256.. wait at the CTA barriers only.
 *
 * Per chunk c a consumer computes S = Q K^T (wgmma, both operands in shared
 * memory, K-major), the online softmax of S in registers, and O += P V
 * (wgmma with P as the register A operand: the m64nBN f32 accumulator of S,
 * packed to 16 bits pairwise, is exactly the A fragment of m64nDk16, as for
 * mma.sync; V N-major).  Overlap:
 *
 *   - inside a warpgroup (OVERLAP): S of chunk c is issued together with
 *     P V of chunk c-1, and the softmax of chunk c runs while that P V is
 *     on the tensor cores;
 *   - between the warpgroups (ping-pong): named barriers SCHED+w make the
 *     two take turns issuing their GEMMs, so one's softmax runs under the
 *     other's GEMMs.  WG1 opens the turn for WG0 at the start of a block,
 *     each passes the turn after issuing, WG0 takes the last turn back at
 *     the end: the arrivals and waits of each barrier balance per block.
 *
 * O is rescaled lazily: a row's reference max moves only when a chunk's max
 * exceeds it by more than LAZY (log2 units), so P stays below 2^LAZY and
 * most chunks multiply nothing (skipped when no row of the warp moved).
 *
 * Ring: full[s] (count 1: the loading thread's arrive with the stage
 * bytes, completed by the TMA engine); chunk j of the tile (counted over
 * all its blocks) uses stage j % STAGES in round j / STAGES.  cnt[s]
 * counts the consumer warps done with stage s (lane 0 of each, after the
 * wgmma that read the stage's V retired; acq_rel atomics): the warp that
 * makes it a multiple of 8 loads the stage's next chunk of the block, if
 * any.  A block's chunks are all consumed before the next block starts
 * (its flags may not be set yet), so a block begins on an empty ring.
 * qbar (count 1) completes once Q has landed.  Barriers are initialised in
 * begin and invalidated in end, end_part or quit; nothing is kept after
 * the tile.
 *
 * Shared memory (1024-byte aligned pieces, 128-byte swizzle as the tensor
 * maps write it): Q as D/64 boxes of [128 rows][64 columns]; stage s: K as
 * D/64 boxes of [BN][64], then V the same.  Descriptors: Q and K K-major
 * (SBO 1024 B: 8 rows; the k-th 16-wide slice of box k/4 starts 32*(k%4)
 * bytes in); V N-major (trans-b; LBO = BN*128 B: one 64-column box to the
 * next, SBO 1024 B; the k-th 16-key slice starts 2048*k bytes in).
 *
 * Ragged chunks (nk not a multiple of BN) read rows past the block: zero at
 * the tensor's end (TMA fill), else rows of the next block or head, which
 * may not have arrived.  Their scores are masked (a select, so even NaN
 * goes), and each consumer zeroes those V rows in shared memory before its
 * P V (0 * NaN would not vanish); both warpgroups write the same zeros.
 *
 * The maps (runtime/tmap.h, encoded per rank): Q with a 128 x 64 box, K and
 * V with BN x 64, each over the rows of the storage that holds the tensor
 * from its origin (its own: [heads x seq][D] flattened; a view's root,
 * whose rows hold a head's rows: compiler/plan_view.c); a tile's row and
 * column there are found from the pointer the stage passes (element e =
 * ptr - base: row e / ld, column e % ld, 0 for every map made today).  The plan (compiler/plan.c) picks this tile only
 * where Q, K and V are read on this rank.
 */
#ifndef MKD_ATTN_WG_CUH
#define MKD_ATTN_WG_CUH

#include "attn.cuh"
#include "wgmma.cuh"

#ifdef MKD_HAS_WGMMA

#define MKD_FAW_SCHED 4        /* named barriers 4, 5: the consumers' turns */
#define MKD_FAW_WGBAR 6        /* 6, 7: one consumer warpgroup */
#define MKD_FAW_LAZY 8.0f      /* log2 units a row max may grow before O is rescaled */

/* m64n16 fragments (N = 32): 16 fp32 accumulators per thread */
#define MKD_WG_D16 \
	"{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}"
#define MKD_WG_O16(d) \
	"+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
	"+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])

/* S[64 x N] (+)= A[64 x 16] * B[16 x N], both from shared memory, both
 * K-major (trans-a 0, trans-b 0); scale-d 0 on the first slice. */
template <int N, typename T> struct mkd_wg_ss;
/* O[64 x N] += A (registers, 4 x 32 bits) * B[16 x N] (shared, N-major,
 * trans-b 1). */
template <int N, typename T> struct mkd_wg_rs;
#define MKD_WG_SS(NN, R, DA, DB, DS, TT, TS)                                             \
	template <> struct mkd_wg_ss<NN, TT> {                                            \
		static MKD_INLINE void mma(float *d, u64 da, u64 db, int acc)             \
		{                                                                         \
			asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %" #DS ", 0;\n\t"  \
				     "wgmma.mma_async.sync.aligned.m64n" #NN "k16.f32." TS "." TS \
				     " " MKD_WG_D##R ", %" #DA ", %" #DB ", p, 1, 1, 0, 0;\n\t}" \
				     : MKD_WG_O##R(d) : "l"(da), "l"(db), "r"(acc));          \
		}                                                                         \
	};
#define MKD_WG_RS(NN, R, A0, A1, A2, A3, DB, DS, TT, TS)                                 \
	template <> struct mkd_wg_rs<NN, TT> {                                            \
		static MKD_INLINE void mma(float *d, const u32 *a, u64 db)                \
		{                                                                         \
			asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %" #DS ", 0;\n\t"  \
				     "wgmma.mma_async.sync.aligned.m64n" #NN "k16.f32." TS "." TS \
				     " " MKD_WG_D##R ", {%" #A0 ", %" #A1 ", %" #A2 ", %" #A3 "}, %" \
				     #DB ", p, 1, 1, 1;\n\t}"                                     \
				     : MKD_WG_O##R(d)                                             \
				     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "n"(1)); \
		}                                                                         \
	};
MKD_WG_SS(32, 16, 16, 17, 18, mkd_bf16, "bf16")
MKD_WG_SS(32, 16, 16, 17, 18, mkd_f16, "f16")
MKD_WG_SS(64, 32, 32, 33, 34, mkd_bf16, "bf16")
MKD_WG_SS(64, 32, 32, 33, 34, mkd_f16, "f16")
MKD_WG_SS(128, 64, 64, 65, 66, mkd_bf16, "bf16")
MKD_WG_SS(128, 64, 64, 65, 66, mkd_f16, "f16")
MKD_WG_RS(64, 32, 32, 33, 34, 35, 36, 37, mkd_bf16, "bf16")
MKD_WG_RS(64, 32, 32, 33, 34, 35, 36, 37, mkd_f16, "f16")
MKD_WG_RS(128, 64, 64, 65, 66, 67, 68, 69, mkd_bf16, "bf16")
MKD_WG_RS(128, 64, 64, 65, 66, 67, 68, 69, mkd_f16, "f16")
MKD_WG_RS(256, 128, 128, 129, 130, 131, 132, 133, mkd_bf16, "bf16")
MKD_WG_RS(256, 128, 128, 129, 130, 131, 132, 133, mkd_f16, "f16")
#undef MKD_WG_SS
#undef MKD_WG_RS

MKD_INLINE void mkd_wg_pin_u(u32 &x) { asm volatile("" : "+r"(x) :: "memory"); }

/* D: head dimension; KEYS a stage (BN), STAGES of the ring, OVL: S of
 * chunk c beside P V of chunk c-1, ROT: without a causal mask each CTA
 * reads a block's nf full chunks from its own place on, in turn (CTA i
 * from chunk i nf / CTAs; a ragged chunk last), so the CTAs of one head's
 * tiles do not all read the same chunk at once (the plan's,
 * compiler/plan.c) */
template <int D, typename T, int KEYS = (D <= 128 ? 128 : 64), int NSTAGE = (D <= 128 ? 3 : 2),
	  int OVL = (D <= 128), int ROT = 0>
struct mkd_fa_wg {
	enum {
		THREADS = 256,               /* two consumer warpgroups */
		BN = KEYS,                   /* keys per stage */
		STAGES = NSTAGE,
		OVERLAP = OVL,
		CB = D / 64,                 /* 64-column boxes of a row */
		Q_BOX = 128 * 128,           /* bytes of one Q box [128][64] */
		KV_BOX = BN * 128,           /* one K or V box [BN][64] */
		Q_BYTES = CB * Q_BOX,
		STAGE_BYTES = 2 * CB * KV_BOX,
		/* after the ring: full[STAGES] and qbar (8 bytes each), three
		 * pointers, the block (8 ints), cnt[STAGES] (8 bytes each) */
		TAIL = 16 * STAGES + 64,
		SMEM = 1024 + Q_BYTES + STAGES * STAGE_BYTES + TAIL,
		SACC = BN / 2,               /* S accumulators per consumer thread */
		OACC = D / 2                 /* O accumulators */
	};
	static_assert(sizeof(T) == 2, "wgmma attention takes 16-bit inputs");
	/* D = 256 fits a 256-thread CTA's 255 registers without the overlap
	 * (O alone is 128 a thread); beside a matmul engine (168) the plan
	 * takes the mma.sync tile there */
	static_assert(D == 64 || D == 128 || D == 256, "head dimension 64, 128 or 256");

	float o[OACC];       /* rows g, g + 8 of this warp's 16: o[4j + 2h + {0,1}], columns 8j + 2q */
	float m[2], l[2];    /* reference max (log2 units), this thread's partial sum */
	float scale2;
	int it;              /* chunks of the tile so far: the ring's position */
	/* Q's map (K's and V's follow) and where Q, K and V start: thread 0
	 * alone reads them, so after begin they live in shared memory (ptrs),
	 * not in every thread's registers */
	const mkd_tmap *tq;
	u64 qbase, kbase, vbase;

	/* maps: Q, K, V of this rank; qb, kb, vb: where they start (mkd_origin) */
	MKD_INLINE mkd_fa_wg(const mkd_tmap *maps, u64 qb, u64 kb, u64 vb)
		: tq(maps), qbase(qb), kbase(kb), vbase(vb)
	{
	}

	/* The shared address of Q (the ring, then the barriers follow): the
	 * kernel's dynamic shared memory, 1024-byte aligned, as each use
	 * finds it.  Kept in a register from begin to quit, it was spilled in
	 * the llama layer's kernel (16 of its 20 bytes, read again on a
	 * wait's failure path); from the symbol ptxas makes it anew. */
	static MKD_INLINE u32 qs() { return mkd_dyn_smem_1k(); }
	MKD_INLINE u32 full_bar(int s) const { return qs() + Q_BYTES + STAGES * STAGE_BYTES + 8 * s; }
	MKD_INLINE u32 q_bar() const { return full_bar(STAGES); }
	MKD_INLINE u32 stage(int s) const { return qs() + Q_BYTES + s * STAGE_BYTES; }
	/* the maps (0), K's start (1), V's (2) */
	MKD_INLINE u32 ptrs(int i) const { return full_bar(STAGES + 1) + 8 * i; }
	/* the block being read: K's first row (0) and column (1), V's (2, 3),
	 * its full chunks (4), the first one read (5) */
	MKD_INLINE u32 blk(int i) const { return full_bar(STAGES + 4) + 4 * i; }
	MKD_INLINE u32 cnt(int s) const { return full_bar(STAGES + 8 + s); }

	/* q: the tile's first row in Q's buffer (row stride ldq); smem: the
	 * kernel's dynamic shared memory (qs() finds it by its symbol) */
	MKD_INLINE void begin(const T *q, i64 ldq, int rows, float scale, char *smem)
	{
		(void)rows;
		(void)smem;
		it = 0;
		scale2 = scale * 1.44269504088896341f;
#pragma unroll
		for (int i = 0; i < OACC; i++)
			o[i] = 0.f;
		m[0] = m[1] = mkd_ninf();
		l[0] = l[1] = 0.f;
		asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
		if (threadIdx.x == 0) {
#pragma unroll
			for (int s = 0; s < STAGES; s++) {
				mkd_mbar_init(full_bar(s), 1);
				asm volatile("st.shared.u32 [%0], 0;" :: "r"(cnt(s)) : "memory");
			}
			mkd_mbar_init(q_bar(), 1);
			asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
			mkd_sts_u64(ptrs(0), (u64)tq);
			mkd_sts_u64(ptrs(1), kbase);
			mkd_sts_u64(ptrs(2), vbase);
		}
		__syncthreads();
		if (threadIdx.x == 0) {
			asm volatile("fence.proxy.async.global;" ::: "memory");
			mkd_tma_prefetch_desc(tq);
			mkd_tma_prefetch_desc(tq + 1);
			mkd_tma_prefetch_desc(tq + 2);
			const i64 e = ((const char *)q - (const char *)qbase) / 2;
			const int row = (int)(e / ldq), col = (int)(e % ldq);
			mkd_mbar_arrive_tx(q_bar(), Q_BYTES);
#pragma unroll
			for (int cb = 0; cb < CB; cb++)
				mkd_tma_load_2d(qs() + cb * Q_BOX, tq, col + 64 * cb, row, q_bar());
		}
	}

	/* one thread: the chunk read c-th of the block (ring position it + c)
	 * into its stage, which no warp reads any more */
	MKD_INLINE void load_chunk(int c)
	{
		const mkd_tmap *tq = (const mkd_tmap *)mkd_lds_u64(ptrs(0));
		int b[6];
#pragma unroll
		for (int i = 0; i < 6; i++)
			asm volatile("ld.shared.u32 %0, [%1];" : "=r"(b[i]) : "r"(blk(i)) : "memory");
		asm volatile("fence.proxy.async.global;" ::: "memory");  /* after the flag acquire */
		const int s = (it + c) % STAGES;
		c = rotated(c, b[4], b[5]);  /* the chunk read c-th */
		const u32 full = full_bar(s), dst = stage(s);
		mkd_mbar_arrive_tx(full, STAGE_BYTES);
#pragma unroll
		for (int cb = 0; cb < CB; cb++)
			mkd_tma_load_2d(dst + cb * KV_BOX, tq + 1, b[1] + 64 * cb, b[0] + c * BN, full);
#pragma unroll
		for (int cb = 0; cb < CB; cb++)
			mkd_tma_load_2d(dst + (CB + cb) * KV_BOX, tq + 2, b[3] + 64 * cb, b[2] + c * BN, full);
	}

	/* S = Q K^T for consumer w from stage s (issued, committed) */
	MKD_INLINE void qk(float *s, int w, int st)
	{
		const u64 dq = mkd_wg_desc(qs() + w * 64 * 128, 16, 1024);
		const u64 dk = mkd_wg_desc(stage(st), 16, 1024);
#pragma unroll
		for (int kk = 0; kk < D / 16; kk++)  /* box kk/4, 32 bytes per 16-wide slice */
			mkd_wg_ss<BN, T>::mma(s, dq + (u64)(((kk >> 2) * Q_BOX + (kk & 3) * 32) >> 4),
					      dk + (u64)(((kk >> 2) * KV_BOX + (kk & 3) * 32) >> 4), kk > 0);
		mkd_wg_commit();
	}

	/* O += P V from stage s (issued, committed) */
	MKD_INLINE void pv(const u32 (*pa)[4], int st)
	{
		const u64 dv = mkd_wg_desc(stage(st) + CB * KV_BOX, KV_BOX, 1024);
#pragma unroll
		for (int kk = 0; kk < BN / 16; kk++)  /* 16 keys: 16 lines of 128 bytes */
			mkd_wg_rs<D, T>::mma(o, pa[kk], dv + (u64)(kk * 128));
		mkd_wg_commit();
	}

	/* raw scores of a chunk (nkc valid keys) to probabilities, in place;
	 * the rows' max and sum updated; corr: O's factors.  MASK: keys past
	 * nkc or past the causal diagonal (diag: this thread's row less the
	 * chunk's first key) scored -inf; the chunks before the first masked
	 * one run without (first_masked).  Per key: a max, an FFMA (the
	 * scale folded in: scale2 > 0, so the raw max is the scaled one's), an
	 * exponential and an add.  The max and the sum run in four partial
	 * chains a row half (one chain of 32 would wait out each add's
	 * latency).  Straight-line, selects only: at a branch ptxas waits for
	 * the P V in flight (the overlap), so the exponentials would not run
	 * under it. */
	template <bool MASK>
	MKD_INLINE void softmax(float *s, int nkc, int diag, float *corr)
	{
		const int tq4 = threadIdx.x & 3;
		/* the last key a row half keeps, less this thread's column in
		 * a group of 8: then every key is compared as a constant (the
		 * keys themselves, 32 values in registers, were spilled beside
		 * a matmul engine) */
		int kmax[2];
#pragma unroll
		for (int h = 0; h < 2; h++)
			kmax[h] = (nkc - 1 < diag + 8 * h ? nkc - 1 : diag + 8 * h) - 2 * tq4;
		float mp[2][4];
#pragma unroll
		for (int i = 0; i < 8; i++)
			mp[i >> 2][i & 3] = mkd_ninf();
#pragma unroll
		for (int j = 0; j < BN / 8; j++)
#pragma unroll
			for (int e = 0; e < 4; e++) {
				if (MASK)  /* key 8 j + 2 tq4 + (e & 1) */
					s[4 * j + e] = 8 * j + (e & 1) > kmax[e >> 1] ? mkd_ninf() : s[4 * j + e];
				float &x = mp[e >> 1][2 * (j & 1) + (e & 1)];
				x = fmaxf(x, s[4 * j + e]);
			}
		float base[2], nb[2];
#pragma unroll
		for (int h = 0; h < 2; h++) {
			float mx = fmaxf(fmaxf(mp[h][0], mp[h][1]), fmaxf(mp[h][2], mp[h][3]));
			mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
			mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
			mx *= scale2;  /* log2 units; -inf stays -inf */
			/* -inf + LAZY is -inf: a first key moves it */
			const bool up = mx > m[h] + MKD_FAW_LAZY;
			const float c = mkd_exp2(m[h] - mx);  /* NaN where both are -inf: not taken */
			corr[h] = up ? c : 1.f;
			m[h] = up ? mx : m[h];
			base[h] = m[h] == mkd_ninf() ? 0.f : m[h];  /* every key so far masked */
			nb[h] = -base[h];
			l[h] *= corr[h];
		}
		float lp[2][4];
#pragma unroll
		for (int i = 0; i < 8; i++)
			lp[i >> 2][i & 3] = 0.f;
#pragma unroll
		for (int j = 0; j < BN / 8; j++)
#pragma unroll
			for (int e = 0; e < 4; e++) {
				s[4 * j + e] = mkd_exp2(fmaf(s[4 * j + e], scale2, nb[e >> 1]));
				lp[e >> 1][2 * (j & 1) + (e & 1)] += s[4 * j + e];
			}
#pragma unroll
		for (int h = 0; h < 2; h++)
			l[h] += (lp[h][0] + lp[h][1]) + (lp[h][2] + lp[h][3]);
	}

	MKD_INLINE void rescale(const float *corr)
	{
		if (!__any_sync(0xffffffffu, corr[0] != 1.f || corr[1] != 1.f))
			return;
#pragma unroll
		for (int j = 0; j < D / 8; j++) {
			o[4 * j] *= corr[0];
			o[4 * j + 1] *= corr[0];
			o[4 * j + 2] *= corr[1];
			o[4 * j + 3] *= corr[1];
		}
	}

	static MKD_INLINE void pack(u32 (*pa)[4], const float *s)
	{
#pragma unroll
		for (int kk = 0; kk < BN / 16; kk++) {
			pa[kk][0] = mkd_elem<T>::pk2(s[8 * kk], s[8 * kk + 1]);
			pa[kk][1] = mkd_elem<T>::pk2(s[8 * kk + 2], s[8 * kk + 3]);
			pa[kk][2] = mkd_elem<T>::pk2(s[8 * kk + 4], s[8 * kk + 5]);
			pa[kk][3] = mkd_elem<T>::pk2(s[8 * kk + 6], s[8 * kk + 7]);
		}
	}

	/* before chunk j is read: wait for it; a ragged chunk's V rows past nkc
	 * zeroed (see the head) */
	MKD_INLINE void arrive_chunk(int w, int j, int nkc)
	{
		const int st = j % STAGES;
		mkd_mbar_wait(full_bar(st), (j / STAGES) & 1, MKD_WG_TIMEOUT_NS);
		if (nkc < BN) {
			const int t = threadIdx.x & 127, per = (BN - nkc) * 8;  /* 16-byte words a box */
			for (int i = t; i < CB * per; i += 128) {
				const u32 a = stage(st) + (CB + i / per) * KV_BOX + nkc * 128 + (i % per) * 16;
				asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};" :: "r"(a), "r"(0) : "memory");
			}
			asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
			mkd_bar_sync(MKD_FAW_WGBAR + w, 128);
		}
	}

	/* this warp is done with chunk j (of the block's n from it); the last
	 * of the 8 loads the chunk STAGES further into its stage */
	MKD_INLINE void release(int j, int n)
	{
		if ((threadIdx.x & 31) == 0) {
			u32 old;
			asm volatile("atom.acq_rel.cta.shared::cta.add.u32 %0, [%1], 1;"
				     : "=r"(old) : "r"(cnt(j % STAGES)) : "memory");
			if ((old & 7) == 7 && j + STAGES < it + n)
				load_chunk(j + STAGES - it);
		}
	}

	MKD_INLINE void pin_s(float *s)
	{
#pragma unroll
		for (int i = 0; i < SACC; i++)
			mkd_wg_pin(s[i]);
	}
	MKD_INLINE void pin_o()
	{
#pragma unroll
		for (int i = 0; i < OACC; i++)
			mkd_wg_pin(o[i]);
	}
	static MKD_INLINE void pin_p(u32 (*pa)[4])
	{
#pragma unroll
		for (int kk = 0; kk < BN / 16; kk++)
#pragma unroll
			for (int e = 0; e < 4; e++)
				mkd_wg_pin_u(pa[kk][e]);
	}

	/* the chunk read c-th of a block whose nf full chunks are read from
	 * chunk rot on, in turn, and a ragged one (if any) last */
	static MKD_INLINE int rotated(int c, int nf, int rot)
	{
		return c >= nf ? c : c + rot < nf ? c + rot : c + rot - nf;
	}

	/* the c-th chunk read of a block of nk keys (rot: as rotated): its
	 * place in the ring (j), its valid keys, the diagonal for this
	 * thread's row qr (see softmax) */
	struct chunk {
		int j, nkc, diag;
		bool mask;
	};
	MKD_INLINE chunk chunk_at(int c, int rot, int nk, bool causal, int qfirst, int qr) const
	{
		chunk k;
		k.j = it + c;
		c = rotated(c, nk / BN, rot);
		k.nkc = nk - c * BN < BN ? nk - c * BN : BN;
		k.mask = k.nkc < BN || (causal && c * BN + BN - 1 > qfirst);
		k.diag = causal ? qr - c * BN : 1 << 30;
		return k;
	}

	/* the first chunk read whose scores are masked (n if none): the ragged
	 * one, read last, or the first to cross the causal diagonal of this
	 * warpgroup's rows from qfirst (chunk c does where c BN + BN - 1 >
	 * qfirst; causal blocks are read in order).  Every chunk read after it
	 * is masked too, so a loop without the mask runs up to it. */
	static MKD_INLINE int first_masked(int n, int nk, bool causal, int qfirst)
	{
		const int fm = nk % BN ? n - 1 : n;
		const int c0 = qfirst < 0 ? 0 : (qfirst + 1) / BN;
		return causal && c0 < fm ? c0 : fm;
	}

	/* chunk k alone: wait for it, S = Q K^T in this warpgroup's turn, its
	 * softmax (O rescaled) */
	MKD_INLINE void chunk_s(int w, const chunk &k, int me, int other, float *s, float *corr)
	{
		arrive_chunk(w, k.j, k.nkc);
		mkd_bar_sync(me, 256);
		pin_s(s);
		pin_o();
		mkd_wg_fence();
		qk(s, w, k.j % STAGES);
		mkd_bar_arrive(other, 256);
		mkd_wg_wait<0>();
		pin_s(s);
		if (k.mask)  /* nothing in flight: a branch costs nothing here */
			softmax<true>(s, k.nkc, k.diag, corr);
		else
			softmax<false>(s, k.nkc, k.diag, corr);
		rescale(corr);
	}

	/* O += P V of chunk j in this warpgroup's turn; the stage released */
	MKD_INLINE void chunk_pv(int j, int n, int me, int other, u32 (*pa)[4])
	{
		mkd_bar_sync(me, 256);
		pin_o();
		pin_p(pa);
		mkd_wg_fence();
		pv(pa, j % STAGES);
		mkd_bar_arrive(other, 256);
		mkd_wg_wait<0>();
		pin_o();
		pin_p(pa);
		release(j, n);
	}

	/* chunk k's S beside chunk k.j - 1's P V, in one turn (OVERLAP); the
	 * softmax of chunk k under that P V; chunk k.j - 1's stage released */
	template <bool MASK>
	MKD_INLINE void chunk_ovl(int w, const chunk &k, int n, int me, int other, float *s, float *corr,
				  u32 (*pa)[4])
	{
		const int j = k.j;
		arrive_chunk(w, j, k.nkc);
		mkd_bar_sync(me, 256);
		pin_s(s);
		pin_o();
		pin_p(pa);
		mkd_wg_fence();
		qk(s, w, j % STAGES);
		pv(pa, (j - 1) % STAGES);
		mkd_bar_arrive(other, 256);
		mkd_wg_wait<1>();
		pin_s(s);
		softmax<MASK>(s, k.nkc, k.diag, corr);
		/* the probabilities made under P V, before its wait: ptxas
		 * schedules the wait as early as it may (a wait depends on
		 * nothing), so it must wait behind a branch on the row sums,
		 * which depend on every exponential.  The branch's body never
		 * runs (the sums are never all that NaN) and would change nothing
		 * if it did */
		pin_s(s);
		if (__any_sync(0xffffffffu, __float_as_uint(l[0] + l[1]) == 0xffffffffu))
			asm volatile("nanosleep.u32 0;" ::: "memory");
		mkd_wg_wait<0>();
		pin_o();
		pin_p(pa);
		release(j - 1, n);
		rescale(corr);
		pack(pa, s);
	}

	/* consumer w over chunks it .. it + n - 1 (nk keys from kpos0, read
	 * as rotated from chunk rot on) */
	MKD_INLINE void consume(int w, int n, int rot, int nk, bool causal, i64 qpos0, i64 kpos0)
	{
		const int t = threadIdx.x & 127;
		/* positions relative to the block's first key (int: fewer registers;
		 * only the causal mask reads them, where they are small) */
		const i64 d0 = qpos0 - kpos0;
		const int qfirst = (int)(d0 < -(1 << 29) ? -(1 << 29) : d0 > (1 << 29) ? 1 << 29 : d0) + 64 * w;
		const int qr = qfirst + 16 * (t >> 5) + ((t & 31) >> 2);
		const int me = MKD_FAW_SCHED + w, other = MKD_FAW_SCHED + (w ^ 1);
		float s[SACC], corr[2];
		u32 pa[BN / 16][4];
		mkd_mbar_wait(q_bar(), 0, MKD_WG_TIMEOUT_NS);
		if (w == 1)
			mkd_bar_arrive(MKD_FAW_SCHED, 256);  /* WG0 goes first */
		if (OVERLAP) {
			/* chunk 0: S alone; then chunk c's S beside chunk c-1's P V,
			 * the chunks without a mask first; the last P V after the
			 * loops.  Straight-line turns: a branch between the wgmmas of
			 * a turn makes ptxas serialize them (C7514, C7520) */
			chunk_s(w, chunk_at(0, rot, nk, causal, qfirst, qr), me, other, s, corr);
			pack(pa, s);
			const int fm = first_masked(n, nk, causal, qfirst);
			int c = 1;
			for (; c < fm; c++)
				chunk_ovl<false>(w, chunk_at(c, rot, nk, causal, qfirst, qr), n, me, other, s, corr, pa);
			for (; c < n; c++)
				chunk_ovl<true>(w, chunk_at(c, rot, nk, causal, qfirst, qr), n, me, other, s, corr, pa);
			chunk_pv(it + n - 1, n, me, other, pa);
		} else {
			for (int c = 0; c < n; c++) {
				chunk_s(w, chunk_at(c, rot, nk, causal, qfirst, qr), me, other, s, corr);
				pack(pa, s);
				chunk_pv(it + c, n, me, other, pa);  /* this chunk's P V now */
			}
		}
		if (w == 0)
			mkd_bar_sync(MKD_FAW_SCHED, 256);  /* WG1's last turn */
	}

	/* One key/value block of nk rows at k, v (row strides ldk, ldv), as mkd_fa. */
	MKD_INLINE void block(const T *k, const T *v, i64 ldk, i64 ldv, int nk, int rows, bool causal,
			      i64 qpos0, i64 kpos0)
	{
		if (causal && kpos0 + nk > qpos0 + rows)
			nk = (int)(qpos0 + rows - kpos0);  /* keys after the last query: none needed */
		if (nk <= 0)
			return;
		const int n = (nk + BN - 1) / BN, nf = nk / BN;
		const int rot = ROT && !causal ? (int)((i64)blockIdx.x * nf / gridDim.x) : 0;
		if (threadIdx.x == 0) {  /* the block's rows, its first chunks */
			const i64 ek = ((const char *)k - (const char *)mkd_lds_u64(ptrs(1))) / 2;
			const i64 ev = ((const char *)v - (const char *)mkd_lds_u64(ptrs(2))) / 2;
			const int b[6] = {(int)(ek / ldk), (int)(ek % ldk), (int)(ev / ldv), (int)(ev % ldv),
					  nf, rot};
#pragma unroll
			for (int i = 0; i < 6; i++)
				asm volatile("st.shared.u32 [%0], %1;" :: "r"(blk(i)), "r"(b[i]) : "memory");
			for (int c = 0; c < n && c < STAGES; c++)
				load_chunk(c);
		}
		const int wg = __shfl_sync(0xffffffffu, (int)(threadIdx.x >> 7), 0);
		if (wg < 2)
			consume(wg, n, rot, nk, causal, qpos0, kpos0);
		it += n;
		__syncthreads();  /* every chunk consumed: the ring is empty */
	}

	template <typename TO>
	MKD_INLINE void end(TO *out, i64 ldo, int rows)
	{
		finish<TO, false>(out, ldo, rows);
	}

	/* split-KV: rows unnormalised, then max (log2 units) and sum, fp32 */
	MKD_INLINE void end_part(float *out, i64 ldo, int rows)
	{
		finish<float, true>(out, ldo, rows);
	}

	template <typename TO, bool PART>
	MKD_INLINE void finish(TO *out, i64 ldo, int rows)
	{
		const int wg = threadIdx.x >> 7, t = threadIdx.x & 127, lane = t & 31, tq4 = lane & 3;
		if (wg < 2) {
			const int r0 = 64 * wg + 16 * (t >> 5) + (lane >> 2);
#pragma unroll
			for (int h = 0; h < 2; h++) {
				float lh = l[h];
				lh += __shfl_xor_sync(0xffffffffu, lh, 1);
				lh += __shfl_xor_sync(0xffffffffu, lh, 2);
				const float inv = PART ? 1.f : lh > 0.f ? 1.f / lh : 0.f;
				const int r = r0 + 8 * h;
				if (r < rows) {
#pragma unroll
					for (int j = 0; j < D / 8; j++)
						mkd_store2<TO>::st(out + (i64)r * ldo + 8 * j + 2 * tq4,
								   o[4 * j + 2 * h] * inv, o[4 * j + 2 * h + 1] * inv,
								   true);
					if (PART && tq4 == 0)
						mkd_store2<TO>::st(out + (i64)r * ldo + D, m[h], lh, true);
				}
			}
		}
		quit();
	}

	/* the barriers back to plain shared memory (also when a wait failed) */
	MKD_INLINE void quit()
	{
		__syncthreads();
		if (threadIdx.x == 0) {
			mkd_mbar_wait(q_bar(), 0, MKD_WG_TIMEOUT_NS);  /* Q landed: no write in flight */
#pragma unroll
			for (int s = 0; s < STAGES; s++)
				mkd_mbar_inval(full_bar(s));
			mkd_mbar_inval(q_bar());
		}
		__syncthreads();
	}
};

#endif /* MKD_HAS_WGMMA */
#endif
