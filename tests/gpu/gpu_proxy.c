/* gpu_proxy.c - the device producer of mkd/proxy.cuh against the real proxy
 * thread, on a GPU: CTAs write data into host-pinned memory mapped for the
 * GPU, push WRITE commands into a small host-pinned ring (heavy
 * back-pressure: many CTAs, few slots), the proxy posts them through
 * libfabric's tcp provider to this same rank, and each CTA waits for its
 * flag and then checks, on the GPU, every byte of the data it sent.
 * Usage: gpu_proxy [ctas] [iters] [slots].  Exit 0 = pass; needs a GPU and
 * libfabric.so.1 (LD_LIBRARY_PATH / MK_LIBFABRIC to carry it).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codegen/mkd/abi.cuh"
#include "codegen/nvrtc.h"
#include "runtime/cudrv.h"
#include "runtime/proxy.h"

#define SZ 4096
#define PER 4   /* data slots per CTA */

static const char KERNEL[] =
	"#include \"mkd/mkd.cuh\"\n"
	"extern \"C\" __global__ void __launch_bounds__(128)\n"
	"mkt_proxy(const __grid_constant__ mkd_params p, const __grid_constant__ mkd_proxy_ring r,\n"
	"          u32 *src, const u32 *dst, const u64 *flags, u32 *errors, int iters)\n"
	"{\n"
	"\tconst int b = blockIdx.x, t = threadIdx.x;\n"
	"\tmkd_waiter w = {0, b, 0, 0};\n"
	"\tfor (int i = 0; i < iters; i++) {\n"
	"\t\tconst int q = b * 4 + i % 4;\n"
	"\t\tu32 *s = src + (size_t)q * (4096 / 4);\n"
	"\t\tfor (int k = t; k < 4096 / 4; k += blockDim.x)\n"
	"\t\t\ts[k] = (u32)(b * 1000003 + i * 7919 + k) ^ 0x9e3779b9u;\n"
	"\t\t__syncthreads();\n"
	"\t\t__shared__ int ok;\n"
	"\t\tif (t == 0) {\n"
	"\t\t\t__threadfence_system();\n"
	"\t\t\tmkd_proxy_cmd c = {};\n"
	"\t\t\tc.op = MKD_PROXY_OP_WRITE;\n"
	"\t\t\tc.src_buf = 0; c.dst_buf = 1; c.dst_rank = 0;\n"
	"\t\t\tc.src_off = (u64)q * 4096; c.dst_off = c.src_off; c.bytes = 4096;\n"
	"\t\t\tc.flag_index = q; c.flag_value = (u64)(i / 4 + 1); c.task = i;\n"
	"\t\t\tok = mkd_proxy_push(p, r, c, w) != 0 &&\n"
	"\t\t\t     mkd_wait(p, flags + q, (u64)(i / 4 + 1), 0, q, w);\n"
	"\t\t}\n"
	"\t\t__syncthreads();\n"
	"\t\tif (!ok)\n"
	"\t\t\treturn;\n"
	"\t\tconst u32 *d = dst + (size_t)q * (4096 / 4);\n"
	"\t\tfor (int k = t; k < 4096 / 4; k += blockDim.x) {\n"
	"\t\t\tu32 v = *(volatile const u32 *)(d + k);\n"
	"\t\t\tif (v != ((u32)(b * 1000003 + i * 7919 + k) ^ 0x9e3779b9u))\n"
	"\t\t\t\tatomicAdd(errors, 1u);\n"
	"\t\t}\n"
	"\t\t__syncthreads();\n"
	"\t}\n"
	"}\n";

#define CU(call)                                                                         \
	do {                                                                             \
		CUresult r_ = (call);                                                    \
		if (r_ != CUDA_SUCCESS) {                                                \
			fprintf(stderr, "FAIL %s: %s\n", #call, cudrv_errstr(r_));       \
			return 1;                                                        \
		}                                                                        \
	} while (0)

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static void *host_alloc(const cudrv *cu, size_t n, CUdeviceptr *dev)
{
	void *p = NULL;
	if (cu->cuMemHostAlloc(&p, n, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE) !=
	    CUDA_SUCCESS)
		return NULL;
	memset(p, 0, n);
	if (cu->cuMemHostGetDevicePointer(dev, p, 0) != CUDA_SUCCESS)
		return NULL;
	return p;
}

int main(int argc, char **argv)
{
	int ctas = argc > 1 ? atoi(argv[1]) : 132, iters = argc > 2 ? atoi(argv[2]) : 200;
	unsigned slots = argc > 3 ? (unsigned)atoi(argv[3]) : 16;
	const cudrv *cu;
	char why[512], log[512], bus[32] = "";
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
	bootstrap_cfg bc;
	bootstrap *boot;
	transport *tp;
	transport_opts to = TRANSPORT_OPTS_INIT;
	proxy_opts po = PROXY_OPTS_INIT;
	proxy *px;
	proxy_stats st;
	mkd_proxy_ring hr, dr;
	mkd_params prm;
	CUdeviceptr d_src, d_dst, d_flags, d_slots, d_ctl, d_head, d_report, d_err;
	size_t bytes = (size_t)ctas * PER * SZ;
	unsigned char *src, *dst;
	uint64_t *flags;
	mkd_report rep;
	unsigned errors = 0;
	cg_compile_opts co;
	cg_binary bin;
	const char *opt[] = {"-DMKD_SYS_SCOPE=1"};
	tp_mem m;
	double t0, t1;
	int fails = 0;

	memset(&co, 0, sizeof co);
	co.extra = opt;
	co.nextra = 1;
	memset(&bin, 0, sizeof bin);
	if (cg_compile(KERNEL, "gpu_proxy.cu", &co, CG_CUBIN, &bin) != CG_OK) {
		fprintf(stderr, "FAIL compile: %s\n", bin.log);
		return 1;
	}
	printf("kernel: %d registers, %d spill stores\n", bin.regs, bin.spill_stores);
	if (cudrv_get(&cu, why, sizeof why) != CUDRV_OK) {
		printf("skip: %s\n", why);
		cg_binary_free(&bin);
		return 0;
	}
	setenv("FI_TCP_IFACE", "lo", 0);
	CU(cu->cuDeviceGet(&dev, 0));
	CU(cu->cuDevicePrimaryCtxRetain(&ctx, dev));
	CU(cu->cuCtxSetCurrent(ctx));
	cu->cuDeviceGetPCIBusId(bus, sizeof bus, dev);

	CU(cu->cuModuleLoadData(&mod, bin.data));
	CU(cu->cuModuleGetFunction(&fn, mod, "mkt_proxy"));

	memset(&bc, 0, sizeof bc);
	bc.world = 1;
	bootstrap_set_token(&bc, "gpu_proxy");
	bc.timeout_ms = 10000;
	bc.root_fd = -1;
	bc.local_rank = bc.local_world = -1;
	if (bootstrap_create(&bc, &boot, why, sizeof why) != MK_OK) {
		fprintf(stderr, "FAIL bootstrap: %s\n", why);
		return 1;
	}
	to.force = "fabric";
	to.provider = "tcp";
	if (transport_open(&to, boot, &tp, log, sizeof log) != MK_OK) {
		fprintf(stderr, "FAIL %s\n", log);
		return 1;
	}
	printf("%s\n", log);

	src = host_alloc(cu, bytes, &d_src);
	dst = host_alloc(cu, bytes, &d_dst);
	flags = host_alloc(cu, (size_t)ctas * PER * 8, &d_flags);
	hr.slots = host_alloc(cu, (size_t)slots * sizeof(mkd_proxy_cmd), &d_slots);
	hr.ctl = host_alloc(cu, sizeof(mkd_proxy_ctl), &d_ctl);
	hr.nslots = slots;
	CU(cu->cuMemAlloc(&d_head, 64));
	CU(cu->cuMemsetD8(d_head, 0, 64));
	CU(cu->cuMemAlloc(&d_report, sizeof(mkd_report)));
	CU(cu->cuMemsetD8(d_report, 0, sizeof(mkd_report)));
	CU(cu->cuMemAlloc(&d_err, 4));
	CU(cu->cuMemsetD8(d_err, 0, 4));
	if (!src || !dst || !flags || !hr.slots || !hr.ctl) {
		fprintf(stderr, "FAIL cuMemHostAlloc\n");
		return 1;
	}
	hr.head = NULL;   /* the host never touches it */

	memset(&m, 0, sizeof m);
	m.dmabuf_fd = -1;
	m.addr = src;
	m.len = bytes;
	if (transport_reg(tp, 0, &m) != MK_OK)
		goto treg;
	m.exported = 1;
	m.addr = dst;
	if (transport_reg(tp, 1, &m) != MK_OK)
		goto treg;
	m.addr = flags;
	m.len = (size_t)ctas * PER * 8;
	if (transport_reg(tp, MKD_PROXY_REGION_FLAGS, &m) != MK_OK ||
	    transport_connect(tp) != MK_OK)
		goto treg;

	po.ring = hr;
	po.tp = tp;
	po.timeout_ms = 10000;
	po.pci_bus_id = bus;
	if (proxy_start(&po, &px, log, sizeof log) != MK_OK) {
		fprintf(stderr, "FAIL %s\n", log);
		return 1;
	}
	printf("%s\n", log);

	memset(&prm, 0, sizeof prm);
	prm.epoch = 1;
	prm.report = (mkd_report *)(uintptr_t)d_report;
	prm.timeout_ns = 20ull * 1000000000ull;
	prm.ranks_here = 1;
	dr.slots = (mkd_proxy_cmd *)(uintptr_t)d_slots;
	dr.ctl = (mkd_proxy_ctl *)(uintptr_t)d_ctl;
	dr.head = (unsigned long long *)(uintptr_t)d_head;
	dr.nslots = slots;
	{
		void *args[] = {&prm, &dr, &d_src, &d_dst, &d_flags, &d_err, &iters};
		t0 = now_s();
		CU(cu->cuLaunchKernel(fn, (unsigned)ctas, 1, 1, 128, 1, 1, 0, NULL, args, NULL));
		CU(cu->cuCtxSynchronize());
		t1 = now_s();
	}
	CU(cu->cuMemcpyDtoH(&errors, d_err, 4));
	CU(cu->cuMemcpyDtoH(&rep, d_report, sizeof rep));
	proxy_get_stats(px, &st);
	{
		char msg[640];
		mk_status ps = proxy_status(px, msg, sizeof msg);
		uint64_t want = (uint64_t)ctas * (uint64_t)iters;
		printf("%d CTAs x %d commands of %d bytes through a ring of %u slots: %.3f s, "
		       "%.0f commands/s\n", ctas, iters, SZ, slots, t1 - t0, (double)want / (t1 - t0));
		printf("proxy: %llu commands, %llu batches (max %llu), %llu busy; done %llu; "
		       "status %s %s\n", (unsigned long long)st.commands,
		       (unsigned long long)st.batches, (unsigned long long)st.max_batch,
		       (unsigned long long)st.busy, (unsigned long long)hr.ctl->done,
		       mk_status_name(ps), msg);
		if (rep.stalled) {
			printf("FAIL stall: cta %d flag_rank %d flag_index %d expected %llu seen %llu\n",
			       rep.cta, rep.flag_rank, rep.flag_index,
			       (unsigned long long)rep.expected, (unsigned long long)rep.seen);
			fails++;
		}
		if (errors) {
			printf("FAIL %u words wrong on the GPU when their flag was seen\n", errors);
			fails++;
		}
		if (st.commands != want || hr.ctl->done != want || ps != MK_OK) {
			printf("FAIL %llu of %llu commands taken, %llu done\n",
			       (unsigned long long)st.commands, (unsigned long long)want,
			       (unsigned long long)hr.ctl->done);
			fails++;
		}
		for (int q = 0; iters % PER == 0 && q < ctas * PER; q++)
			if (flags[q] != (uint64_t)(iters / PER)) {
				printf("FAIL flag %d is %llu\n", q, (unsigned long long)flags[q]);
				fails++;
				break;
			}
	}
	proxy_destroy(px);
	transport_close(tp);
	bootstrap_destroy(boot);
	cg_binary_free(&bin);
	printf("%s\n", fails ? "gpu_proxy: FAIL" : "gpu_proxy: ok");
	return fails ? 1 : 0;
treg:
	fprintf(stderr, "FAIL regions: %s\n", transport_error(tp));
	return 1;
}
