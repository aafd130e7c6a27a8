/* fdpass.c - file descriptors among the ranks of a host over a Unix socket;
 * see fdpass.h.
 *
 * Same shape as the bootstrap: connections `out[p]` (ours, we write) and
 * `in[p]` (p's, we read), pending until a HELLO with the job's id names a
 * rank, one poll loop (step) that accepts, reads whole datagrams into
 * per-connection queues and notices closes.  SOCK_SEQPACKET keeps message
 * boundaries and is reliable and ordered, so one datagram is one message.
 *
 * Who is at the other end is the kernel's word (SO_PEERCRED: the uid and
 * pid of the process that called connect, or listen), not the datagrams':
 * checked on both sides before the first byte is sent.  An abstract name is
 * no access control at all (anyone in the network namespace can bind or
 * connect to one), and a name is public once bound (/proc/net/unix), so a
 * name only has to be unguessable until it is bound, which is at creation.
 */
#include "fdpass.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "base/le.h"

#define MAX_PENDING 32
#define PENDING_MS 10000
#define QUEUE_MAX 1024    /* unread messages per connection */

typedef struct fmsg {
	struct fmsg *next;
	uint32_t tag;
	int nfds;
	int fds[FDPASS_MAX_FDS];
	size_t len;
	unsigned char *data;
} fmsg;

typedef struct fconn {
	int fd;
	int rank;                /* -1 while pending */
	pid_t pid;               /* the connecting process (SO_PEERCRED); accepted ones */
	int64_t born;
	fmsg *q, **qt;
	int nq;
	int bye, closed;
} fconn;

struct fdpass {
	fdpass_cfg cfg;
	int lfd;
	char name[FDPASS_NAME];
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	fdpass_ep *peer;          /* [nranks], from fdpass_set_peers */
	int have_peers;
	uint64_t pidns;
	fconn **in, **out;
	fconn *pend[MAX_PENDING];
	int npend;
	mk_status failed;
	char err[512];
	unsigned char rbuf[FDPASS_HDR + FDPASS_MAX_DATA + 1];
};

static int64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void fmt(char *err, size_t n, const char *f, ...) __attribute__((format(printf, 3, 4)));
static void fmt(char *err, size_t n, const char *f, ...)
{
	va_list ap;
	if (!err || !n)
		return;
	va_start(ap, f);
	vsnprintf(err, n, f, ap);
	va_end(ap);
}

static mk_status fail(fdpass *f, mk_status st, const char *fm, ...)
	__attribute__((format(printf, 3, 4)));
static mk_status fail(fdpass *f, mk_status st, const char *fm, ...)
{
	va_list ap;
	if (f->failed)
		return f->failed;
	va_start(ap, fm);
	vsnprintf(f->err, sizeof f->err, fm, ap);
	va_end(ap);
	f->failed = st;
	return st;
}

/* ---- wire format: u32 magic, u16 version, u16 type, i32 rank, u32 tag,
 *      u32 nfds, u32 len, u64 token; then len bytes ---------------------------- */
void fdpass_header(void *hdr, uint32_t type, int32_t rank, uint32_t tag, uint32_t nfds,
		   uint32_t len, uint64_t token)
{
	unsigned char *p = hdr;
	le_put32(p, FDPASS_MAGIC);
	le_put16(p + 4, FDPASS_VERSION);
	le_put16(p + 6, (uint16_t)type);
	le_put32(p + 8, (uint32_t)rank);
	le_put32(p + 12, tag);
	le_put32(p + 16, nfds);
	le_put32(p + 20, len);
	le_put64(p + 24, token);
}

mk_status fdpass_parse(const void *buf, size_t n, int got_fds, uint64_t token, int nranks,
		       fdpass_msg *m, char *err, size_t errn)
{
	const unsigned char *p = buf;
	uint32_t magic, version;

	memset(m, 0, sizeof *m);
	if (!p || n < FDPASS_HDR) {
		fmt(err, errn, "truncated message: %zu of %d header bytes", p ? n : 0, FDPASS_HDR);
		return MK_ERR_INVALID;
	}
	magic = le_get32(p);
	version = le_get16(p + 4);
	m->type = le_get16(p + 6);
	m->rank = (int32_t)le_get32(p + 8);
	m->tag = le_get32(p + 12);
	m->nfds = le_get32(p + 16);
	m->len = le_get32(p + 20);
	m->token = le_get64(p + 24);
	m->data = p + FDPASS_HDR;
	if (magic != FDPASS_MAGIC) {
		fmt(err, errn, "bad magic 0x%08x: not an mk fd message", magic);
		return MK_ERR_INVALID;
	}
	if (version != FDPASS_VERSION) {
		fmt(err, errn, "protocol version %u, expected %d", version, FDPASS_VERSION);
		return MK_ERR_INVALID;
	}
	if (m->type < FDPASS_HELLO || m->type > FDPASS_BYE) {
		fmt(err, errn, "unknown message type %u", m->type);
		return MK_ERR_INVALID;
	}
	if (m->rank < 0 || m->rank >= nranks) {
		fmt(err, errn, "message from local rank %d, outside 0..%d", m->rank, nranks - 1);
		return MK_ERR_INVALID;
	}
	if (m->nfds > FDPASS_MAX_FDS || m->len > FDPASS_MAX_DATA) {
		fmt(err, errn, "message with %u descriptors and %u bytes, over the maximum of %d "
		    "and %d", m->nfds, m->len, FDPASS_MAX_FDS, FDPASS_MAX_DATA);
		return MK_ERR_INVALID;
	}
	if (m->type != FDPASS_MSG && (m->nfds || m->len || m->tag)) {
		fmt(err, errn, "%s with a payload", m->type == FDPASS_HELLO ? "hello" : "goodbye");
		return MK_ERR_INVALID;
	}
	if (n != FDPASS_HDR + (size_t)m->len) {
		fmt(err, errn, "message of %zu bytes, its header says %u", n - FDPASS_HDR, m->len);
		return MK_ERR_INVALID;
	}
	if (got_fds < 0 || (uint32_t)got_fds != m->nfds) {
		fmt(err, errn, "message with %d descriptors, its header says %u", got_fds, m->nfds);
		return MK_ERR_INVALID;
	}
	if (m->token != token) {
		fmt(err, errn, "message from local rank %d with another job's token", m->rank);
		return MK_ERR_INVALID;
	}
	return MK_OK;
}

/* ---- connections ---------------------------------------------------------------- */
static void close_fds(const int *fds, int n)
{
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

static void fconn_free(fconn *c)
{
	if (!c)
		return;
	while (c->q) {
		fmsg *m = c->q;
		c->q = m->next;
		close_fds(m->fds, m->nfds);
		free(m->data);
		free(m);
	}
	if (c->fd >= 0)
		close(c->fd);
	free(c);
}

static fconn *fconn_new(int fd, int rank)
{
	fconn *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->fd = fd;
	c->rank = rank;
	c->born = now_ms();
	c->qt = &c->q;
	return c;
}

/* The address of a name as fdpass_name gives it: "@x" abstract, else a path.
 * Returns its length, 0 when the name does not fit. */
static socklen_t sa_of(const char *name, struct sockaddr_un *sa)
{
	size_t len = strnlen(name, FDPASS_NAME);
	memset(sa, 0, sizeof *sa);
	sa->sun_family = AF_UNIX;
	if (len == 0 || len >= FDPASS_NAME || len > sizeof sa->sun_path - 1)
		return 0;
	if (name[0] == '@') {
		memcpy(sa->sun_path + 1, name + 1, len - 1);
		return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
	}
	memcpy(sa->sun_path, name, len);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + 1);
}

static uint64_t my_pidns(void)
{
	char buf[64];
	ssize_t k = readlink("/proc/self/ns/pid", buf, sizeof buf - 1);
	const char *p;
	if (k <= 0)
		return 0;
	buf[k] = 0;
	p = strchr(buf, '[');
	return p ? strtoull(p + 1, NULL, 10) : 0;
}

/* The pid to expect from local rank r, or 0 when it cannot be checked. */
static pid_t expected_pid(const fdpass *f, int r)
{
	const fdpass_ep *e = &f->peer[r];
	return e->pid > 0 && e->pidns && e->pidns == f->pidns ? (pid_t)e->pid : 0;
}

static int send_plain(int fd, uint32_t type, int rank, uint64_t token)
{
	unsigned char h[FDPASS_HDR];
	fdpass_header(h, type, rank, 0, 0, 0, token);
	return send(fd, h, sizeof h, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)sizeof h ? 0 : -1;
}

/* Reads one datagram.  Returns 1 (queued or adopted), 0 (nothing there), -1
 * (pending: drop it; established: f->failed). */
static int rx(fdpass *f, fconn *c, int pi)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * FDPASS_MAX_FDS)];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = {f->rbuf, sizeof f->rbuf};
	struct msghdr mh;
	struct cmsghdr *cm;
	int fds[FDPASS_MAX_FDS], nfds = 0, extra = 0;
	fdpass_msg m;
	char why[256];
	ssize_t k;

	memset(&mh, 0, sizeof mh);
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = ctl.buf;
	mh.msg_controllen = sizeof ctl.buf;
	k = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (k < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			return 0;
		if (c->rank < 0)
			return -1;
		fail(f, MK_ERR_PEER, "local rank %d disappeared: %s", c->rank, strerror(errno));
		return -1;
	}
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
			size_t cnt = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			const unsigned char *d = CMSG_DATA(cm);
			for (size_t i = 0; i < cnt; i++) {
				int fd;
				memcpy(&fd, d + i * sizeof(int), sizeof fd);
				if (nfds < FDPASS_MAX_FDS)
					fds[nfds++] = fd;
				else {
					close(fd);
					extra++;
				}
			}
		}
	}
	if (k == 0) {
		close_fds(fds, nfds);
		if (c->rank < 0)
			return -1;
		if (c->bye) {
			c->closed = 1;
			close(c->fd);
			c->fd = -1;
			return 0;
		}
		fail(f, MK_ERR_PEER, "local rank %d disappeared: connection closed", c->rank);
		return -1;
	}
	if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC) || extra) {
		snprintf(why, sizeof why, "message truncated (%s)",
			 mh.msg_flags & MSG_TRUNC ? "over the maximum size" : "too many descriptors");
		goto bad;
	}
	if (fdpass_parse(f->rbuf, (size_t)k, nfds, f->cfg.token, f->cfg.nranks, &m, why,
			 sizeof why) != MK_OK)
		goto bad;
	if (c->rank < 0) {
		/* a pending connection: must say hello as a rank not yet connected */
		if (m.type != FDPASS_HELLO || m.rank == f->cfg.rank || f->in[m.rank])
			goto bad;
		/* the process the bootstrap says is that rank, or nobody */
		if (expected_pid(f, m.rank) && c->pid != expected_pid(f, m.rank))
			goto bad;
		c->rank = m.rank;
		f->in[m.rank] = c;
		f->pend[pi] = f->pend[--f->npend];
		return 1;
	}
	if (m.rank != c->rank) {
		snprintf(why, sizeof why, "message from local rank %d on local rank %d's connection",
			 m.rank, c->rank);
		goto bad;
	}
	if (m.type == FDPASS_BYE) {
		c->bye = 1;
		return 1;
	}
	if (m.type != FDPASS_MSG) {
		snprintf(why, sizeof why, "hello twice");
		goto bad;
	}
	{
		fmsg *q;
		if (c->nq >= QUEUE_MAX) {
			snprintf(why, sizeof why, "more than %d messages nobody has read", QUEUE_MAX);
			goto bad;
		}
		if (!(q = calloc(1, sizeof *q)) || (m.len && !(q->data = malloc(m.len)))) {
			free(q);
			close_fds(fds, nfds);
			fail(f, MK_ERR_NOMEM, "out of memory");
			return -1;
		}
		q->tag = m.tag;
		q->nfds = nfds;
		memcpy(q->fds, fds, sizeof(int) * (size_t)nfds);
		q->len = m.len;
		if (m.len)
			memcpy(q->data, m.data, m.len);
		*c->qt = q;
		c->qt = &q->next;
		c->nq++;
	}
	return 1;
bad:
	close_fds(fds, nfds);
	if (c->rank < 0)
		return -1;
	fail(f, MK_ERR_PEER, "local rank %d sent a bad message: %s", c->rank, why);
	return -1;
}

static void accept_all(fdpass *f)
{
	for (;;) {
		struct ucred cr;
		socklen_t sl = sizeof cr;
		int fd = accept4(f->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		fconn *c;
		if (fd < 0)
			return;
		/* same user only */
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &sl) != 0 || cr.uid != geteuid()) {
			close(fd);
			continue;
		}
		if (f->npend == MAX_PENDING) {
			fconn_free(f->pend[0]);
			f->pend[0] = f->pend[--f->npend];
		}
		if (!(c = fconn_new(fd, -1))) {
			close(fd);
			return;
		}
		c->pid = cr.pid;
		f->pend[f->npend++] = c;
	}
}

/* One round of poll; wfd (or -1) is also polled for writing.  Returns 0,
 * 1 when the deadline passed, -1 when failed. */
static int step(fdpass *f, int64_t deadline, int wfd)
{
	struct pollfd p[1 + 2 * FDPASS_MAX_RANKS + MAX_PENDING];
	fconn *pc[1 + 2 * FDPASS_MAX_RANKS + MAX_PENDING];
	nfds_t n = 0;
	int64_t left = deadline - now_ms();
	int k;

	if (f->failed)
		return -1;
	if (left <= 0)
		return 1;
	p[n].fd = f->lfd;
	p[n].events = POLLIN;
	pc[n++] = NULL;
	for (int r = 0; r < f->cfg.nranks; r++) {
		fconn *cs[2] = {f->in[r], f->out[r]};
		for (int j = 0; j < 2; j++)
			if (cs[j] && !cs[j]->closed) {
				p[n].fd = cs[j]->fd;
				p[n].events = (short)(POLLIN | (cs[j]->fd == wfd ? POLLOUT : 0));
				pc[n++] = cs[j];
			}
	}
	for (int i = 0; i < f->npend; i++) {
		p[n].fd = f->pend[i]->fd;
		p[n].events = POLLIN;
		pc[n++] = f->pend[i];
	}
	for (nfds_t i = 0; i < n; i++)
		p[i].revents = 0;
	if (left > 1000)
		left = 1000;
	k = poll(p, n, (int)left);
	if (k < 0 && errno != EINTR)
		return fail(f, MK_ERR_IO, "poll: %s", strerror(errno)), -1;
	for (nfds_t i = 0; k > 0 && i < n; i++) {
		fconn *c = pc[i];
		if (!p[i].revents)
			continue;
		if (!c) {
			accept_all(f);
			continue;
		}
		if (c->rank < 0) {
			int pi, r;
			for (pi = 0; pi < f->npend && f->pend[pi] != c; pi++)
				;
			if (pi == f->npend)
				continue;
			r = rx(f, c, pi);
			if (r < 0) {
				fconn_free(c);
				f->pend[pi] = f->pend[--f->npend];
			}
			continue;
		}
		if (p[i].revents & (POLLIN | POLLHUP | POLLERR)) {
			int r;
			while ((r = rx(f, c, -1)) > 0 && !c->closed)
				;
			if (r < 0 || f->failed)
				return -1;
		}
	}
	for (int i = 0; i < f->npend;) {
		if (now_ms() - f->pend[i]->born > PENDING_MS) {
			fconn_free(f->pend[i]);
			f->pend[i] = f->pend[--f->npend];
		} else {
			i++;
		}
	}
	return 0;
}

/* ---- the API ------------------------------------------------------------------ */
mk_status fdpass_create(const fdpass_cfg *cfg, fdpass **out, char *err, size_t n)
{
	struct sockaddr_un sa;
	socklen_t sl;
	fdpass *f;

	*out = NULL;
	if (!cfg || cfg->nranks < 1 || cfg->nranks > FDPASS_MAX_RANKS || cfg->rank < 0 ||
	    cfg->rank >= cfg->nranks || !cfg->timeout_ms) {
		fmt(err, n, "fdpass: invalid configuration");
		return MK_ERR_INVALID;
	}
	if (!(f = calloc(1, sizeof *f)) ||
	    !(f->in = calloc((size_t)cfg->nranks, sizeof *f->in)) ||
	    !(f->out = calloc((size_t)cfg->nranks, sizeof *f->out)) ||
	    !(f->peer = calloc((size_t)cfg->nranks, sizeof *f->peer))) {
		if (f) {
			free(f->in);
			free(f->out);
			free(f);
		}
		fmt(err, n, "out of memory");
		return MK_ERR_NOMEM;
	}
	f->cfg = *cfg;
	f->cfg.dir = NULL;   /* the caller's strings need not outlive create */
	f->cfg.name = NULL;
	f->lfd = -1;
	if (cfg->use_path) {
		const char *dir = cfg->dir;
		if (!dir || !*dir)
			dir = getenv("XDG_RUNTIME_DIR");
		if (!dir || !*dir)
			dir = "/tmp";
		if (strlen(dir) + 64 >= sizeof f->dir) {
			fmt(err, n, "socket directory name too long: %s", dir);
			fdpass_destroy(f);
			return MK_ERR_INVALID;
		}
		snprintf(f->dir, sizeof f->dir, "%s", dir);
	}
	{
		/* 128 random bits: the name says nothing and cannot be guessed before
		 * it is bound */
		char base[80];
		if (cfg->name && *cfg->name) {
			if (strlen(cfg->name) > 60 || strchr(cfg->name, '/')) {
				fmt(err, n, "fdpass: bad socket name %s", cfg->name);
				fdpass_destroy(f);
				return MK_ERR_INVALID;
			}
			snprintf(base, sizeof base, "%s", cfg->name);
		} else {
			unsigned char r[16];
			size_t got = 0;
			while (got < sizeof r) {
				ssize_t k = getrandom(r + got, sizeof r - got, 0);
				if (k < 0 && errno == EINTR)
					continue;
				if (k <= 0) {
					fmt(err, n, "fdpass: no random bytes from the OS (getrandom: %s)",
					    strerror(errno));
					fdpass_destroy(f);
					return MK_ERR_IO;
				}
				got += (size_t)k;
			}
			memcpy(base, "mk-fd-", 6);
			for (int i = 0; i < 16; i++)
				snprintf(base + 6 + 2 * i, 3, "%02x", r[i]);
		}
		int k = cfg->use_path ? snprintf(f->name, sizeof f->name, "%s/%s%s", f->dir, base,
						 cfg->name && *cfg->name ? "" : ".sock")
				      : snprintf(f->name, sizeof f->name, "@%s", base);
		if (k < 0 || (size_t)k >= sizeof f->name || (size_t)k >= sizeof sa.sun_path) {
			fmt(err, n, "socket name too long: %s/%s", f->dir, base);
			fdpass_destroy(f);
			return MK_ERR_INVALID;
		}
	}
	f->pidns = my_pidns();
	sl = sa_of(f->name, &sa);
	if (cfg->use_path) {
		struct stat st;
		/* a socket of ours left by a crashed run under the same (test) name */
		if (lstat(sa.sun_path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_uid == geteuid())
			unlink(sa.sun_path);
		snprintf(f->path, sizeof f->path, "%s", sa.sun_path);
	}
	f->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (f->lfd < 0 || bind(f->lfd, (struct sockaddr *)&sa, sl) != 0 ||
	    listen(f->lfd, 256) != 0) {
		int e = errno;
		fmt(err, n, "local rank %d cannot listen on %s: %s%s", cfg->rank, f->name,
		    strerror(e), e == EADDRINUSE ? " (another process of this job, or another job "
		    "with the same token, holds the name)" : "");
		f->path[0] = 0;   /* not ours to remove */
		fdpass_destroy(f);
		return e == EADDRINUSE ? MK_ERR_STATE : MK_ERR_IO;
	}
	if (cfg->use_path)
		chmod(f->path, 0600);
	*out = f;
	return MK_OK;
}

void fdpass_destroy(fdpass *f)
{
	if (!f)
		return;
	for (int r = 0; f->in && r < f->cfg.nranks; r++) {
		if (f->out && f->out[r] && !f->out[r]->closed)
			send_plain(f->out[r]->fd, FDPASS_BYE, f->cfg.rank, f->cfg.token);
		if (f->in[r] && !f->in[r]->closed)
			send_plain(f->in[r]->fd, FDPASS_BYE, f->cfg.rank, f->cfg.token);
		fconn_free(f->in[r]);
		if (f->out)
			fconn_free(f->out[r]);
	}
	for (int i = 0; i < f->npend; i++)
		fconn_free(f->pend[i]);
	if (f->lfd >= 0)
		close(f->lfd);
	if (f->path[0])
		unlink(f->path);
	free(f->in);
	free(f->out);
	free(f->peer);
	free(f);
}

const char *fdpass_error(const fdpass *f) { return f ? f->err : ""; }
const char *fdpass_name(const fdpass *f) { return f->name; }

void fdpass_self(const fdpass *f, fdpass_ep *ep)
{
	memset(ep, 0, sizeof *ep);
	snprintf(ep->name, sizeof ep->name, "%s", f->name);
	ep->pid = (int32_t)getpid();
	ep->pidns = f->pidns;
}

mk_status fdpass_set_peers(fdpass *f, const fdpass_ep *eps)
{
	for (int r = 0; r < f->cfg.nranks; r++) {
		if (r == f->cfg.rank)
			continue;
		if (!memchr(eps[r].name, 0, FDPASS_NAME) || !sa_of(eps[r].name, &(struct sockaddr_un){0})) {
			fmt(f->err, sizeof f->err, "fdpass: local rank %d's socket name is not valid", r);
			return MK_ERR_INVALID;
		}
		f->peer[r] = eps[r];
	}
	fdpass_self(f, &f->peer[f->cfg.rank]);
	f->have_peers = 1;
	return MK_OK;
}

void fdpass_ep_put(unsigned char *p, const fdpass_ep *ep)
{
	memset(p, 0, FDPASS_NAME);
	memcpy(p, ep->name, strnlen(ep->name, FDPASS_NAME - 1));
	le_put32(p + FDPASS_NAME, (uint32_t)ep->pid);
	le_put64(p + FDPASS_NAME + 4, ep->pidns);
}

int fdpass_ep_get(const unsigned char *p, fdpass_ep *ep)
{
	memset(ep, 0, sizeof *ep);
	if (!memchr(p, 0, FDPASS_NAME))
		return -1;
	memcpy(ep->name, p, FDPASS_NAME);
	ep->pid = (int32_t)le_get32(p + FDPASS_NAME);
	ep->pidns = le_get64(p + FDPASS_NAME + 4);
	return 0;
}

/* Who holds the socket we reached: the same user and, where known, the
 * process the bootstrap named; otherwise nothing is sent.  0 or -1 with
 * f->failed set. */
static int check_listener(fdpass *f, int fd, int peer)
{
	struct ucred cr;
	socklen_t sl = sizeof cr;
	pid_t want = expected_pid(f, peer);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &sl) != 0) {
		fail(f, MK_ERR_IO, "local rank %d (%s): cannot tell who holds the socket: %s", peer,
		     f->peer[peer].name, strerror(errno));
		return -1;
	}
	if (cr.uid != geteuid()) {
		fail(f, MK_ERR_PEER, "local rank %d's socket %s is held by uid %u (pid %d), not by "
		     "this user (uid %u): nothing sent to it", peer, f->peer[peer].name,
		     (unsigned)cr.uid, (int)cr.pid, (unsigned)geteuid());
		return -1;
	}
	if (want && cr.pid != want) {
		fail(f, MK_ERR_PEER, "local rank %d's socket %s is held by pid %d, not by local rank "
		     "%d's process (pid %d): nothing sent to it", peer, f->peer[peer].name,
		     (int)cr.pid, peer, (int)want);
		return -1;
	}
	return 0;
}

static mk_status connect_peer(fdpass *f, int peer, int64_t deadline)
{
	struct sockaddr_un sa;
	const char *shown = f->peer[peer].name;
	socklen_t sl;
	int wait_ms = 5, e = 0;

	sl = sa_of(shown, &sa);
	for (;;) {
		int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return fail(f, MK_ERR_IO, "socket: %s", strerror(errno));
		if (connect(fd, (struct sockaddr *)&sa, sl) == 0) {
			if (check_listener(f, fd, peer) != 0) {
				close(fd);
				return f->failed;
			}
			if (!(f->out[peer] = fconn_new(fd, peer))) {
				close(fd);
				return fail(f, MK_ERR_NOMEM, "out of memory");
			}
			if (send_plain(fd, FDPASS_HELLO, f->cfg.rank, f->cfg.token) != 0)
				return fail(f, MK_ERR_PEER, "local rank %d (%s) disappeared: %s", peer,
					    shown, strerror(errno));
			return MK_OK;
		}
		e = errno;
		close(fd);
		if (e != ECONNREFUSED && e != ENOENT && e != EAGAIN && e != EINTR)
			break;
		if (now_ms() + wait_ms >= deadline)
			break;
		{
			struct timespec ts = {0, (long)wait_ms * 1000000L};
			nanosleep(&ts, NULL);
		}
		if (wait_ms < 200)
			wait_ms *= 2;
	}
	return fail(f, MK_ERR_PEER, "cannot reach local rank %d at %s within %u ms: %s", peer,
		    shown, f->cfg.timeout_ms, strerror(e));
}

mk_status fdpass_send(fdpass *f, int peer, uint32_t tag, const int *fds, int nfds,
		      const void *data, size_t len)
{
	int64_t deadline = now_ms() + f->cfg.timeout_ms;
	union {
		char buf[CMSG_SPACE(sizeof(int) * FDPASS_MAX_FDS)];
		struct cmsghdr align;
	} ctl;
	unsigned char hdr[FDPASS_HDR];
	struct iovec iov[2];
	struct msghdr mh;
	mk_status st;

	if (f->failed)
		return f->failed;
	if (!f->have_peers)
		return fmt(f->err, sizeof f->err, "fdpass: send before fdpass_set_peers"),
		       MK_ERR_STATE;
	if (peer < 0 || peer >= f->cfg.nranks || peer == f->cfg.rank)
		return fmt(f->err, sizeof f->err, "send to local rank %d (this is %d of %d)", peer,
			   f->cfg.rank, f->cfg.nranks), MK_ERR_NOT_FOUND;
	if (nfds < 0 || nfds > FDPASS_MAX_FDS || len > FDPASS_MAX_DATA || (len && !data) ||
	    (nfds && !fds)) {
		f->err[0] = 0;
		fmt(f->err, sizeof f->err, "fdpass: %d descriptors and %zu bytes (at most %d and %d)",
		    nfds, len, FDPASS_MAX_FDS, FDPASS_MAX_DATA);
		return MK_ERR_SIZE;
	}
	if (!f->out[peer] && (st = connect_peer(f, peer, deadline)) != MK_OK)
		return st;
	if (f->out[peer]->closed)
		return fail(f, MK_ERR_PEER, "local rank %d has left", peer);
	fdpass_header(hdr, FDPASS_MSG, f->cfg.rank, tag, (uint32_t)nfds, (uint32_t)len,
		      f->cfg.token);
	memset(&mh, 0, sizeof mh);
	iov[0].iov_base = hdr;
	iov[0].iov_len = sizeof hdr;
	iov[1].iov_base = (void *)data;
	iov[1].iov_len = len;
	mh.msg_iov = iov;
	mh.msg_iovlen = len ? 2 : 1;
	if (nfds) {
		struct cmsghdr *cm;
		memset(&ctl, 0, sizeof ctl);
		mh.msg_control = ctl.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
	}
	for (;;) {
		int r;
		if (sendmsg(f->out[peer]->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) >= 0)
			return MK_OK;
		if (errno == EBADF) {   /* the caller's mistake: not the job's failure */
			fmt(f->err, sizeof f->err, "a descriptor to send to local rank %d is not open",
			    peer);
			return MK_ERR_INVALID;
		}
		if (errno == EPIPE || errno == ECONNRESET || errno == ENOTCONN)
			return fail(f, MK_ERR_PEER, "local rank %d disappeared: %s", peer,
				    strerror(errno));
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ENOBUFS)
			return fail(f, MK_ERR_IO, "sending %d descriptors to local rank %d: %s", nfds,
				    peer, strerror(errno));
		if ((r = step(f, deadline, f->out[peer]->fd)) < 0)
			return f->failed;
		if (r > 0)
			return fail(f, MK_ERR_PEER, "timed out after %u ms sending to local rank %d",
				    f->cfg.timeout_ms, peer);
	}
}

mk_status fdpass_recv(fdpass *f, int peer, uint32_t tag, int *fds, int maxfds, int *nfds,
		      void *data, size_t cap, size_t *len)
{
	int64_t deadline = now_ms() + f->cfg.timeout_ms;
	fmsg *m = NULL;

	if (nfds)
		*nfds = 0;
	if (len)
		*len = 0;
	if (!f->have_peers)
		return fmt(f->err, sizeof f->err, "fdpass: receive before fdpass_set_peers"),
		       MK_ERR_STATE;
	if (peer < 0 || peer >= f->cfg.nranks || peer == f->cfg.rank)
		return fmt(f->err, sizeof f->err, "receive from local rank %d (this is %d of %d)",
			   peer, f->cfg.rank, f->cfg.nranks), MK_ERR_NOT_FOUND;
	/* what arrived before a failure is still delivered */
	for (;;) {
		fconn *c = f->in[peer];
		int r;
		if (c) {
			fmsg **pp;
			for (pp = &c->q; *pp; pp = &(*pp)->next)
				if ((*pp)->tag == tag) {
					m = *pp;
					*pp = m->next;
					if (!*pp)
						c->qt = pp;
					c->nq--;
					break;
				}
			if (m)
				break;
		}
		if (f->failed)
			return f->failed;
		if (c) {
			if (c->closed)
				return fail(f, MK_ERR_PEER, "local rank %d has left without sending "
					    "tag %u", peer, tag);
		}
		if ((r = step(f, deadline, -1)) < 0)
			continue;   /* deliver what came before the failure */
		if (r > 0)
			return fail(f, MK_ERR_PEER, "timed out after %u ms waiting for local rank %d "
				    "(tag %u)%s", f->cfg.timeout_ms, peer, tag,
				    c ? "" : ": it never connected");
	}
	if (m->nfds > maxfds || m->len > cap) {
		fmt(f->err, sizeof f->err, "message from local rank %d (tag %u) has %d descriptors "
		    "and %zu bytes; room for %d and %zu", peer, tag, m->nfds, m->len, maxfds, cap);
		close_fds(m->fds, m->nfds);
		free(m->data);
		free(m);
		return MK_ERR_SIZE;
	}
	if (m->nfds)
		memcpy(fds, m->fds, sizeof(int) * (size_t)m->nfds);
	if (m->len)
		memcpy(data, m->data, m->len);
	if (nfds)
		*nfds = m->nfds;
	if (len)
		*len = m->len;
	free(m->data);
	free(m);
	return MK_OK;
}
