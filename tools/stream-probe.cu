// tools/stream-probe.cu - how fast can the SMs read a decode weight matrix,
// by access pattern (issue 18; a measurement, not a test).  Run on the GPU
// machine: nvcc -O3 -arch=sm_90a tools/stream-probe.cu -o /tmp/probe && /tmp/probe
// A bf16 [K = 12288, N = 14336] matrix (352 MB: the decode MLP's three
// weights, rows of 28 KB as in samples/decode_mlp.mk) read by one or two
// CTAs a SM of 512 threads, plain 16-byte loads, 8 in flight a thread:
//   contig   each CTA a contiguous slice (the copy-like ceiling)
//   cols W   units of W columns x 512 rows (what a matmul tile W wide
//            reads: 2W-byte pieces of 28 KB rows), dealt round-robin,
//            column tile fastest (CTAs running together share rows)
// Arguments: grid sizes (default: the SMs, twice the SMs).  Prints each
// pattern's median time over 20 runs and its read rate.
// Then the engine's way (TMA): 64 x 64 boxes (128-byte rows, 128-byte
// swizzle) through an 8-stage ring of two boxes a stage, one thread
// loading and one releasing, over the decode MLP's weights (Wg, Wu [4096,
// 14336], Wd [14336, 4096]) in the tile patterns the plans make:
//   G 128        112 tiles of 128 columns of Wg, all of K (G's tiles)
//   GU 64+64     224 tiles of 64 columns of Wg and the same of Wu (gate-up)
//   G|U 128      224 tiles of 128 columns, of Wg and Wu in turn (by wave)
//   M split 4    128 pieces of Wd: 32 column tiles x 4 k-ranges (M's)
// each with the tensor maps' L2 promotion 128 B (mkc's) and 256 B; then
// the same ring filled by a producer warpgroup's cp.async instead (CPA).
// Build: nvcc -O3 -arch=sm_90a tools/stream-probe.cu -lcuda -o /tmp/probe
// (-DPROBE_STAGES=N: the ring's depth, default 8)
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda.h>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
	printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)

static const long K = 12288, N = 14336, KC = 512;  /* KC rows a unit */

__global__ void __launch_bounds__(512) contig(const uint4 *w, long n16, uint4 *sink)
{
	long per = (n16 + gridDim.x - 1) / gridDim.x;
	long b = per * blockIdx.x, e = min(n16, b + per);
	uint4 acc = {0, 0, 0, 0};
	for (long i = b + threadIdx.x; i < e; i += 8 * 512) {
		uint4 v[8];
#pragma unroll
		for (int j = 0; j < 8; j++) {
			long k = i + j * 512;
			v[j] = k < e ? __ldcs(w + k) : make_uint4(0, 0, 0, 0);
		}
#pragma unroll
		for (int j = 0; j < 8; j++) { acc.x ^= v[j].x; acc.y ^= v[j].y; acc.z ^= v[j].z; acc.w ^= v[j].w; }
	}
	if (acc.x == 0x12345678u) sink[blockIdx.x] = acc;
}

// tiles of WC columns; a row piece is WC*2 bytes = WC/8 uint4
template <int WC>
__global__ void __launch_bounds__(512) cols(const uint4 *w, int ntiles, uint4 *sink)
{
	const int per_row = WC / 8, rows_per_pass = 512 / per_row;
	const long row16 = N / 8;
	const int units = ntiles * (int)(K / KC);
	uint4 acc = {0, 0, 0, 0};
	for (int u = blockIdx.x; u < units; u += gridDim.x) {
		int t = u % ntiles, c = u / ntiles;
		const uint4 *base = w + (long)c * KC * row16 + (long)t * per_row + threadIdx.x % per_row;
		for (int r = threadIdx.x / per_row; r < KC; r += 8 * rows_per_pass) {
			uint4 v[8];
#pragma unroll
			for (int j = 0; j < 8; j++) {
				int rr = r + j * rows_per_pass;
				v[j] = rr < KC ? __ldcs(base + rr * row16) : make_uint4(0, 0, 0, 0);
			}
#pragma unroll
			for (int j = 0; j < 8; j++) { acc.x ^= v[j].x; acc.y ^= v[j].y; acc.z ^= v[j].z; acc.w ^= v[j].w; }
		}
	}
	if (acc.x == 0x12345678u) sink[blockIdx.x] = acc;
}

template <typename F>
static float timeit(F f);

/* ---- the engine's way: TMA boxes through a ring ---------------------------- */

#ifndef PROBE_STAGES
#define PROBE_STAGES 8
#endif
enum { STAGES = PROBE_STAGES, BOX = 64 * 64 * 2, STAGE = 2 * BOX };
struct Tile { int m0, c0, m1, c1, k0, nk; };  /* box 0 from map m0 at column c0, box 1 ... */

__device__ static bool wait_parity(unsigned bar, unsigned ph, int *bad)
{
	long long t0 = clock64();
	for (;;) {
		unsigned ok;
		asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
			     "selp.u32 %0, 1, 0, p;\n\t}" : "=r"(ok) : "r"(bar), "r"(ph) : "memory");
		if (ok)
			return true;
		if (clock64() - t0 > 4000000000LL) {  /* ~2 s: a bug here, not a slow run */
			atomicExch(bad, 1);
			return false;
		}
	}
}

/* the consumer thread: stage `full` has landed (round parity ph), free it */
__device__ static bool consume(unsigned full, unsigned empty, unsigned ph, int *bad)
{
	if (!wait_parity(full, ph, bad))
		return false;
	asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(empty) : "memory");
	return true;
}

__device__ static void next_stage(unsigned &s, unsigned &ph)
{
	if (++s == STAGES) {
		s = 0;
		ph ^= 1;
	}
}

__global__ void __launch_bounds__(64) tma_probe(const __grid_constant__ CUtensorMap ta,
						  const __grid_constant__ CUtensorMap tb,
						  const Tile *tiles, int ntiles, int *bad)
{
	extern __shared__ unsigned char sm_raw[];
	const unsigned raw = (unsigned)__cvta_generic_to_shared(sm_raw);
	const unsigned ring = (raw + 1023) & ~1023u, bars = ring + STAGES * STAGE;
	if (threadIdx.x == 0) {
		for (int s = 0; s < 2 * STAGES; s++)
			asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bars + 8 * s) : "memory");
		asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
	}
	__syncthreads();
	const bool prod = threadIdx.x == 0, cons = threadIdx.x == 32;
	if (!prod && !cons)
		return;
	unsigned s = 0, ph = 0;
	for (int t = blockIdx.x; t < ntiles; t += gridDim.x) {
		const Tile T = tiles[t];
		for (int kt = 0; kt < T.nk; kt++) {
			const unsigned full = bars + 8 * s, empty = bars + 8 * (STAGES + s);
			if (prod) {
				if (!wait_parity(empty, ph ^ 1, bad))
					return;
				asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
					     :: "r"(full), "r"(STAGE) : "memory");
				const CUtensorMap *m0 = T.m0 ? &tb : &ta, *m1 = T.m1 ? &tb : &ta;
				const int k = T.k0 + 64 * kt;
				asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
					     " [%0], [%1, {%2, %3}], [%4];"
					     :: "r"(ring + s * STAGE), "l"(m0), "r"(T.c0), "r"(k), "r"(full) : "memory");
				asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
					     " [%0], [%1, {%2, %3}], [%4];"
					     :: "r"(ring + s * STAGE + BOX), "l"(m1), "r"(T.c1), "r"(k), "r"(full) : "memory");
			} else if (!consume(full, empty, ph, bad)) {
				return;
			}
			next_stage(s, ph);
		}
	}
}

/* The same ring filled by the 128 threads of a producer warpgroup with
 * cp.async (16 bytes each, 8 a thread a stage), written 128-byte swizzled
 * as the TMA box would be; each thread's completions arrive on full[s]
 * (count 128, .noinc).  One consumer thread (128) frees the stages.  a, b:
 * the two matrices (m0/m1 pick one), rows of ld elements. */
__global__ void __launch_bounds__(160) cpa_probe(const unsigned short *a, const unsigned short *b, long ld,
						   const Tile *tiles, int ntiles, int *bad)
{
	extern __shared__ unsigned char sm_raw[];
	const unsigned raw = (unsigned)__cvta_generic_to_shared(sm_raw);
	const unsigned ring = (raw + 1023) & ~1023u, bars = ring + STAGES * STAGE;
	if (threadIdx.x == 0) {
		for (int s = 0; s < STAGES; s++) {
			asm volatile("mbarrier.init.shared::cta.b64 [%0], 128;" :: "r"(bars + 8 * s) : "memory");
			asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bars + 8 * (STAGES + s)) : "memory");
		}
		asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
	}
	__syncthreads();
	const bool prod = threadIdx.x < 128, cons = threadIdx.x == 128;
	if (!prod && !cons)
		return;
	unsigned s = 0, ph = 0;
	for (int t = blockIdx.x; t < ntiles; t += gridDim.x) {
		const Tile T = tiles[t];
		const unsigned short *p0 = (T.m0 ? b : a) + T.c0, *p1 = (T.m1 ? b : a) + T.c1;
		for (int kt = 0; kt < T.nk; kt++) {
			const unsigned full = bars + 8 * s, empty = bars + 8 * (STAGES + s);
			if (prod) {
				if (!wait_parity(empty, ph ^ 1, bad))
					return;
				const long k = T.k0 + 64 * kt;
#pragma unroll
				for (int j = 0; j < 8; j++) {
					const int i = threadIdx.x + 128 * j;  /* chunk: box i / 512, row, 16-byte piece */
					const int bx = i >> 9, r = (i >> 3) & 63, c = i & 7;
					const unsigned short *src = (bx ? p1 : p0) + (k + r) * ld + 8 * c;
					const unsigned dst = ring + s * STAGE + bx * BOX + r * 128 + ((c ^ (r & 7)) << 4);
					asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(dst), "l"(src) : "memory");
				}
				asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" :: "r"(full) : "memory");
			} else if (!consume(full, empty, ph, bad)) {
				return;
			}
			next_stage(s, ph);
		}
	}
	if (prod)
		asm volatile("cp.async.wait_all;" ::: "memory");
}

static CUtensorMap tmap(void *base, long rows, long cols, CUtensorMapL2promotion prom)
{
	CUtensorMap m;
	cuuint64_t dim[2] = {(cuuint64_t)cols, (cuuint64_t)rows}, stride[1] = {(cuuint64_t)cols * 2};
	cuuint32_t box[2] = {64, 64}, es[2] = {1, 1};
	CUresult r = cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_UINT16, 2, base, dim, stride, box, es,
					    CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, prom,
					    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
	if (r != CUDA_SUCCESS) {
		printf("cuTensorMapEncodeTiled: %d\n", (int)r);
		exit(1);
	}
	return m;
}

static void tma_patterns(int sms)
{
	const long D = 4096, F = 14336;
	void *wg, *wu, *wd;
	CK(cudaMalloc(&wg, D * F * 2)); CK(cudaMalloc(&wu, D * F * 2)); CK(cudaMalloc(&wd, D * F * 2));
	CK(cudaMemset(wg, 1, D * F * 2)); CK(cudaMemset(wu, 1, D * F * 2)); CK(cudaMemset(wd, 1, D * F * 2));
	int *bad;
	Tile *dt;
	CK(cudaMalloc(&bad, 4)); CK(cudaMemset(bad, 0, 4));
	CK(cudaMalloc(&dt, 1024 * sizeof(Tile)));
	const int smem = STAGES * STAGE + 2 * STAGES * 8 + 1024;
	CK(cudaFuncSetAttribute(tma_probe, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
	struct Pat { const char *name; int grid; bool down; std::vector<Tile> t; };
	std::vector<Pat> pats;
	const int nk = (int)(D / 64);
	{ Pat p{"G 128", 112, false, {}}; for (int j = 0; j < F / 128; j++) p.t.push_back({0, 128 * j, 0, 128 * j + 64, 0, nk}); pats.push_back(p);
	  p.grid = sms; p.name = "G 128 (grid = SMs)"; pats.push_back(p); }
	{ Pat p{"GU 64+64", sms, false, {}}; for (int j = 0; j < F / 64; j++) p.t.push_back({0, 64 * j, 1, 64 * j, 0, nk}); pats.push_back(p); }
	{ Pat p{"G|U 128", sms, false, {}}; for (int j = 0; j < F / 128; j++) for (int m = 0; m < 2; m++) p.t.push_back({m, 128 * j, m, 128 * j + 64, 0, nk}); pats.push_back(p); }
	{ Pat p{"M split 4", sms, true, {}}; for (int j = 0; j < D / 128; j++) for (int r = 0; r < 4; r++) p.t.push_back({0, 128 * j, 0, 128 * j + 64, (int)(r * F / 4), (int)(F / 4 / 64)}); pats.push_back(p); }
	const CUtensorMapL2promotion proms[2] = {CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B};
	for (int pi = 0; pi < 2; pi++) {
		CUtensorMap mg = tmap(wg, D, F, proms[pi]), mu = tmap(wu, D, F, proms[pi]), md = tmap(wd, F, D, proms[pi]);
		for (auto &p : pats) {
			CK(cudaMemcpy(dt, p.t.data(), p.t.size() * sizeof(Tile), cudaMemcpyHostToDevice));
			const CUtensorMap &a = p.down ? md : mg, &b = p.down ? md : mu;
			const int n = (int)p.t.size();
			float us = timeit([&] { tma_probe<<<p.grid, 64, smem>>>(a, b, dt, n, bad); });
			double bytes = 0;
			for (auto &t : p.t) bytes += (double)t.nk * STAGE;
			int b_ = 0;
			CK(cudaMemcpy(&b_, bad, 4, cudaMemcpyDeviceToHost));
			printf("TMA %-20s L2 %3s grid %4d tiles %4d  %8.1f us  %5.2f TB/s%s\n", p.name,
			       pi ? "256" : "128", p.grid, n, us, bytes / us / 1e6, b_ ? "  (TIMED OUT)" : "");
		}
	}
	/* the cp.async ring over the same patterns */
	CK(cudaFuncSetAttribute(cpa_probe, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
	for (auto &p : pats) {
		CK(cudaMemcpy(dt, p.t.data(), p.t.size() * sizeof(Tile), cudaMemcpyHostToDevice));
		const unsigned short *a = (const unsigned short *)(p.down ? wd : wg),
				     *b = (const unsigned short *)(p.down ? wd : wu);
		const int n = (int)p.t.size();
		float us = timeit([&] { cpa_probe<<<p.grid, 160, smem>>>(a, b, p.down ? D : F, dt, n, bad); });
		double bytes = 0;
		for (auto &t : p.t) bytes += (double)t.nk * STAGE;
		int b_ = 0;
		CK(cudaMemcpy(&b_, bad, 4, cudaMemcpyDeviceToHost));
		printf("CPA %-20s        grid %4d tiles %4d  %8.1f us  %5.2f TB/s%s\n", p.name, p.grid, n, us,
		       bytes / us / 1e6, b_ ? "  (TIMED OUT)" : "");
	}
	CK(cudaFree(wg)); CK(cudaFree(wu)); CK(cudaFree(wd));
}

template <typename F>
static float timeit(F f)
{
	cudaEvent_t a, b;
	CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
	for (int i = 0; i < 3; i++) f();
	std::vector<float> ts;
	for (int i = 0; i < 20; i++) {
		CK(cudaEventRecord(a)); f(); CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b));
		float ms; CK(cudaEventElapsedTime(&ms, a, b)); ts.push_back(ms * 1e3f);
	}
	std::sort(ts.begin(), ts.end());
	return ts[ts.size() / 2];
}

int main(int argc, char **argv)
{
	size_t bytes = (size_t)K * N * 2;
	uint4 *w, *sink;
	CK(cudaMalloc(&w, bytes)); CK(cudaMalloc(&sink, 4096 * 16));
	CK(cudaMemset(w, 1, bytes));
	int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	auto rep = [&](const char *name, int grid, float us) {
		printf("%-28s grid %4d  %8.1f us  %5.2f TB/s\n", name, grid, us, bytes / us / 1e6);
	};
	/* grids: CTAs (one a SM up to the SM count), default the SMs and twice */
	std::vector<int> grids;
	for (int i = 1; i < argc; i++) grids.push_back(atoi(argv[i]));
	if (grids.empty()) grids = {sms, 2 * sms};
	for (int g : grids) {
		rep("contig", g, timeit([&] { contig<<<g, 512>>>(w, bytes / 16, sink); }));
		rep("cols 64 (128 B pieces)", g, timeit([&] { cols<64><<<g, 512>>>(w, N / 64, sink); }));
		rep("cols 128 (256 B pieces)", g, timeit([&] { cols<128><<<g, 512>>>(w, N / 128, sink); }));
		rep("cols 256 (512 B pieces)", g, timeit([&] { cols<256><<<g, 512>>>(w, N / 256, sink); }));
	}
	CK(cudaGetLastError());
	CK(cudaFree(w));
	tma_patterns(sms);
	CK(cudaGetLastError());
	return 0;
}
