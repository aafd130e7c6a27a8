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
 * run; the host turns it into MK_ERR_DATA.
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

/* The route table of one rank from its indices idx[N] (N = tokens * k),
 * by the whole CTA.  smem: nw * E + 1 ints for per-warp counts, nw chosen
 * to fit.  Returns false (after reporting) on a bad expert id. */
MKD_INLINE bool mkd_route(const mkd_params &p, mkd_waiter w, const int *idx, int N, int E,
			  int *route, char *smem, int smem_bytes)
{
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	int nw = (int)(blockDim.x >> 5);
	const int fit = smem_bytes / (int)sizeof(int) / E - 1;
	if (nw > fit)
		nw = fit;
	int *hist = (int *)smem;          /* [nw][E] */
	int *bad = hist + nw * E;         /* one flag */
	int *off = route, *order = route + E + 1, *pos = route + E + 1 + N;
	for (int i = threadIdx.x; i < nw * E; i += blockDim.x)
		hist[i] = 0;
	if (threadIdx.x == 0)
		*bad = 0;
	__syncthreads();
	const int seg = (N + nw - 1) / nw;
	const int a = warp * seg, b = min(N, a + seg);
	if (warp < nw)
		for (int i = a + lane; i < b; i += 32) {
			const int e = idx[i];
			if (e >= 0 && e < E) {
				atomicAdd(&hist[warp * E + e], 1);
			} else if (atomicCAS(bad, 0, 1) == 0) {
				mkd_data_error(p, MKD_DATA_BAD_EXPERT, (u64)i, (u64)(unsigned)e, w);
			}
		}
	__syncthreads();
	if (*bad)
		return false;
	/* per expert: each warp's start among the expert's entries, and the
	 * expert's total (into off[], then scanned) */
	for (int e = threadIdx.x; e < E; e += blockDim.x) {
		int run = 0;
		for (int k = 0; k < nw; k++) {
			const int c = hist[k * E + e];
			hist[k * E + e] = run;
			run += c;
		}
		off[e] = run;
	}
	__syncthreads();
	if (warp == 0) {
		int carry = 0;
		for (int e0 = 0; e0 < E; e0 += 32) {
			const int e = e0 + lane;
			const int c = e < E ? off[e] : 0;
			const int inc = mkd_warp_scan(c);
			if (e < E)
				off[e] = carry + inc - c;
			carry += __shfl_sync(0xffffffffu, inc, 31);
		}
		if (lane == 0)
			off[E] = carry;
	}
	__syncthreads();
	/* each warp walks its entries in order: a stable placement; eight
	 * groups of 32 entries loaded at once (one at a time leaves the walk
	 * waiting on every load) */
	if (warp < nw)
		for (int g0 = a; g0 < b; g0 += 256) {
			int ev[8];
#pragma unroll
			for (int u = 0; u < 8; u++) {
				const int i = g0 + u * 32 + lane;
				ev[u] = i < b ? idx[i] : -1;
			}
#pragma unroll
			for (int u = 0; u < 8; u++) {
				const int i = g0 + u * 32 + lane;
				const bool in = i < b;
				const unsigned act = __ballot_sync(0xffffffffu, in);
				if (in) {
					const int e = ev[u];
					const unsigned peers = __match_any_sync(act, e);
					const int before = __popc(peers & ((1u << lane) - 1u));
					const int at = hist[warp * E + e] + before;
					order[off[e] + at] = i;
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

/* Fills slots [s0, s1) of expert eg's bucket (out = slot s0, rows of H) on
 * the owner: slot s holds the s-th row routed to eg, counting every source
 * rank's rows (route[q], x[q] for q = 0 .. nsrc-1, ranks in order), or zeros
 * past the last.  Returns false (after reporting) when the expert receives
 * more than C rows: nothing is written then. */
template <typename T>
MKD_INLINE bool mkd_dispatch(const mkd_params &p, mkd_waiter w, int eg, int E, int C, int N,
			     int k, int H, const int *const *route, const T *const *x, int nsrc,
			     int s0, int s1, T *out)
{
	const int warp = threadIdx.x >> 5, nw = (int)(blockDim.x >> 5);
	int total = 0;
	for (int q = 0; q < nsrc; q++)
		total += route[q][eg + 1] - route[q][eg];
	if (total > C) {
		if (threadIdx.x == 0)
			mkd_data_error(p, MKD_DATA_OVER_CAPACITY, (u64)eg, (u64)total, w);
		return false;
	}
	for (int s = s0 + warp; s < s1; s += nw) {
		T *dst = out + (i64)(s - s0) * H;
		if (s >= total) {
			mkd_zero_row(dst, H);
			continue;
		}
		int q = 0, b = 0;
		for (; q < nsrc; q++) {
			const int n = route[q][eg + 1] - route[q][eg];
			if (s < b + n)
				break;
			b += n;
		}
		const int entry = route[q][E + 1 + route[q][eg] + (s - b)];
		mkd_copy_row(dst, x[q] + (i64)(entry / k) * H, H);
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
	int *base = (int *)smem;  /* [E]: slots of ranks before me */
	for (int e = threadIdx.x; e < E; e += blockDim.x) {
		int s = 0;
		for (int q = 0; q < me; q++)
			s += route[q][e + 1] - route[q][e];
		base[e] = s;
	}
	__syncthreads();
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
		for (int c0 = 0; c0 < H; c0 += 256) {
			float acc[8];
#pragma unroll
			for (int v = 0; v < 8; v++)
				acc[v] = 0.f;
			const int c = c0 + lane * 8;
			for (int j0 = 0; j0 < k; j0 += 4) {
				float f[4][8];
				float g[4];
#pragma unroll
				for (int u = 0; u < 4; u++) {
					const int j = j0 + u < k ? j0 + u : 0;
					const TE *row = (const TE *)__shfl_sync(0xffffffffu, (unsigned long long)mine, j);
					g[u] = __shfl_sync(0xffffffffu, gmine, j);
					if (j0 + u >= k || !row)
						g[u] = 0.f, row = 0;
					if (row && c < H)
						mkd_ld8(row + c, f[u], H - c);
					else
#pragma unroll
						for (int v = 0; v < 8; v++)
							f[u][v] = 0.f;
				}
#pragma unroll
				for (int u = 0; u < 4; u++)
#pragma unroll
					for (int v = 0; v < 8; v++)
						acc[v] += g[u] * f[u][v];
			}
#pragma unroll
			for (int v = 0; v < 8; v++)
				if (c + v < H)
					mkd_elem<TY>::st(yr + c + v, acc[v]);
		}
	}
}

#endif
