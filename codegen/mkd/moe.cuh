/* mkd/moe.cuh - mixture-of-experts routing: route, dispatch, combine.
 *
 * The routing of one rank is a table of ints in its own memory (the
 * "route" tensor, written by one task, read by every rank):
 *
 *   off[0 .. E]      off[e] = where expert e's entries start in `order`;
 *                    off[E] = the rank's number of (token, choice) entries
 *   order[0 .. N)    entry numbers (token * k + choice), sorted by expert,
 *                    in entry order within an expert (a stable sort)
 *   pos[0 .. N)      for each entry, its place among the rank's entries
 *                    of its expert
 *
 * With N = tokens * k of the rank.  The slot of an entry of rank q in its
 * expert's bucket is sum over ranks q' < q of their count for the expert,
 * plus its pos: slots go in (source rank, token, choice) order, the order
 * the CPU reference uses (compiler/cpuref.c, route()).
 *
 * Bad data is reported, never written past: an expert id outside [0, E)
 * (mkd_route) or an expert receiving more than its C slots (mkd_dispatch)
 * records a data report (flag_rank -2, flag_index the code) and aborts the
 * run; the host turns it into MK_ERR_DATA.  Under dispatch's `drop` policy
 * an expert's choices past its C slots are dropped instead.
 */
#ifndef MKD_MOE_CUH
#define MKD_MOE_CUH

#define MKD_DATA_BAD_EXPERT 1     /* expected = entry, seen = the id */
#define MKD_DATA_OVER_CAPACITY 2  /* expected = expert, seen = its count */

/* Records a data error (first report wins) and aborts the run. */
MKD_INLINE void mkd_data_error(const mkd_params &p, int code, u64 what, u64 value, mkd_waiter w)
{
	mkd_report_abort(p, w, -2, code, what, value, 0);
}

/* Inclusive scan of v over the warp. */
MKD_INLINE int mkd_warp_scan(int v)
{
	const int lane = threadIdx.x & 31;
#pragma unroll
	for (int d = 1; d < 32; d <<= 1) {
		int u = __shfl_up_sync(0xffffffffu, v, d);
		if (lane >= d)
			v += u;
	}
	return v;
}

/* The route table of N entries whose ids are idx[(i / k) * ld + i % k]
 * (rows of k ids, ld apart), laid out for up to NMAX entries, by the whole
 * CTA.  smem: nw * E + E + 2 ints (per-warp counts, the offsets, a flag),
 * nw chosen to fit.  Returns false (after reporting) on a bad expert id;
 * with strict false (rows another rank packed, whose own route reports
 * them) bad ids are left out instead.
 *
 * Every warp's loads of ids go out eight groups of 32 at a time, and the
 * placement reads the offsets from shared memory: a load waited on for
 * each entry (the ids one by one, off[] from the table in global memory)
 * kept one CTA 154 us on 65536 entries (the MoE trace of 2026-12-06),
 * with every other task waiting for the table. */
MKD_INLINE bool mkd_route_rows(const mkd_params &p, mkd_waiter w, const int *idx, int ld, int k,
			       int N, int NMAX, int E, int *route, char *smem, int smem_bytes,
			       bool strict = true)
{
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	int nw = (int)(blockDim.x >> 5);
	const int fit = (smem_bytes / (int)sizeof(int) - E - 2) / E;
	if (nw > fit)
		nw = fit;
	int *hist = (int *)smem;          /* [nw][E] */
	int *soff = hist + nw * E;        /* [E + 1] off[], in shared memory */
	int *bad = soff + E + 1;          /* one flag */
	int *off = route, *order = route + E + 1, *pos = route + E + 1 + NMAX;
	for (int i = threadIdx.x; i < nw * E; i += blockDim.x)
		hist[i] = 0;
	if (threadIdx.x == 0)
		*bad = 0;
	__syncthreads();
	const int seg = (N + nw - 1) / nw;
	const int a = warp * seg, b = min(N, a + seg);
	if (warp < nw)
		for (int g0 = a; g0 < b; g0 += 256) {
			int ev[8];
#pragma unroll
			for (int u = 0; u < 8; u++) {
				const int i = g0 + u * 32 + lane;
				ev[u] = i < b ? idx[(i / k) * ld + i % k] : 0;
			}
#pragma unroll
			for (int u = 0; u < 8; u++) {
				const int i = g0 + u * 32 + lane, e = ev[u];
				if (i >= b)
					continue;
				if (e >= 0 && e < E) {
					atomicAdd(&hist[warp * E + e], 1);
				} else if (strict && atomicCAS(bad, 0, 1) == 0) {
					mkd_data_error(p, MKD_DATA_BAD_EXPERT, (u64)i, (u64)(unsigned)e, w);
				}
			}
		}
	__syncthreads();
	if (*bad)
		return false;
	/* per expert: each warp's start among the expert's entries, and the
	 * expert's total (into soff[], then scanned) */
	for (int e = threadIdx.x; e < E; e += blockDim.x) {
		int run = 0;
		for (int k = 0; k < nw; k++) {
			const int c = hist[k * E + e];
			hist[k * E + e] = run;
			run += c;
		}
		soff[e] = run;
	}
	__syncthreads();
	if (warp == 0) {
		int carry = 0;
		for (int e0 = 0; e0 < E; e0 += 32) {
			const int e = e0 + lane;
			const int c = e < E ? soff[e] : 0;
			const int inc = mkd_warp_scan(c);
			if (e < E)
				soff[e] = carry + inc - c;
			carry += __shfl_sync(0xffffffffu, inc, 31);
		}
		if (lane == 0)
			soff[E] = carry;
	}
	__syncthreads();
	for (int e = threadIdx.x; e <= E; e += blockDim.x)
		off[e] = soff[e];
	/* each warp walks its entries in order: a stable placement */
	if (warp < nw)
		for (int g0 = a; g0 < b; g0 += 256) {
			int ev[8];
#pragma unroll
			for (int u = 0; u < 8; u++) {
				const int i = g0 + u * 32 + lane;
				ev[u] = i < b ? idx[(i / k) * ld + i % k] : -1;
			}
#pragma unroll
			for (int u = 0; u < 8; u++) {
				const int i = g0 + u * 32 + lane;
				const bool in = i < b && ev[u] >= 0 && ev[u] < E;
				const unsigned act = __ballot_sync(0xffffffffu, in);
				if (in) {
					const int e = ev[u];
					const unsigned peers = __match_any_sync(act, e);
					const int before = __popc(peers & ((1u << lane) - 1u));
					const int at = hist[warp * E + e] + before;
					order[soff[e] + at] = i;
					pos[i] = at;
					__syncwarp(act);
					if (before == 0)
						hist[warp * E + e] += __popc(peers);
				}
				__syncwarp();
			}
		}
	__syncthreads();
	return true;
}

/* The route table of one rank from its indices idx[N] (N = tokens * k). */
MKD_INLINE bool mkd_route(const mkd_params &p, mkd_waiter w, const int *idx, int N, int E,
			  int *route, char *smem, int smem_bytes)
{
	return mkd_route_rows(p, w, idx, 1, 1, N, N, E, route, smem, smem_bytes);
}

/* Copies `rows` rows of `cols` elements: warps take rows, lanes 16 bytes. */
template <typename T>
MKD_INLINE void mkd_copy_row(T *dst, const T *src, int cols)
{
	const int lane = threadIdx.x & 31;
	const int bytes = cols * (int)sizeof(T);
	if ((((u64)dst | (u64)src) & 15) == 0 && (bytes & 15) == 0) {
		const uint4 *s = (const uint4 *)src;
		uint4 *d = (uint4 *)dst;
		const int n = bytes >> 4;
		int v = lane;
		for (; v + 96 < n; v += 128) {
			const uint4 x0 = s[v], x1 = s[v + 32], x2 = s[v + 64], x3 = s[v + 96];
			d[v] = x0, d[v + 32] = x1, d[v + 64] = x2, d[v + 96] = x3;
		}
		for (; v < n; v += 32)
			d[v] = s[v];
	} else {
		for (int c = lane; c < cols; c += 32)
			dst[c] = src[c];
	}
}

template <typename T>
MKD_INLINE void mkd_zero_row(T *dst, int cols)
{
	const int lane = threadIdx.x & 31;
	const int bytes = cols * (int)sizeof(T);
	if (((u64)dst & 15) == 0 && (bytes & 15) == 0) {
		uint4 *d = (uint4 *)dst;
		for (int v = lane; v < bytes >> 4; v += 32)
			d[v] = make_uint4(0, 0, 0, 0);
	} else {
		char *b = (char *)dst;
		for (int c = lane; c < bytes; c += 32)
			b[c] = 0;
	}
}

/* The source row of slot s of expert eg's bucket: the s-th row routed to
 * eg, counting every source rank's rows in rank order (s < the total). */
template <typename T>
MKD_INLINE const T *mkd_dispatch_src(int eg, int E, int k, int H, const int *const *route,
				     const T *const *x, int nsrc, int s, const i64 *ldx)
{
	int q = 0, b = 0;
	for (; q < nsrc; q++) {
		const int n = route[q][eg + 1] - route[q][eg];
		if (s < b + n)
			break;
		b += n;
	}
	const int entry = route[q][E + 1 + route[q][eg] + (s - b)];
	return x[q] + (i64)(entry / k) * (ldx ? ldx[q] : H);
}

/* Fills slots [s0, s1) of expert eg's bucket (out = slot s0, rows of H) on
 * the owner: slot s holds the s-th row routed to eg, counting every source
 * rank's rows (route[q], x[q] for q = 0 .. nsrc-1, ranks in order), or zeros
 * past the last (with `zero`; else those rows are left as they are: the
 * plan found nothing reads them).  When the expert receives more than C rows: with `drop`
 * the first C fill the bucket and the rest are dropped (mkd_combine skips
 * a choice whose slot is C or more); without, it returns false after
 * reporting, and nothing is written.
 *
 * On sm_90 with 16-byte aligned rows and scratch (smem, smem_bytes) the
 * rows travel on the TMA bulk engine (mkd/copy.cuh, a gather: the rows'
 * sources listed in smem first), a ring of ~12 rows in flight a CTA where
 * the warps' 16-byte copies kept 24 KB (~18 GB/s each way a CTA, the MoE
 * trace of 2026-12-06); else the warps copy a row each. */
template <typename T>
MKD_INLINE bool mkd_dispatch(const mkd_params &p, mkd_waiter w, int eg, int E, int C, int N,
			     int k, int H, const int *const *route, const T *const *x, int nsrc,
			     int s0, int s1, T *out, const i64 *ldx = 0, bool drop = false,
			     bool zero = true, char *smem = 0, int smem_bytes = 0)
{
	const int warp = threadIdx.x >> 5, nw = (int)(blockDim.x >> 5);
	int total = 0;
	for (int q = 0; q < nsrc; q++)
		total += route[q][eg + 1] - route[q][eg];
	if (total > C && !drop) {
		if (threadIdx.x == 0)
			mkd_data_error(p, MKD_DATA_OVER_CAPACITY, (u64)eg, (u64)total, w);
		return false;
	}
	const int filled = s1 < total ? s1 : total;  /* slots [s0, filled) hold rows */
#if MKD_HAS_BULK
	const i64 rb = (i64)H * (i64)sizeof(T);
	const u32 list = (u32)(8 * (filled - s0) + 127) & ~127u;
	if (filled > s0 && smem && (i64)smem_bytes > (i64)list + 4096) {
		const T **srcv = (const T **)smem;
		int good = (((u64)out | (u64)rb) & 15) == 0;
		for (int s = s0 + (int)threadIdx.x; s < filled; s += (int)blockDim.x) {
			const T *src = mkd_dispatch_src(eg, E, k, H, route, x, nsrc, s, ldx);
			srcv[s - s0] = src;
			good &= ((u64)src & 15) == 0;
		}
		u32 chunk = MKD_BULK_CHUNK, bars;
		i64 S;
		/* every thread's verdict, and the list written, before any use */
		if (__syncthreads_and(good) &&
		    mkd_bulk_stages(smem + list, (u32)smem_bytes - list, chunk, bars, S)) {
			mkd_bulk_plan pl;
			pl.init((char *)out, rb, 0, 0, filled - s0, rb, chunk);
			pl.srcv = (const char *const *)srcv;
			mkd_bulk_go(pl, bars, S);
			for (int s = filled + warp; zero && s < s1; s += nw)
				mkd_zero_row(out + (i64)(s - s0) * H, H);
			return true;
		}
	}
#endif
	for (int s = s0 + warp; s < s1; s += nw) {
		T *dst = out + (i64)(s - s0) * H;
		if (s >= total) {
			if (!zero)
				break;  /* and every slot after it */
			mkd_zero_row(dst, H);
			continue;
		}
		mkd_copy_row(dst, mkd_dispatch_src(eg, E, k, H, route, x, nsrc, s, ldx), H);
	}
	return true;
}

/* Rows of expert e's bucket that hold tokens: the sum of every rank's count
 * (route tensor index `rt`).  Tiles past it hold zeros: a matmul over a
 * bucket skips them (mkd_zero_tile). */
MKD_INLINE int mkd_bucket_rows(const mkd_params &p, int rt, int world, int e)
{
	int n = 0;
	for (int q = 0; q < world; q++) {
		const int *r = (const int *)p.ranks[q].buf[rt];
		n += r[e + 1] - r[e];
	}
	return n;
}

/* The same between nodes: the sources are the ranks of this node, their
 * own tokens (table rt) and what each other node sent them (tables rrt,
 * slices of len ints). */
template <int NODES, int GPUS>
MKD_INLINE int mkd_bucket_rows_nodes(const mkd_params &p, int rt, int rrt, int len, int e, int rank)
{
	int n = 0;
	const int first = rank - rank % GPUS;
	for (int g = 0; g < GPUS; g++) {
		const int *r = (const int *)p.ranks[first + g].buf[rt];
		const int *rr = (const int *)p.ranks[first + g].buf[rrt];
		n += r[e + 1] - r[e];
		for (int s = 0; s < NODES - 1; s++)
			n += rr[(i64)s * len + e + 1] - rr[(i64)s * len + e];
	}
	return n;
}

template <typename T>
MKD_INLINE void mkd_zero_tile(T *c, i64 ldc, int rows, int cols)
{
	const int rb = cols * (int)sizeof(T);
	if (((u64)c & 15) == 0 && ((ldc * (i64)sizeof(T)) & 15) == 0 && (rb & 15) == 0) {
		const int vpr = rb >> 4;
		for (int i = threadIdx.x; i < rows * vpr; i += blockDim.x)
			((uint4 *)(c + (i64)(i / vpr) * ldc))[i % vpr] = make_uint4(0, 0, 0, 0);
		return;
	}
	for (int i = threadIdx.x; i < rows * cols; i += blockDim.x)
		mkd_elem<T>::st(c + (i64)(i / cols) * ldc + i % cols, 0.f);
}

/* Up to 8 elements (n of them; the rest read as 0) as floats: one 16-byte
 * load for 16-bit types when all 8 are there and aligned. */
template <typename T>
MKD_INLINE void mkd_ld8(const T *p, float *f, int n)
{
	if constexpr (mkd_is16<T>::value) {
		if (n >= 8 && ((u64)p & 15) == 0) {
			mkd_vec8<T>::get(f, *(const uint4 *)p);
			return;
		}
	}
#pragma unroll
	for (int v = 0; v < 8; v++)
		f[v] = v < n ? mkd_elem<T>::ld(p + v) : 0.f;
}

/* Up to 8 floats (n of them) as elements of T: one 16-byte store for
 * 16-bit types when all 8 go and p is aligned. */
template <typename T>
MKD_INLINE void mkd_st8(T *p, const float *f, int n)
{
	if constexpr (mkd_is16<T>::value) {
		if (n >= 8 && ((u64)p & 15) == 0) {
			*(uint4 *)p = mkd_vec8<T>::pack(f);
			return;
		}
	}
#pragma unroll
	for (int v = 0; v < 8; v++)
		if (v < n)
			mkd_elem<T>::st(p + v, f[v]);
}

/* acc[0 .. 8) += the gate-weighted sum, over a token's k choices, of
 * columns [c, c + 8) of their rows: lane j < k holds choice j's row
 * (`mine`, 0 for none) and gate.  `vec`: 16-bit elements, H a multiple of
 * 8, every row 16-byte aligned (mkd_rows_vec).  A group's 8 loads are all
 * issued before any is converted: converting each as it came left one
 * load in flight a lane, 4.5 us a column chunk and the combine at 11 GB/s
 * a CTA (the MoE trace of 2026-12-06).  Sums in choice order, as before. */
template <typename TE>
MKD_INLINE void mkd_choices_sum8(const TE *mine, float gmine, int k, int c, int H, bool vec,
				 float *acc)
{
	for (int j0 = 0; j0 < k; j0 += 8) {
		const TE *row[8];
		float g[8];
#pragma unroll
		for (int u = 0; u < 8; u++) {
			const int j = j0 + u < k ? j0 + u : 0;
			row[u] = (const TE *)__shfl_sync(0xffffffffu, (unsigned long long)mine, j);
			g[u] = __shfl_sync(0xffffffffu, gmine, j);
			if (j0 + u >= k || !row[u] || c >= H)
				g[u] = 0.f, row[u] = 0;
		}
		if constexpr (mkd_is16<TE>::value) {
			if (vec) {
				uint4 raw[8];
#pragma unroll
				for (int u = 0; u < 8; u++)
					raw[u] = row[u] ? mkd_ld16_once(row[u] + c) : make_uint4(0, 0, 0, 0);
#pragma unroll
				for (int u = 0; u < 8; u++) {
					float f[8];
					mkd_vec8<TE>::get(f, raw[u]);
#pragma unroll
					for (int v = 0; v < 8; v++)
						acc[v] += g[u] * f[v];
				}
				continue;
			}
		}
		float f[8][8];
#pragma unroll
		for (int u = 0; u < 8; u++) {
			if (row[u])
				mkd_ld8(row[u] + c, f[u], H - c);
			else
#pragma unroll
				for (int v = 0; v < 8; v++)
					f[u][v] = 0.f;
		}
#pragma unroll
		for (int u = 0; u < 8; u++)
#pragma unroll
			for (int v = 0; v < 8; v++)
				acc[v] += g[u] * f[u][v];
	}
}

/* Whether the warp's rows (`mine` of each lane; 0 for none) of H elements
 * of TE take mkd_choices_sum8's 16-byte loads. */
template <typename TE>
MKD_INLINE bool mkd_rows_vec(const TE *mine, int H)
{
	const bool ok = !mine || ((unsigned long long)mine & 15) == 0;
	return __all_sync(0xffffffffu, ok) && mkd_is16<TE>::value && (H & 7) == 0;
}

/* base[e] in smem (E ints): the entries the sources before `me` (tables
 * route[0 .. me)) routed to expert e, where source me's slots in e's
 * bucket begin.  The whole CTA; returns base. */
MKD_INLINE const int *mkd_bucket_base(const int *const *route, int me, int E, char *smem)
{
	int *base = (int *)smem;
	for (int e = threadIdx.x; e < E; e += blockDim.x) {
		int s = 0;
		for (int q = 0; q < me; q++)
			s += route[q][e + 1] - route[q][e];
		base[e] = s;
	}
	__syncthreads();
	return base;
}

/* Token rows [t0, t1) of this rank (local numbering):
 *   y[t] = sum_j gate[t, j] * ye(expert idx[t, j])[slot(t, j)]
 * ye[q] is rank q's bucket array [El][C][H]; route[q] rank q's table
 * (q = 0 .. world-1); `me` this rank.  smem: E ints. */
template <typename TE, typename TY>
MKD_INLINE void mkd_combine(int me, int E, int El, int C, int N, int k, int H,
			    const int *const *route, const TE *const *ye,
			    const int *idx, const float *gate, int t0, int t1, TY *y, i64 ldy,
			    char *smem)
{
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = (int)(blockDim.x >> 5);
	const int *base = mkd_bucket_base(route, me, E, smem);
	const int *pos = route[me] + E + 1 + N;
	for (int t = t0 + warp; t < t1; t += nw) {
		TY *yr = y + (i64)(t - t0) * ldy;
		/* lanes 0 .. k-1 hold choice j's row and gate (rows 0 when bad:
		 * the route or dispatch reported it and the run aborts) */
		const TE *mine = 0;
		float gmine = 0.f;
		if (lane < k) {
			const int i = t * k + lane, e = idx[i];
			if (e >= 0 && e < E) {
				const int sl = base[e] + pos[i];
				if (sl < C) {
					mine = ye[e / El] + ((i64)(e % El) * C + sl) * H;
					gmine = gate[i];
				}
			}
		}
		const bool vec = mkd_rows_vec(mine, H);
		for (int c0 = 0; c0 < H; c0 += 256) {
			float acc[8];
#pragma unroll
			for (int v = 0; v < 8; v++)
				acc[v] = 0.f;
			const int c = c0 + lane * 8;
			mkd_choices_sum8(mine, gmine, k, c, H, vec, acc);
			if (c < H)
				mkd_st8(yr + c, acc, H - c);
		}
	}
}

/* ---- between nodes --------------------------------------------------------
 * A packed row (ints, W of them): the token's data words [0, words), its k
 * expert ids, its k gates (float bits), its index among the rank's tokens.
 * Row 0 of a slice holds the count in word 0; rows 1 .. count the tokens,
 * in token order. */

/* Packs this rank's tokens with a choice in experts [elo, ehi) (another
 * node's) into `out` (the slice: row 0 the count), columns [c0, c1) of
 * each row: every column block's task picks the same rows.  smem: (warps +
 * blockDim + 1) ints. */
template <typename T>
MKD_INLINE void mkd_pack(const int *idx, int k, const T *x, int H, const float *gate, int T0,
			 int elo, int ehi, int *out, int W, int words, int c0, int c1, char *smem)
{
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = (int)(blockDim.x >> 5);
	int *wsum = (int *)smem;          /* [nw] */
	int *list = wsum + nw;            /* [blockDim] the chunk's chosen tokens */
	int *nl = list + blockDim.x;      /* their count */
	int base = 0;
	for (int a = 0; a < T0; a += blockDim.x) {
		const int t = a + (int)threadIdx.x;
		bool in = false;
		if (t < T0)
			for (int j = 0; j < k; j++) {
				const int e = idx[(i64)t * k + j];
				in |= e >= elo && e < ehi;
			}
		const unsigned bal = __ballot_sync(0xffffffffu, in);
		if (lane == 0)
			wsum[warp] = __popc(bal);
		__syncthreads();
		if (threadIdx.x == 0) {
			int run = 0;
			for (int v = 0; v < nw; v++) {
				const int c = wsum[v];
				wsum[v] = run;
				run += c;
			}
			*nl = run;
		}
		__syncthreads();
		if (in)
			list[wsum[warp] + __popc(bal & ((1u << lane) - 1u))] = t;
		__syncthreads();
		/* a warp a row: its columns of [c0, c1) */
		for (int r = warp; r < *nl; r += nw) {
			const int tk = list[r];
			int *row = out + (i64)(1 + base + r) * W;
			const int *src = (const int *)(x + (i64)tk * H);
			const int d1 = c1 < words ? c1 : words;
			if (c0 < d1) {
				if ((c0 & 3) == 0 && (d1 & 3) == 0)
					for (int c = c0 + lane * 4; c < d1; c += 128)
						*(int4 *)(row + c) = *(const int4 *)(src + c);
				else
					for (int c = c0 + lane; c < d1; c += 32)
						row[c] = src[c];
			}
			for (int c = (c0 > words ? c0 : words) + lane; c < c1; c += 32) {
				const int m = c - words;
				row[c] = m < k ? idx[(i64)tk * k + m]
					: m < 2 * k ? (gate ? __float_as_int(gate[(i64)tk * k + m - k]) : 0)
					: m == 2 * k ? tk : 0;
			}
		}
		base += *nl;
		__syncthreads();
	}
	if (c0 == 0 && threadIdx.x == 0)
		out[0] = base;
}

/* Token rows of one source (its packed rows, or this rank's own): for each
 * row r in [r0, r1), y[r - r0] = the gate-weighted sum of its choices in
 * experts [elo, elo + G * El) (this node's), whose rows lie in ye[(e - elo)
 * / El] at slot base[e] + pos[entry]; base[e] counts the entries of the
 * sources before `me` (route[0 .. me)).  ids and gates: idx[r * ld + j],
 * gate[r * ld + j] (float bits when packed).  With nback > 0 (a token's own
 * sum), adds for each other node j the sum it returned: row 1 + m of
 * back[j] (ld H) where m is the token's row in pack[j] (found by its index,
 * the rows ascending).  smem: E ints (mkd_bucket_base). */
template <typename TE, typename TY>
MKD_INLINE void mkd_combine_nodes(int me, int E, int El, int G, int elo, int C, int NMAX, int k,
				  int H, const int *const *route, const TE *const *ye, const int *pos,
				  const int *idx, const int *gate, int ld, int r0, int r1, TY *y,
				  i64 ldy, int nback, const int *const *pack, int W, int tcol,
				  const float *const *back, char *smem)
{
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = (int)(blockDim.x >> 5);
	const int ehi = elo + G * El;
	const int *base = mkd_bucket_base(route, me, E, smem);
	for (int r = r0 + warp; r < r1; r += nw) {
		TY *yr = y + (i64)(r - r0) * ldy;
		const TE *mine = 0;
		float gmine = 0.f;
		if (lane < k) {
			const int e = idx[(i64)r * ld + lane];
			if (e >= elo && e < ehi) {
				const int sl = base[e] + pos[r * k + lane];
				if (sl < C) {
					mine = ye[(e - elo) / El] + ((i64)(e % El) * C + sl) * H;
					gmine = __int_as_float(gate[(i64)r * ld + lane]);
				}
			}
		}
		/* the rows the other nodes returned for this token (lanes 0 ..
		 * nback-1 find one each) */
		const float *ret = 0;
		if (lane < nback) {
			const int *pk = pack[lane];
			int lo = 0, hi = pk[0];
			while (lo < hi) {
				const int mid = (lo + hi) >> 1;
				if (pk[(i64)(1 + mid) * W + tcol] < r)
					lo = mid + 1;
				else
					hi = mid;
			}
			if (lo < pk[0] && pk[(i64)(1 + lo) * W + tcol] == r)
				ret = back[lane] + (i64)(1 + lo) * H;
		}
		const bool vec = mkd_rows_vec(mine, H);
		for (int c0 = 0; c0 < H; c0 += 256) {
			float acc[8];
#pragma unroll
			for (int v = 0; v < 8; v++)
				acc[v] = 0.f;
			const int c = c0 + lane * 8;
			mkd_choices_sum8(mine, gmine, k, c, H, vec, acc);
			for (int j = 0; j < nback; j++) {
				const float *br = (const float *)__shfl_sync(0xffffffffu, (unsigned long long)ret, j);
				if (br && c < H)
#pragma unroll
					for (int v = 0; v < 8; v++)
						if (c + v < H)
							acc[v] += br[c + v];
			}
			if (c < H)
				mkd_st8(yr + c, acc, H - c);
		}
	}
}

#endif
