/* bootstrap_join.c - joining the job and leaving it: rank 0 listens on MK_ROOT
 * and sends everyone the table of ranks once all have said hello; the others
 * connect to it, retrying until the deadline; the connecting side of the
 * handshake (bs_handshake); bootstrap_destroy says goodbye everywhere; see
 * bootstrap.h.
 *
 * Listeners are bound to one address, never to every interface unless
 * MK_IFACE=any asks: rank 0's to the address MK_ROOT names (or the socket
 * a launcher handed over), and its point-to-point listener beside it; the
 * others' to the address their connection to rank 0 left from.  MK_IFACE
 * (an interface's name or an address) overrides both.
 *
 * The bootstrap is in five files (bootstrap_int.h lists them): this one, the
 * wire format, the environment, the poll loop that every wait goes through,
 * and the collectives and point-to-point messages.
 */
#include "bootstrap_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/le.h"

/* ---- sockets and addresses ------------------------------------------------------ */
static int sa_to_addr(const struct sockaddr_storage *ss, bootstrap_addr *a)
{
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)ss;
		a->family = 4;
		a->port = ntohs(s->sin_port);
		memset(a->addr, 0, 16);
		memcpy(a->addr, &s->sin_addr, 4);
		a->scope = 0;
		return 0;
	}
	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)ss;
		a->family = 6;
		a->port = ntohs(s->sin6_port);
		memcpy(a->addr, &s->sin6_addr, 16);
		a->scope = s->sin6_scope_id;
		return 0;
	}
	return -1;
}

static int listen_on(const struct sockaddr *sa, socklen_t len, char *why, size_t n)
{
	int one = 1;
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		bs_fmt(why, n, "socket: %s", strerror(errno));
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(fd, sa, len) != 0 || listen(fd, 1024) != 0) {
		bs_fmt(why, n, "%s", strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static int resolve(const char *host, int port, int passive, struct addrinfo **out, char *why,
		   size_t n)
{
	struct addrinfo hints;
	char ps[16];
	int e;
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
	snprintf(ps, sizeof ps, "%d", port);
	if ((e = getaddrinfo(host, ps, &hints, out)) != 0) {
		bs_fmt(why, n, "cannot resolve %s: %s", host, gai_strerror(e));
		return -1;
	}
	return 0;
}

static void set_port(struct sockaddr_storage *ss, int port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
	else
		((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
}

static socklen_t sa_len(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
}

/* The address MK_IFACE names, of the given family (0: IPv4 if it has one,
 * else IPv6), with port.  0, or -1 with why[]. */
static int iface_addr(const char *iface, int family, int port, struct sockaddr_storage *ss,
		      char *why, size_t n)
{
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	struct ifaddrs *all, *i;
	int fams[2] = {family ? family : AF_INET, family ? 0 : AF_INET6};

	memset(ss, 0, sizeof *ss);
	if (!strcmp(iface, "any") || !strcmp(iface, "*")) {
		ss->ss_family = (sa_family_t)(family ? family : AF_INET);
		set_port(ss, port);
		return 0;
	}
	if (inet_pton(AF_INET, iface, &s4->sin_addr) == 1) {
		ss->ss_family = AF_INET;
		set_port(ss, port);
		return 0;
	}
	memset(ss, 0, sizeof *ss);
	if (inet_pton(AF_INET6, iface, &s6->sin6_addr) == 1) {
		ss->ss_family = AF_INET6;
		set_port(ss, port);
		return 0;
	}
	memset(ss, 0, sizeof *ss);
	if (getifaddrs(&all) != 0) {
		bs_fmt(why, n, "MK_IFACE=%s: cannot list the interfaces: %s", iface, strerror(errno));
		return -1;
	}
	for (int f = 0; f < 2 && fams[f]; f++)
		for (i = all; i; i = i->ifa_next)
			if (i->ifa_addr && i->ifa_addr->sa_family == fams[f] &&
			    !strcmp(i->ifa_name, iface)) {
				memcpy(ss, i->ifa_addr, fams[f] == AF_INET ? sizeof *s4 : sizeof *s6);
				if (fams[f] == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr))
					s6->sin6_scope_id = if_nametoindex(iface);
				set_port(ss, port);
				freeifaddrs(all);
				return 0;
			}
	freeifaddrs(all);
	bs_fmt(why, n, "MK_IFACE=%s: no interface of that name with an %s address", iface,
	       family == AF_INET6 ? "IPv6" : family == AF_INET ? "IPv4" : "IP");
	return -1;
}

static void my_hostname(char *buf, size_t n)
{
	if (gethostname(buf, n) != 0)
		snprintf(buf, n, "?");
	buf[n - 1] = 0;
}

/* ---- joining ---------------------------------------------------------------------- */
static mk_status alloc_tables(bootstrap *b)
{
	size_t w = (size_t)b->world;
	b->in = calloc(w, sizeof *b->in);
	b->out = calloc(w, sizeof *b->out);
	b->table = calloc(w, sizeof *b->table);
	if (b->rank == 0)
		b->star = calloc(w, sizeof *b->star);
	if (!b->in || !b->out || !b->table || (b->rank == 0 && !b->star))
		return bs_fail(b, MK_ERR_NOMEM, "out of memory for %d ranks", b->world);
	return MK_OK;
}

static mk_status join_root(bootstrap *b, int64_t deadline)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	char why[256];
	bootstrap_addr me;
	unsigned char *tab;
	int r;

	if (b->cfg.root_fd >= 0) {
		/* the launcher's socket, listening since before we started: no port
		 * to race for */
		b->jfd = b->cfg.root_fd;
		fcntl(b->jfd, F_SETFL, fcntl(b->jfd, F_GETFL) | O_NONBLOCK);
		fcntl(b->jfd, F_SETFD, FD_CLOEXEC);
	} else if (b->world > 1 && b->cfg.iface[0]) {
		if (iface_addr(b->cfg.iface, 0, b->cfg.root_port, &ss, why, sizeof why) != 0)
			return bs_fail(b, MK_ERR_INVALID, "rank 0: %s", why);
		if ((b->jfd = listen_on((struct sockaddr *)&ss, sa_len(&ss), why, sizeof why)) < 0)
			return bs_fail(b, MK_ERR_IO, "rank 0 cannot listen on port %d of %s: %s",
				       b->cfg.root_port, b->cfg.iface, why);
	} else if (b->world > 1) {
		struct addrinfo *ai, *a;
		if (resolve(b->cfg.root_host, b->cfg.root_port, 0, &ai, why, sizeof why))
			return bs_fail(b, MK_ERR_IO, "rank 0: %s", why);
		for (a = ai; a && b->jfd < 0; a = a->ai_next)
			b->jfd = listen_on(a->ai_addr, a->ai_addrlen, why, sizeof why);
		freeaddrinfo(ai);
		/* not every interface in its place: the name may not be this
		 * machine's, and then MK_IFACE says where to listen */
		if (b->jfd < 0)
			return bs_fail(b, MK_ERR_IO, "rank 0 cannot listen on %s:%d: %s (if %s is not "
				       "an address of this machine, set MK_IFACE to the interface or "
				       "address to listen on, or MK_IFACE=any for every interface)",
				       b->cfg.root_host, b->cfg.root_port, why, b->cfg.root_host);
	}
	if (b->jfd >= 0) {
		/* point-to-point listener: beside the join listener, or on MK_IFACE */
		if (getsockname(b->jfd, (struct sockaddr *)&ss, &sl) != 0)
			return bs_fail(b, MK_ERR_IO, "getsockname: %s", strerror(errno));
		if (b->cfg.iface[0] && iface_addr(b->cfg.iface, ss.ss_family, 0, &ss, why,
						  sizeof why) != 0)
			return bs_fail(b, MK_ERR_INVALID, "rank 0: %s", why);
		set_port(&ss, 0);
		b->lfd = listen_on((struct sockaddr *)&ss, sa_len(&ss), why, sizeof why);
		if (b->lfd < 0)
			return bs_fail(b, MK_ERR_IO, "rank 0 cannot listen: %s", why);
	}
	for (;;) {
		int missing = 0, st;
		for (r = 1; r < b->world; r++)
			missing += !b->star[r];
		if (!missing)
			break;
		if ((st = bs_step(b, deadline, NULL)) < 0)
			return b->failed;
		if (st > 0) {
			char list[200] = "";
			size_t len = 0;
			int shown = 0;
			for (r = 1; r < b->world && len < sizeof list - 16; r++)
				if (!b->star[r]) {
					len += (size_t)snprintf(list + len, sizeof list - len, "%s%d",
								shown++ ? ", " : "", r);
				}
			bs_fail(b, MK_ERR_PEER, "timed out after %u ms: %d of %d ranks did not join "
				"rank 0 at %s:%d (missing: %s%s)", b->cfg.timeout_ms, missing,
				b->world, b->cfg.root_host, b->cfg.root_port, list,
				shown < missing ? ", ..." : "");
			bs_broadcast_abort(b, -1);
			return b->failed;
		}
	}
	/* our own entry: the address the others reached us at */
	memset(&me, 0, sizeof me);
	me.family = 4;
	if (b->world > 1) {
		struct sockaddr_storage ls;
		sl = sizeof ss;
		if (getsockname(b->star[1]->fd, (struct sockaddr *)&ss, &sl) != 0 ||
		    sa_to_addr(&ss, &me) != 0)
			return bs_fail(b, MK_ERR_IO, "getsockname: %s", strerror(errno));
		sl = sizeof ls;
		if (getsockname(b->lfd, (struct sockaddr *)&ls, &sl) == 0) {
			bootstrap_addr l;
			if (sa_to_addr(&ls, &l) == 0)
				me.port = l.port;
		}
	}
	me.host_id = b->cfg.host_id;
	my_hostname(me.host, sizeof me.host);
	b->table[0] = me;
	if (b->jfd >= 0) {
		close(b->jfd);   /* nobody else may join */
		b->jfd = -1;
	}
	if (!(tab = malloc(BOOTSTRAP_WELCOME_WIRE(b->world))))
		return bs_fail(b, MK_ERR_NOMEM, "out of memory");
	for (r = 0; r < b->world; r++)
		bootstrap_addr_put(tab + (size_t)r * BOOTSTRAP_ADDR_WIRE, &b->table[r]);
	for (r = 1; r < b->world; r++) {
		/* the session key, sealed for this rank's connection alone */
		unsigned char *seal = tab + (size_t)b->world * BOOTSTRAP_ADDR_WIRE;
		bs_session_pad(b->cfg.key, r, b->star[r]->na, b->star[r]->nc, seal);
		for (int i = 0; i < BOOTSTRAP_KEY; i++)
			seal[i] ^= b->session[i];
		if (bs_send_frame(b, b->star[r], BOOTSTRAP_WELCOME, 0, tab,
				  BOOTSTRAP_WELCOME_WIRE(b->world), deadline) != MK_OK)
			break;
	}
	memset(tab, 0, BOOTSTRAP_WELCOME_WIRE(b->world));
	free(tab);
	return b->failed;
}

static mk_status join_rank(bootstrap *b, int64_t deadline)
{
	struct addrinfo *ai, *a;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	unsigned char hello[BOOTSTRAP_HELLO_WIRE];
	bootstrap_addr me;
	char why[256] = "";
	int fd = -1, st;
	frame *f;

	if (resolve(b->cfg.root_host, b->cfg.root_port, 0, &ai, why, sizeof why))
		return bs_fail(b, MK_ERR_IO, "rank %d: %s", b->rank, why);
	/* every address of the root in turn, until the deadline */
	while (fd < 0 && bs_now_ms() < deadline) {
		for (a = ai; a && fd < 0; a = a->ai_next) {
			int64_t slice = bs_now_ms() + 2000;
			fd = bs_connect_to(a->ai_addr, a->ai_addrlen,
					   a->ai_next && slice < deadline ? slice : deadline, why,
					   sizeof why);
		}
	}
	freeaddrinfo(ai);
	if (fd < 0)
		return bs_fail(b, MK_ERR_PEER, "rank %d cannot reach rank 0 at %s:%d within %u ms: %s",
			       b->rank, b->cfg.root_host, b->cfg.root_port, b->cfg.timeout_ms, why);
	if (!(b->root = bs_conn_new(fd, C_ROOT, 0))) {
		close(fd);
		return bs_fail(b, MK_ERR_NOMEM, "out of memory");
	}
	/* listen on the interface that reaches rank 0, or on MK_IFACE */
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0)
		return bs_fail(b, MK_ERR_IO, "getsockname: %s", strerror(errno));
	if (b->cfg.iface[0] && iface_addr(b->cfg.iface, ss.ss_family, 0, &ss, why, sizeof why) != 0)
		return bs_fail(b, MK_ERR_INVALID, "rank %d: %s", b->rank, why);
	set_port(&ss, 0);
	if ((b->lfd = listen_on((struct sockaddr *)&ss, sa_len(&ss), why, sizeof why)) < 0)
		return bs_fail(b, MK_ERR_IO, "rank %d cannot listen: %s", b->rank, why);
	sl = sizeof ss;
	if (getsockname(b->lfd, (struct sockaddr *)&ss, &sl) != 0 || sa_to_addr(&ss, &me) != 0)
		return bs_fail(b, MK_ERR_IO, "getsockname: %s", strerror(errno));
	me.host_id = b->cfg.host_id;
	memset(me.host, 0, sizeof me.host);
	my_hostname(me.host, sizeof me.host);
	le_put32(hello, (uint32_t)b->world);
	bootstrap_addr_put(hello + 4, &me);
	if (bs_handshake(b, b->root, hello, deadline) != MK_OK)
		return b->failed;
	while (!(f = bs_take_conn(b, b->root, BOOTSTRAP_WELCOME, 0))) {
		if ((st = bs_step(b, deadline, NULL)) < 0)
			return b->failed;
		if (st > 0)
			return bs_fail(b, MK_ERR_PEER, "rank %d timed out after %u ms waiting for the "
				       "others to join at rank 0 (%s:%d)", b->rank, b->cfg.timeout_ms,
				       b->cfg.root_host, b->cfg.root_port);
	}
	for (int r = 0; r < b->world; r++)
		bootstrap_addr_get(f->buf + BOOTSTRAP_HDR + (size_t)r * BOOTSTRAP_ADDR_WIRE,
				   &b->table[r]);
	{
		const unsigned char *seal = f->buf + BOOTSTRAP_HDR + (size_t)b->world *
					    BOOTSTRAP_ADDR_WIRE;
		bs_session_pad(b->cfg.key, b->rank, b->root->na, b->root->nc, b->session);
		for (int i = 0; i < BOOTSTRAP_KEY; i++)
			b->session[i] ^= seal[i];
		b->have_session = 1;
	}
	free(f->buf);
	free(f);
	return MK_OK;
}

mk_status bs_handshake(bootstrap *b, conn *c, const unsigned char *hello, int64_t deadline)
{
	const int p2p = c->kind == C_OUT;
	const unsigned char *key = p2p ? b->session : b->cfg.key;
	const uint32_t type = p2p ? BOOTSTRAP_PEER_HELLO : BOOTSTRAP_HELLO;
	const size_t len = p2p ? BOOTSTRAP_PEER_HELLO_WIRE : BOOTSTRAP_HELLO_WIRE;
	unsigned char buf[BOOTSTRAP_HDR + BOOTSTRAP_HELLO_WIRE], want[BOOTSTRAP_MAC];
	frame *f;
	int st;

	if (p2p && !b->have_session)
		return bs_fail(b, MK_ERR_STATE, "rank %d: no session key yet", b->rank);
	/* 1. the acceptor's challenge */
	while (!(f = bs_take_conn(b, c, BOOTSTRAP_CHALLENGE, 0))) {
		if (c->closed)
			return bs_fail(b, MK_ERR_PEER, "rank %d (host %s) closed the connection before "
				       "the handshake", c->rank, bs_host_of(b, c->rank));
		if ((st = bs_step(b, deadline, NULL)) < 0)
			return b->failed;
		if (st > 0)
			return bs_fail(b, MK_ERR_PEER, "rank %d (host %s) did not start the handshake "
				       "within %u ms", c->rank, bs_host_of(b, c->rank),
				       b->cfg.timeout_ms);
	}
	memcpy(c->na, f->buf + BOOTSTRAP_HDR, BOOTSTRAP_NONCE);
	free(f->buf);
	free(f);
	/* 2. our hello, with our nonce and the MAC over both and the frame */
	if (bs_random(c->nc, sizeof c->nc) != 0)
		return bs_fail(b, MK_ERR_IO, "no random bytes from the OS (getrandom: %s)",
			       strerror(errno));
	bootstrap_header(buf, type, b->rank, 0, (uint32_t)len);
	if (!p2p)
		memcpy(buf + BOOTSTRAP_HDR, hello, len - BOOTSTRAP_NONCE - BOOTSTRAP_MAC);
	memcpy(buf + BOOTSTRAP_HDR + len - BOOTSTRAP_NONCE - BOOTSTRAP_MAC, c->nc, BOOTSTRAP_NONCE);
	bs_hello_mac(key, type, c->rank, c->na, buf, BOOTSTRAP_HDR + len - BOOTSTRAP_MAC,
		     buf + BOOTSTRAP_HDR + len - BOOTSTRAP_MAC);
	if (bs_send_frame(b, c, type, 0, buf + BOOTSTRAP_HDR, len, deadline) != MK_OK)
		return b->failed;
	/* 3. the acceptor's proof, before we say anything else */
	while (!(f = bs_take_conn(b, c, BOOTSTRAP_ACCEPT, 0))) {
		if (c->closed)
			return bs_fail(b, MK_ERR_PEER, "rank %d (host %s) closed the connection during "
				       "the handshake", c->rank, bs_host_of(b, c->rank));
		if ((st = bs_step(b, deadline, NULL)) < 0)
			return b->failed;
		if (st > 0)
			return bs_fail(b, MK_ERR_PEER, "rank %d (host %s) did not finish the handshake "
				       "within %u ms", c->rank, bs_host_of(b, c->rank),
				       b->cfg.timeout_ms);
	}
	bs_accept_mac(key, p2p, c->rank, b->rank, c->na, c->nc, want);
	st = bs_equal(want, f->buf + BOOTSTRAP_HDR, BOOTSTRAP_MAC);
	free(f->buf);
	free(f);
	if (!st) {
		if (p2p)
			return bs_fail(b, MK_ERR_PEER, "the listener of rank %d (host %s) did not prove "
				       "it is that rank: another process holds its port?", c->rank,
				       bs_host_of(b, c->rank));
		return bs_fail(b, MK_ERR_PEER, "rank %d: whoever listens at %s:%d did not prove it is "
			       "this job's rank 0 (another MK_JOB_TOKEN, or another process holds "
			       "the port)", b->rank, b->cfg.root_host, b->cfg.root_port);
	}
	c->authed = 1;
	return MK_OK;
}

static mk_status find_locals(bootstrap *b)
{
	uint64_t me = b->table[b->rank].host_id;
	int n = 0;
	for (int r = 0; r < b->world; r++)
		n += b->table[r].host_id == me;
	if (!(b->locals = malloc((size_t)n * sizeof *b->locals)))
		return bs_fail(b, MK_ERR_NOMEM, "out of memory");
	b->local_world = n;
	n = 0;
	for (int r = 0; r < b->world; r++)
		if (b->table[r].host_id == me) {
			if (r == b->rank)
				b->local_rank = n;
			b->locals[n++] = r;
		}
	return MK_OK;
}

mk_status bootstrap_create(const bootstrap_cfg *cfg, bootstrap **out, char *err, size_t n)
{
	bootstrap *b;
	int64_t deadline;
	mk_status st;

	*out = NULL;
	static const unsigned char zero[BOOTSTRAP_KEY];
	if (!cfg || cfg->world < 1 || cfg->world > BOOTSTRAP_MAX_WORLD || cfg->rank < 0 ||
	    cfg->rank >= cfg->world || !memcmp(cfg->key, zero, BOOTSTRAP_KEY) || !cfg->timeout_ms) {
		bs_fmt(err, n, "bootstrap: invalid configuration");
		if (cfg && cfg->root_fd >= 0)
			close(cfg->root_fd);
		return MK_ERR_INVALID;
	}
	if (!(b = calloc(1, sizeof *b))) {
		bs_fmt(err, n, "out of memory");
		if (cfg->root_fd >= 0)
			close(cfg->root_fd);
		return MK_ERR_NOMEM;
	}
	b->cfg = *cfg;
	if (cfg->rank != 0 && cfg->root_fd >= 0) {
		close(cfg->root_fd);
		b->cfg.root_fd = -1;
	}
	b->rank = cfg->rank;
	b->world = cfg->world;
	b->jfd = b->lfd = -1;
	b->selft = &b->self;
	b->mem_max = cfg->max_mem ? cfg->max_mem : BOOTSTRAP_MEM_MAX;
	deadline = bs_now_ms() + cfg->timeout_ms;
	st = alloc_tables(b);
	if (st == MK_OK && b->rank == 0) {
		/* the key of point-to-point connections: only for those who join */
		if (bs_random(b->session, sizeof b->session) != 0)
			st = bs_fail(b, MK_ERR_IO, "no random bytes from the OS (getrandom: %s)",
				     strerror(errno));
		b->have_session = 1;
	}
	if (st == MK_OK)
		st = b->rank == 0 ? join_root(b, deadline) : join_rank(b, deadline);
	b->cfg.root_fd = -1;   /* taken over as jfd, closed with it */
	if (st == MK_OK && b->world == 1) {
		b->table[0].host_id = cfg->host_id;
		my_hostname(b->table[0].host, sizeof b->table[0].host);
	}
	if (st == MK_OK)
		st = find_locals(b);
	if (st != MK_OK) {
		bs_fmt(err, n, "%s", b->err);
		bootstrap_destroy(b);
		return st;
	}
	*out = b;
	return MK_OK;
}

/* Closes one connection cleanly: a BYE, then no more writes. */
static void say_bye(bootstrap *b, conn *c)
{
	if (!c || c->closed || c->fd < 0)
		return;
	bs_send_now(c->fd, BOOTSTRAP_BYE, b->rank, 0, 0, NULL);
	shutdown(c->fd, SHUT_WR);
}

void bootstrap_destroy(bootstrap *b)
{
	int64_t until;
	if (!b)
		return;
	/* BYE everywhere, then read until the peers close too (briefly), so that
	 * nothing unread makes close() reset a connection a peer still reads. */
	say_bye(b, b->root);
	for (int r = 0; b->in && r < b->world; r++) {
		say_bye(b, b->star ? b->star[r] : NULL);
		say_bye(b, b->in[r]);
		say_bye(b, b->out[r]);
	}
	until = bs_now_ms() + LINGER_MS;
	for (;;) {
		struct pollfd p[256];
		int np = 0;
		conn *cs[256];
		for (int r = -1; b->in && r < b->world && np < 253; r++) {
			conn *c3[3] = {r < 0 ? b->root : b->star ? b->star[r] : NULL,
				       r < 0 ? NULL : b->in[r], r < 0 ? NULL : b->out[r]};
			for (int j = 0; j < 3; j++)
				if (c3[j] && !c3[j]->closed && c3[j]->fd >= 0) {
					p[np].fd = c3[j]->fd;
					p[np].events = POLLIN;
					p[np].revents = 0;
					cs[np++] = c3[j];
				}
		}
		int64_t left = until - bs_now_ms();
		if (!np || left <= 0 || poll(p, (nfds_t)np, (int)left) <= 0)
			break;
		for (int i = 0; i < np; i++) {
			char sink[4096];
			if (!p[i].revents)
				continue;
			if (recv(cs[i]->fd, sink, sizeof sink, MSG_DONTWAIT) <= 0 &&
			    errno != EAGAIN) {
				close(cs[i]->fd);
				cs[i]->fd = -1;
				cs[i]->closed = 1;
			}
		}
	}
	bs_conn_free(b, b->root);
	for (int r = 0; b->in && r < b->world; r++) {
		bs_conn_free(b, b->star ? b->star[r] : NULL);
		bs_conn_free(b, b->in[r]);
		bs_conn_free(b, b->out[r]);
	}
	for (int i = 0; i < b->npend; i++)
		bs_conn_free(b, b->pend[i]);
	if (b->jfd >= 0)
		close(b->jfd);
	if (b->lfd >= 0)
		close(b->lfd);
	bs_free_frames(b->self);
	free(b->star);
	free(b->in);
	free(b->out);
	free(b->table);
	free(b->locals);
	free(b->pfd);
	free(b->pconn);
	memset(b->session, 0, sizeof b->session);
	memset(b->cfg.key, 0, sizeof b->cfg.key);
	free(b);
}

int bootstrap_rank(const bootstrap *b) { return b->rank; }
int bootstrap_world(const bootstrap *b) { return b->world; }
int bootstrap_local_rank(const bootstrap *b) { return b->local_rank; }
int bootstrap_local_world(const bootstrap *b) { return b->local_world; }
uint64_t bootstrap_job_id(const bootstrap *b)
{
	static const unsigned char zero[BOOTSTRAP_NONCE];
	unsigned char m[BOOTSTRAP_MAC];
	uint64_t id;
	bootstrap_mac(b->session, "mk job id", 0, zero, NULL, 0, m);
	id = le_get64(m);
	return id ? id : 1;
}
unsigned bootstrap_timeout_ms(const bootstrap *b) { return b->cfg.timeout_ms; }
const char *bootstrap_error(const bootstrap *b) { return b ? b->err : ""; }

int bootstrap_local_to_global(const bootstrap *b, int i)
{
	return i >= 0 && i < b->local_world ? b->locals[i] : -1;
}

uint64_t bootstrap_host_of(const bootstrap *b, int rank)
{
	return rank >= 0 && rank < b->world ? b->table[rank].host_id : 0;
}

const char *bootstrap_hostname_of(const bootstrap *b, int rank)
{
	return bs_host_of(b, rank);
}

