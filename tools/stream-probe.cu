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
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
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
	return 0;
}
