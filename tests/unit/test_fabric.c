/* test_fabric.c - the whole RDMA path across 4 real processes over
 * libfabric's tcp provider on loopback: bootstrap, transport, regions, the
 * ring, the proxy thread, flags.
 *
 * Each rank runs a producer (a host thread standing in for the GPU's CTAs)
 * that pushes 25000 writes of random sizes (1 B .. 16 KiB, log-uniform) to
 * random peers, 10^5 commands in all, and a checker that watches its flag
 * array: the moment a flag shows command n from rank s, every byte of n's
 * data must already be there (it is checked against the generator), so a
 * flag that lands before its data is caught.  Each (sender, receiver) pair
 * has 32 slots; the checker acknowledges what it has checked with a SIGNAL
 * command back to the sender, which reuses a slot only after that.
 *
 * Then the same with rank 3 killed (SIGKILL) in the middle: every other rank
 * must report a failure naming rank 3 within its timeout, and exit.
 * Exit 0 = pass.
 */
#include "mkt_proc.h"

#include <pthread.h>

#include "runtime/proxy.h"

#define WORLD 4
#define S 32
#define MAXSZ 16384
#define ACK (WORLD * S) /* flags [s*S + j]: data from s; [ACK + d]: acks from d */
#define NFLAGS (ACK + WORLD)
#define T_MS 3000       /* proxy, checker and producer timeouts */

enum { SRC = 0, DST = 1 };

static int port, lfd = -1;
static int ncmd = 25000;
static int kill_rank = -1, kill_after = 0;

typedef struct rank_state {
	int rank;
	bootstrap *boot;
	transport *tp;
	proxy *px;
	mkd_proxy_ring ring;
	unsigned char *src, *dst;
	uint64_t *flags;
	int stop;                 /* atomic: someone failed */
	char perr[512], cerr[512];
	uint64_t sent, checked, bytes;
} rank_state;

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static int dest_of(int s, int k)
{
	int d = (int)(mix((uint64_t)s << 32 | (uint64_t)k) % (WORLD - 1));
	return d >= s ? d + 1 : d;
}

static uint64_t size_of(int s, int d, uint64_t n)
{
	uint64_t m = mix((uint64_t)s << 48 ^ (uint64_t)d << 40 ^ n ^ 0x5151);
	unsigned e = (unsigned)(m % 14);   /* 2^0 .. 2^13, then up to twice that */
	return (1ull << e) + (m >> 8) % (1ull << e);
}

static void fill(unsigned char *p, int s, int d, uint64_t n, uint64_t size)
{
	uint64_t x = mix((uint64_t)s << 48 ^ (uint64_t)d << 40 ^ n) | 1;
	for (uint64_t i = 0; i < size; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(p + i, &x, size - i < 8 ? size - i : 8);
	}
}

/* offset of the first wrong byte, or -1 */
static int64_t verify(const unsigned char *p, int s, int d, uint64_t n, uint64_t size)
{
	unsigned char want[8];
	uint64_t x = mix((uint64_t)s << 48 ^ (uint64_t)d << 40 ^ n) | 1;
	for (uint64_t i = 0; i < size; i += 8) {
		size_t k = size - i < 8 ? (size_t)(size - i) : 8;
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(want, &x, 8);
		if (memcmp(p + i, want, k))
			for (size_t b = 0; b < k; b++)
				if (p[i + b] != want[b])
					return (int64_t)(i + b);
	}
	return -1;
}

static int stopped(rank_state *r)
{
	return __atomic_load_n(&r->stop, __ATOMIC_ACQUIRE) ||
	       __atomic_load_n(&r->ring.ctl->failed, __ATOMIC_ACQUIRE);
}

static void give_up(rank_state *r, char *buf, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void give_up(rank_state *r, char *buf, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, n, fmt, ap);
	va_end(ap);
	__atomic_store_n(&r->stop, 1, __ATOMIC_RELEASE);
}

static void nap(int *idle)
{
	struct timespec ts = {0, 50000};
	if (++*idle < 50)
		sched_yield();
	else
		nanosleep(&ts, NULL);   /* 2 cores, 12 threads: do not spin */
}

static void *producer(void *arg)
{
	rank_state *r = arg;
	uint64_t sent[WORLD] = {0};
	for (int k = 0; k < ncmd && !stopped(r); k++) {
		int d = dest_of(r->rank, k), j, idle = 0;
		uint64_t n = sent[d]++, size = size_of(r->rank, d, n), off;
		int64_t t0 = mkt_now_ms();
		mkd_proxy_cmd c;
		if (r->rank == kill_rank && k == kill_after)
			raise(SIGKILL);
		j = (int)(n % S);
		/* the slot is free once the receiver has checked command n - S */
		while (n >= S && __atomic_load_n(&r->flags[ACK + d], __ATOMIC_ACQUIRE) < n - S + 1) {
			if (stopped(r))
				return NULL;
			if (mkt_now_ms() - t0 > T_MS) {
				give_up(r, r->perr, sizeof r->perr, "producer: no acknowledgement from "
					"rank %d for %d ms (waiting for command %llu)", d, T_MS,
					(unsigned long long)(n - S));
				return NULL;
			}
			nap(&idle);
		}
		off = ((uint64_t)d * S + (uint64_t)j) * MAXSZ;
		fill(r->src + off, r->rank, d, n, size);
		memset(&c, 0, sizeof c);
		c.op = MKD_PROXY_OP_WRITE;
		c.src_buf = SRC;
		c.dst_buf = DST;
		c.lane = (unsigned short)k;
		c.dst_rank = (unsigned)d;
		c.src_off = off;
		c.dst_off = ((uint64_t)r->rank * S + (uint64_t)j) * MAXSZ;
		c.bytes = size;
		c.flag_index = (unsigned)(r->rank * S + j);
		c.flag_value = n + 1;
		c.task = (unsigned)k;
		if (!proxy_host_push(&r->ring, &c, T_MS)) {
			if (!stopped(r))
				give_up(r, r->perr, sizeof r->perr, "producer: the ring stayed full for %d ms",
					T_MS);
			return NULL;
		}
		r->sent++;
		r->bytes += size;
	}
	return NULL;
}

static int ack(rank_state *r, int s, uint64_t count)
{
	mkd_proxy_cmd c;
	memset(&c, 0, sizeof c);
	c.op = MKD_PROXY_OP_SIGNAL;
	c.dst_rank = (unsigned)s;
	c.flag_index = (unsigned)(ACK + r->rank);
	c.flag_value = count;
	c.task = 1u << 30;
	return proxy_host_push(&r->ring, &c, T_MS) ? 0 : -1;
}

static void *checker(void *arg)
{
	rank_state *r = arg;
	uint64_t expect[WORLD] = {0}, got[WORLD] = {0}, acked[WORLD] = {0};
	int64_t last[WORLD];
	int idle = 0;

	for (int s = 0; s < WORLD; s++) {
		last[s] = mkt_now_ms();
		if (s == r->rank)
			continue;
		if (kill_rank >= 0)
			expect[s] = UINT64_MAX;   /* until something fails */
		else
			for (int k = 0; k < ncmd; k++)
				expect[s] += dest_of(s, k) == r->rank;
	}
	for (;;) {
		int more = 0, progress = 0;
		if (stopped(r))
			return NULL;
		for (int s = 0; s < WORLD; s++) {
			uint64_t v, n = got[s];
			int j = (int)(n % S), fresh = 0;
			if (s == r->rank)
				continue;
			if (n < expect[s]) {
				more = 1;
				v = __atomic_load_n(&r->flags[s * S + j], __ATOMIC_ACQUIRE);
				if (v == n + 1) {
					uint64_t size = size_of(s, r->rank, n);
					int64_t bad = verify(r->dst + ((uint64_t)s * S + (uint64_t)j) * MAXSZ,
							     s, r->rank, n, size);
					if (bad >= 0) {
						give_up(r, r->cerr, sizeof r->cerr, "checker: command %llu "
							"from rank %d (%llu bytes): byte %lld is wrong when its "
							"flag is already there", (unsigned long long)n, s,
							(unsigned long long)size, (long long)bad);
						return NULL;
					}
					got[s]++;
					r->checked++;
					fresh = progress = 1;
					last[s] = mkt_now_ms();
				} else if (v > n + 1 || (v != 0 && v + S < n + 1)) {
					give_up(r, r->cerr, sizeof r->cerr, "checker: flag of slot %d from "
						"rank %d is %llu, expected %llu or %llu", j, s,
						(unsigned long long)v, (unsigned long long)(n + 1 - S),
						(unsigned long long)(n + 1));
					return NULL;
				} else if (mkt_now_ms() - last[s] > T_MS) {
					give_up(r, r->cerr, sizeof r->cerr, "checker: no data from rank %d for "
						"%d ms (command %llu)", s, T_MS, (unsigned long long)n);
					return NULL;
				}
			}
			/* acknowledge in groups, and whenever the sender may be waiting */
			if (got[s] > acked[s] && (got[s] - acked[s] >= S / 2 || !fresh)) {
				if (ack(r, s, got[s]) != 0) {
					if (!stopped(r))
						give_up(r, r->cerr, sizeof r->cerr, "checker: cannot "
							"acknowledge to rank %d", s);
					return NULL;
				}
				acked[s] = got[s];
			}
		}
		if (!more)
			return NULL;
		if (progress)
			idle = 0;
		else
			nap(&idle);
	}
}

static int run_rank(void *arg)
{
	rank_state R, *r = &R;
	bootstrap_cfg bc;
	transport_opts to = TRANSPORT_OPTS_INIT;
	proxy_opts po = PROXY_OPTS_INIT;
	pthread_t pt, ct;
	char err[512], log[512], msg[640] = "";
	mk_status st, pst;
	tp_mem m;
	int64_t t0 = mkt_now_ms();
	size_t big = (size_t)WORLD * S * MAXSZ;

	memset(r, 0, sizeof *r);
	r->rank = (int)(intptr_t)arg;
	memset(&bc, 0, sizeof bc);
	bc.rank = r->rank;
	bc.world = WORLD;
	bc.local_rank = bc.local_world = -1;
	snprintf(bc.root_host, sizeof bc.root_host, "127.0.0.1");
	bc.root_port = port;
	bootstrap_set_token(&bc, "test_fabric");
	bc.host_id = (uint64_t)r->rank / 2 + 1;   /* two "nodes" of two */
	bc.timeout_ms = 15000;
	bc.root_fd = r->rank == 0 ? lfd : -1;
	if (r->rank && lfd >= 0)
		close(lfd);
	if ((st = bootstrap_create(&bc, &r->boot, err, sizeof err)) != MK_OK) {
		mkt_check(0, "rank %d joins: %s", r->rank, err);
		return 1;
	}
	to.force = "fabric";
	to.provider = "tcp";
	if ((st = transport_open(&to, r->boot, &r->tp, log, sizeof log)) != MK_OK) {
		mkt_check(0, "rank %d: %s", r->rank, log);
		return 1;
	}
	if (r->rank == 0)
		mkt_check(1, "%s", log);
	r->src = aligned_alloc(4096, big);
	r->dst = aligned_alloc(4096, big);
	r->flags = aligned_alloc(4096, 4096);
	memset(r->src, 0, big);
	memset(r->dst, 0, big);
	memset(r->flags, 0, NFLAGS * 8);
	memset(&m, 0, sizeof m);
	m.dmabuf_fd = -1;
	m.addr = r->src;
	m.len = big;
	st = transport_reg(r->tp, SRC, &m);
	m.exported = 1;
	m.addr = r->dst;
	st |= transport_reg(r->tp, DST, &m);
	m.addr = r->flags;
	m.len = NFLAGS * 8;
	st |= transport_reg(r->tp, MKD_PROXY_REGION_FLAGS, &m);
	if (st || (st = transport_connect(r->tp)) != MK_OK) {
		mkt_check(0, "rank %d: regions and connect: %s", r->rank, transport_error(r->tp));
		return 1;
	}
	proxy_ring_alloc(256, &r->ring);
	po.ring = r->ring;
	po.tp = r->tp;
	po.timeout_ms = T_MS;
	if ((st = proxy_start(&po, &r->px, log, sizeof log)) != MK_OK) {
		mkt_check(0, "rank %d: %s", r->rank, log);
		return 1;
	}
	pthread_create(&pt, NULL, producer, r);
	pthread_create(&ct, NULL, checker, r);
	pthread_join(pt, NULL);
	pthread_join(ct, NULL);

	pst = proxy_status(r->px, msg, sizeof msg);
	if (kill_rank < 0) {
		mkt_check(!r->perr[0] && !r->cerr[0] && pst == MK_OK,
			  "rank %d: sent %llu commands (%.1f MB), checked %llu, every byte in place "
			  "when its flag was: %s%s%s", r->rank, (unsigned long long)r->sent,
			  (double)r->bytes / 1e6, (unsigned long long)r->checked, r->perr, r->cerr,
			  msg);
		st = proxy_flush(r->px, 10000);
		mkt_check(st == MK_OK, "rank %d: flush", r->rank);
		/* peers may still be writing to us: the proxy keeps polling meanwhile */
		st = bootstrap_barrier(r->boot);
		mkt_check(st == MK_OK, "rank %d: final barrier: %s", r->rank,
			  bootstrap_error(r->boot));
		if (r->rank == 0) {
			proxy_stats s;
			proxy_get_stats(r->px, &s);
			fprintf(stderr, "      rank 0 proxy: %llu commands in %llu batches (max %llu), "
				"%llu busy; %lld ms\n", (unsigned long long)s.commands,
				(unsigned long long)s.batches, (unsigned long long)s.max_batch,
				(unsigned long long)s.busy, (long long)(mkt_now_ms() - t0));
		}
	} else {
		char all[2100];
		int64_t t = mkt_now_ms();
		st = bootstrap_barrier(r->boot);
		snprintf(all, sizeof all, "proxy: %.600s | producer: %.400s | checker: %.400s | "
			 "bootstrap: %.500s",
			 pst ? msg : "-", r->perr[0] ? r->perr : "-", r->cerr[0] ? r->cerr : "-",
			 bootstrap_error(r->boot));
		mkt_check((pst || r->perr[0] || r->cerr[0]) && strstr(all, "rank 3") &&
			  st == MK_ERR_PEER && mkt_now_ms() - t < 5000,
			  "rank %d saw rank 3 go: %s", r->rank, all);
	}
	proxy_destroy(r->px);
	transport_close(r->tp);
	bootstrap_destroy(r->boot);
	proxy_ring_free(&r->ring);
	free(r->src);
	free(r->dst);
	free(r->flags);
	return mkt_failures ? 1 : 0;
}

static void run_job(const char *what)
{
	pid_t pids[WORLD];
	int rc[WORLD];
	int64_t t0 = mkt_now_ms(), tkill = 0;

	lfd = mkt_listen(&port);
	for (int r = 0; r < WORLD; r++)
		pids[r] = mkt_spawn(run_rank, (void *)(intptr_t)r);
	close(lfd);
	lfd = -1;
	if (kill_rank >= 0) {
		rc[kill_rank] = mkt_reap(pids[kill_rank], t0 + 60000);
		tkill = mkt_now_ms();
		mkt_check(rc[kill_rank] == 128 + SIGKILL, "rank %d was killed after %lld ms", kill_rank,
			  (long long)(tkill - t0));
	}
	for (int r = 0; r < WORLD; r++) {
		if (r == kill_rank)
			continue;
		rc[r] = mkt_reap(pids[r], kill_rank >= 0 ? tkill + 20000 : t0 + 150000);
		mkt_check(rc[r] == 0, "%s: rank %d exits 0 (%d)%s", what, r, rc[r],
			  kill_rank >= 0 ? " after the kill, within its timeouts" : "");
	}
	fprintf(stderr, "      %s: %lld ms\n", what, (long long)(mkt_now_ms() - t0));
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	setenv("FI_TCP_IFACE", "lo", 0);
	if (argc > 1)
		ncmd = atoi(argv[1]);
	run_job("4 ranks, 10^5 commands");
	kill_rank = 3;
	kill_after = 3000;
	ncmd = 1 << 30;
	run_job("rank 3 killed mid-transfer");
	return mkt_summary("test_fabric");
}
