/* proxy.c - the proxy thread: ring -> transport; see proxy.h and
 * codegen/mkd/proxy.cuh.
 *
 * State per ring position (ent[pos % nslots]): the command copied out of
 * the ring, how many of its data writes (chunks) are posted and complete,
 * whether its flag is posted and complete.  Positions [done, tail) are in
 * flight; a position is complete when its data and its flag are.  A write's
 * completion context is pos * 2 + (1 if it is the flag).
 *
 * One loop: drain a batch; post what can be posted (data in ring order from
 * `cursor`; flags per the ordering rule); poll completions; advance `done`
 * over complete positions and publish it; check the oldest position's age
 * against the timeout; sleep a little after a while of nothing to do.  On
 * failure the loop stops taking and posting commands but keeps polling, so
 * that writes of other ranks to this one still make progress.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include "proxy.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

_Static_assert(sizeof(mkd_proxy_cmd) == MKD_PROXY_CMD_BYTES, "mkd_proxy_cmd is 64 bytes");
_Static_assert(__builtin_offsetof(mkd_proxy_cmd, seq) == 56, "seq is the last word");
_Static_assert(sizeof(mkd_proxy_ctl) == 192, "mkd_proxy_ctl: three 64-byte lines");

#define FLAGVAL_REGION (TP_MAX_REGIONS - 1)  /* the proxy's flag values, local */
#define SPIN_BEFORE_SLEEP 200

typedef struct pent {
	mkd_proxy_cmd c;
	uint64_t pos;
	int64_t t0;              /* ms, when taken */
	uint64_t nchunks, posted, completed;   /* 64-bit like the command's bytes */
	uint8_t flag_posted, flag_done, live;
} pent;

struct proxy {
	proxy_opts o;
	mkd_proxy_cmd *slots;
	mkd_proxy_ctl *ctl;
	unsigned n, mask;
	transport *tp;
	int rank, world, ordered;
	uint64_t chunk;
	pthread_t th;
	int started;
	int stop;                /* atomic */
	int status;              /* atomic mk_status */
	pthread_mutex_t mu;
	char msg[640];
	/* the thread's */
	pent *ent;
	uint64_t *flagval;       /* [n], registered as FLAGVAL_REGION */
	uint64_t tail, done, cursor;
	int flag_scan;           /* flags waiting for room in the queue */
	proxy_stats st;          /* updated with relaxed atomics */
};

static int64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void nap_us(unsigned us)
{
	struct timespec ts = {us / 1000000, (long)(us % 1000000) * 1000L};
	nanosleep(&ts, NULL);
}

static void stat_add(uint64_t *f, uint64_t v)
{
	__atomic_fetch_add(f, v, __ATOMIC_RELAXED);
}

static void fail(proxy *p, mk_status st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void fail(proxy *p, mk_status st, const char *fmt, ...)
{
	va_list ap;
	if (__atomic_load_n(&p->status, __ATOMIC_ACQUIRE))
		return;   /* the first failure is the story */
	pthread_mutex_lock(&p->mu);
	va_start(ap, fmt);
	vsnprintf(p->msg, sizeof p->msg, fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&p->mu);
	__atomic_store_n(&p->status, (int)st, __ATOMIC_RELEASE);
	__atomic_store_n(&p->ctl->failed, (unsigned)st, __ATOMIC_RELEASE);
}

static int failed(proxy *p)
{
	return __atomic_load_n(&p->status, __ATOMIC_ACQUIRE) != 0;
}

static const char *op_name(unsigned op)
{
	return op == MKD_PROXY_OP_WRITE ? "write" : op == MKD_PROXY_OP_SIGNAL ? "signal" : "?";
}

/* The writes of a command. */
static void data_write(proxy *p, const pent *e, uint64_t k, tp_write *w)
{
	uint64_t off = (uint64_t)k * p->chunk;
	memset(w, 0, sizeof *w);
	w->peer = (int)e->c.dst_rank;
	w->lane = e->c.lane;
	w->src_region = e->c.src_buf;
	w->src_off = e->c.src_off + off;
	w->dst_region = e->c.dst_buf;
	w->dst_off = e->c.dst_off + off;
	w->len = e->c.bytes - off < p->chunk ? e->c.bytes - off : p->chunk;
	w->ctx = e->pos * 2;
	w->flags = p->ordered ? 0 : TP_DELIVERY;
}

static void flag_write(proxy *p, const pent *e, tp_write *w)
{
	memset(w, 0, sizeof *w);
	w->peer = (int)e->c.dst_rank;
	w->lane = e->c.lane;
	w->src_region = FLAGVAL_REGION;
	w->src_off = (e->pos & p->mask) * 8;
	w->dst_region = MKD_PROXY_REGION_FLAGS;
	w->dst_off = (uint64_t)e->c.flag_index * 8;
	w->len = 8;
	w->ctx = e->pos * 2 + 1;
	/* delivered, not only sent: `done` promises the flag is visible */
	w->flags = TP_INLINE | TP_DELIVERY | (p->ordered ? TP_FENCE : 0);
}

/* A command as it comes out of the ring: 0, or -1 with the proxy failed. */
static int check(proxy *p, pent *e)
{
	const mkd_proxy_cmd *c = &e->c;
	tp_write w;

	if (c->op != MKD_PROXY_OP_WRITE && c->op != MKD_PROXY_OP_SIGNAL) {
		fail(p, MK_ERR_INVALID, "command #%llu (task %u): unknown op %u",
		     (unsigned long long)e->pos, c->task, c->op);
		return -1;
	}
	if (c->dst_rank >= (unsigned)p->world) {
		fail(p, MK_ERR_INVALID, "command #%llu (task %u): rank %u of %d",
		     (unsigned long long)e->pos, c->task, c->dst_rank, p->world);
		return -1;
	}
	if (c->op == MKD_PROXY_OP_WRITE) {
		if (!c->bytes) {
			fail(p, MK_ERR_INVALID, "command #%llu (task %u): a write of 0 bytes",
			     (unsigned long long)e->pos, c->task);
			return -1;
		}
		/* neither end may wrap around: then the first and the last chunk,
		 * each checked against its region, bound the whole range */
		if (c->src_off > UINT64_MAX - c->bytes || c->dst_off > UINT64_MAX - c->bytes) {
			fail(p, MK_ERR_INVALID, "command #%llu (task %u): a write of %llu bytes from "
			     "offset %llu to offset %llu wraps around", (unsigned long long)e->pos,
			     c->task, (unsigned long long)c->bytes, (unsigned long long)c->src_off,
			     (unsigned long long)c->dst_off);
			return -1;
		}
		e->nchunks = c->bytes / p->chunk + (c->bytes % p->chunk != 0);
		data_write(p, e, 0, &w);
		if (transport_check(p->tp, &w) == 0 && e->nchunks > 1)
			data_write(p, e, e->nchunks - 1, &w);
		if (transport_check(p->tp, &w) != 0)
			goto bad;
	}
	flag_write(p, e, &w);
	if (transport_check(p->tp, &w) != 0)
		goto bad;
	return 0;
bad:
	fail(p, MK_ERR_INVALID, "command #%llu (task %u, %s of %llu bytes to rank %u): %s",
	     (unsigned long long)e->pos, c->task, op_name(c->op), (unsigned long long)c->bytes,
	     c->dst_rank, transport_error(p->tp));
	return -1;
}

/* Posts what e may post now.  Returns 0, 1 (the queue is full), -1 (failed). */
static int advance(proxy *p, pent *e)
{
	tp_write w[16];
	int k, r;

	while (e->posted < e->nchunks) {
		k = 0;
		while (k < 15 && e->posted + (uint64_t)k < e->nchunks) {
			data_write(p, e, e->posted + (uint64_t)k, &w[k]);
			k++;
		}
		if (p->ordered && e->posted + (uint64_t)k == e->nchunks)
			flag_write(p, e, &w[k++]);   /* right behind the data, fenced */
		r = transport_post(p->tp, w, k);
		if (r < 0) {
			fail(p, MK_ERR_PEER, "command #%llu (task %u) to rank %u: %s",
			     (unsigned long long)e->pos, e->c.task, e->c.dst_rank,
			     transport_error(p->tp));
			return -1;
		}
		for (int i = 0; i < r; i++) {
			if (w[i].ctx & 1) {
				e->flag_posted = 1;
				stat_add(&p->st.flags, 1);
			} else {
				e->posted++;
				stat_add(&p->st.writes, 1);
				stat_add(&p->st.bytes, w[i].len);
			}
		}
		if (r < k) {
			stat_add(&p->st.busy, 1);
			return 1;
		}
	}
	if (!e->flag_posted && (p->ordered || e->completed == e->nchunks)) {
		flag_write(p, e, &w[0]);
		r = transport_post(p->tp, w, 1);
		if (r < 0) {
			fail(p, MK_ERR_PEER, "command #%llu (task %u), flag to rank %u: %s",
			     (unsigned long long)e->pos, e->c.task, e->c.dst_rank,
			     transport_error(p->tp));
			return -1;
		}
		if (r == 0) {
			stat_add(&p->st.busy, 1);
			return 1;
		}
		e->flag_posted = 1;
		stat_add(&p->st.flags, 1);
	}
	return 0;
}

/* Takes up to a batch of published commands.  Returns how many. */
static int drain(proxy *p)
{
	unsigned k = 0, batch = p->o.batch ? p->o.batch : 32;
	while (k < batch && p->tail - p->done < p->n) {
		uint64_t pos = p->tail;
		mkd_proxy_cmd *s = &p->slots[pos & p->mask];
		pent *e = &p->ent[pos & p->mask];
		if (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != pos + 1)
			break;
		memcpy(&e->c, s, sizeof e->c);
		e->pos = pos;
		e->t0 = now_ms();
		e->nchunks = e->posted = e->completed = 0;
		e->flag_posted = e->flag_done = 0;
		e->live = 1;
		p->flagval[pos & p->mask] = e->c.flag_value;
		p->tail++;
		k++;
		if (check(p, e) != 0)
			break;
		if (p->o.delay_us)
			nap_us(p->o.delay_us);
	}
	if (k) {
		/* the slots may be reused: after the copies, hence release */
		__atomic_store_n(&p->ctl->tail, p->tail, __ATOMIC_RELEASE);
		stat_add(&p->st.commands, k);
		stat_add(&p->st.batches, 1);
		if (k > __atomic_load_n(&p->st.max_batch, __ATOMIC_RELAXED))
			__atomic_store_n(&p->st.max_batch, (uint64_t)k, __ATOMIC_RELAXED);
	}
	return (int)k;
}

static int post_all(proxy *p)
{
	int did = 0, r;
	/* data (and, ordered, flags) in ring order */
	while (p->cursor < p->tail) {
		pent *e = &p->ent[p->cursor & p->mask];
		if ((r = advance(p, e)) != 0)
			return r < 0 ? -1 : did;
		did = 1;
		p->cursor++;
	}
	/* flags that found the queue full when their data completed */
	if (p->flag_scan) {
		p->flag_scan = 0;
		for (uint64_t pos = p->done; pos < p->cursor; pos++) {
			pent *e = &p->ent[pos & p->mask];
			if (!e->flag_posted && e->completed == e->nchunks) {
				if ((r = advance(p, e)) < 0)
					return -1;
				if (r > 0) {
					p->flag_scan = 1;
					break;
				}
				did = 1;
			}
		}
	}
	return did;
}

static int reap(proxy *p)
{
	tp_completion c[32];
	int k = transport_poll(p->tp, c, 32);
	if (k < 0) {
		if (!failed(p))
			fail(p, MK_ERR_PEER, "rank %d: %s", p->rank, transport_error(p->tp));
		return -1;
	}
	for (int i = 0; i < k; i++) {
		uint64_t pos = c[i].ctx >> 1;
		pent *e = &p->ent[pos & p->mask];
		if (failed(p))
			continue;   /* draining after a failure: nothing to account */
		if (!e->live || e->pos != pos) {
			fail(p, MK_ERR_INTERNAL, "completion for command #%llu, which is not in flight",
			     (unsigned long long)pos);
			return -1;
		}
		if (!c[i].ok) {
			fail(p, MK_ERR_PEER, "command #%llu (task %u, %s of %llu bytes) to rank %u "
			     "failed: %s", (unsigned long long)pos, e->c.task, op_name(e->c.op),
			     (unsigned long long)e->c.bytes, e->c.dst_rank, transport_error(p->tp));
			return -1;
		}
		if (c[i].ctx & 1) {
			e->flag_done = 1;
		} else if (++e->completed == e->nchunks && !e->flag_posted && pos < p->cursor) {
			int r = advance(p, e);   /* unordered: the flag goes now */
			if (r < 0)
				return -1;
			if (r > 0)
				p->flag_scan = 1;
		}
	}
	if (!failed(p)) {
		uint64_t d = p->done;
		while (d < p->tail) {
			pent *e = &p->ent[d & p->mask];
			if (!e->flag_done || e->completed != e->nchunks)
				break;
			e->live = 0;
			d++;
		}
		if (d != p->done) {
			stat_add(&p->st.completed, d - p->done);
			p->done = d;
			__atomic_store_n(&p->ctl->done, d, __ATOMIC_RELEASE);
		}
	}
	return k;
}

static void check_age(proxy *p, unsigned timeout_ms)
{
	pent *e;
	if (p->done == p->tail || failed(p))
		return;
	e = &p->ent[p->done & p->mask];
	if (now_ms() - e->t0 > (int64_t)timeout_ms)
		fail(p, MK_ERR_PEER, "command #%llu (task %u, %s of %llu bytes) to rank %u: not "
		     "delivered after %u ms (%llu of %llu data writes complete, flag %s); rank %u "
		     "may be gone", (unsigned long long)e->pos, e->c.task, op_name(e->c.op),
		     (unsigned long long)e->c.bytes, e->c.dst_rank, timeout_ms,
		     (unsigned long long)e->completed, (unsigned long long)e->nchunks, e->flag_done ? "delivered" : e->flag_posted ? "posted" : "waiting",
		     e->c.dst_rank);
}

static void *run(void *arg)
{
	proxy *p = arg;
	unsigned timeout = p->o.timeout_ms ? p->o.timeout_ms : 10000;
	unsigned idle_us = p->o.idle_us ? p->o.idle_us : 20;
	int idle = 0;
	sigset_t s;

	/* a dead peer's socket must not kill the process (tcp provider) */
	sigemptyset(&s);
	sigaddset(&s, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &s, NULL);

	while (!__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) {
		int did = 0;
		if (!failed(p)) {
			did |= drain(p) > 0;
			if (!failed(p))
				did |= post_all(p) > 0;
		}
		did |= reap(p) > 0;
		if (!failed(p))
			check_age(p, timeout);
		if (did) {
			idle = 0;
		} else if (++idle > SPIN_BEFORE_SLEEP) {
			nap_us(idle_us);
		} else if (idle > SPIN_BEFORE_SLEEP / 2) {
			sched_yield();
		}
	}
	return NULL;
}

/* ---- pinning ------------------------------------------------------------------ */
int proxy_parse_cpulist(const char *s, int *cpus, int max)
{
	int n = 0;
	while (*s && *s != '\n') {
		char *end;
		long a = strtol(s, &end, 10), b;
		if (end == s || a < 0 || a > 65535)
			return -1;
		b = a;
		s = end;
		if (*s == '-') {
			b = strtol(s + 1, &end, 10);
			if (end == s + 1 || b < a || b > 65535)
				return -1;
			s = end;
		}
		for (long c = a; c <= b; c++)
			if (n < max)
				cpus[n++] = (int)c;
		if (*s == ',')
			s++;
		else if (*s && *s != '\n')
			return -1;
	}
	return n;
}

static int choose_cpus(const proxy_opts *o, cpu_set_t *set, char *log, size_t n)
{
	const char *env = getenv("MK_PROXY_CPU");
	int cpus[1024], k;
	cpu_set_t allowed;
	char path[512], line[4096], bus[64] = "";
	FILE *f;
	int cpu = o->cpu;
	unsigned dom, b, d, fn;

	CPU_ZERO(set);
	if (cpu < 0 && env && *env)
		cpu = atoi(env);
	if (cpu >= 0) {
		if (cpu >= CPU_SETSIZE) {
			snprintf(log, n, "proxy: not pinned (CPU %d out of range)", cpu);
			return 0;
		}
		CPU_SET(cpu, set);
		snprintf(log, n, "proxy: pinned to CPU %d (asked for)", cpu);
		return 1;
	}
	if (!o->pci_bus_id || sscanf(o->pci_bus_id, "%x:%x:%x.%x", &dom, &b, &d, &fn) != 4) {
		snprintf(log, n, "proxy: not pinned (no GPU PCI address)");
		return 0;
	}
	snprintf(bus, sizeof bus, "%04x:%02x:%02x.%x", dom, b, d, fn);
	snprintf(path, sizeof path, "%s/bus/pci/devices/%s/local_cpulist",
		 o->sysfs ? o->sysfs : "/sys", bus);
	if (!(f = fopen(path, "r"))) {
		snprintf(log, n, "proxy: not pinned (no %s)", path);
		return 0;
	}
	line[0] = 0;
	if (!fgets(line, sizeof line, f))
		line[0] = 0;
	fclose(f);
	if ((k = proxy_parse_cpulist(line, cpus, 1024)) <= 0) {
		snprintf(log, n, "proxy: not pinned (cannot read %s)", path);
		return 0;
	}
	if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
		CPU_ZERO(&allowed);
	for (int i = 0, m = 0; i < k; i++)
		if (cpus[i] < CPU_SETSIZE && CPU_ISSET(cpus[i], &allowed)) {
			CPU_SET(cpus[i], set);
			m++;
		}
	if (!CPU_COUNT(set)) {
		snprintf(log, n, "proxy: not pinned (the CPUs near GPU %s, %.60s, are not ours to use)",
			 bus, line);
		return 0;
	}
	line[strcspn(line, "\n")] = 0;
	snprintf(log, n, "proxy: pinned to CPUs %.200s (near GPU %s; %d usable)", line, bus,
		 CPU_COUNT(set));
	return 1;
}

/* ---- API -------------------------------------------------------------------------- */
mk_status proxy_start(const proxy_opts *o, proxy **out, char *log, size_t n)
{
	proxy *p;
	pthread_attr_t attr;
	cpu_set_t set;
	tp_mem m;
	mk_status st;
	int pin;

	*out = NULL;
	if (!o || !o->tp || !o->ring.slots || !o->ring.ctl || o->ring.nslots < 2 ||
	    (o->ring.nslots & (o->ring.nslots - 1)) || o->ring.nslots > (1u << 24) ||
	    ((uintptr_t)o->ring.slots & 63)) {
		snprintf(log, n, "proxy: invalid options (ring of %u slots, a power of two, "
			 "64-byte aligned, and a transport are needed)", o ? o->ring.nslots : 0);
		return MK_ERR_INVALID;
	}
	if (!(p = calloc(1, sizeof *p))) {
		snprintf(log, n, "proxy: out of memory");
		return MK_ERR_NOMEM;
	}
	p->o = *o;
	p->o.sysfs = NULL;
	p->o.pci_bus_id = NULL;
	p->slots = o->ring.slots;
	p->ctl = o->ring.ctl;
	p->n = o->ring.nslots;
	p->mask = p->n - 1;
	p->tp = o->tp;
	p->rank = transport_rank(o->tp);
	p->world = transport_world(o->tp);
	p->ordered = transport_ordered(o->tp);
	p->chunk = o->chunk && o->chunk < transport_max_msg(o->tp) ? o->chunk
								    : transport_max_msg(o->tp);
	pthread_mutex_init(&p->mu, NULL);
	/* continue the ring where it stands (a restarted proxy, a resident kernel) */
	p->tail = p->done = p->cursor = __atomic_load_n(&p->ctl->tail, __ATOMIC_ACQUIRE);
	__atomic_store_n(&p->ctl->done, p->done, __ATOMIC_RELEASE);
	__atomic_store_n(&p->ctl->failed, 0u, __ATOMIC_RELEASE);
	if (!(p->ent = calloc(p->n, sizeof *p->ent)) ||
	    !(p->flagval = aligned_alloc(64, ((size_t)p->n * 8 + 63) & ~(size_t)63))) {
		snprintf(log, n, "proxy: out of memory for %u slots", p->n);
		proxy_destroy(p);
		return MK_ERR_NOMEM;
	}
	memset(&m, 0, sizeof m);
	m.addr = p->flagval;
	m.len = (size_t)p->n * 8;
	m.kind = TP_MEM_HOST;
	m.dmabuf_fd = -1;
	if ((st = transport_reg(p->tp, FLAGVAL_REGION, &m)) != MK_OK) {
		snprintf(log, n, "proxy: registering flag values: %s", transport_error(p->tp));
		proxy_destroy(p);
		return st;
	}
	pin = choose_cpus(o, &set, log, n);
	pthread_attr_init(&attr);
	if (pin && pthread_attr_setaffinity_np(&attr, sizeof set, &set) != 0)
		snprintf(log, n, "proxy: not pinned (pthread_attr_setaffinity_np failed)");
	if (pthread_create(&p->th, &attr, run, p) != 0) {
		pthread_attr_destroy(&attr);
		snprintf(log, n, "proxy: cannot start a thread: %s", strerror(errno));
		proxy_destroy(p);
		return MK_ERR_INTERNAL;
	}
	pthread_attr_destroy(&attr);
	p->started = 1;
	*out = p;
	return MK_OK;
}

mk_status proxy_status(proxy *p, char *msg, size_t n)
{
	mk_status st = (mk_status)__atomic_load_n(&p->status, __ATOMIC_ACQUIRE);
	if (msg && n) {
		pthread_mutex_lock(&p->mu);
		snprintf(msg, n, "%s", st ? p->msg : "");
		pthread_mutex_unlock(&p->mu);
	}
	return st;
}

mk_status proxy_flush(proxy *p, unsigned timeout_ms)
{
	int64_t end = now_ms() + timeout_ms;
	for (;;) {
		uint64_t t = __atomic_load_n(&p->ctl->tail, __ATOMIC_ACQUIRE);
		uint64_t d = __atomic_load_n(&p->ctl->done, __ATOMIC_ACQUIRE);
		mk_status st = (mk_status)__atomic_load_n(&p->status, __ATOMIC_ACQUIRE);
		if (st)
			return st;
		if (d == t && __atomic_load_n(&p->slots[t & p->mask].seq, __ATOMIC_ACQUIRE) != t + 1)
			return MK_OK;
		if (now_ms() > end) {
			pthread_mutex_lock(&p->mu);
			snprintf(p->msg, sizeof p->msg, "flush: %llu of %llu commands delivered after "
				 "%u ms", (unsigned long long)d, (unsigned long long)t, timeout_ms);
			pthread_mutex_unlock(&p->mu);
			return MK_ERR_STALL;
		}
		nap_us(100);
	}
}

mk_status proxy_stop(proxy *p)
{
	if (p->started) {
		__atomic_store_n(&p->stop, 1, __ATOMIC_RELEASE);
		pthread_join(p->th, NULL);
		p->started = 0;
	}
	return (mk_status)__atomic_load_n(&p->status, __ATOMIC_ACQUIRE);
}

void proxy_destroy(proxy *p)
{
	if (!p)
		return;
	proxy_stop(p);
	pthread_mutex_destroy(&p->mu);
	/* flag values are posted inline (copied at post): nothing in flight
	 * refers to them once the thread has stopped */
	if (p->flagval && p->tp)
		transport_dereg(p->tp, FLAGVAL_REGION);
	free(p->flagval);
	free(p->ent);
	free(p);
}

void proxy_get_stats(proxy *p, proxy_stats *s)
{
	s->commands = __atomic_load_n(&p->st.commands, __ATOMIC_RELAXED);
	s->completed = __atomic_load_n(&p->st.completed, __ATOMIC_RELAXED);
	s->writes = __atomic_load_n(&p->st.writes, __ATOMIC_RELAXED);
	s->flags = __atomic_load_n(&p->st.flags, __ATOMIC_RELAXED);
	s->bytes = __atomic_load_n(&p->st.bytes, __ATOMIC_RELAXED);
	s->batches = __atomic_load_n(&p->st.batches, __ATOMIC_RELAXED);
	s->max_batch = __atomic_load_n(&p->st.max_batch, __ATOMIC_RELAXED);
	s->busy = __atomic_load_n(&p->st.busy, __ATOMIC_RELAXED);
}

/* ---- the host producer -------------------------------------------------------------- */
uint64_t proxy_host_push(const mkd_proxy_ring *r, const mkd_proxy_cmd *c, unsigned timeout_ms)
{
	uint64_t h = __atomic_fetch_add(r->head, 1, __ATOMIC_RELAXED);
	int64_t end = 0;
	unsigned spins = 0, us = 1;
	mkd_proxy_cmd *s;

	while (h - __atomic_load_n(&r->ctl->tail, __ATOMIC_ACQUIRE) >= r->nslots) {
		if (__atomic_load_n(&r->ctl->failed, __ATOMIC_ACQUIRE))
			return 0;
		if (!end)
			end = now_ms() + timeout_ms;
		else if (now_ms() > end)
			return 0;
		if (++spins < 64) {
			sched_yield();
		} else {
			nap_us(us);
			if (us < 200)
				us *= 2;
		}
	}
	s = &r->slots[h & (uint64_t)(r->nslots - 1)];
	memcpy(s, c, __builtin_offsetof(mkd_proxy_cmd, seq));
	__atomic_store_n(&s->seq, h + 1, __ATOMIC_RELEASE);
	return h + 1;
}

int proxy_host_wait_done(const mkd_proxy_ring *r, uint64_t ticket, unsigned timeout_ms)
{
	int64_t end = now_ms() + timeout_ms;
	unsigned us = 1;
	while (__atomic_load_n(&r->ctl->done, __ATOMIC_ACQUIRE) < ticket) {
		if (__atomic_load_n(&r->ctl->failed, __ATOMIC_ACQUIRE) || now_ms() > end)
			return -1;
		nap_us(us);
		if (us < 200)
			us *= 2;
	}
	return 0;
}

mk_status proxy_ring_alloc(unsigned nslots, mkd_proxy_ring *r)
{
	memset(r, 0, sizeof *r);
	if (nslots < 2 || (nslots & (nslots - 1)))
		return MK_ERR_INVALID;
	r->slots = aligned_alloc(64, (size_t)nslots * sizeof *r->slots);
	r->ctl = aligned_alloc(64, sizeof *r->ctl);
	r->head = aligned_alloc(64, 64);
	if (!r->slots || !r->ctl || !r->head) {
		proxy_ring_free(r);
		return MK_ERR_NOMEM;
	}
	memset(r->slots, 0, (size_t)nslots * sizeof *r->slots);
	memset(r->ctl, 0, sizeof *r->ctl);
	memset(r->head, 0, 64);
	r->nslots = nslots;
	return MK_OK;
}

void proxy_ring_free(mkd_proxy_ring *r)
{
	free(r->slots);
	free(r->ctl);
	free(r->head);
	memset(r, 0, sizeof *r);
}
