/* test_proxy.c - the command ring and the proxy thread in one process, over
 * libfabric's tcp provider writing to this rank itself: host threads stand
 * in for CTAs with exactly the device protocol.
 *   - a full ring: a slow proxy, the producer waits and resumes, nothing lost
 *   - four producers at once, 20000 commands, every byte and flag checked
 *   - a write cut in chunks; signals without data; flush; stop
 *   - bad commands (op, rank, region, bounds, flag index) fail the proxy with
 *     a message, set ctl->failed, and producers stop waiting
 *   - pinning from a fake /sys; the CPU list parser
 *   - the device side (mkd/proxy.cuh) compiles with NVRTC to the expected PTX
 * Exit 0 = pass.
 */
#include "mkt_proc.h"

#include <pthread.h>
#include <sys/stat.h>

#include "codegen/nvrtc.h"
#include "runtime/proxy.h"

enum { SRC = 0, DST = 1, FLAGS = MKD_PROXY_REGION_FLAGS };
#define BUF (1u << 20)
#define NFLAGS 4096

static unsigned char *src, *dst;
static uint64_t *flags;
static bootstrap *boot;
static transport *tp;

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static int setup(void)
{
	bootstrap_cfg c;
	char err[512], log[512];
	transport_opts o = TRANSPORT_OPTS_INIT;
	tp_mem m;
	mk_status st;

	setenv("FI_TCP_IFACE", "lo", 0);
	memset(&c, 0, sizeof c);
	c.world = 1;
	bootstrap_set_token(&c, "test_proxy");
	c.timeout_ms = 10000;
	c.root_fd = -1;
	c.local_rank = c.local_world = -1;
	if ((st = bootstrap_create(&c, &boot, err, sizeof err)) != MK_OK) {
		mkt_check(0, "bootstrap of one: %s", err);
		return -1;
	}
	o.force = "fabric";
	o.provider = "tcp";
	st = transport_open(&o, boot, &tp, log, sizeof log);
	mkt_check(st == MK_OK, "%s", log);
	if (st)
		return -1;
	src = aligned_alloc(4096, BUF);
	dst = aligned_alloc(4096, BUF);
	flags = aligned_alloc(4096, NFLAGS * 8);
	memset(src, 0, BUF);
	memset(dst, 0, BUF);
	memset(flags, 0, NFLAGS * 8);
	memset(&m, 0, sizeof m);
	m.dmabuf_fd = -1;
	m.addr = src;
	m.len = BUF;
	st = transport_reg(tp, SRC, &m);
	m.addr = dst;
	m.exported = 1;
	st |= transport_reg(tp, DST, &m);
	m.addr = flags;
	m.len = NFLAGS * 8;
	st |= transport_reg(tp, FLAGS, &m);
	mkt_check(st == MK_OK, "regions registered: %s", transport_error(tp));
	m.kind = TP_MEM_CUDA;
	if (!transport_device_memory(tp))
		mkt_check(transport_reg(tp, 5, &m) == MK_ERR_UNSUPPORTED,
			  "GPU memory on a provider without FI_HMEM: %s", transport_error(tp));
	st = transport_connect(tp);
	mkt_check(st == MK_OK, "connected to itself: %s", transport_error(tp));
	return st == MK_OK ? 0 : -1;
}

static proxy *start(mkd_proxy_ring *r, unsigned delay_us, uint64_t chunk)
{
	proxy_opts o = PROXY_OPTS_INIT;
	proxy *p;
	char log[512];
	mk_status st;
	o.ring = *r;
	o.tp = tp;
	o.timeout_ms = 5000;
	o.delay_us = delay_us;
	o.chunk = chunk;
	st = proxy_start(&o, &p, log, sizeof log);
	if (st != MK_OK) {
		mkt_check(0, "proxy_start: %s", log);
		return NULL;
	}
	return p;
}

static mkd_proxy_cmd write_cmd(uint64_t src_off, uint64_t dst_off, uint64_t bytes,
			       unsigned flag, uint64_t value)
{
	mkd_proxy_cmd c;
	memset(&c, 0, sizeof c);
	c.op = MKD_PROXY_OP_WRITE;
	c.src_buf = SRC;
	c.dst_buf = DST;
	c.dst_rank = 0;
	c.src_off = src_off;
	c.dst_off = dst_off;
	c.bytes = bytes;
	c.flag_index = flag;
	c.flag_value = value;
	return c;
}

static uint64_t flag_of(unsigned i) { return __atomic_load_n(&flags[i], __ATOMIC_ACQUIRE); }

/* ---- a full ring ------------------------------------------------------------------ */
static void test_full_ring(void)
{
	mkd_proxy_ring r;
	proxy *p;
	int waited = 0, ok = 1;
	uint64_t last = 0;
	int64_t t0 = mkt_now_ms();
	const int n = 64;

	proxy_ring_alloc(8, &r);
	if (!(p = start(&r, 3000, 0)))
		return;
	for (int i = 0; i < n; i++) {
		mkd_proxy_cmd c = write_cmd((uint64_t)i * 4096, (uint64_t)i * 4096, 4096, (unsigned)i,
					    1000 + (uint64_t)i);
		int64_t t = mkt_now_ms();
		memset(src + i * 4096, i + 1, 4096);
		last = proxy_host_push(&r, &c, 10000);
		if (!last)
			ok = 0;
		if (mkt_now_ms() - t >= 2)
			waited++;
	}
	mkt_check(ok && last == (uint64_t)n, "64 commands through a ring of 8 with a slow proxy "
		  "(last ticket %llu)", (unsigned long long)last);
	/* the proxy takes a batch (up to the 8 slots) at a time, 3 ms per command;
	 * when the last push returns, up to 8 commands may still be queued */
	mkt_check(waited >= n / 8 - 2 && mkt_now_ms() - t0 >= (n - 8) * 3,
		  "the producer waited for room %d times and resumed (%lld ms)", waited,
		  (long long)(mkt_now_ms() - t0));
	ok = ok && proxy_host_wait_done(&r, last, 10000) == 0;
	mkt_check(ok, "all delivered: done = %llu", (unsigned long long)r.ctl->done);
	for (int i = 0; i < n; i++) {
		if (flag_of((unsigned)i) != 1000 + (uint64_t)i)
			ok = 0;
		for (int b = 0; b < 4096; b += 512)
			if (dst[i * 4096 + b] != (unsigned char)(i + 1))
				ok = 0;
	}
	mkt_check(ok, "every byte and every flag arrived");
	mkt_check(proxy_flush(p, 1000) == MK_OK, "flush of a drained ring");
	mkt_check(proxy_stop(p) == MK_OK && proxy_stop(p) == MK_OK, "stop, twice");
	proxy_destroy(p);
	proxy_destroy(NULL);
	proxy_ring_free(&r);
	fprintf(stderr, "      full ring: %lld ms\n", (long long)(mkt_now_ms() - t0));
}

/* ---- four producers ---------------------------------------------------------------------- */
#define PER 5000
#define NPROD 4

typedef struct prod {
	mkd_proxy_ring *r;
	int id;
	int bad;
	uint64_t last;
} prod;

/* producer id owns flags [id*16, id*16+16) and dst/src bytes [id*256K, +256K):
 * 16 slots of 16 KiB; it reuses a slot only after its previous command there
 * is done (ticket), as a CTA would */
static void *producer(void *arg)
{
	prod *pr = arg;
	uint64_t tickets[16] = {0};
	for (int n = 0; n < PER; n++) {
		int j = n % 16;
		uint64_t seed = mix((uint64_t)pr->id << 32 | (uint64_t)n), size = 1 + seed % 16384;
		uint64_t off = (uint64_t)pr->id * 262144 + (uint64_t)j * 16384;
		mkd_proxy_cmd c;
		if (tickets[j] && proxy_host_wait_done(pr->r, tickets[j], 10000) != 0) {
			pr->bad++;
			break;
		}
		/* the previous command in this slot must have landed intact */
		if (n >= 16 && flag_of((unsigned)(pr->id * 16 + j)) != (uint64_t)(n - 16 + 1))
			pr->bad++;
		for (uint64_t b = 0; b < size; b++)
			src[off + b] = (unsigned char)(seed >> (8 * (b & 7))) ^ (unsigned char)b;
		c = write_cmd(off, off, size, (unsigned)(pr->id * 16 + j), (uint64_t)n + 1);
		c.task = (unsigned)n;
		if (!(tickets[j] = proxy_host_push(pr->r, &c, 10000))) {
			pr->bad++;
			break;
		}
		pr->last = tickets[j];
	}
	return NULL;
}

static void test_producers(void)
{
	mkd_proxy_ring r;
	proxy *p;
	pthread_t th[NPROD];
	prod pr[NPROD];
	proxy_stats s;
	int bad = 0;
	int64_t t0 = mkt_now_ms();

	proxy_ring_alloc(64, &r);
	if (!(p = start(&r, 0, 0)))
		return;
	for (int i = 0; i < NPROD; i++) {
		memset(&pr[i], 0, sizeof pr[i]);
		pr[i].r = &r;
		pr[i].id = i;
		pthread_create(&th[i], NULL, producer, &pr[i]);
	}
	for (int i = 0; i < NPROD; i++) {
		pthread_join(th[i], NULL);
		bad += pr[i].bad;
	}
	mkt_check(!bad, "4 producers x %d commands: no slot reused early, no push refused (%d)",
		  PER, bad);
	mkt_check(proxy_flush(p, 10000) == MK_OK, "flush");
	mkt_check(r.ctl->done == NPROD * PER && *r.head == NPROD * PER,
		  "done = head = %llu", (unsigned long long)r.ctl->done);
	/* the last command of every slot */
	for (int id = 0; id < NPROD; id++)
		for (int j = 0; j < 16; j++) {
			int n = PER - 16 + j;   /* the last command in slot n % 16 */
			uint64_t seed = mix((uint64_t)id << 32 | (uint64_t)n), size = 1 + seed % 16384;
			uint64_t off = (uint64_t)id * 262144 + (uint64_t)(n % 16) * 16384;
			if (flag_of((unsigned)(id * 16 + n % 16)) != (uint64_t)n + 1)
				bad++;
			for (uint64_t b = 0; b < size; b++)
				if (dst[off + b] != ((unsigned char)(seed >> (8 * (b & 7))) ^
						     (unsigned char)b))
					bad++;
		}
	mkt_check(!bad, "the final contents of all 64 slots and flags (%d bad)", bad);
	proxy_get_stats(p, &s);
	mkt_check(s.commands == NPROD * PER && s.completed == s.commands && s.flags == s.commands,
		  "stats: %llu commands in %llu batches (max %llu), %llu writes, %llu bytes, "
		  "%llu busy", (unsigned long long)s.commands, (unsigned long long)s.batches,
		  (unsigned long long)s.max_batch, (unsigned long long)s.writes,
		  (unsigned long long)s.bytes, (unsigned long long)s.busy);
	proxy_destroy(p);
	proxy_ring_free(&r);
	fprintf(stderr, "      4 producers, %d commands: %lld ms\n", NPROD * PER,
		(long long)(mkt_now_ms() - t0));
}

/* ---- chunks, signals ----------------------------------------------------------------------- */
static void test_chunks(void)
{
	mkd_proxy_ring r;
	proxy *p;
	proxy_stats s;
	uint64_t t;
	int ok = 1;
	mkd_proxy_cmd c;

	proxy_ring_alloc(16, &r);
	if (!(p = start(&r, 0, 1000)))
		return;
	for (int i = 0; i < 10000; i++)
		src[500000 + i] = (unsigned char)(i * 13);
	c = write_cmd(500000, 600000, 10000, 3000, 77);
	t = proxy_host_push(&r, &c, 1000);
	memset(&c, 0, sizeof c);
	c.op = MKD_PROXY_OP_SIGNAL;
	c.flag_index = 3001;
	c.flag_value = 78;
	t = proxy_host_push(&r, &c, 1000);
	mkt_check(t && proxy_host_wait_done(&r, t, 5000) == 0, "a chunked write and a signal done");
	for (int i = 0; i < 10000; i++)
		if (dst[600000 + i] != (unsigned char)(i * 13))
			ok = 0;
	mkt_check(ok && flag_of(3000) == 77 && flag_of(3001) == 78, "10000 bytes in 1000-byte "
		  "chunks, then the flag; the signal's flag");
	proxy_get_stats(p, &s);
	mkt_check(s.writes == 10 && s.flags == 2, "10 writes and 2 flags (%llu, %llu)",
		  (unsigned long long)s.writes, (unsigned long long)s.flags);
	proxy_destroy(p);
	proxy_ring_free(&r);
}

/* ---- bad commands ------------------------------------------------------------------------- */
static void bad_command_in(const char *what, mkd_proxy_cmd c, const char *words,
			   uint64_t chunk)
{
	mkd_proxy_ring r;
	proxy *p;
	char msg[640] = "";
	mk_status st = MK_OK;
	int64_t end;
	uint64_t t;

	if (c.flag_index < NFLAGS)
		__atomic_store_n(&flags[c.flag_index], 0, __ATOMIC_RELEASE);
	proxy_ring_alloc(4, &r);
	if (!(p = start(&r, 0, chunk)))
		return;
	proxy_host_push(&r, &c, 1000);
	end = mkt_now_ms() + 5000;
	while ((st = proxy_status(p, msg, sizeof msg)) == MK_OK && mkt_now_ms() < end)
		mkt_sleep_ms(1);
	mkt_check(st != MK_OK && strstr(msg, words) && r.ctl->failed == (unsigned)st,
		  "%s: %s (%s)", what, msg, mk_status_name(st));
	/* producers stop waiting at once: fill the ring, the next push gives up */
	for (int i = 0; i < 4; i++)
		proxy_host_push(&r, &c, 100);
	end = mkt_now_ms();
	t = proxy_host_push(&r, &c, 5000);
	mkt_check(t == 0 && mkt_now_ms() - end < 1000, "%s: a producer facing a full ring of a "
		  "failed proxy returns at once", what);
	mkt_check(proxy_flush(p, 100) == st, "%s: flush reports it", what);
	mkt_check(flag_of(c.flag_index < NFLAGS ? c.flag_index : 0) == 0,
		  "%s: its flag was never written", what);
	proxy_destroy(p);
	proxy_ring_free(&r);
}

static void bad_command(const char *what, mkd_proxy_cmd c, const char *words)
{
	bad_command_in(what, c, words, 0);
}

static void test_bad(void)
{
	mkd_proxy_cmd c = write_cmd(0, 0, 100, 0, 1);
	c.op = 9;
	bad_command("op 9", c, "unknown op 9");
	c = write_cmd(0, 0, 100, 0, 1);
	c.dst_rank = 5;
	bad_command("rank 5 of 1", c, "rank 5 of 1");
	c = write_cmd(0, 0, 100, 0, 1);
	c.src_buf = 7;
	bad_command("an unregistered source", c, "region 7, which is not registered");
	c = write_cmd(0, BUF - 50, 100, 0, 1);
	bad_command("past the end of the target", c, "of its region 1");
	c = write_cmd(BUF, 0, 1, 0, 1);
	bad_command("past the end of the source", c, "of local region 0");
	c = write_cmd(0, 0, 100, NFLAGS, 1);
	bad_command("flag index past the flag array", c, "region 64");
	c = write_cmd(0, 0, 0, 0, 1);
	bad_command("a write of 0 bytes", c, "0 bytes");
	c = write_cmd(0, 0, 100, 0, 1);
	c.dst_buf = 9;
	bad_command("a target region not exported", c, "did not export");
	/* sizes are 64-bit throughout: a command of 2^32 chunks (or one more)
	 * is not cut to 0 (or 1) chunks that fit, with its flag set anyway */
	c = write_cmd(0, 0, 8ull << 32, 17, 1);
	bad_command_in("2^32 chunks of 8 bytes", c, "of local region 0", 8);
	c = write_cmd(0, 0, (8ull << 32) + 8, 18, 1);
	bad_command_in("2^32 + 1 chunks of 8 bytes", c, "of local region 0", 8);
	c = write_cmd(8, 0, UINT64_MAX - 7, 19, 1);
	bad_command_in("a range that wraps around 2^64", c, "wraps", 8);
	c = write_cmd(0, 0, 1ull << 62, 20, 1);
	bad_command("2^62 bytes in chunks of the transport's maximum", c, "of local region 0");
}

/* ---- pinning ------------------------------------------------------------------------------- */
static void test_pinning(void)
{
	int cpus[64], n;
	char dir[128], path[256], log[512];
	FILE *f;
	mkd_proxy_ring r;
	proxy_opts o = PROXY_OPTS_INIT;
	proxy *p;

	n = proxy_parse_cpulist("0-3,8,10-11\n", cpus, 64);
	mkt_check(n == 7 && cpus[0] == 0 && cpus[3] == 3 && cpus[4] == 8 && cpus[6] == 11,
		  "cpulist 0-3,8,10-11: %d CPUs", n);
	mkt_check(proxy_parse_cpulist("3-1", cpus, 64) < 0 && proxy_parse_cpulist("x", cpus, 64) < 0 &&
		  proxy_parse_cpulist("1,,2", cpus, 64) < 0, "malformed CPU lists refused");
	snprintf(dir, sizeof dir, "/tmp/mkt_sys_%d", (int)getpid());
	snprintf(path, sizeof path, "mkdir -p %s/bus/pci/devices/0000:17:00.0", dir);
	if (system(path) != 0)
		return;
	snprintf(path, sizeof path, "%s/bus/pci/devices/0000:17:00.0/local_cpulist", dir);
	if ((f = fopen(path, "w"))) {
		fputs("0\n", f);
		fclose(f);
	}
	proxy_ring_alloc(4, &r);
	o.ring = r;
	o.tp = tp;
	o.pci_bus_id = "0000:17:00.0";
	o.sysfs = dir;
	if (proxy_start(&o, &p, log, sizeof log) == MK_OK) {
		mkt_check(strstr(log, "pinned to CPUs 0") != NULL, "near the GPU: %s", log);
		proxy_destroy(p);
	}
	o.pci_bus_id = "0000:18:00.0";
	if (proxy_start(&o, &p, log, sizeof log) == MK_OK) {
		mkt_check(strstr(log, "not pinned") != NULL, "no topology: %s", log);
		proxy_destroy(p);
	}
	o.pci_bus_id = NULL;
	o.cpu = 1;
	if (proxy_start(&o, &p, log, sizeof log) == MK_OK) {
		mkt_check(strstr(log, "CPU 1") != NULL, "asked for: %s", log);
		proxy_destroy(p);
	}
	proxy_ring_free(&r);
	snprintf(path, sizeof path, "rm -rf %s", dir);
	if (system(path) != 0)
		fprintf(stderr, "cannot remove %s\n", dir);
}

/* ---- the device side -------------------------------------------------------------------- */
static const char KERNEL[] =
	"#include \"mkd/mkd.cuh\"\n"
	"extern \"C\" __global__ void mkt_push(const __grid_constant__ mkd_params p,\n"
	"                                      const __grid_constant__ mkd_proxy_ring r)\n"
	"{\n"
	"\tif (threadIdx.x)\n"
	"\t\treturn;\n"
	"\tmkd_proxy_cmd c = {};\n"
	"\tc.op = MKD_PROXY_OP_WRITE;\n"
	"\tc.bytes = 4096;\n"
	"\tc.flag_value = p.epoch;\n"
	"\tmkd_waiter w = {0, (int)blockIdx.x, 0, 0};\n"
	"\tu64 t = mkd_proxy_push(p, r, c, w);\n"
	"\tif (t)\n"
	"\t\tmkd_proxy_wait_done(p, r, t, w);\n"
	"}\n";

static void test_device(void)
{
	cg_compile_opts o;
	cg_binary b;
	cg_status st;
	char why[256];
	int maj, min;

	if (cg_nvrtc_version(&maj, &min, why, sizeof why) != CG_OK) {
		mkt_check(1, "NVRTC not here, device side not compiled: %s", why);
		return;
	}
	memset(&o, 0, sizeof o);
	memset(&b, 0, sizeof b);
	st = cg_compile(KERNEL, "proxy_push.cu", &o, CG_PTX, &b);
	mkt_check(st == CG_OK, "mkd_proxy_push compiles with NVRTC %d.%d: %s", maj, min,
		  st == CG_OK ? "ok" : b.log);
	if (st == CG_OK) {
		const char *ptx = b.data;
		mkt_check(strstr(ptx, "atom.global.add.u64") != NULL, "the claim is a 64-bit atomic add");
		mkt_check(strstr(ptx, "st.release.sys.global.u64") != NULL,
			  "the header is published with st.release.sys");
		mkt_check(strstr(ptx, "st.global.v2.u64") != NULL, "the body goes in 16-byte stores");
		mkt_check(strstr(ptx, "ld.acquire.sys.global.u64") != NULL,
			  "tail and done are read with ld.acquire.sys");
		mkt_check(strstr(ptx, "nanosleep") != NULL, "waits back off with nanosleep");
	}
	cg_binary_free(&b);
	memset(&b, 0, sizeof b);
	st = cg_compile(KERNEL, "proxy_push.cu", &o, CG_CUBIN, &b);
	mkt_check(st == CG_OK && b.spill_stores == 0, "cubin for sm_90a: %d registers, %d spills",
		  b.regs, b.spill_stores);
	cg_binary_free(&b);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	/* NVRTC in a child: its threads' dynamic TLS crashes LeakSanitizer's
	 * exit-time scan of this process (gcc 12 LSan); the child exits with
	 * _exit, and its checks come back as counts */
	fflush(NULL);
	pid_t kid = fork();
	if (kid == 0) {
		test_device();
		fflush(NULL);
		_exit(mkt_failures > 100 ? 100 : mkt_failures);
	}
	int ws = 0;
	mkt_check(kid > 0 && waitpid(kid, &ws, 0) == kid && WIFEXITED(ws) && WEXITSTATUS(ws) == 0,
		  "the device-side checks (in a child process) passed");
	if (setup() == 0) {
		test_full_ring();
		test_producers();
		test_chunks();
		test_bad();
		test_pinning();
	}
	transport_close(tp);
	bootstrap_destroy(boot);
	free(src);
	free(dst);
	free(flags);
	return mkt_summary("test_proxy");
}
