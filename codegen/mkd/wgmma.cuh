/* mkd/wgmma.cuh - the Hopper GEMM tile engine (sm_90a): TMA, mbarriers, wgmma.
 *
 * One call computes one output tile C[BM x BN] = A[BM x K] * B[K x BN] with
 * fp32 accumulators, and is made by all 384 threads of the CTA, which come
 * in three warpgroups:
 *
 *   WG0   producer: thread 0 issues the TMA loads of A and B into a
 *         STAGES-deep ring; its other 127 threads wait at the end.
 *   WG1   consumer: rows 0..63 of the tile, wgmma m64nBNk16.
 *   WG2   consumer: rows 64..127.  With COLS (the plan's wg_cols: at most
 *         64 valid rows, decode) the two split the columns instead: rows 0..63 each, WG1 the
 *         first BN/2 columns, WG2 the rest (m64n(BN/2)k16), so no
 *         warpgroup multiplies the zeros TMA fills the missing rows with.
 *         With GATE as well (a gate-up tile, BN 128: compiler/expand.c
 *         fuse_gates) box 0 of a stage is the gate weight's (l.tg) and box
 *         1 B's, at the same 64 columns: WG1 computes A Wg, WG2 A B, and
 *         WG1 hands act(A Wg) to WG2 through GATE_BYTES of shared memory
 *         past the barriers (named barrier 5); WG2 stores
 *         epi(A B) * act(A Wg) over the 64 columns.
 *   NORM  (A = rmsnorm(X, g) folded into the tile: compiler/expand.c
 *         fuse_norms; 64 rows with COLS, else 128) A's loads are X's, and
 *         warps 1-3 of WG0 normalise each stage before the consumers read
 *         it: they scale the valid rows' 64 values by g in place (the
 *         16-byte pieces shared out), sum their squares, and arrive on
 *         norm[s]; the
 *         consumers wait for norm[s] instead of full[s], and multiply row
 *         j of their results by 1/rms(X[j]) before the epilogue.  Nothing
 *         waits for a separate rmsnorm stage, and no normalised copy of X
 *         is made.
 *
 * Ring and barriers.  Stage s holds A[128][64] (16 KB, one TMA box, or
 * two of 64 rows with ABOX 64, a bucket's tiles: a_boxes; with COLS
 * A[64][64], 8 KB) and B[64][BN] (BN/64 TMA boxes of 64 x 64, 8 KB
 * each), every piece 1024-byte aligned.  full[s] (count 1) completes when
 * the producer has arrived with
 * expect_tx(stage bytes) and the TMA engine has written those bytes;
 * empty[s] (count 8: lane 0 of each consumer warp; 8 * MC, below) completes when both
 * consumer warpgroups are done reading stage s.  Load kt uses stage
 * kt % STAGES in round r = kt / STAGES: consumers wait full[s] for parity
 * r & 1, the producer waits empty[s] for parity (r & 1) ^ 1 - in round 0
 * that is the phase "before" a fresh barrier, which counts as complete, so
 * the first STAGES loads go out at once.  A consumer warp releases stage s
 * only after wgmma.wait_group has retired the wgmma group that read it
 * (group kt is retired by wait_group 1 after group kt+1 is committed).
 *
 * Tile after tile.  A call may be told the tile this CTA runs next (`next`,
 * thread 0 asks it once this tile's loads are out, or at the start where
 * the warpgroups trade registers): the next tile of a task that walks
 * several, or a tile of the CTA's next task when that is a task of the same
 * stage whose flags are already set; the producer goes on into its first
 * STAGES loads as soon as this tile's stages free up, while the consumers
 * still run this tile's last k-blocks and its epilogue; the barriers stay
 * live and mkd_wg_ring (shared memory) says where the next call picks the
 * ring up.  Loads are numbered from the ring's initialisation, load L in
 * stage L % STAGES, round L / STAGES, so phases carry over from tile to
 * tile; the consumers release every stage they read, the last one too.
 * Otherwise (no next tile, or not ready) the call ends with its barriers
 * invalidated, and the ring and the barrier words are plain shared memory
 * again for whatever stage code runs next.
 *
 * Clusters (MC = 2; launched with clusters of MC CTAs along x).  The CTAs
 * of a cluster run tiles of the same B columns and k-blocks at the same
 * time (row tiles of one weight slab), each its own A rows.  B's boxes are
 * shared out: the CTA of rank r loads boxes r * B_BOXES / MC .. and
 * multicasts them into the same stage of every CTA, whose full[s] counts
 * the bytes as its own (STAGE_BYTES whoever loaded them).  So stage s of a
 * CTA is written by every producer of the cluster, and empty[s] counts
 * the consumer warps of all of them (8 * MC): a warp done with stage s
 * arrives on empty[s] in every CTA.  A cluster barrier follows the
 * barriers' initialisation (no load may reach a CTA whose barriers are not
 * live) and precedes their invalidation (no CTA's release may arrive at a
 * dead barrier).  The CTAs of a cluster pass the same k-blocks and the same
 * key, and their next() the same answer; a CTA with no rows of its own
 * still loads its boxes and frees every stage.  L2 reads per k-block fall
 * from A + B to A + B / MC (48 KB to 32 KB at 128 x 256).
 *
 * Shared-memory layouts (128-byte swizzle: the 16-byte chunk c of the
 * 128-byte line l of a 1024-byte aligned block sits at chunk c ^ (l % 8);
 * TMA writes it so, wgmma reads it so):
 *   A, K-major: row m of the tile is line m (64 bf16 of K).  Descriptor:
 *     start = stage + 8192 * (consumer WG), LBO unused (16 B), SBO = 1024 B
 *     (8 rows to the next 8 rows); the k-th 16-wide K slice starts 32*k
 *     bytes further (the hardware applies the swizzle to the address).
 *   B, MN-major (N contiguous, trans-b = 1): box j holds columns 64j..64j+63,
 *     K row k is line k of the box.  Descriptor: LBO = 8192 B (one 64-column
 *     block to the next), SBO = 1024 B (8 K rows to the next 8); the k-th
 *     K slice starts 16 * 128 = 2048*k bytes further.
 *
 * Registers.  A consumer thread holds BN/2 fp32 accumulators (64 or 128).
 * For BN > 128 the warpgroups trade registers with setmaxnreg: WG0 drops to
 * 40, the consumers rise to 232 (128*40 + 256*232 = 384*168), and both go
 * back to MKD_WG_REGS (168, the cap of __launch_bounds__(384, 1)) before
 * the final barrier, so code after the call runs with the usual budget.
 * This needs the kernel to be compiled with exactly that cap: its entry
 * register count must be MKD_WG_REGS (ptxas reports "Used 168 registers").
 *
 * Memory ordering.  Operands may have been written in this kernel by plain
 * stores of other CTAs (seen through a flag acquire and a CTA barrier): the
 * producer issues fence.proxy.async.global before its first TMA.  Every
 * thread issues fence.proxy.async.shared::cta first, so earlier generic
 * writes to the ring are ordered before the TMA engine's.
 *
 * The tile clips at M rows and N columns (the valid part of this tile);
 * with FULL (the plan's where C's sides are multiples of the tile's) M and
 * N are BM and BN and the epilogue stores without testing them;
 * TMA fills out-of-bounds reads with zeros, so a ragged K needs the tensor
 * map's K extent to end at the tile's k0 + K.  C: row-major, ldc elements,
 * pointing at the tile's first element, 4-byte aligned pairs (ldc even).
 * Waits are bounded: a barrier that stays incomplete for MKD_WG_TIMEOUT_NS
 * (with waits per operand: plus the run's flag timeout, which thread 0's
 * flag waits may take before the loads go out)
 * traps (a bug in the ring, never a slow producer).
 *
 * Only compiled for sm_90a (NVRTC defines __CUDA_ARCH_FEAT_SM90_ALL);
 * mma.cuh is the engine for every other architecture.
 */
#ifndef MKD_WGMMA_CUH
#define MKD_WGMMA_CUH

#include "base.cuh"
#include "mbar.cuh"
#include "copy.cuh"
#include "mma.cuh"
#include "ew.cuh"

/* The dynamic shared memory a generated kernel gives every CTA: its
 * source specialises mkd_smem_cap<0> with MK_SMEM after its defines
 * (codegen/emit_cu.c), and each Hopper tile checks at compile time that
 * its plan counted what the tile uses; elsewhere (the GEMM tests) no
 * bound. */
template <int> struct mkd_smem_cap {
	enum { BYTES = 0x7fffffff };
};

/* One tile's operand loads: A's map and the tile's first element in it
 * (a_col the first K column), B's map and its (K row, column), nk k-blocks
 * of 64. */
struct mkd_wg_loads {
	const mkd_tmap *ta, *tb;
	int a_row, a_col, b_row, b_col, nk;
	const mkd_tmap *tg;  /* a gate-up tile's gate weight (GATE), at B's box */
	int live;            /* the tile's first `live` rows of A may be nonzero, the
	                        rest are zeros (a bucket's rows past its tokens):
	                        a consumer warpgroup whose 64 rows are all zeros
	                        multiplies nothing and stores epi(0), what its
	                        products would give; 0: every row may be; < 0:
	                        the CTA has no rows (M 0) and loads no A, it
	                        only takes its part in a cluster's B loads */
};

/* Where a tile's epilogue goes by TMA stores (STG 2): C's tensor map (its
 * box 64 rows x 128 bytes of columns, 128-byte swizzle) and the tile's
 * first row and column in it. */
struct mkd_wg_out {
	const mkd_tmap *map;
	int row, col;
};

/* A NORM tile's rmsnorm (mkd_wgmma_tile): g, the weight at A's column 0
 * (nullptr: rmsnorm without one), and k, the length of X's rows, which
 * the mean of the squares divides by. */
struct mkd_wg_norm {
	const void *g;
	int k;
};

/* The next call has no tile to go on into (the stage function's `next`
 * when its stage never prefetches). */
struct mkd_wg_last {
	__device__ i64 operator()(mkd_wg_loads &) const { return -1; }
};

/* Which tile a call runs, for the ring carried between calls: tile q of
 * task i's walk (a task of one tile: q = 0).  Both are >= 0: made from
 * unsigned values, the key needs no sign word of the task (one the llama
 * layer's kernel kept through every stage, and spilled). */
MKD_INLINE i64 mkd_wg_key(int task, int q) { return (i64)((u64)(u32)task << 24 | (u32)q); }

/* The flags a tile's operands wait on, when the engine waits for them
 * itself (a stage that waits per read, MK_PROGRESSIVE): thread 0 calls b()
 * before B's loads and a() before A's, the first consumer thread x()
 * before the epilogue reads its operand; each returns false when the run
 * is aborted.  LATE 0: the kernel loop waited for every flag before the
 * call (this one); X: the epilogue reads an operand; flag_ns(): how long
 * the waits before the loads may take (the consumers' ring waits add it). */
struct mkd_wg_waited {
	enum { LATE = 0, X = 0 };
	__device__ bool b() const { return true; }
	__device__ bool a() const { return true; }
	__device__ bool x() const { return true; }
	__device__ u64 flag_ns() const { return 0; }
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL) && !defined(MKD_NO_WGMMA)
#define MKD_HAS_WGMMA 1
#define MKD_WG_LATE true       /* a matmul stage with late waits waits per read */

#ifndef MKD_WG_REGS
#define MKD_WG_REGS 168        /* per-thread registers at kernel entry */
#endif
#ifndef MKD_WG_TRADE
#define MKD_WG_TRADE 1         /* setmaxnreg for BN > 128; 0: all at 168 (154 used) */
#endif
#ifndef MKD_WG_STAGED
#define MKD_WG_STAGED 1        /* 128-row tiles store through shared memory (staged); 0: from registers */
#endif
#ifndef MKD_WG_TMA
#define MKD_WG_TMA 0           /* 1: some tile stores by TMA (STG 2): the task loop drains them */
#endif
#define MKD_WG_REGS_PRODUCER 40
#define MKD_WG_REGS_CONSUMER 232
#ifndef MKD_WG_TIMEOUT_NS
#define MKD_WG_TIMEOUT_NS 10000000000ull
#endif
#define MKD_WG_BAR_ID 1        /* named barriers 1..3: one per warpgroup */
#define MKD_WG_BAR_EPI 4       /* 4: the consumers wait for the first one's x() */
#define MKD_WG_BAR_GATE 5      /* 5: the up warpgroup waits for the gate's values */
#define MKD_WG_BAR_STG 6       /* 6, 7: a consumer warpgroup's epilogue staging */

/* The ring between two calls: the first `pre` loads of tile `key`
 * (mkd_wg_key) are in it as loads pos.. of the live barriers; key -1:
 * nothing carried (the barriers are invalidated).  Thread 0 writes it
 * before a CTA barrier; the kernel loop sets key -1 before a CTA's first
 * task (mkd_wg_ring_reset). */
struct mkd_wg_carry {
	i64 key;
	int pre;
	u32 pos;
	int ok, okx;  /* the last call's waits passed: the producer's, the epilogue's */
};
static __shared__ mkd_wg_carry mkd_wg_ring;
MKD_INLINE void mkd_wg_ring_reset() { mkd_wg_ring.key = -1; }

/* mbarriers: mkd/mbar.cuh */

/* ---- TMA stores ----------------------------------------------------------- */

/* the tensor maps and their copies: mkd/copy.cuh */

/* The epilogue's TMA stores (STG 2) are issued by the first thread of each
 * consumer warpgroup (128, 256), in bulk groups of its own.  Called by
 * every thread: those two wait until all their stores are written and
 * visible (not only read out of shared memory) and order them before
 * their later generic accesses, so that a CTA barrier and thread 0's
 * release after it cover them (a flag), and the staging is plain shared
 * memory again (another stage's, the next run's). */
MKD_INLINE void mkd_wg_drain()
{
	if (threadIdx.x == 128 || threadIdx.x == 256) {
		mkd_bulk_wait_group<0>();
		asm volatile("fence.proxy.async.global;" ::: "memory");
		asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
	}
}

/* ---- wgmma ---------------------------------------------------------------- */

/* Shared-memory matrix descriptor, 128-byte swizzle (layout type 1 in bits
 * 62-63); address and offsets in 16-byte units, base offset 0 (every
 * operand block starts 1024-byte aligned). */
MKD_INLINE u64 mkd_wg_desc(u32 saddr, u32 lbo, u32 sbo)
{
	return (u64)((saddr & 0x3FFFF) >> 4) | ((u64)(lbo >> 4) << 16) |
	       ((u64)(sbo >> 4) << 32) | (1ull << 62);
}

MKD_INLINE void mkd_wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
MKD_INLINE void mkd_wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N> MKD_INLINE void mkd_wg_wait()
{
	asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory");
}
/* Pins a register between asm statements: accumulators are neither read
 * before the wait that retires their wgmma, nor moved across the fence. */
MKD_INLINE void mkd_wg_pin(float &x) { asm volatile("" : "+f"(x) :: "memory"); }

/* m64n64k16: 32 fp32 accumulators per thread */
#define MKD_WG_D32 \
	"{" \
	"%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
	"%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31" \
	"}"
#define MKD_WG_O32(d) \
	"+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
	"+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
	"+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
	"+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])

/* m64n128k16: 64 fp32 accumulators per thread */
#define MKD_WG_D64 \
	"{" \
	"%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
	"%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
	"%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
	"%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63" \
	"}"
#define MKD_WG_O64(d) \
	MKD_WG_O32(d), \
	"+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
	"+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
	"+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
	"+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])

/* m64n256k16: 128 fp32 accumulators per thread */
#define MKD_WG_D128 \
	"{" \
	"%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
	"%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
	"%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
	"%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
	"%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
	"%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, " \
	"%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
	"%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127" \
	"}"
#define MKD_WG_O128(d) \
	MKD_WG_O64(d), \
	"+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
	"+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
	"+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
	"+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), \
	"+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
	"+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), \
	"+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
	"+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])

/* D[64 x N] += A[64 x 16] (smem, K-major) * B[16 x N] (smem, N-major):
 * scale-d 1 (accumulate), scale-a/b 1, trans-a 0, trans-b 1. */
template <int N, typename T> struct mkd_wg_op;
#define MKD_WG_SPEC(NN, R, DA, DB, DS, TT, TS)                                          \
	template <> struct mkd_wg_op<NN, TT> {                                           \
		static MKD_INLINE void mma(float *d, u64 da, u64 db)                     \
		{                                                                        \
			asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %" #DS ", 0;\n\t" \
				     "wgmma.mma_async.sync.aligned.m64n" #NN "k16.f32." TS "." TS \
				     " " MKD_WG_D##R ", %" #DA ", %" #DB ", p, 1, 1, 0, 1;\n\t}" \
				     : MKD_WG_O##R(d) : "l"(da), "l"(db), "n"(1));           \
		}                                                                        \
	};
MKD_WG_SPEC(64, 32, 32, 33, 34, mkd_bf16, "bf16")
MKD_WG_SPEC(64, 32, 32, 33, 34, mkd_f16, "f16")
MKD_WG_SPEC(128, 64, 64, 65, 66, mkd_bf16, "bf16")
MKD_WG_SPEC(128, 64, 64, 65, 66, mkd_f16, "f16")
MKD_WG_SPEC(256, 128, 128, 129, 130, mkd_bf16, "bf16")
MKD_WG_SPEC(256, 128, 128, 129, 130, mkd_f16, "f16")
#undef MKD_WG_SPEC

/* Two adjacent results (columns c, c+1 of one row) as the output type; `both`
 * false stores only the first.  p is 2-element aligned. */
template <typename TC> struct mkd_wg_store2 {
	static MKD_INLINE void st(TC *p, float a, float b, bool both)
	{
		mkd_store2<TC>::st(p, a, b, both);
	}
};
template <> struct mkd_wg_store2<float> {
	static MKD_INLINE void st(float *p, float a, float b, bool both)
	{
		if (both)
			*(float2 *)p = make_float2(a, b);
		else
			p[0] = a;
	}
};

/* two values as one 4-byte pair of the 16-bit output type */
template <typename TC> MKD_INLINE u32 mkd_wg_pack(float a, float b);
template <> MKD_INLINE u32 mkd_wg_pack<mkd_bf16>(float a, float b) { return mkd_pack_bf16x2(a, b); }
template <> MKD_INLINE u32 mkd_wg_pack<mkd_f16>(float a, float b) { return mkd_pack_f16x2(a, b); }

/* named barrier over one warpgroup's 128 threads */
template <int ID> MKD_INLINE void mkd_wg_bar()
{
	asm volatile("bar.sync %0, 128;" :: "n"(ID) : "memory");
}

/* ---- the tile engine ------------------------------------------------------- */

template <typename T, typename TC, int BM, int BN, int BK, int STAGES, bool COLS = false,
	  bool GATE = false, bool FULL = false, int MC = 1, int STG = MKD_WG_STAGED, bool NORM = false,
	  int ABOX = 0>
struct mkd_wgmma_tile {
	enum {
		THREADS = 384,
		/* COLS: no tile has more than 64 rows; A's box (its tensor map,
		 * codegen/emit_stage.c) holds 64, and the room goes to B stages */
		A_ROWS = COLS ? 64 : BM,
		A_BYTES = A_ROWS * BK * 2,          /* a stage's A: A_ROWS x 64 */
		/* ABOX (the plan's a_box; 0: A_ROWS): the rows of A's TMA box.
		 * A bucket's 128-row tiles load A by 64-row halves, and a tile
		 * whose tokens fit in the first half loads that half only
		 * (a_boxes) */
		A_BOX = ABOX ? ABOX : A_ROWS,
		A_BOX_BYTES = A_BOX * BK * 2,
		B_BOX = BK * 64 * 2,                /* one TMA box, 64 x 64 */
		B_BOXES = BN / 64,
		STAGE_BYTES = A_BYTES + B_BOXES * B_BOX,
		RING = STAGES * STAGE_BYTES,
		ACC = BN / 2,                       /* fp32 accumulators per consumer thread */
		/* GATE: the gate warpgroup's act(A Wg), 32 a thread, for the other */
		GATE_BYTES = GATE ? 128 * (ACC / 2) * 4 : 0,
		/* the epilogue's staging (store): per consumer warpgroup 64 rows
		 * of 128 bytes of C, each row padded so that the fragment's
		 * writes hit 32 banks (36 words a row for 4-byte pairs, 40 for
		 * 8-byte ones); none where the tile has 64 rows at most, or
		 * without STG (MKD_WG_STAGED, on unless the plan's
		 * MK_WG_STAGED=0) */
		EPI_ROW = sizeof(TC) == 4 ? 160 : 144,
		/* STG 2 (the plan's tma_store): per consumer warpgroup two
		 * buffers of 64 rows of 128 bytes, unpadded and 128-byte
		 * swizzled as C's tensor map writes them out (tstore) */
		EPI_BUF = 64 * 128,
		EPI_BYTES = COLS || GATE || !STG ? 0 : STG == 2 ? 2 * 2 * EPI_BUF : 2 * 64 * EPI_ROW,
		/* 1024 of slack to align the ring, then full[] and empty[], then
		 * the gate's values or the epilogue's staging; STG 2: the
		 * staging first (1024-byte aligned, as the swizzle wants it),
		 * then the barriers */
		BARS_AT = RING + (STG == 2 ? EPI_BYTES : 0),
		/* NORM: norm[] past empty[] and what follows them (the gate's
		 * values, the staging; STG 2's is before the barriers), then
		 * the rows' 1/rms (A_ROWS fp32) */
		NORM_AT = 16 * STAGES + GATE_BYTES + (STG == 2 ? 0 : EPI_BYTES),
		NORM_BYTES = NORM ? 8 * STAGES + A_ROWS * 4 : 0,
		/* then what each consumer warp keeps over its mainloop (keep) */
		KEEP_AT = NORM_AT + NORM_BYTES,
		KEEP_SLOT = 64,
		KEEP_BYTES = 8 * KEEP_SLOT,
		SMEM = 1024 + RING + 2 * STAGES * 8 + GATE_BYTES + EPI_BYTES + NORM_BYTES + KEEP_BYTES,
		/* (not with NORM: warps of WG0 normalise, at the usual budget) */
		TRADE_REGS = (BN > 128) && !COLS && MKD_WG_TRADE && !NORM,
		/* MC > 1: B's boxes this CTA loads for the whole cluster; an
		 * empty barrier waits for the consumer warps of every CTA */
		MC_BOXES = B_BOXES / MC,
		EMPTY_COUNT = 8 * MC
	};
	static_assert(sizeof(T) == 2, "wgmma tile takes 16-bit inputs (bf16, f16)");
	static_assert(BM == 128, "two consumer warpgroups of 64 rows each");
	static_assert(BK == 64, "BK is one 128-byte swizzle row of 16-bit elements");
	static_assert(BN == 64 || BN == 128 || BN == 256, "BN: 64, 128 or 256");
	static_assert(!COLS || BN >= 128, "the warpgroups split 128 or 256 columns");
	static_assert(!GATE || (COLS && BN == 128), "a gate-up tile: 64 columns of each weight");
	static_assert(!FULL || (!COLS && !GATE), "FULL: whole 128-row tiles");
	static_assert(STAGES >= 2 && STAGES <= 12, "2..12 stages");
	static_assert(MC == 1 || MC == 2, "clusters of 1 or 2 CTAs");
	static_assert(STG >= 0 && STG <= 2, "STG: 0 registers, 1 staged, 2 staged and stored by TMA");
	static_assert(STG != 2 || (!COLS && !GATE), "TMA stores: whole 128-row tiles");
	static_assert(A_BOX % 64 == 0 && A_ROWS % A_BOX == 0 && (A_BOX == A_ROWS || !NORM),
		      "A's box: 64 rows or the tile's (NORM: the tile's)");
	static_assert(MC == 1 || (!COLS && !GATE && B_BOXES % MC == 0),
		      "a cluster shares B's boxes: whole 128-row tiles, BN >= 128");
	static_assert(!NORM || (!GATE && MC == 1), "the rmsnorm in the tile: one weight, no cluster");

	static MKD_INLINE u32 full_bar(u32 bars, int s) { return bars + 8 * s; }
	/* One thread: the ring's barriers live (empty[s] counting EMPTY_COUNT
	 * arrivals), and dead again. */
	static MKD_INLINE void init_bars(u32 bars)
	{
#pragma unroll
		for (int s = 0; s < STAGES; s++) {
			mkd_mbar_init(full_bar(bars, s), 1);
			mkd_mbar_init(empty_bar(bars, s), EMPTY_COUNT);
			if (NORM)
				mkd_mbar_init(norm_bar(bars, s), 96);
		}
	}
	static MKD_INLINE void inval_bars(u32 bars)
	{
#pragma unroll
		for (int s = 0; s < STAGES; s++) {
			mkd_mbar_inval(full_bar(bars, s));
			mkd_mbar_inval(empty_bar(bars, s));
			if (NORM)
				mkd_mbar_inval(norm_bar(bars, s));
		}
	}
	/* The warpgroups' register trade (setmaxnreg, warp-uniform wg): in,
	 * the producer drops to MKD_WG_REGS_PRODUCER and the consumers rise to
	 * MKD_WG_REGS_CONSUMER; out, after a barrier of its warpgroup (the
	 * ISA's rule between two setmaxnreg), each goes back to MKD_WG_REGS. */
	static MKD_INLINE void trade_in(int wg)
	{
		if (wg == 0)
			asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(MKD_WG_REGS_PRODUCER));
		else
			asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(MKD_WG_REGS_CONSUMER));
	}
	static MKD_INLINE void trade_out(int wg)
	{
		if (wg == 0) {
			mkd_wg_bar<MKD_WG_BAR_ID>();
			asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(MKD_WG_REGS));
			return;
		}
		if (wg == 1)
			mkd_wg_bar<MKD_WG_BAR_ID + 1>();
		else
			mkd_wg_bar<MKD_WG_BAR_ID + 2>();
		asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(MKD_WG_REGS));
	}
	/* this consumer warpgroup's epilogue staging (store), 0: none */
	static MKD_INLINE u32 stage_at(u32 bars)
	{
		const u32 wg = (threadIdx.x >> 7) - 1;
		if constexpr (STG == 2)
			return bars - EPI_BYTES + wg * (EPI_BYTES / 2);
		return EPI_BYTES ? bars + 16 * STAGES + GATE_BYTES + wg * (EPI_BYTES / 2) : 0;
	}
	static MKD_INLINE u32 empty_bar(u32 bars, int s) { return bars + 8 * (STAGES + s); }
	/* NORM: stage s normalised, count 96; then the rows' 1/rms */
	static MKD_INLINE u32 norm_bar(u32 bars, int s) { return bars + NORM_AT + 8 * s; }
	static MKD_INLINE u32 norm_rs(u32 bars) { return bars + NORM_AT + 8 * STAGES; }
	/* What a consumer warp needs only after its mainloop (where C goes,
	 * the epilogue's operands), kept in shared memory over the loop: in
	 * registers it took one that the accumulators and the kernel's own
	 * state needed (the llama layer spilled half a pointer).  A slot a
	 * warp, lane 0 writes it; kept reads it back after the loop.  The
	 * slot's address comes from the dynamic shared memory's symbol (the
	 * smem every caller passes): from `bars`, a value of its own, ptxas
	 * still spilled. */
	static MKD_INLINE u32 keep_at()
	{
		return mkd_dyn_smem_1k() + BARS_AT + KEEP_AT + ((threadIdx.x >> 5) - 4) * KEEP_SLOT;
	}
	template <typename V> static MKD_INLINE void keep(const V &v)
	{
		static_assert(sizeof(V) <= KEEP_SLOT && sizeof(V) % 4 == 0, "too big to keep");
		const u32 a = keep_at();
		if ((threadIdx.x & 31) == 0) {
			const u32 *w = (const u32 *)&v;
#pragma unroll
			for (int i = 0; i < (int)(sizeof(V) / 4); i++)
				asm volatile("st.shared.u32 [%0], %1;" ::"r"(a + 4 * i), "r"(w[i]) : "memory");
		}
		__syncwarp();
	}
	template <typename V> static MKD_INLINE V kept()
	{
		const u32 a = keep_at();
		V v;
		u32 *w = (u32 *)&v;
#pragma unroll
		for (int i = 0; i < (int)(sizeof(V) / 4); i++)
			asm volatile("ld.shared.u32 %0, [%1];" : "=r"(w[i]) : "r"(a + 4 * i) : "memory");
		return v;
	}
	/* the barrier a consumer waits on before it reads stage s */
	static MKD_INLINE u32 ready_bar(u32 bars, int s) { return NORM ? norm_bar(bars, s) : full_bar(bars, s); }

	/* A's boxes a stage of tile l holds: none where the CTA has no rows;
	 * the first alone where the live rows fit in it (ABOX 64: the second
	 * warpgroup's rows are all past them, so it multiplies nothing and
	 * reads none, consume_tile's idle); else all */
	static MKD_INLINE int a_boxes(const mkd_wg_loads &l)
	{
		return l.live < 0 ? 0 : l.live > 0 && l.live <= A_BOX ? 1 : A_ROWS / A_BOX;
	}
	/* one thread: stage s for its next load of tile l, of round parity ph:
	 * wait for it to be free and announce the stage's bytes (B's and
	 * those of A's boxes it loads) */
	static MKD_INLINE void claim(const mkd_wg_loads &l, u32 bars, u32 s, u32 ph)
	{
		mkd_mbar_wait(empty_bar(bars, s), ph ^ 1, MKD_WG_TIMEOUT_NS);
		/* (one box: the form of the kernels before ABOX, which so stay
		 * byte for byte what was measured) */
		if constexpr (A_BOX == A_ROWS)
			mkd_mbar_arrive_tx(full_bar(bars, s), l.live < 0 ? STAGE_BYTES - A_BYTES : STAGE_BYTES);
		else
			mkd_mbar_arrive_tx(full_bar(bars, s),
					   STAGE_BYTES - A_BYTES + a_boxes(l) * A_BOX_BYTES);
	}
	/* k step kt of tile l's A, and of its B, into stage s */
	static MKD_INLINE void load_a(const mkd_wg_loads &l, int kt, u32 ring, u32 bars, u32 s)
	{
		if (l.live < 0)
			return;
		mkd_tma_load_2d(ring + s * STAGE_BYTES, l.ta, l.a_col + kt * BK, l.a_row, full_bar(bars, s));
		if constexpr (A_BOX < A_ROWS) {  /* the second half (BM 128, ABOX 64) */
			if (a_boxes(l) > 1)
				mkd_tma_load_2d(ring + s * STAGE_BYTES + A_BOX_BYTES, l.ta, l.a_col + kt * BK,
						l.a_row + A_BOX, full_bar(bars, s));
		}
	}
	static MKD_INLINE void load_b(const mkd_wg_loads &l, int kt, u32 ring, u32 bars, u32 s)
	{
		if constexpr (MC > 1) {  /* this CTA's share of the boxes, to every CTA of the cluster */
			const int j0 = (int)mkd_cluster_rank() * MC_BOXES;
#pragma unroll
			for (int j = j0; j < j0 + MC_BOXES; j++)
				mkd_tma_load_2d_mc(ring + s * STAGE_BYTES + A_BYTES + j * B_BOX, l.tb,
						   l.b_col + 64 * j, l.b_row + kt * BK, full_bar(bars, s),
						   (unsigned short)((1u << MC) - 1));
		} else {
#pragma unroll
			for (int j = 0; j < B_BOXES; j++)  /* GATE: box 0 the gate's, box 1 B's, same columns */
				mkd_tma_load_2d(ring + s * STAGE_BYTES + A_BYTES + j * B_BOX,
						GATE && j == 0 ? l.tg : l.tb, l.b_col + (GATE ? 0 : 64 * j),
						l.b_row + kt * BK, full_bar(bars, s));
		}
	}

	/* a consumer warp (its lane 0) is done reading stage s: with MC > 1
	 * every CTA's producer writes into it, so each one hears of it */
	static MKD_INLINE void release(u32 bars, u32 s)
	{
		if constexpr (MC == 1) {
			mkd_mbar_arrive(empty_bar(bars, s));
		} else {
#pragma unroll
			for (u32 r = 0; r < MC; r++)
				mkd_mbar_arrive_cluster(mkd_cluster_addr(empty_bar(bars, s), r));
		}
	}

	/* one thread: loads kt0..kt1 of tile l as loads pos + kt of the ring */
	static MKD_INLINE void produce(const mkd_wg_loads &l, int kt0, int kt1, u32 pos, u32 ring,
				       u32 bars)
	{
		u32 s = (pos + kt0) % STAGES, ph = ((pos + kt0) / STAGES) & 1;
		for (int kt = kt0; kt < kt1; kt++) {
			claim(l, bars, s, ph);
			load_a(l, kt, ring, bars, s);
			load_b(l, kt, ring, bars, s);
			if (++s == STAGES) {
				s = 0;
				ph ^= 1;
			}
		}
	}

	/* One thread: the first loads of tile l from kt0 on, the ones no load
	 * of this tile has to free a stage for, waiting for the operands'
	 * flags itself: their B halves go out before A's flags are waited
	 * for, as weights are there from the start.  Returns where produce()
	 * goes on; *ok false when a wait saw the run aborted (every load is
	 * issued all the same, so that the consumers never wait for a stage
	 * that does not come). */
	template <typename W>
	static MKD_INLINE int produce_first(const mkd_wg_loads &l, int kt0, u32 pos, u32 ring,
					    u32 bars, const W &w, bool *okp)
	{
		bool ok = w.b();
		asm volatile("fence.proxy.async.global;" ::: "memory");  /* after the flag acquire */
		const int early = l.nk < STAGES ? l.nk : STAGES;
		const u32 s0 = (pos + kt0) % STAGES;
		u32 s = s0, ph = ((pos + kt0) / STAGES) & 1;
		for (int kt = kt0; kt < early; kt++) {
			claim(l, bars, s, ph);
			load_b(l, kt, ring, bars, s);
			if (++s == STAGES) {
				s = 0;
				ph ^= 1;
			}
		}
		ok = w.a() && ok;
		asm volatile("fence.proxy.async.global;" ::: "memory");
		s = s0;
		for (int kt = kt0; kt < early; kt++) {
			load_a(l, kt, ring, bars, s);
			if (++s == STAGES)
				s = 0;
		}
		*okp = ok;
		return kt0 > early ? kt0 : early;
	}

	/* NORM, the 96 threads of WG0's warps 1-3: tile l's loads pos.. as
	 * they land, the 16-byte pieces of A's first `rows` rows (the others
	 * are never stored) shared out, piece i of a stage (row i / 8, its
	 * 8-column group c = i % 8, at c ^ (row % 8) of the row's 128-byte
	 * line: the 128-byte swizzle) to thread i % 96, so a thread's pieces
	 * are all of one column group c and the 8 pieces of a row lie with 8
	 * neighbouring lanes.  A stage's pieces are read first, all in
	 * flight, then each is multiplied by g's 8 values of its columns and
	 * written back, its squares summed; at the tile's end the 8 lanes of
	 * a row add their sums and the first writes the row's 1/rms to
	 * norm_rs (before the last arrival, which the consumers' epilogue
	 * follows).  The decode MLP streams a stage in ~0.6 us on an H100:
	 * one thread a row over all 8 pieces took twice that (thirty-third
	 * session). */
	static MKD_INLINE uint4 norm_w(const T *g)  /* 8 of g's values (X's rows have 8k) */
	{
		if (((u64)g & 15) == 0)
			return __ldg((const uint4 *)g);
		const unsigned short *h = (const unsigned short *)g;
		return make_uint4(h[0] | (u32)h[1] << 16, h[2] | (u32)h[3] << 16,
				  h[4] | (u32)h[5] << 16, h[6] | (u32)h[7] << 16);
	}
	static MKD_INLINE void normalize(const mkd_wg_loads &l, const mkd_wg_norm &nm, int rows,
					 u32 pos, u32 ring, u32 bars, u64 tmo)
	{
		enum { NT = 96, Q = (8 * A_ROWS + NT - 1) / NT };  /* pieces a thread, at most */
		const int t = (int)threadIdx.x - 32, c = t & 7;
		const int np = 8 * (rows < A_ROWS ? rows : A_ROWS);
		u32 s = pos % STAGES, ph = (pos / STAGES) & 1;
		const T *g = (const T *)nm.g;
		float ss[Q];
#pragma unroll
		for (int q = 0; q < Q; q++)
			ss[q] = 0.f;
		for (int kt = 0; kt < l.nk; kt++) {
			const int k0 = l.a_col + kt * BK + 8 * c;
			const uint4 gv = g && k0 < nm.k ? norm_w(g + k0) : make_uint4(0, 0, 0, 0);
			mkd_mbar_wait(full_bar(bars, s), ph, tmo);
			const u32 a = ring + s * STAGE_BYTES;
			uint4 v[Q];
#pragma unroll
			for (int q = 0; q < Q; q++) {
				const int i = t + NT * q, r = i >> 3;
				if (i < np)
					asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
						     : "=r"(v[q].x), "=r"(v[q].y), "=r"(v[q].z), "=r"(v[q].w)
						     : "r"(a + r * 128 + ((c ^ (r & 7)) << 4)) : "memory");
			}
			float w[8];
			if (g)
				mkd_vec8<T>::get(w, gv);
#pragma unroll
			for (int q = 0; q < Q; q++) {
				const int i = t + NT * q, r = i >> 3;
				if (i >= np)
					continue;
				float f[8];
				mkd_vec8<T>::get(f, v[q]);
#pragma unroll
				for (int e = 0; e < 8; e++) {
					ss[q] += f[e] * f[e];
					f[e] = g ? f[e] * w[e] : f[e];
				}
				const uint4 o = mkd_vec8<T>::pack(f);
				asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};"
					     :: "r"(a + r * 128 + ((c ^ (r & 7)) << 4)), "r"(o.x), "r"(o.y), "r"(o.z),
						"r"(o.w) : "memory");
			}
			if (kt == l.nk - 1) {  /* the rows' sums: 8 neighbouring lanes a row */
#pragma unroll
				for (int q = 0; q < Q; q++) {
					float x = ss[q];
					x += __shfl_xor_sync(0xffffffffu, x, 1);
					x += __shfl_xor_sync(0xffffffffu, x, 2);
					x += __shfl_xor_sync(0xffffffffu, x, 4);
					const int i = t + NT * q;
					if (c == 0 && i < np)
						asm volatile("st.shared.f32 [%0], %1;"
							     :: "r"(norm_rs(bars) + 4 * (i >> 3)),
								"f"(rsqrtf(x / nm.k + 1e-6f)) : "memory");
				}
			}
			/* this thread's generic writes before the wgmma's reads of
			 * the stage (a thread with no piece wrote nothing) */
			if (t < np)
				asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
			mkd_mbar_arrive(norm_bar(bars, s));
			if (++s == STAGES) {
				s = 0;
				ph ^= 1;
			}
		}
	}

	/* a consumer warpgroup's own barrier around its epilogue staging, by
	 * an immediate id (a register id makes ptxas count all 16 barriers
	 * used) */
	static MKD_INLINE void epi_sync()
	{
		if (threadIdx.x < 256)
			mkd_wg_bar<MKD_WG_BAR_STG>();
		else
			mkd_wg_bar<MKD_WG_BAR_STG + 1>();
	}

	/* store() through shared memory: a warpgroup's 64 rows go out in chunks
	 * of 128 bytes a row (64 bf16 or f16 columns, 32 fp32).  Each thread
	 * writes its fragment's pairs of a chunk into the staging rows at stg
	 * (EPI_ROW bytes apart: conflict-free), then each reads 16-byte pieces
	 * back along the rows and stores them to C, eight threads a 128-byte
	 * row: a warp's store covers four whole rows, where the fragment's own
	 * stores cover eight rows 16 bytes each (twice the sectors, eight
	 * times the requests; on an H200 the 128 x 256 tile's epilogue took
	 * ~5.7 us of ~50 so, docs/gemm.md).  Where C or its rows are not
	 * 16-byte aligned the pieces go out element by element.  Named
	 * barrier MKD_WG_BAR_STG + warpgroup between the writes and the
	 * reads, and before the next chunk's writes. */
	template <int CN, bool RAW, typename Epi>
	static MKD_INLINE void staged(const float *d, TC *C, i64 ldc, int M, int N, int r_off,
				      int c_off, Epi &epi, u32 stg)
	{
		enum { E = 16 / sizeof(TC), CH = 128 / sizeof(TC), NCH = CN > CH ? CN / CH : 1,
		       JS = (CN < CH ? CN : CH) / 8 };
		const int t = threadIdx.x & 127, lane = threadIdx.x & 31;
		auto sync = epi_sync;
		const int r0 = (t >> 5) * 16 + (lane >> 2), q = lane & 3;
		const int er = r_off + r0, left = N - 2 * q;
		/* 16-byte stores where C's rows allow them, else one by one */
		const bool al = ((((u64)(size_t)C) | (u64)(ldc * (i64)sizeof(TC))) & 15) == 0;
		auto fin = [&](float v, int r, int c) { return RAW ? v : epi(v, r, c); };
		const u32 w0 = stg + r0 * EPI_ROW + q * 2 * sizeof(TC), w1 = w0 + 8 * EPI_ROW;
#pragma unroll
		for (int ch = 0; ch < NCH; ch++) {
			sync();  /* the last chunk's reads are done (the last tile's too) */
#pragma unroll
			for (int jj = 0; jj < JS; jj++) {
				const int j = ch * JS + jj, ec = c_off + 8 * j + 2 * q;
				/* columns past N are not stored (below); the test also
				 * keeps ptxas from computing many pairs' epilogues at
				 * once (tp_mlp's gelu spilled without it) */
				if (!FULL && 8 * j >= left)
					continue;
				const float a0 = fin(d[4 * j], er, ec), a1 = fin(d[4 * j + 1], er, ec + 1);
				const float b0 = fin(d[4 * j + 2], er + 8, ec);
				const float b1 = fin(d[4 * j + 3], er + 8, ec + 1);
				const u32 o = jj * 8 * sizeof(TC);
				if constexpr (sizeof(TC) == 4) {
					asm volatile("st.shared.v2.f32 [%0], {%1, %2};" :: "r"(w0 + o), "f"(a0), "f"(a1) : "memory");
					asm volatile("st.shared.v2.f32 [%0], {%1, %2};" :: "r"(w1 + o), "f"(b0), "f"(b1) : "memory");
				} else {
					asm volatile("st.shared.u32 [%0], %1;" :: "r"(w0 + o), "r"(mkd_wg_pack<TC>(a0, a1)) : "memory");
					asm volatile("st.shared.u32 [%0], %1;" :: "r"(w1 + o), "r"(mkd_wg_pack<TC>(b0, b1)) : "memory");
				}
			}
			sync();
			/* 64 rows x (JS * 8 / E) pieces of 16 bytes, row by row */
			enum { PR = JS * 8 / E, PIECES = 64 * PR };
#pragma unroll 1
			for (int i = t; i < PIECES; i += 128) {
				const int r = i / PR, pc = i % PR, c = ch * CH + pc * E;
				uint4 v;
				asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
					     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
					     : "r"(stg + r * EPI_ROW + pc * 16) : "memory");
				TC *p = C + (i64)r * ldc + c;
				if ((FULL || (r < M && c + E <= N)) && al) {
					asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};"
						     :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
				} else if (r < M && c < N) {  /* the row's last columns, or C unaligned */
					const u32 w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
					for (int x = 0; x < E; x++) {
						if (c + x >= N)
							break;
						if constexpr (sizeof(TC) == 4)
							*(u32 *)(p + x) = w[x];
						else
							*(unsigned short *)(p + x) =
								(unsigned short)(w[x / 2] >> (16 * (x % 2)));
					}
				}
			}
		}
	}

	/* store() by TMA (STG 2): a warpgroup's 64 rows go out in chunks of
	 * 128 bytes a row, each chunk one bulk tensor store of C's map
	 * (o: the tile's origin there; the slab at r_off, c_off of the tile).
	 * Each thread writes its fragment's pairs of the chunk into buffer
	 * ch % 2 (64 lines of 128 bytes, the 16-byte piece u of line l at
	 * u ^ (l % 8): the map's 128-byte swizzle, and conflict-free, a warp's
	 * eight rows in eight different pieces); fence.proxy.async.shared::cta
	 * (the writes before the copy engine's reads), the warpgroup's
	 * barrier, and its first thread issues the store and commits it as a
	 * bulk group.  Before a buffer is written again that thread waits
	 * until the store that last read it has (.read: 1 group may still be
	 * pending; 0 before the tile's first chunk, whose buffer's last store
	 * may be the last group), then the barrier.  The stores are neither
	 * waited for here nor at the tile's end: mkd_wg_drain, where the run
	 * ends the ring (run) and before a task's signals (mkd/kernel.cuh).
	 * A tile lies inside C (plan.c: whole tiles), so no bound is tested. */
	template <int CN, bool RAW, typename Epi>
	static MKD_INLINE void tstore(const float *d, int N, int r_off, int c_off, Epi &epi,
				      u32 stg, const mkd_wg_out &o)
	{
		enum { CH = 128 / sizeof(TC), NCH = CN / CH, JS = CH / 8 };
		static_assert(CN % CH == 0, "whole 128-byte chunks");
		const int t = threadIdx.x & 127, lane = threadIdx.x & 31;
		auto sync = epi_sync;
		const int g = lane >> 2, r0 = (t >> 5) * 16 + g, q = lane & 3;
		const int er = r_off + r0, left = N - 2 * q;
		auto fin = [&](float v, int r, int c) { return RAW ? v : epi(v, r, c); };
		/* where this thread's pair of columns 2q, 2q + 1 (16-byte piece
		 * pq of the chunk's line, byte off in it) goes in row r0 of
		 * buffer 0, swizzled: piece pq ^ g.  The pair 8 jj columns
		 * further is in piece pq + U jj = pq ^ U jj (U: pieces of 8
		 * columns; pq < U), so at ^ (U jj << 4): the buffer is 1024-byte
		 * aligned, bits 4-6 of the address are the piece's.  Buffer 1 is
		 * EPI_BUF further. */
		enum { U = 8 * sizeof(TC) / 16 };
		const int pq = sizeof(TC) == 4 ? q >> 1 : 0;
		const u32 off = sizeof(TC) == 4 ? 8 * (q & 1) : 4 * q;
		const u32 at = stg + r0 * 128 + ((u32)(pq ^ g) << 4) + off;
#pragma unroll
		for (int ch = 0; ch < NCH; ch++) {
			const u32 buf = stg + (ch & 1) * EPI_BUF;
			if (t == 0) {  /* the buffer's last store has read it */
				if (ch == 0)
					mkd_bulk_wait_group_read<0>();
				else
					mkd_bulk_wait_group_read<1>();
			}
			sync();
#pragma unroll
			for (int jj = 0; jj < JS; jj++) {
				const int j = ch * JS + jj, ec = c_off + 8 * j + 2 * q;
				if (!FULL && 8 * j >= left)  /* as staged(): one pair's epilogue at a time */
					continue;
				const float a0 = fin(d[4 * j], er, ec), a1 = fin(d[4 * j + 1], er, ec + 1);
				const float b0 = fin(d[4 * j + 2], er + 8, ec);
				const float b1 = fin(d[4 * j + 3], er + 8, ec + 1);
				/* rows r0 and r0 + 8: the same line mod 8 (g) */
				const u32 w0 = (at ^ ((u32)(U * jj) << 4)) + (ch & 1) * EPI_BUF;
				const u32 w1 = w0 + 8 * 128;
				if constexpr (sizeof(TC) == 4) {
					asm volatile("st.shared.v2.f32 [%0], {%1, %2};" :: "r"(w0), "f"(a0), "f"(a1) : "memory");
					asm volatile("st.shared.v2.f32 [%0], {%1, %2};" :: "r"(w1), "f"(b0), "f"(b1) : "memory");
				} else {
					asm volatile("st.shared.u32 [%0], %1;" :: "r"(w0), "r"(mkd_wg_pack<TC>(a0, a1)) : "memory");
					asm volatile("st.shared.u32 [%0], %1;" :: "r"(w1), "r"(mkd_wg_pack<TC>(b0, b1)) : "memory");
				}
			}
			asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
			sync();
			if (t == 0) {
				mkd_tma_store_2d(o.map, buf, o.col + c_off + ch * CH, o.row + r_off);
				mkd_bulk_commit();
			}
		}
	}

	/* A warpgroup's m64nCNk16 accumulators d to C (the slab's first element,
	 * ldc elements a row) clipped to M x N, each value through epi(v, r, c)
	 * with its row and column in the tile (the slab at r_off, c_off) unless
	 * RAW (the values are final: a gate-up tile's).  Accumulator j*4 + {0,1}:
	 * row r0, columns 8j + 2q + {0,1}; j*4 + {2,3}: row r0 + 8 (the
	 * m64nNk16 D fragment). */
	template <int CN, bool RAW, typename Epi>
	static MKD_INLINE void store(const float *d, TC *C, i64 ldc, int M, int N, int r_off,
				     int c_off, Epi &epi, u32 stg, const mkd_wg_out &o)
	{
		const int t = threadIdx.x & 127, lane = threadIdx.x & 31;
		if constexpr (STG == 2) {
			tstore<CN, RAW>(d, N, r_off, c_off, epi, stg, o);
			return;
		} else if constexpr (EPI_BYTES > 0) {
			staged<CN, RAW>(d, C, ldc, M, N, r_off, c_off, epi, stg);
			return;
		}
		const int r0 = (t >> 5) * 16 + (lane >> 2), c0 = (lane & 3) * 2;
		TC *p0 = C + (i64)r0 * ldc + c0, *p1 = p0 + 8 * ldc;
		const bool ok0 = r0 < M, ok1 = r0 + 8 < M;
		/* columns compared as 8j against what is left of the row from c0:
		 * with c0 + 8j compared, the compiler kept every c0 + 8j (+ 1) in
		 * a register of its own through the whole kernel */
		const int er = r_off + r0, ec = c_off + c0, left = N - c0;
		auto fin = [&](float v, int r, int c) { return RAW ? v : epi(v, r, c); };
		if constexpr (FULL) {  /* the plan's: every tile inside C, no bound to test */
#pragma unroll
			for (int j = 0; j < CN / 8; j++) {
				mkd_wg_store2<TC>::st(p0 + 8 * j, fin(d[4 * j], er, ec + 8 * j),
						      fin(d[4 * j + 1], er, ec + 8 * j + 1), true);
				mkd_wg_store2<TC>::st(p1 + 8 * j, fin(d[4 * j + 2], er + 8, ec + 8 * j),
						      fin(d[4 * j + 3], er + 8, ec + 8 * j + 1), true);
			}
		} else {
#pragma unroll
			for (int j = 0; j < CN / 8; j++) {
				if (8 * j < left) {
					const bool two = 8 * j + 1 < left;
					if (ok0)
						mkd_wg_store2<TC>::st(p0 + 8 * j, fin(d[4 * j], er, ec + 8 * j),
								      two ? fin(d[4 * j + 1], er, ec + 8 * j + 1)
									  : 0.f,
								      two);
					if (ok1)
						mkd_wg_store2<TC>::st(p1 + 8 * j,
								      fin(d[4 * j + 2], er + 8, ec + 8 * j),
								      two ? fin(d[4 * j + 3], er + 8, ec + 8 * j + 1)
									  : 0.f,
								      two);
				}
			}
		}
	}

	/* One consumer warpgroup: a CN-column slab of the tile's accumulators,
	 * wgmma m64nCNk16 over rows 64*arow.. of A and B boxes box0.. of each
	 * stage; results go to C (the slab's first element) clipped to M x N.
	 * The slab starts at row r_off, column c_off of the tile (epi's
	 * coordinates).  GATE: grole 1 (the gate's warpgroup) writes act of
	 * its accumulators to gs and stores nothing; grole 2 (B's) multiplies
	 * its epilogue's values by them (the same fragment layout, thread for
	 * thread). */
	template <int CN, bool X, typename Epi, typename WX, typename Act>
	static MKD_INLINE void consume(int arow, int box0, int nk, u32 pos, u32 ring, u32 bars,
				       TC *C, i64 ldc, int M, int N, int r_off, int c_off, Epi &epi,
				       const WX &wx, u64 tmo, int grole, float *gs, const Act &act,
				       const mkd_wg_out &o, bool idle = false)
	{
		enum { CACC = CN / 2 };
		const int t = threadIdx.x & 127, lane = threadIdx.x & 31;
		float d[CACC];
#pragma unroll
		for (int i = 0; i < CACC; i++)
			d[i] = 0.f;
		const u64 da = mkd_wg_desc(ring + arow * 64 * 128, 16, 1024);
		const u64 db = mkd_wg_desc(ring + A_BYTES + box0 * B_BOX, B_BOX, 1024);
		u32 s = pos % STAGES, ph = (pos / STAGES) & 1, prev = 0;
		struct Out { TC *C; i64 ldc; Epi epi; int M, N; };
		keep(Out{C, ldc, epi, M, N});
		if (idle) {
			/* its rows of A are zeros, the products too: it only frees
			 * each stage once it has landed (never a round ahead of the
			 * other warpgroup's releases).  A loop of its own: a wgmma
			 * chain under a branch makes ptxas close every stage's group
			 * with an empty wgmma (C7519), so that the wait for the
			 * previous group waits for this one */
			for (int kt = 0; kt < nk; kt++) {
				mkd_mbar_wait(ready_bar(bars, s), ph, tmo);
				if (lane == 0)
					release(bars, s);
				if (++s == STAGES) {
					s = 0;
					ph ^= 1;
				}
			}
		} else {
			for (int kt = 0; kt < nk; kt++) {
				mkd_mbar_wait(ready_bar(bars, s), ph, tmo);
				const u64 off = (u64)((s * STAGE_BYTES) >> 4);
#pragma unroll
				for (int i = 0; i < CACC; i++)
					mkd_wg_pin(d[i]);
				mkd_wg_fence();
#pragma unroll
				for (int k = 0; k < BK / 16; k++)  /* K slice k: A +32k bytes, B +2048k */
					mkd_wg_op<CN, T>::mma(d, da + off + 2 * k, db + off + 128 * k);
				mkd_wg_commit();
#pragma unroll
				for (int i = 0; i < CACC; i++)
					mkd_wg_pin(d[i]);
				if (kt > 0) {  /* group kt-1 retired: its stage is free */
					mkd_wg_wait<1>();
					if (lane == 0)
						release(bars, prev);
				}
				prev = s;
				if (++s == STAGES) {
					s = 0;
					ph ^= 1;
				}
			}
			mkd_wg_wait<0>();
#pragma unroll
			for (int i = 0; i < CACC; i++)
				mkd_wg_pin(d[i]);
			if (nk > 0 && lane == 0)  /* the last stage too: the next tile's loads may use it */
				release(bars, prev);
		}
		if (NORM && nk > 0) {  /* rows r0 and r0 + 8 by their 1/rms (normalize) */
			const u32 r0 = 64 * arow + (t >> 5) * 16 + (lane >> 2);
			float s0, s1;
			asm volatile("ld.shared.f32 %0, [%1];" : "=f"(s0) : "r"(norm_rs(bars) + 4 * r0) : "memory");
			asm volatile("ld.shared.f32 %0, [%1];" : "=f"(s1) : "r"(norm_rs(bars) + 4 * r0 + 32) : "memory");
#pragma unroll
			for (int i = 0; i < CACC; i += 4) {
				d[i] *= s0;
				d[i + 1] *= s0;
				d[i + 2] *= s1;
				d[i + 3] *= s1;
			}
		}
		if (X) {  /* the epilogue's operand: its flags, by the first consumer thread */
			if (threadIdx.x == 128)
				mkd_wg_ring.okx = wx();
			mkd_bar_sync(MKD_WG_BAR_EPI, 256);
		}
		if (GATE) {  /* [i][thread]: a warp's 32 stores in 32 banks */
			if (grole == 1) {
#pragma unroll
				for (int i = 0; i < CACC; i++)
					gs[i * 128 + t] = act(d[i], 0, 0);
			}
			mkd_bar_sync(MKD_WG_BAR_GATE, 256);
			if (grole == 1)
				return;
			const Out kg = kept<Out>();
#pragma unroll
			for (int i = 0; i < CACC; i++)
				d[i] = kg.epi(d[i], 0, 0) * gs[i * 128 + t];
		}
		/* GATE: the values are final (the gate's epilogue is only a unary op) */
		const Out k = kept<Out>();
		store<CN, GATE>(d, k.C, k.ldc, k.M, k.N, r_off, c_off, k.epi, stage_at(bars), o);
	}

	/* Consumer warpgroup w (0, 1).  COLS (the plan's wg_cols: no tile has
	 * more than 64 rows, decode) would otherwise leave the second warpgroup
	 * multiplying zeros: the two split the columns, rows 0..63 each, BN/2
	 * columns each. */
	template <bool X, typename Epi, typename WX, typename Act>
	static MKD_INLINE void consume_tile(int w, int nk, u32 pos, u32 ring, u32 bars, TC *C,
					    i64 ldc, int M, int N, Epi &epi, const WX &wx, u64 tmo,
					    float *gs, const Act &act, int live, const mkd_wg_out &o)
	{
		if (GATE)  /* box w: the gate's (w 0) or B's (w 1), both into C's 64 columns */
			consume<64, X>(0, w, nk, pos, ring, bars, C, ldc, M, N, 0, 0, epi, wx, tmo,
				       1 + w, gs, act, o);
		else if (COLS) {
			enum { H = BN >= 128 ? BN / 2 : 64 };
			consume<H, X>(0, w * (H / 64), nk, pos, ring, bars, C + w * H, ldc, M, N - w * H,
				      0, w * H, epi, wx, tmo, 0, gs, act, o);
		} else {
			const int m = M - 64 * w;
			/* warp-uniform, as the wgmma chain wants it (else ptxas
			 * serializes it: a divergent path).  A warpgroup that is
			 * not idle has its rows loaded: with ABOX 64, a_boxes
			 * leaves out the second half exactly where WG2 idles */
			const bool idle =
				__shfl_sync(0xffffffffu, live < 0 || (live > 0 && live <= 64 * w), 0);
			consume<BN, X>(w, 0, nk, pos, ring, bars, C + (i64)(64 * w) * ldc, ldc, m, N,
				       64 * w, 0, epi, wx, tmo, 0, gs, act, o, idle);
		}
	}

	/* C[0:BM, 0:BN] (clipped to M x N) = A[a_row.., a_col..a_col+64 nk) *
	 * B[b_row..b_row+64 nk, b_col..] (l): A's map is row-major [rows][K]
	 * with an A_ROWS x 64 box, B's row-major [K][N] with a 64 x 64 box,
	 * both with 128-byte swizzle (runtime/tmap.h).  `key` is this tile's
	 * (mkd_wg_key; -1: a tile of no task, which never picks up a carried
	 * ring); thread 0 calls next(loads) once: the key of the tile this CTA
	 * runs next when it is a tile of this engine ready to load now (its
	 * loads filled in), else -1; w: the flags the engine waits for itself
	 * (mkd_wg_waited: none).  GATE: act is the unary op on A times the gate's weight
	 * (l.tg), C = epi(A B) * act(A Wg) over N <= 64 columns.  STG 2: o is
	 * the tile's place in C's tensor map (C, ldc, M and N still give the
	 * tile's bounds to the epilogue); where the ring goes on into no next
	 * tile the call ends with its stores drained (mkd_wg_drain).  NORM:
	 * nm is the rmsnorm's weight and X's row length (normalize).  All
	 * THREADS threads call it; false when a wait saw the run aborted. */
	template <typename Epi, typename Next, typename W, typename Act = mkd_epi_none>
	static __device__ bool run(const mkd_wg_loads &l, i64 key, Next next, const W &w, TC *C,
				   i64 ldc, int M, int N, char *smem, Epi epi, Act act = Act(),
				   mkd_wg_out o = mkd_wg_out(), mkd_wg_norm nm = mkd_wg_norm())
	{
		static_assert(SMEM <= mkd_smem_cap<sizeof(TC) * 0>::BYTES,
			      "the plan counts less shared memory than the tile uses (plan.c wg_bytes)");
		const u32 ring = (mkd_smem_addr(smem) + 1023) & ~1023u;
		const u32 bars = ring + BARS_AT;
		float *gs = (float *)(smem + (bars + 2 * STAGES * 8 - mkd_smem_addr(smem)));
		/* warp-uniform role, as setmaxnreg wants it */
		const int wg = __shfl_sync(0xffffffffu, (int)(threadIdx.x >> 7), 0);
		/* the previous call's producer went on into this tile */
		const bool carried = key >= 0 && mkd_wg_ring.key == key;
		const u32 pos = carried ? mkd_wg_ring.pos : 0;
		const int pre = carried ? mkd_wg_ring.pre : 0;

		asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
		if (threadIdx.x == 0 && !carried) {
			init_bars(bars);
			asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
		}
		/* the barriers are live; every thread has read mkd_wg_ring; MC > 1:
		 * in every CTA of the cluster, before any loads into them */
		if constexpr (MC > 1)
			mkd_cluster_sync();
		else
			__syncthreads();

		if (wg == 0) {
			mkd_wg_loads nl = l;
			i64 nt = -1;
			int from = pre;
			bool ok = true;
			/* before the registers go (the waits take more than the
			 * producer keeps): with late waits this tile's first
			 * loads and the flags they need, and where registers
			 * are traded the next tile's loads */
			if (threadIdx.x == 0) {
				mkd_tma_prefetch_desc(l.ta);
				mkd_tma_prefetch_desc(l.tb);
				if (GATE)
					mkd_tma_prefetch_desc(l.tg);
				if (W::LATE)
					from = produce_first(l, pre, pos, ring, bars, w, &ok);
				if (TRADE_REGS)
					nt = next(nl);
				asm volatile("fence.proxy.async.global;" ::: "memory");
			}
			__syncwarp();
			if (TRADE_REGS)
				trade_in(0);
			if (threadIdx.x == 0) {
				produce(l, from, l.nk, pos, ring, bars);
				/* else the next tile once this one's loads are out:
				 * its flags had this tile's time to be set, and this
				 * tile's first loads did not wait for the check */
				if (!TRADE_REGS) {
					nt = next(nl);
					asm volatile("fence.proxy.async.global;" ::: "memory");
				}
				/* the next tile's first loads, into the stages this
				 * tile frees: none of them waits for the next call */
				const int npre = nt >= 0 ? (nl.nk < STAGES ? nl.nk : STAGES) : 0;
				produce(nl, 0, npre, pos + l.nk, ring, bars);
				mkd_wg_ring.key = npre > 0 ? nt : -1;
				mkd_wg_ring.pre = npre;
				mkd_wg_ring.pos = pos + l.nk;
				mkd_wg_ring.ok = ok;
			}
			__syncwarp();
			if (NORM && threadIdx.x >= 32)  /* warps 1-3: the rmsnorm of A's stages */
				normalize(l, nm, M, pos, ring, bars, MKD_WG_TIMEOUT_NS + w.flag_ns());
			if (TRADE_REGS)
				trade_out(0);
		} else {
			if (TRADE_REGS)
				trade_in(wg);
			/* a stage may wait for its flags first: never trap before they time out */
			consume_tile<W::X>(wg - 1, l.nk, pos, ring, bars, C, ldc, M < BM ? M : BM,
					   N < BN ? N : BN, epi, [&] { return w.x(); },
					   MKD_WG_TIMEOUT_NS + w.flag_ns(), gs, act, l.live, o);
			if (TRADE_REGS)
				trade_out(wg);
		}
		/* this tile's loads consumed, its wgmmas retired; MC > 1: the other
		 * CTAs' releases into this one's barriers have arrived too */
		if constexpr (MC > 1)
			mkd_cluster_sync();
		else
			__syncthreads();
		if (threadIdx.x == 0 && mkd_wg_ring.key < 0)
			inval_bars(bars);
		if constexpr (STG == 2) {  /* the staging is free for whatever runs next */
			if (mkd_wg_ring.key < 0)
				mkd_wg_drain();
		}
		__syncthreads();  /* the ring and the barrier words are free, or carried */
		return mkd_wg_ring.ok && (!W::X || mkd_wg_ring.okx);
	}

	/* One tile of no task, K columns from (a_row, a_col) of A and from
	 * (b_row, b_col) of B: nothing carried in or out; live as in
	 * mkd_wg_loads; NORM: nm as in the other run. */
	template <typename Epi>
	static __device__ void run(const mkd_tmap *ta, int a_row, int a_col, const mkd_tmap *tb,
				   int b_row, int b_col, int K, TC *C, i64 ldc, int M, int N,
				   char *smem, Epi epi, int live = 0, mkd_wg_norm nm = mkd_wg_norm())
	{
		static_assert(STG != 2 || !sizeof(Epi *), "a tile stored by TMA needs its place in C's map");
		const mkd_wg_loads l = {ta, tb, a_row, a_col, b_row, b_col, K > 0 ? (K + BK - 1) / BK : 0,
					nullptr, live};
		run(l, -1, mkd_wg_last(), mkd_wg_waited(), C, ldc, M, N, smem, epi, mkd_epi_none(),
		    mkd_wg_out(), nm);
	}
};

#else
#define MKD_WG_LATE false      /* the portable tile: the loop waits up front */
MKD_INLINE void mkd_wg_ring_reset() {}
MKD_INLINE void mkd_wg_drain() {}  /* no TMA stores off sm_90a */
#endif /* __CUDA_ARCH_FEAT_SM90_ALL */
#endif
