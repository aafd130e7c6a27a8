/* bootstrap_loop.c - the bootstrap's connections and the loop that drives
 * them; joining (bootstrap_join.c) and the collectives (bootstrap_coll.c) are
 * built on it.
 *
 * Everything is non-blocking and driven by one loop, bs_step(): it polls every
 * connection and listener, assembles frames as bytes arrive (header first,
 * checked before the payload is read or allocated), queues complete frames
 * on their connection, and writes the one outgoing frame the caller is
 * sending.  An operation is "send what I must, then bs_step() until the frame
 * I want is queued or the deadline passes", so a slow or silent peer never
 * blocks the others, and two ranks sending large messages to each other at
 * once both make progress.
 *
 * Connections: a non-root rank has one to rank 0 (`root`); rank 0 has one
 * from each rank (`star`).  Point-to-point traffic uses `out[p]` (opened by
 * us to p's listener, we only write) and `in[p]` (opened by p, we only
 * read).  A connection we accept is pending until its hello (HELLO on the
 * root listener, PEER_HELLO on the point-to-point one) proves it knows the
 * key (bootstrap_int.h has the handshake); a stranger is refused, always
 * alike and late.  A close without a BYE is a crash: the operation fails
 * naming the rank, and rank 0 sends ABORT to everyone so that nobody waits
 * it out.
 */
#include "bootstrap_int.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/le.h"

/* ---- connections ------------------------------------------------------------ */
int64_t bs_now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

const char *bs_host_of(const bootstrap *b, int r)
{
	return b->table && r >= 0 && r < b->world && b->table[r].host[0] ? b->table[r].host : "?";
}

mk_status bs_fail(bootstrap *b, mk_status st, const char *f, ...)
{
	va_list ap;
	if (b->failed)
		return b->failed;   /* the first failure is the story */
	va_start(ap, f);
	vsnprintf(b->err, sizeof b->err, f, ap);
	va_end(ap);
	b->failed = st;
	return st;
}

mk_status bs_oops(bootstrap *b, mk_status st, const char *f, ...)
{
	va_list ap;
	va_start(ap, f);
	vsnprintf(b->err, sizeof b->err, f, ap);
	va_end(ap);
	return st;
}

void bs_free_frames(frame *f)
{
	while (f) {
		frame *n = f->next;
		free(f->buf);
		free(f);
		f = n;
	}
}

/* What connections hold (frames being read and queued) is counted per
 * connection and in all, and capped both ways (rx). */
static void hold(bootstrap *b, conn *c, size_t n)
{
	c->held += n;
	b->mem += n;
}

static void release(bootstrap *b, conn *c, size_t n)
{
	c->held -= n;
	b->mem -= n;
}

void bs_conn_free(bootstrap *b, conn *c)
{
	if (!c)
		return;
	if (c->fd >= 0)
		close(c->fd);
	b->mem -= c->held;
	free(c->buf);
	bs_free_frames(c->q);
	free(c);
}

conn *bs_conn_new(int fd, int kind, int rank)
{
	conn *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->fd = fd;
	c->kind = kind;
	c->rank = rank;
	c->born = bs_now_ms();
	c->qt = &c->q;
	return c;
}

static void sock_opts(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int bs_send_raw(int fd, uint32_t type, int rank, uint32_t tag, const void *pay, size_t len)
{
	unsigned char buf[BOOTSTRAP_HDR + 4 + BOOTSTRAP_TEXT];
	if (len > sizeof buf - BOOTSTRAP_HDR)
		return -1;
	bootstrap_header(buf, type, rank, tag, (uint32_t)len);
	if (len)
		memcpy(buf + BOOTSTRAP_HDR, pay, len);
	return send(fd, buf, BOOTSTRAP_HDR + len, MSG_NOSIGNAL | MSG_DONTWAIT) ==
	       (ssize_t)(BOOTSTRAP_HDR + len) ? 0 : -1;
}

void bs_send_now(int fd, uint32_t type, int rank, uint32_t tag, int32_t about, const char *text)
{
	unsigned char pay[4 + BOOTSTRAP_TEXT];
	size_t len = 0;
	if (type == BOOTSTRAP_REJECT || type == BOOTSTRAP_ABORT) {
		size_t tl = text ? strlen(text) : 0;
		if (tl > BOOTSTRAP_TEXT)
			tl = BOOTSTRAP_TEXT;
		le_put32(pay, (uint32_t)about);
		if (tl)
			memcpy(pay + 4, text, tl);
		len = 4 + tl;
	}
	/* best effort: the peer may be gone already */
	(void)bs_send_raw(fd, type, rank, tag, pay, len);
}

void bs_broadcast_abort(bootstrap *b, int about)
{
	if (b->rank != 0 || b->abort_sent || !b->star)
		return;
	b->abort_sent = 1;
	for (int r = 1; r < b->world; r++)
		if (b->star[r] && !b->star[r]->closed && r != about)
			bs_send_now(b->star[r]->fd, BOOTSTRAP_ABORT, 0, 0, about, b->err);
}

static mk_status peer_lost(bootstrap *b, conn *c, const char *how)
{
	mk_status st = bs_fail(b, MK_ERR_PEER, "rank %d (host %s) disappeared: %s", c->rank,
			       bs_host_of(b, c->rank), how);
	bs_broadcast_abort(b, c->rank);
	return st;
}

/* ---- frames arriving ---------------------------------------------------------- */
static void drop_pending(bootstrap *b, int i)
{
	bs_conn_free(b, b->pend[i]);
	b->pend[i] = b->pend[--b->npend];
}

/* A connection that has not proved itself is refused, always alike: it is
 * no longer read, and gets the one REJECT text only after
 * BOOTSTRAP_REFUSE_MS (bs_step), so that a stranger learns nothing from the
 * answer, or its timing, and guessing is slow. */
static void refuse(bootstrap *b, conn *c)
{
	if (c->buf) {
		release(b, c, c->need);
		free(c->buf);
		c->buf = NULL;
	}
	c->hhave = 0;
	c->refused = bs_now_ms();
}

/* To one that has proved itself (it is of this job), the real reason. */
static void reject(conn *c, int rank, int reason, const char *why)
{
	bs_send_now(c->fd, BOOTSTRAP_REJECT, rank, 0, reason, why);
}

/* A pending connection's hello, complete in c->buf and shaped right (rx
 * checked the header, deliver the payload).  Returns 1 when adopted, 0
 * when refused (kept until its REJECT), -1 to drop it now. */
static int adopt(bootstrap *b, conn *c, const bootstrap_msg *m)
{
	const int p2p = c->kind == C_PEND_P2P;
	const unsigned char *key = p2p ? b->session : b->cfg.key;
	unsigned char mac[BOOTSTRAP_MAC];
	char why[BOOTSTRAP_TEXT];

	if (m->type != (p2p ? BOOTSTRAP_PEER_HELLO : BOOTSTRAP_HELLO)) {
		refuse(b, c);
		return 0;
	}
	bs_hello_mac(key, m->type, b->rank, c->na, c->buf, c->need - BOOTSTRAP_MAC, mac);
	if (!bs_equal(mac, m->mac, BOOTSTRAP_MAC)) {
		refuse(b, c);
		return 0;
	}
	/* from here on it is one of the job's ranks, or the key has leaked */
	memcpy(c->nc, m->nonce, BOOTSTRAP_NONCE);
	if (!p2p) {
		if ((int)m->world != b->world) {
			snprintf(why, sizeof why, "rank %d says the world has %u ranks, rank 0 says %d",
				 m->rank, m->world, b->world);
			reject(c, b->rank, 2, why);
			return -1;
		}
		if (b->star[m->rank]) {
			snprintf(why, sizeof why, "rank %d has already joined", m->rank);
			reject(c, b->rank, 3, why);
			return -1;
		}
	} else if (m->rank == b->rank || b->in[m->rank]) {
		snprintf(why, sizeof why, "rank %d is already connected to rank %d", m->rank, b->rank);
		reject(c, b->rank, 3, why);
		return -1;
	}
	bs_accept_mac(key, p2p, b->rank, m->rank, c->na, c->nc, mac);
	if (bs_send_raw(c->fd, BOOTSTRAP_ACCEPT, b->rank, 0, mac, sizeof mac) != 0)
		return -1;
	c->authed = 1;
	c->rank = m->rank;
	if (p2p) {
		c->kind = C_IN;
		b->in[m->rank] = c;
	} else {
		c->kind = C_STAR;
		b->star[m->rank] = c;
		b->table[m->rank] = m->addr;
	}
	return 1;
}

/* A complete frame in c->buf.  Returns 0; 1 when a pending connection was
 * adopted; -1 when the connection is to be dropped (pending) or the
 * bootstrap failed (b->failed). */
static int deliver(bootstrap *b, conn *c, int pending_index)
{
	bootstrap_msg m;
	char why[256];
	frame *f;

	if (bootstrap_parse(c->buf, c->need, b->world, &m, why, sizeof why)) {
		if (c->rank < 0) {
			refuse(b, c);
			return 0;
		}
		bs_fail(b, MK_ERR_PEER, "rank %d (host %s) sent a bad message: %s", c->rank,
			bs_host_of(b, c->rank), why);
		bs_broadcast_abort(b, -1);
		return -1;
	}
	if (c->rank < 0) {
		int r;
		if (c->kind == C_PEND_P2P && !b->have_session)
			return 0;   /* parked until WELCOME gives us the key (bs_step) */
		r = adopt(b, c, &m);
		if (c->buf) {
			release(b, c, c->need);
			free(c->buf);
			c->buf = NULL;
		}
		if (r <= 0)
			return r;
		b->pend[pending_index] = b->pend[--b->npend];
		return 1;
	}
	if (m.rank != c->rank) {
		bs_fail(b, MK_ERR_PEER, "the connection of rank %d carried a %s from rank %d", c->rank,
			bs_type_name(m.type), m.rank);
		return -1;
	}
	/* on a connection we opened, before the acceptor's proof: its challenge
	 * once, then its ACCEPT; a REJECT, ABORT or BYE; nothing else */
	if (!c->authed && c->hs < 2 && m.type != BOOTSTRAP_REJECT && m.type != BOOTSTRAP_ABORT &&
	    m.type != BOOTSTRAP_BYE &&
	    !(m.type == BOOTSTRAP_CHALLENGE && c->hs == 0) &&
	    !(m.type == BOOTSTRAP_ACCEPT && c->hs == 1)) {
		bs_fail(b, MK_ERR_PEER, "rank %d (host %s) sent a %s before proving itself", c->rank,
			bs_host_of(b, c->rank), bs_type_name(m.type));
		return -1;
	}
	switch (m.type) {
	case BOOTSTRAP_ABORT:
		if (m.about >= 0)
			bs_fail(b, MK_ERR_PEER, "rank %d failed (reported by rank %d): %s", m.about,
				m.rank, m.text);
		else
			bs_fail(b, MK_ERR_PEER, "the job failed (reported by rank %d): %s", m.rank, m.text);
		return -1;
	case BOOTSTRAP_REJECT:
		if (c->kind == C_ROOT)
			bs_fail(b, MK_ERR_PEER, "rank 0 (%s:%d) refused this rank (%d): %s",
				b->cfg.root_host, b->cfg.root_port, b->rank, m.text);
		else
			bs_fail(b, MK_ERR_PEER, "rank %d (host %s) refused this rank (%d): %s", m.rank,
				bs_host_of(b, m.rank), b->rank, m.text);
		return -1;
	case BOOTSTRAP_BYE:
		c->bye = 1;
		release(b, c, c->need);
		free(c->buf);
		c->buf = NULL;
		return 0;
	case BOOTSTRAP_HELLO:
	case BOOTSTRAP_PEER_HELLO:
		bs_fail(b, MK_ERR_PEER, "rank %d said hello twice", c->rank);
		return -1;
	case BOOTSTRAP_CHALLENGE:
	case BOOTSTRAP_ACCEPT:
		if (c->authed || (c->kind != C_ROOT && c->kind != C_OUT)) {
			bs_fail(b, MK_ERR_PEER, "rank %d (host %s) sent a %s out of turn", c->rank,
				bs_host_of(b, c->rank), bs_type_name(m.type));
			return -1;
		}
		c->hs++;   /* queued for bs_handshake */
		break;
	default:
		break;
	}
	if (!(f = calloc(1, sizeof *f))) {
		bs_fail(b, MK_ERR_NOMEM, "out of memory queueing a message from rank %d", c->rank);
		return -1;
	}
	f->type = m.type;
	f->tag = m.tag;
	f->len = m.len;
	f->buf = c->buf;   /* still held: released when taken */
	c->buf = NULL;
	*c->qt = f;
	c->qt = &f->next;
	return 0;
}

/* The header of a frame from c is in c->hdr: may its payload be read?
 * Before a connection proves itself it may send only its hello, of the
 * hello's size, so a stranger makes us hold a few hundred bytes at most;
 * after, what it and all connections leave unread is capped.  Returns 0,
 * or -1 (refused if pending, else b->failed). */
static int admit(bootstrap *b, conn *c, const bootstrap_msg *m)
{
	size_t need = BOOTSTRAP_HDR + (size_t)m->len;
	if (c->rank < 0) {
		uint32_t want = c->kind == C_PEND_P2P ? BOOTSTRAP_PEER_HELLO : BOOTSTRAP_HELLO;
		size_t wl = c->kind == C_PEND_P2P ? BOOTSTRAP_PEER_HELLO_WIRE : BOOTSTRAP_HELLO_WIRE;
		if (m->type != want || m->len != wl) {
			refuse(b, c);
			return -1;
		}
		return 0;
	}
	if (c->held + need > BOOTSTRAP_QUEUE_MAX) {
		bs_fail(b, MK_ERR_PEER, "rank %d (host %s) sent more than %zu bytes nobody has read",
			c->rank, bs_host_of(b, c->rank), (size_t)BOOTSTRAP_QUEUE_MAX);
		bs_broadcast_abort(b, c->rank);
		return -1;
	}
	if (b->mem + need > b->mem_max) {
		bs_fail(b, MK_ERR_PEER, "a %s of %u bytes from rank %d (host %s) would make %zu bytes "
			"from all ranks that nobody has read, over the maximum of %zu",
			bs_type_name(m->type), m->len, c->rank, bs_host_of(b, c->rank), b->mem + need,
			b->mem_max);
		bs_broadcast_abort(b, c->rank);
		return -1;
	}
	return 0;
}

/* Reads what is there.  Returns 0; 1 when a pending connection was
 * adopted; -1 to drop a pending connection; sets b->failed on an
 * established one. */
static int rx(bootstrap *b, conn *c, int pending_index)
{
	while (!c->refused) {
		ssize_t k;
		if (!c->buf) {
			k = recv(c->fd, c->hdr + c->hhave, BOOTSTRAP_HDR - c->hhave, 0);
		} else if (c->have < c->need) {
			k = recv(c->fd, c->buf + c->have, c->need - c->have, 0);
		} else {
			return 0;   /* a parked hello: nothing more is read */
		}
		if (k < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			if (c->rank < 0)
				return -1;
			peer_lost(b, c, strerror(errno));
			return -1;
		}
		if (k == 0) {
			if (c->rank < 0)
				return -1;
			if (c->bye && !c->buf && !c->hhave) {
				c->closed = 1;
				close(c->fd);
				c->fd = -1;
				return 0;
			}
			peer_lost(b, c, c->hhave || c->buf ? "connection closed in the middle of a message"
							   : "connection closed");
			return -1;
		}
		if (!c->buf) {
			bootstrap_msg m;
			char why[256];
			c->hhave += (size_t)k;
			if (c->hhave < BOOTSTRAP_HDR)
				continue;
			c->hhave = 0;
			if (bootstrap_parse_header(c->hdr, BOOTSTRAP_HDR, b->world, &m, why,
						   sizeof why) != MK_OK) {
				if (c->rank < 0) {
					refuse(b, c);
					return 0;
				}
				bs_fail(b, MK_ERR_PEER, "rank %d (host %s) sent a bad message: %s",
					c->rank, bs_host_of(b, c->rank), why);
				bs_broadcast_abort(b, -1);
				return -1;
			}
			if (admit(b, c, &m) != 0)
				return c->rank < 0 ? 0 : -1;
			c->need = BOOTSTRAP_HDR + (size_t)m.len;
			c->have = BOOTSTRAP_HDR;
			if (!(c->buf = malloc(c->need))) {
				if (c->rank < 0)
					return -1;
				bs_fail(b, MK_ERR_NOMEM, "out of memory reading %zu bytes from rank %d",
					c->need, c->rank);
				return -1;
			}
			hold(b, c, c->need);
			memcpy(c->buf, c->hdr, BOOTSTRAP_HDR);
		} else {
			c->have += (size_t)k;
		}
		if (c->buf && c->have == c->need) {
			int r = deliver(b, c, pending_index);
			if (r != 0)
				return r;
		}
	}
	return 0;
}

static void accept_all(bootstrap *b, int lfd, int kind)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		conn *c;
		if (fd < 0)
			return;
		sock_opts(fd);
		if (b->npend == MAX_PENDING) {
			/* full: a refused one goes first (told now), else the oldest */
			int victim = 0;
			for (int i = 1; i < b->npend; i++) {
				conn *v = b->pend[victim], *p = b->pend[i];
				if ((p->refused != 0) > (v->refused != 0) ||
				    ((p->refused != 0) == (v->refused != 0) && p->born < v->born))
					victim = i;
			}
			if (b->pend[victim]->refused)
				bs_send_now(b->pend[victim]->fd, BOOTSTRAP_REJECT, b->rank, 0, 1,
					    BOOTSTRAP_REFUSED);
			drop_pending(b, victim);
		}
		if (!(c = bs_conn_new(fd, kind, -1))) {
			close(fd);
			return;
		}
		/* the challenge first: a fresh nonce for this connection only */
		if (bs_random(c->na, sizeof c->na) != 0 ||
		    bs_send_raw(fd, BOOTSTRAP_CHALLENGE, b->rank, 0, c->na, sizeof c->na) != 0) {
			bs_conn_free(b, c);
			continue;
		}
		b->pend[b->npend++] = c;
	}
}

/* ---- the loop ------------------------------------------------------------------ */

static int add_pfd(bootstrap *b, size_t *n, int fd, short ev, conn *c)
{
	if (*n == b->npfd_cap) {
		size_t cap = b->npfd_cap ? 2 * b->npfd_cap : 64;
		struct pollfd *p = realloc(b->pfd, cap * sizeof *p);
		conn **q;
		if (!p)
			return -1;
		b->pfd = p;
		if (!(q = realloc(b->pconn, cap * sizeof *q)))
			return -1;
		b->pconn = q;
		b->npfd_cap = cap;
	}
	b->pfd[*n].fd = fd;
	b->pfd[*n].events = ev;
	b->pfd[*n].revents = 0;
	b->pconn[*n] = c;
	(*n)++;
	return 0;
}

/* Pending connections: refused ones get their REJECT when their time is up,
 * silent ones are dropped, parked hellos are taken once the session key is
 * known.  Returns -1 when the bootstrap failed. */
static int tend_pending(bootstrap *b)
{
	int64_t now = bs_now_ms();
	for (int j = 0; j < b->npend;) {
		conn *c = b->pend[j];
		if (c->refused && now - c->refused >= BOOTSTRAP_REFUSE_MS) {
			bs_send_now(c->fd, BOOTSTRAP_REJECT, b->rank, 0, 1, BOOTSTRAP_REFUSED);
			drop_pending(b, j);
		} else if (!c->refused && now - c->born > PENDING_MS) {
			drop_pending(b, j);
		} else if (!c->refused && c->buf && c->have == c->need && b->have_session) {
			int r = deliver(b, c, j);
			if (r < 0)
				drop_pending(b, j);
			if (b->failed)
				return -1;
			if (r == 0)
				j++;
		} else {
			j++;
		}
	}
	return 0;
}

int bs_step(bootstrap *b, int64_t deadline, wjob *w)
{
	size_t n = 0, i;
	int64_t left = deadline - bs_now_ms();
	int k, bad = 0;

	if (b->failed)
		return -1;
	if (left <= 0)
		return 1;
	if (b->jfd >= 0)
		bad |= add_pfd(b, &n, b->jfd, POLLIN, NULL);
	if (b->lfd >= 0)
		bad |= add_pfd(b, &n, b->lfd, POLLIN, NULL);
	if (b->root && !b->root->closed)
		bad |= add_pfd(b, &n, b->root->fd, POLLIN, b->root);
	for (int r = 0; r < b->world; r++) {
		conn *cs[3] = {b->star ? b->star[r] : NULL, b->in[r], b->out[r]};
		for (int j = 0; j < 3; j++)
			if (cs[j] && !cs[j]->closed)
				bad |= add_pfd(b, &n, cs[j]->fd, POLLIN, cs[j]);
	}
	for (int j = 0; j < b->npend; j++) {
		conn *c = b->pend[j];
		if (c->refused) {
			/* not read any more; wake up when its REJECT is due */
			int64_t due = c->refused + BOOTSTRAP_REFUSE_MS - bs_now_ms();
			if (due < left)
				left = due > 0 ? due : 0;
		} else if (!(c->buf && c->have == c->need)) {
			bad |= add_pfd(b, &n, c->fd, POLLIN, c);
		}
	}
	if (bad)
		return bs_fail(b, MK_ERR_NOMEM, "out of memory"), -1;
	if (w && w->done < w->len) {
		for (i = 0; i < n; i++)
			if (b->pconn[i] == w->c)
				b->pfd[i].events |= POLLOUT;
	}
	if (left > 1000)
		left = 1000;   /* to expire pending connections */
	k = poll(b->pfd, n, (int)left);
	if (k < 0 && errno != EINTR)
		return bs_fail(b, MK_ERR_IO, "poll: %s", strerror(errno)), -1;
	for (i = 0; k > 0 && i < n; i++) {
		conn *c = b->pconn[i];
		short re = b->pfd[i].revents;
		if (!re)
			continue;
		if (!c) {
			accept_all(b, b->pfd[i].fd, b->pfd[i].fd == b->jfd ? C_PEND_JOIN : C_PEND_P2P);
			continue;
		}
		if (c->rank < 0) {
			int pi;
			for (pi = 0; pi < b->npend && b->pend[pi] != c; pi++)
				;
			if (pi == b->npend)
				continue;
			if (rx(b, c, pi) < 0) {
				/* adopted ones come back as 1; -1 drops it */
				for (pi = 0; pi < b->npend && b->pend[pi] != c; pi++)
					;
				if (pi < b->npend)
					drop_pending(b, pi);
			}
			if (b->failed)
				return -1;
			continue;
		}
		if ((re & POLLOUT) && w && w->c == c && w->done < w->len) {
			ssize_t s = send(c->fd, w->buf + w->done, w->len - w->done,
					 MSG_NOSIGNAL | MSG_DONTWAIT);
			if (s > 0)
				w->done += (size_t)s;
			else if (s < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				return peer_lost(b, c, strerror(errno)), -1;
		}
		if (re & (POLLIN | POLLHUP | POLLERR)) {
			if (rx(b, c, -1) < 0 || b->failed)
				return -1;
		}
	}
	return tend_pending(b);
}

unsigned char *bs_frame_new(uint32_t type, int rank, uint32_t tag, const void *pay, size_t len)
{
	unsigned char *buf = malloc(BOOTSTRAP_HDR + len + 1);
	if (!buf)
		return NULL;
	bootstrap_header(buf, type, rank, tag, (uint32_t)len);
	if (len)
		memcpy(buf + BOOTSTRAP_HDR, pay, len);
	return buf;
}

mk_status bs_send_frame(bootstrap *b, conn *c, uint32_t type, uint32_t tag, const void *pay,
			size_t len, int64_t deadline)
{
	unsigned char *buf;
	wjob w;
	int r = 0;

	if (b->failed)
		return b->failed;
	if (len > BOOTSTRAP_MAX_PAYLOAD)
		return bs_oops(b, MK_ERR_SIZE, "a %s of %zu bytes is over the maximum of %u",
			       bs_type_name(type), len, BOOTSTRAP_MAX_PAYLOAD);
	if (c->closed)
		return bs_fail(b, MK_ERR_PEER, "rank %d has left (its bootstrap was destroyed)",
			       c->rank);
	if (!(buf = bs_frame_new(type, b->rank, tag, pay, len)))
		return bs_fail(b, MK_ERR_NOMEM, "out of memory");
	w.c = c;
	w.buf = buf;
	w.len = BOOTSTRAP_HDR + len;
	w.done = 0;
	while (w.done < w.len && (r = bs_step(b, deadline, &w)) == 0)
		;
	free(buf);
	if (r < 0)
		return b->failed;
	if (r > 0)
		return bs_fail(b, MK_ERR_PEER, "timed out after %u ms sending a %s to rank %d (host %s)",
			       b->cfg.timeout_ms, bs_type_name(type), c->rank, bs_host_of(b, c->rank));
	return MK_OK;
}

/* The oldest frame of this type and tag queued on c, unlinked. */
frame *bs_take(frame **q, frame ***qt, uint32_t type, uint32_t tag)
{
	frame **pp;
	for (pp = q; *pp; pp = &(*pp)->next) {
		frame *f = *pp;
		if (f->type == type && f->tag == tag) {
			*pp = f->next;
			if (!*pp)
				*qt = pp;
			f->next = NULL;
			return f;
		}
	}
	return NULL;
}

frame *bs_take_conn(bootstrap *b, conn *c, uint32_t type, uint32_t tag)
{
	frame *f = c ? bs_take(&c->q, &c->qt, type, tag) : NULL;
	if (f)
		release(b, c, BOOTSTRAP_HDR + (size_t)f->len);
	return f;
}

/* ---- sockets and addresses ------------------------------------------------------ */
socklen_t bs_addr_to_sa(const bootstrap_addr *a, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof *ss);
	if (a->family == 4) {
		struct sockaddr_in *s = (struct sockaddr_in *)ss;
		s->sin_family = AF_INET;
		s->sin_port = htons(a->port);
		memcpy(&s->sin_addr, a->addr, 4);
		return sizeof *s;
	}
	{
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;
		s->sin6_family = AF_INET6;
		s->sin6_port = htons(a->port);
		memcpy(&s->sin6_addr, a->addr, 16);
		s->sin6_scope_id = a->scope;
		return sizeof *s;
	}
}

int bs_connect_to(const struct sockaddr *sa, socklen_t len, int64_t deadline, char *why,
		  size_t n)
{
	int wait_ms = 10;
	for (;;) {
		int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		int e = 0;
		if (fd < 0) {
			bs_fmt(why, n, "socket: %s", strerror(errno));
			return -1;
		}
		if (connect(fd, sa, len) != 0) {
			e = errno;
			if (e == EINPROGRESS) {
				struct pollfd p = {fd, POLLOUT, 0};
				int64_t left = deadline - bs_now_ms();
				socklen_t sl = sizeof e;
				e = ETIMEDOUT;
				if (left > 0 && poll(&p, 1, (int)left) == 1 &&
				    getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &sl) != 0)
					e = errno;
			}
		}
		if (e == 0) {
			sock_opts(fd);
			return fd;
		}
		close(fd);
		bs_fmt(why, n, "%s", strerror(e));
		if (e != ECONNREFUSED && e != ETIMEDOUT && e != ENETUNREACH &&
		    e != EHOSTUNREACH && e != ECONNRESET && e != EAGAIN && e != EINTR)
			return -1;
		if (bs_now_ms() + wait_ms >= deadline)
			return -1;
		{
			struct timespec ts = {0, (long)wait_ms * 1000000L};
			nanosleep(&ts, NULL);
		}
		if (wait_ms < 1000)
			wait_ms *= 2;
	}
}

