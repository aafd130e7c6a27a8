/* test_bootstrap_join.c - the TCP rendezvous across real processes on
 * loopback: allgather, barrier, point to point (incl. 2 MiB both ways at
 * once), local ranks; strangers (garbage, truncated, oversized frames, a
 * wrong key, version, rank, world size, silence) refused while the job
 * joins, all with the same words and none before BOOTSTRAP_REFUSE_MS; a
 * rank, rank 0, a point-to-point peer that disappears; timeouts.  Issue 21:
 * listeners bound to the root's address (or MK_IFACE); a stranger that holds
 * the job key but did not join cannot pass for a rank point to point; a
 * pending connection cannot make rank 0 hold a big frame; what all
 * connections leave unread is capped.  Exit 0 = pass.
 */
#include "bootstrap_frames.h"

/* ---- a job that works ---------------------------------------------------------- */
static int rank_happy(void *arg)
{
	int rank = (int)(intptr_t)arg, world = 4, ok;
	bootstrap_cfg c = cfg_for(rank, world, 20000);
	bootstrap *b;
	char err[512];
	unsigned char mine[1000], all[4000];
	mk_status st;

	c.host_id = rank < 2 ? 11 : 22;
	st = bootstrap_create(&c, &b, err, sizeof err);
	mkt_check(st == MK_OK, "rank %d joined: %s", rank, st ? err : "ok");
	if (st)
		return 1;
	mkt_check(bootstrap_local_world(b) == 2 && bootstrap_local_rank(b) == rank % 2 &&
		  bootstrap_local_to_global(b, 0) == rank - rank % 2,
		  "rank %d: local rank %d of %d", rank, bootstrap_local_rank(b),
		  bootstrap_local_world(b));
	for (int i = 0; i < 1000; i++)
		mine[i] = (unsigned char)(rank * 31 + i);
	st = bootstrap_allgather(b, mine, all, sizeof mine);
	ok = st == MK_OK;
	for (int r = 0; ok && r < world; r++)
		for (int i = 0; i < 1000; i++)
			if (all[r * 1000 + i] != (unsigned char)(r * 31 + i))
				ok = 0;
	mkt_check(ok, "rank %d: allgather of 1000 bytes: %s", rank, bootstrap_error(b));
	{
		uint64_t v = (uint64_t)rank * 1000, vs[4];
		st = bootstrap_allgather(b, &v, vs, 8);
		mkt_check(st == MK_OK && vs[0] == 0 && vs[3] == 3000, "rank %d: second allgather",
			  rank);
	}
	mkt_check(bootstrap_barrier(b) == MK_OK, "rank %d: barrier", rank);

	/* a ring, tags out of order */
	{
		char msg[64], got[64];
		size_t len = 0;
		int next = (rank + 1) % world, prev = (rank + world - 1) % world;
		snprintf(msg, sizeof msg, "two from %d", rank);
		st = bootstrap_send(b, next, 2, msg, strlen(msg));
		snprintf(msg, sizeof msg, "one from %d", rank);
		st |= bootstrap_send(b, next, 1, msg, strlen(msg));
		memset(got, 0, sizeof got);
		st |= bootstrap_recv(b, prev, 1, got, sizeof got - 1, &len);
		snprintf(msg, sizeof msg, "one from %d", prev);
		ok = st == MK_OK && !strcmp(got, msg);
		memset(got, 0, sizeof got);
		st |= bootstrap_recv(b, prev, 2, got, sizeof got - 1, &len);
		snprintf(msg, sizeof msg, "two from %d", prev);
		mkt_check(ok && st == MK_OK && !strcmp(got, msg), "rank %d: ring, tags out of "
			  "order: '%s' %s", rank, got, bootstrap_error(b));
	}
	/* 2 MiB both ways at once between 0 and 1 */
	if (rank < 2) {
		size_t big = 2u << 20, len = 0;
		unsigned char *s = malloc(big), *r = malloc(big);
		for (size_t i = 0; i < big; i++)
			s[i] = (unsigned char)(i * 7 + (size_t)rank);
		st = bootstrap_send(b, 1 - rank, 7, s, big);
		st |= bootstrap_recv(b, 1 - rank, 7, r, big, &len);
		ok = st == MK_OK && len == big;
		for (size_t i = 0; ok && i < big; i++)
			if (r[i] != (unsigned char)(i * 7 + (size_t)(1 - rank)))
				ok = 0;
		mkt_check(ok, "rank %d: 2 MiB both ways at once: %s", rank, bootstrap_error(b));
		free(s);
		free(r);
	}
	{
		char got[8];
		size_t len;
		st = bootstrap_send(b, rank, 3, "self", 4);
		st |= bootstrap_recv(b, rank, 3, got, sizeof got, &len);
		mkt_check(st == MK_OK && len == 4 && !memcmp(got, "self", 4), "rank %d: to itself",
			  rank);
		mkt_check(bootstrap_recv(b, rank, 4, got, sizeof got, &len) == MK_ERR_STATE,
			  "rank %d: waiting for itself is an error: %s", rank, bootstrap_error(b));
		st = bootstrap_send(b, (rank + 1) % world, 9, "twelve bytes", 12);
		mkt_check(st == MK_OK &&
			  bootstrap_recv(b, (rank + 3) % world, 9, got, sizeof got, &len) ==
			  MK_ERR_SIZE, "rank %d: a message larger than the buffer: %s", rank,
			  bootstrap_error(b));
		mkt_check(bootstrap_send(b, 0, 1, got, BOOTSTRAP_MAX_PAYLOAD + 1u) == MK_ERR_SIZE,
			  "rank %d: oversized send refused: %s", rank, bootstrap_error(b));
		mkt_check(bootstrap_send(b, 9, 1, got, 1) == MK_ERR_NOT_FOUND, "rank %d: rank 9",
			  rank);
	}
	mkt_check(bootstrap_barrier(b) == MK_OK, "rank %d: still usable after caller errors: %s",
		  rank, bootstrap_error(b));
	bootstrap_destroy(b);
	return mkt_failures ? 1 : 0;
}

static void run_ranks(const char *what, int world, int (*fn)(void *), int64_t budget_ms,
		      int *rcs)
{
	pid_t pids[16];
	int64_t t0 = mkt_now_ms();
	for (int r = 0; r < world; r++)
		pids[r] = mkt_spawn(fn, (void *)(intptr_t)r);
	close(lfd);
	lfd = -1;
	for (int r = 0; r < world; r++)
		rcs[r] = mkt_reap(pids[r], t0 + budget_ms);
	fprintf(stderr, "      %s: %lld ms\n", what, (long long)(mkt_now_ms() - t0));
}

static void test_happy(void)
{
	int rcs[4];
	new_listener();
	run_ranks("4 ranks", 4, rank_happy, 60000, rcs);
	for (int r = 0; r < 4; r++)
		mkt_check(rcs[r] == 0, "happy rank %d exits 0 (got %d)", r, rcs[r]);
}

/* ---- strangers ------------------------------------------------------------------- */
static int root_alone(void *arg)
{
	bootstrap_cfg c = cfg_for(0, 2, 20000);
	bootstrap *b;
	char err[512];
	uint64_t v = 5, vs[2] = {0, 0};
	mk_status st = bootstrap_create(&c, &b, err, sizeof err);
	(void)arg;
	mkt_check(st == MK_OK, "root joined despite strangers: %s", st ? err : "ok");
	if (st)
		return 1;
	st = bootstrap_allgather(b, &v, vs, 8);
	mkt_check(st == MK_OK && vs[1] == 6, "root: allgather with the real rank 1");
	bootstrap_destroy(b);
	return mkt_failures ? 1 : 0;
}

static int rank1_real(void *arg)
{
	bootstrap_cfg c = cfg_for(1, 2, 20000);
	bootstrap *b;
	char err[512];
	uint64_t v = 6, vs[2] = {0, 0};
	mk_status st;
	if (arg)
		bootstrap_set_token(&c, "another job's token");
	st = bootstrap_create(&c, &b, err, sizeof err);
	if (arg) {
		mkt_check(st == MK_ERR_PEER && strstr(err, BOOTSTRAP_REFUSED),
			  "a rank with another token is refused like any stranger: %s", err);
		return mkt_failures ? 1 : 0;
	}
	mkt_check(st == MK_OK, "rank 1 joined: %s", st ? err : "ok");
	if (st)
		return 1;
	st = bootstrap_allgather(b, &v, vs, 8);
	mkt_check(st == MK_OK && vs[0] == 5, "rank 1: allgather");
	bootstrap_destroy(b);
	return mkt_failures ? 1 : 0;
}

static int dial_port(int p)
{
	struct sockaddr_in sa;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)p);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int dial(void) { return dial_port(port); }

/* Reads exactly n bytes within ms; returns how many came. */
static int read_n(int fd, unsigned char *buf, size_t n, int ms)
{
	size_t have = 0;
	int64_t end = mkt_now_ms() + ms;
	while (have < n) {
		struct pollfd p = {fd, POLLIN, 0};
		ssize_t k;
		if (poll(&p, 1, (int)(end - mkt_now_ms())) <= 0)
			break;
		k = read(fd, buf + have, n - have);
		if (k <= 0)
			break;
		have += (size_t)k;
	}
	return (int)have;
}

/* Reads until the peer closes or 3 s pass; returns bytes read, -1 on timeout. */
static int read_to_close(int fd, unsigned char *buf, size_t cap)
{
	size_t have = 0;
	int64_t end = mkt_now_ms() + 3000;
	for (;;) {
		struct pollfd p = {fd, POLLIN, 0};
		ssize_t k;
		if (poll(&p, 1, (int)(end - mkt_now_ms())) <= 0)
			return -1;
		k = recv(fd, buf + have, cap - have, 0);
		if (k <= 0)
			return (int)have;
		have += (size_t)k;
		if (have == cap)
			return (int)have;
	}
}

/* Connects to port p and takes the challenge; -1 when none came. */
static int dial_challenged(int p, unsigned char na[BOOTSTRAP_NONCE])
{
	unsigned char ch[BOOTSTRAP_HDR + BOOTSTRAP_CHALLENGE_WIRE];
	bootstrap_msg m;
	char err[128];
	int fd = dial_port(p);
	if (fd < 0)
		return -1;
	if (read_n(fd, ch, sizeof ch, 3000) != (int)sizeof ch ||
	    bootstrap_parse(ch, sizeof ch, 0, &m, err, sizeof err) != MK_OK ||
	    m.type != BOOTSTRAP_CHALLENGE) {
		close(fd);
		return -1;
	}
	memcpy(na, m.nonce, BOOTSTRAP_NONCE);
	return fd;
}

static unsigned char first_reject[512];
static int first_reject_n = -1;

/* A stranger: takes the challenge, lets make() write what it sends (given
 * the challenge), and expects `reason` back in a REJECT: the one refusal
 * text, not before BOOTSTRAP_REFUSE_MS, the same bytes every time (NULL
 * reason: it hangs up itself). */
static void stranger_of(const char *what, size_t (*make)(unsigned char *, const unsigned char *),
			const char *reason)
{
	unsigned char reply[1024], buf[4096], na[BOOTSTRAP_NONCE];
	int fd = dial_challenged(port, na), got;
	size_t n;
	bootstrap_msg m;
	char err[256] = "";
	int64_t t;
	if (fd < 0) {
		mkt_check(0, "%s: no challenge on connecting", what);
		return;
	}
	n = make(buf, na);
	t = mkt_now_ms();
	if (send(fd, buf, n, MSG_NOSIGNAL) != (ssize_t)n)
		mkt_check(0, "%s: send", what);
	if (!reason) {   /* truncated: hang up ourselves */
		close(fd);
		mkt_check(1, "%s: sent and hung up", what);
		return;
	}
	got = read_to_close(fd, reply, sizeof reply);
	t = mkt_now_ms() - t;
	close(fd);
	mkt_check(got > BOOTSTRAP_HDR &&
		  bootstrap_parse(reply, (size_t)got, 2, &m, err, sizeof err) == MK_OK &&
		  m.type == BOOTSTRAP_REJECT && strstr(m.text, reason),
		  "%s: rejected after %lld ms, told '%s' %s", what, (long long)t, m.text, err);
	if (!strcmp(reason, BOOTSTRAP_REFUSED)) {
		mkt_check(t >= BOOTSTRAP_REFUSE_MS - 20, "%s: no answer for %d ms (%lld)", what,
			  BOOTSTRAP_REFUSE_MS, (long long)t);
		if (first_reject_n < 0) {
			first_reject_n = got;
			memcpy(first_reject, reply, (size_t)got);
		} else {
			mkt_check(got == first_reject_n && !memcmp(reply, first_reject, (size_t)got),
				  "%s: the same bytes as every refusal", what);
		}
	}
}

static size_t mk_garbage(unsigned char *b, const unsigned char *na)
{
	(void)na;
	for (int i = 0; i < 64; i++)
		b[i] = (unsigned char)(i * 37 + 5);
	return 64;
}
static size_t mk_trunc_hdr(unsigned char *b, const unsigned char *na)
{
	hello_for(b, 1, 2, KEY, na);
	return 10;
}
static size_t mk_trunc_pay(unsigned char *b, const unsigned char *na)
{
	return hello_for(b, 1, 2, KEY, na) - 30;
}
static size_t mk_4gb(unsigned char *b, const unsigned char *na)
{
	(void)na;
	bootstrap_header(b, BOOTSTRAP_P2P, 1, 0, 0xfffffff0u);
	return BOOTSTRAP_HDR;
}
static size_t mk_16mb(unsigned char *b, const unsigned char *na)
{
	(void)na;
	bootstrap_header(b, BOOTSTRAP_GATHER, 1, 1, BOOTSTRAP_MAX_PAYLOAD);
	memset(b + BOOTSTRAP_HDR, 0, 1000);
	return BOOTSTRAP_HDR + 1000;   /* and more would follow */
}
static size_t mk_hello_100k(unsigned char *b, const unsigned char *na)
{
	(void)na;
	bootstrap_header(b, BOOTSTRAP_HELLO, 1, 0, 100000);
	return BOOTSTRAP_HDR;
}
static size_t mk_wrong_key(unsigned char *b, const unsigned char *na)
{
	unsigned char k[BOOTSTRAP_KEY];
	bootstrap_cfg c;
	memset(&c, 0, sizeof c);
	bootstrap_set_token(&c, "not the token");
	memcpy(k, c.key, sizeof k);
	return hello_for(b, 1, 2, k, na);
}
static size_t mk_old_nonce(unsigned char *b, const unsigned char *na)
{
	unsigned char other[BOOTSTRAP_NONCE];
	memcpy(other, na, sizeof other);
	other[0] ^= 1;   /* a HELLO made for another challenge: a replay */
	return hello_for(b, 1, 2, KEY, other);
}
static size_t mk_no_mac(unsigned char *b, const unsigned char *na)
{
	return hello_for(b, 1, 2, NULL, na);
}
static size_t mk_version1(unsigned char *b, const unsigned char *na)
{
	size_t n = hello_for(b, 1, 2, KEY, na);
	b[4] = 1;
	return n;
}
static size_t mk_rank0(unsigned char *b, const unsigned char *na)
{
	return hello_for(b, 0, 2, KEY, na);
}
static size_t mk_rank7(unsigned char *b, const unsigned char *na)
{
	return hello_for(b, 7, 8, KEY, na);
}
static size_t mk_world3(unsigned char *b, const unsigned char *na)
{
	return hello_for(b, 1, 3, KEY, na);   /* of the job (right MAC), wrong world */
}
static size_t mk_gather(unsigned char *b, const unsigned char *na)
{
	(void)na;
	bootstrap_header(b, BOOTSTRAP_GATHER, 1, 1, 8);
	memset(b + BOOTSTRAP_HDR, 0, 8);
	return BOOTSTRAP_HDR + 8;
}
static size_t mk_peer_hello(unsigned char *b, const unsigned char *na)
{
	unsigned char pay[BOOTSTRAP_PEER_HELLO_WIRE];
	size_t n;
	memset(pay, 1, sizeof pay);
	n = frame(b, BOOTSTRAP_PEER_HELLO, 1, 0, pay, sizeof pay);
	bootstrap_mac(KEY, "mk peer hello", 0, na, b, n - BOOTSTRAP_MAC, b + n - BOOTSTRAP_MAC);
	return n;
}

static void test_strangers(void)
{
	pid_t root, wrong, real;
	int64_t t0 = mkt_now_ms();
	int silent, rc;

	new_listener();
	root = mkt_spawn(root_alone, NULL);
	stranger_of("64 bytes of garbage", mk_garbage, BOOTSTRAP_REFUSED);
	stranger_of("a truncated header", mk_trunc_hdr, NULL);
	stranger_of("a HELLO cut in the middle of its payload", mk_trunc_pay, NULL);
	stranger_of("a header claiming 4 GB", mk_4gb, BOOTSTRAP_REFUSED);
	stranger_of("a GATHER of 16 MiB before any HELLO (not waited for)", mk_16mb,
		    BOOTSTRAP_REFUSED);
	stranger_of("a HELLO claiming 100000 bytes", mk_hello_100k, BOOTSTRAP_REFUSED);
	stranger_of("a HELLO with another job's key", mk_wrong_key, BOOTSTRAP_REFUSED);
	stranger_of("a HELLO made for another challenge (a replay)", mk_old_nonce,
		    BOOTSTRAP_REFUSED);
	stranger_of("a HELLO without a MAC", mk_no_mac, BOOTSTRAP_REFUSED);
	stranger_of("a HELLO of protocol version 1", mk_version1, BOOTSTRAP_REFUSED);
	stranger_of("a HELLO claiming rank 0", mk_rank0, BOOTSTRAP_REFUSED);
	stranger_of("a HELLO claiming rank 7 of 2", mk_rank7, BOOTSTRAP_REFUSED);
	stranger_of("a GATHER before any HELLO", mk_gather, BOOTSTRAP_REFUSED);
	stranger_of("a PEER_HELLO on the join port", mk_peer_hello, BOOTSTRAP_REFUSED);
	/* with the key, a rank of the job: told the real reason */
	stranger_of("a HELLO of this job with world size 3", mk_world3, "world");
	silent = dial();
	mkt_check(silent >= 0, "a stranger that connects and says nothing");

	wrong = mkt_spawn(rank1_real, (void *)1);
	rc = mkt_reap(wrong, mkt_now_ms() + 10000);
	mkt_check(rc == 0, "the rank with the wrong token exits 0 (%d)", rc);
	real = mkt_spawn(rank1_real, NULL);
	close(lfd);
	lfd = -1;
	rc = mkt_reap(real, mkt_now_ms() + 20000);
	mkt_check(rc == 0, "the real rank 1 exits 0 (%d)", rc);
	rc = mkt_reap(root, mkt_now_ms() + 20000);
	mkt_check(rc == 0, "rank 0 exits 0 (%d)", rc);
	{
		int late = dial();
		mkt_check(late < 0, "after the join nobody can connect to the root port");
		if (late >= 0)
			close(late);
	}
	close(silent);
	fprintf(stderr, "      strangers: %lld ms\n", (long long)(mkt_now_ms() - t0));
}

/* ---- listeners, impostors, memory (issue 21) ------------------------------------------ */
/* The TCP sockets this process listens on, as "addr:port" in buf; returns
 * how many of them listen on every interface. */
static int listeners(char *buf, size_t n, int *p2p_port)
{
	int any = 0;
	size_t k = 0;
	buf[0] = 0;
	for (int fd = 3; fd < 1024; fd++) {
		int acc = 0;
		socklen_t al = sizeof acc;
		struct sockaddr_in sa;
		socklen_t sl = sizeof sa;
		if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &al) != 0 || !acc ||
		    getsockname(fd, (struct sockaddr *)&sa, &sl) != 0 || sa.sin_family != AF_INET)
			continue;
		any += sa.sin_addr.s_addr == htonl(INADDR_ANY);
		if (p2p_port)
			*p2p_port = ntohs(sa.sin_port);
		k += (size_t)snprintf(buf + k, n > k ? n - k : 0, "%s%s:%d", k ? ", " : "",
				      inet_ntoa(sa.sin_addr), ntohs(sa.sin_port));
	}
	return any;
}

static const char *bind_iface;   /* MK_IFACE for rank_binds, or NULL */
static int bind_root_fd;         /* rank 0 binds MK_ROOT itself (0) or gets lfd (1) */

static int rank_binds(void *arg)
{
	int rank = (int)(intptr_t)arg, any;
	bootstrap_cfg c = cfg_for(rank, 2, 10000);
	bootstrap *b;
	char err[512], ls[256];
	mk_status st;
	if (rank == 0 && !bind_root_fd) {
		close(c.root_fd);
		c.root_fd = -1;   /* MK_ROOT=127.0.0.1:port, bound here */
	}
	if (bind_iface)
		snprintf(c.iface, sizeof c.iface, "%s", bind_iface);
	st = bootstrap_create(&c, &b, err, sizeof err);
	if (st) {
		mkt_check(0, "rank %d joins: %s", rank, err);
		return 1;
	}
	any = listeners(ls, sizeof ls, NULL);
	if (bind_iface && !strcmp(bind_iface, "any"))
		mkt_check(any == 1, "rank %d, MK_IFACE=any: on every interface, as asked (%s)", rank,
			  ls);
	else
		mkt_check(any == 0 && strstr(ls, "127.0.0.1:"), "rank %d%s%s: listens on 127.0.0.1 "
			  "only, not every interface (%s)", rank, bind_iface ? ", MK_IFACE=" : "",
			  bind_iface ? bind_iface : rank || bind_root_fd ? "" : ", binding MK_ROOT", ls);
	{
		char got[8];
		size_t len;
		mkt_check(bootstrap_send(b, 1 - rank, 1, "hi", 2) == MK_OK &&
			  bootstrap_recv(b, 1 - rank, 1, got, sizeof got, &len) == MK_OK,
			  "rank %d: point to point works", rank);
	}
	bootstrap_destroy(b);
	return mkt_failures ? 1 : 0;
}

static void test_binds(void)
{
	static const char *ifaces[] = {NULL, NULL, "lo", "127.0.0.1", "any"};
	for (int i = 0; i < 5; i++) {
		int rcs[2];
		char what[64];
		bind_iface = ifaces[i];
		bind_root_fd = i == 1;
		new_listener();
		if (!bind_root_fd) {
			close(lfd);   /* rank 0 binds the port itself */
			lfd = -1;
		}
		snprintf(what, sizeof what, "binds %s", ifaces[i] ? ifaces[i] : i ? "fd" : "MK_ROOT");
		run_ranks(what, 2, rank_binds, 20000, rcs);
		mkt_check(rcs[0] == 0 && rcs[1] == 0, "%s: ranks exit 0 (%d %d)", what, rcs[0], rcs[1]);
	}
	bind_iface = NULL;
	bind_root_fd = 1;
	{
		/* an MK_ROOT that is not this machine's: an error, not every interface */
		bootstrap_cfg c;
		bootstrap *b = NULL;
		char err[512];
		new_listener();
		c = cfg_for(0, 2, 500);
		close(c.root_fd);
		c.root_fd = -1;
		snprintf(c.root_host, sizeof c.root_host, "192.0.2.1");   /* TEST-NET-1 */
		mkt_check(bootstrap_create(&c, &b, err, sizeof err) == MK_ERR_IO &&
			  strstr(err, "MK_IFACE"), "MK_ROOT not of this machine: %s", err);
		lfd = -1;
	}
}

/* A stranger that has the job key but did not join cannot pass for rank 1
 * on rank 0's point-to-point listener: without the session key it is
 * refused, and rank 0 hears only the real rank 1. */
static int imp_pipe[2], go_pipe[2];

static int imp_rank(void *arg)
{
	int rank = (int)(intptr_t)arg, p2p = 0;
	bootstrap_cfg c = cfg_for(rank, 2, 15000);
	bootstrap *b;
	char err[512], ls[256], got[16];
	size_t len = 0;
	mk_status st = bootstrap_create(&c, &b, err, sizeof err);
	if (st) {
		mkt_check(0, "impostor test: rank %d joins: %s", rank, err);
		return 1;
	}
	if (rank == 0) {
		listeners(ls, sizeof ls, &p2p);   /* the join port is closed: only p2p is left */
		if (write(imp_pipe[1], &p2p, sizeof p2p) != (ssize_t)sizeof p2p)
			return 2;
		st = bootstrap_recv(b, 1, 77, got, sizeof got, &len);
		mkt_check(st == MK_OK && len == 4 && !memcmp(got, "real", 4),
			  "rank 0 hears the real rank 1 only: '%.*s' %s", (int)len, got,
			  bootstrap_error(b));
	} else {
		char go;
		if (read(go_pipe[0], &go, 1) != 1)
			return 2;
		st = bootstrap_send(b, 0, 77, "real", 4);
		mkt_check(st == MK_OK, "the real rank 1 connects after the impostor: %s",
			  bootstrap_error(b));
	}
	mkt_check(bootstrap_barrier(b) == MK_OK, "impostor test: rank %d barrier", rank);
	bootstrap_destroy(b);
	return mkt_failures ? 1 : 0;
}

static void test_impostor(void)
{
	int rcs[2], p2p = 0, fd;
	pid_t pids[2];
	unsigned char na[BOOTSTRAP_NONCE], buf[256], reply[512];
	int64_t t0 = mkt_now_ms();

	if (pipe(imp_pipe) != 0 || pipe(go_pipe) != 0)
		return;
	new_listener();
	for (int r = 0; r < 2; r++)
		pids[r] = mkt_spawn(imp_rank, (void *)(intptr_t)r);
	close(lfd);
	lfd = -1;
	if (read_n(imp_pipe[0], (unsigned char *)&p2p, sizeof p2p, 10000) != (int)sizeof p2p) {
		mkt_check(0, "rank 0's point-to-point port");
	} else if ((fd = dial_challenged(p2p, na)) < 0) {
		mkt_check(0, "no challenge from rank 0's point-to-point listener");
	} else {
		/* PEER_HELLO as rank 1, MAC'd with the job key (all it has), then a
		 * message as rank 1 */
		size_t n;
		int got;
		bootstrap_msg m;
		char err[128];
		unsigned char pay[BOOTSTRAP_PEER_HELLO_WIRE];
		memset(pay, 3, sizeof pay);
		n = frame(buf, BOOTSTRAP_PEER_HELLO, 1, 0, pay, sizeof pay);
		bootstrap_mac(KEY, "mk peer hello", 0, na, buf, n - BOOTSTRAP_MAC,
			      buf + n - BOOTSTRAP_MAC);
		n += frame(buf + n, BOOTSTRAP_P2P, 1, 77, "evil", 4);
		if (send(fd, buf, n, MSG_NOSIGNAL) != (ssize_t)n)
			mkt_check(0, "impostor: send");
		got = read_to_close(fd, reply, sizeof reply);
		mkt_check(got > BOOTSTRAP_HDR &&
			  bootstrap_parse(reply, (size_t)got, 2, &m, err, sizeof err) == MK_OK &&
			  m.type == BOOTSTRAP_REJECT && strstr(m.text, BOOTSTRAP_REFUSED),
			  "a PEER_HELLO as rank 1 with the job key but not the session's: refused "
			  "('%s')", m.text);
		close(fd);
	}
	if (write(go_pipe[1], "g", 1) != 1)
		mkt_check(0, "go");
	for (int r = 0; r < 2; r++) {
		rcs[r] = mkt_reap(pids[r], t0 + 30000);
		mkt_check(rcs[r] == 0, "impostor test: rank %d exits 0 (%d)", r, rcs[r]);
	}
	close(imp_pipe[0]);
	close(imp_pipe[1]);
	close(go_pipe[0]);
	close(go_pipe[1]);
}

/* What the ranks leave unread at rank 0, all together, is capped. */
static int mem_rank(void *arg)
{
	int rank = (int)(intptr_t)arg;
	bootstrap_cfg c = cfg_for(rank, 3, 8000);
	bootstrap *b;
	char err[512], got[8];
	size_t len, big = 600u << 10;
	mk_status st;
	if (rank == 0)
		c.max_mem = 1u << 20;
	st = bootstrap_create(&c, &b, err, sizeof err);
	if (st) {
		mkt_check(0, "mem test: rank %d joins: %s", rank, err);
		return 1;
	}
	if (rank == 0) {
		st = bootstrap_recv(b, 1, 6, got, sizeof got, &len);   /* never sent */
		mkt_check(st == MK_ERR_PEER && strstr(bootstrap_error(b), "nobody has read") &&
			  strstr(bootstrap_error(b), "maximum of 1048576"),
			  "rank 0: 2 x 600 KiB unread over a cap of 1 MiB: %s", bootstrap_error(b));
	} else {
		char *p = calloc(1, big);
		bootstrap_send(b, 0, 5, p, big);
		free(p);
		bootstrap_barrier(b);   /* fails: rank 0 gave up */
	}
	bootstrap_destroy(b);
	return mkt_failures ? 1 : 0;
}

static void test_memory(void)
{
	int rcs[3];
	new_listener();
	run_ranks("memory cap", 3, mem_rank, 30000, rcs);
	for (int r = 0; r < 3; r++)
		mkt_check(rcs[r] == 0, "mem test: rank %d exits 0 (%d)", r, rcs[r]);
}

/* ---- ranks that disappear ------------------------------------------------------------ */
static int victim = 2;
static int64_t die_t0;

static int rank_dies(void *arg)
{
	int rank = (int)(intptr_t)arg;
	bootstrap_cfg c = cfg_for(rank, 3, 5000);
	bootstrap *b;
	char err[512];
	uint64_t v = 1, vs[3];
	mk_status st = bootstrap_create(&c, &b, err, sizeof err);
	int64_t t;

	if (st) {
		/* the loss may already be seen while joining: still must name the rank */
		char want[16];
		snprintf(want, sizeof want, "rank %d", victim);
		mkt_check(st == MK_ERR_PEER && strstr(err, want), "rank %d failed to join: %s",
			  rank, err);
		return mkt_failures ? 1 : 0;
	}
	st = bootstrap_barrier(b);
	if (rank == victim) {
		mkt_sleep_ms(300);
		_exit(0);   /* no goodbye */
	}
	t = mkt_now_ms();
	if (st == MK_OK)
		st = bootstrap_allgather(b, &v, vs, 8);
	{
		char want[16];
		snprintf(want, sizeof want, "rank %d", victim);
		mkt_check(st == MK_ERR_PEER && strstr(bootstrap_error(b), want) &&
			  mkt_now_ms() - t < 3000,
			  "rank %d learns in %lld ms: %s", rank, (long long)(mkt_now_ms() - t),
			  bootstrap_error(b));
	}
	/* once failed, it stays failed */
	mkt_check(bootstrap_barrier(b) == MK_ERR_PEER, "rank %d: later calls fail too", rank);
	bootstrap_destroy(b);
	return mkt_failures ? 1 : 0;
}

static void test_deaths(void)
{
	int rcs[3];
	for (int v = 2; v >= 0; v -= 2) {
		char what[64];
		victim = v;
		die_t0 = mkt_now_ms();
		new_listener();
		snprintf(what, sizeof what, "rank %d disappears", v);
		run_ranks(what, 3, rank_dies, 20000, rcs);
		for (int r = 0; r < 3; r++)
			if (r != v)
				mkt_check(rcs[r] == 0, "%s: rank %d exits 0 (%d)", what, r, rcs[r]);
	}
}

/* point to point: a message, then the sender dies; a timeout */
static int p2p_rank(void *arg)
{
	int rank = (int)(intptr_t)arg;
	bootstrap_cfg c = cfg_for(rank, 2, rank == 1 ? 700 : 5000);
	bootstrap *b;
	char err[512], got[16];
	size_t len;
	mk_status st = bootstrap_create(&c, &b, err, sizeof err);
	int64_t t;

	if (st) {
		mkt_check(0, "p2p rank %d joins: %s", rank, err);
		return 1;
	}
	if (rank == 1) {
		bootstrap_send(b, 0, 5, "hello", 5);
		t = mkt_now_ms();
		st = bootstrap_recv(b, 0, 9, got, sizeof got, &len);
		mkt_check(st == MK_ERR_PEER && strstr(bootstrap_error(b), "timed out") &&
			  mkt_now_ms() - t >= 650 && mkt_now_ms() - t < 2000,
			  "rank 1: a message that never comes times out in %lld ms: %s",
			  (long long)(mkt_now_ms() - t), bootstrap_error(b));
		_exit(mkt_failures ? 1 : 0);   /* no goodbye */
	}
	st = bootstrap_recv(b, 1, 5, got, sizeof got, &len);
	mkt_check(st == MK_OK && len == 5, "rank 0: the message before the death");
	t = mkt_now_ms();
	st = bootstrap_recv(b, 1, 6, got, sizeof got, &len);
	mkt_check(st == MK_ERR_PEER && strstr(bootstrap_error(b), "rank 1"),
		  "rank 0: the sender died, learnt in %lld ms: %s", (long long)(mkt_now_ms() - t),
		  bootstrap_error(b));
	bootstrap_destroy(b);
	return mkt_failures ? 1 : 0;
}

static int join_short(void *arg)
{
	int rank = (int)(intptr_t)arg;
	bootstrap_cfg c = cfg_for(rank, 3, 800);
	bootstrap *b = NULL;
	char err[512];
	int64_t t = mkt_now_ms();
	mk_status st = bootstrap_create(&c, &b, err, sizeof err);
	mkt_check(st == MK_ERR_PEER && b == NULL && mkt_now_ms() - t < 2500 &&
		  (rank != 0 || strstr(err, "missing: 2")),
		  "rank %d: a join with rank 2 missing fails in %lld ms: %s", rank,
		  (long long)(mkt_now_ms() - t), err);
	return mkt_failures ? 1 : 0;
}

static void test_p2p_and_timeouts(void)
{
	int rcs[2];
	new_listener();
	run_ranks("p2p death", 2, p2p_rank, 20000, rcs);
	mkt_check(rcs[0] == 0 && rcs[1] == 0, "p2p ranks exit 0 (%d %d)", rcs[0], rcs[1]);
	new_listener();
	run_ranks("join with a rank missing", 2, join_short, 20000, rcs);
	mkt_check(rcs[0] == 0 && rcs[1] == 0, "join-timeout ranks exit 0 (%d %d)", rcs[0], rcs[1]);
	{
		/* nobody listening at all */
		bootstrap_cfg c = cfg_for(1, 2, 300);
		bootstrap *b;
		char err[512];
		int64_t t = mkt_now_ms();
		c.root_port = port;   /* closed above */
		mkt_check(bootstrap_create(&c, &b, err, sizeof err) == MK_ERR_PEER &&
			  mkt_now_ms() - t < 1500 && strstr(err, "cannot reach rank 0"),
			  "no rank 0 at all: %s", err);
	}
}
int main(void)
{
	frames_init();
	test_happy();
	test_strangers();
	test_binds();
	test_impostor();
	test_memory();
	test_deaths();
	test_p2p_and_timeouts();
	return mkt_summary("test_bootstrap_join");
}
