/* bootstrap.c - TCP rendezvous, collectives through rank 0, point-to-point
 * messages; see bootstrap.h.
 *
 * Everything is non-blocking and driven by one loop, step(): it polls every
 * connection and listener, assembles frames as bytes arrive (header first,
 * checked before the payload is read or allocated), queues complete frames
 * on their connection, and writes the one outgoing frame the caller is
 * sending.  An operation is "send what I must, then step() until the frame
 * I want is queued or the deadline passes", so a slow or silent peer never
 * blocks the others, and two ranks sending large messages to each other at
 * once both make progress.
 *
 * Connections: a non-root rank has one to rank 0 (`root`); rank 0 has one
 * from each rank (`star`).  Point-to-point traffic uses `out[p]` (opened by
 * us to p's listener, we only write) and `in[p]` (opened by p, we only
 * read).  A connection is pending until its first frame (HELLO on the root
 * listener, PEER_HELLO on the point-to-point one) names a valid rank with
 * the job's token; a stranger is dropped, told why if only its token is
 * wrong.  A close without a BYE is a crash: the operation fails naming the
 * rank, and rank 0 sends ABORT to everyone so that nobody waits it out.
 */
#include "bootstrap.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_PENDING 64
#define PENDING_MS 10000    /* a stranger gets this long to say hello */
#define QUEUE_MAX (4 * (size_t)BOOTSTRAP_MAX_PAYLOAD) /* unread bytes per connection */
#define LINGER_MS 100

/* ---- little-endian fields ------------------------------------------------ */
static void put16(unsigned char *p, uint16_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
}
static void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}
static void put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}
static uint16_t get16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get64(const unsigned char *p) { return get32(p) | (uint64_t)get32(p + 4) << 32; }

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

/* Text from the wire, made printable. */
static void clean_text(char *dst, size_t n, const unsigned char *src, size_t len)
{
	size_t i;
	if (!n)
		return;
	if (len > n - 1)
		len = n - 1;
	for (i = 0; i < len && src[i]; i++)
		dst[i] = src[i] >= 32 && src[i] < 127 ? (char)src[i] : '?';
	dst[i] = 0;
}

/* ---- the wire format -------------------------------------------------------
 * header: u32 magic, u16 version, u16 type, i32 rank, u32 tag, u32 length,
 *         u32 reserved (0), u64 token; then `length` payload bytes. */
static const char *const type_names[] = {
	"?", "HELLO", "WELCOME", "REJECT", "GATHER", "GATHERED",
	"PEER_HELLO", "P2P", "ABORT", "BYE",
};

static const char *type_name(uint32_t t)
{
	return t < BOOTSTRAP_TYPE_END ? type_names[t] : "?";
}

void bootstrap_header(void *hdr, uint32_t type, int32_t rank, uint32_t tag, uint32_t len,
		      uint64_t token)
{
	unsigned char *p = hdr;
	put32(p, BOOTSTRAP_MAGIC);
	put16(p + 4, BOOTSTRAP_VERSION);
	put16(p + 6, (uint16_t)type);
	put32(p + 8, (uint32_t)rank);
	put32(p + 12, tag);
	put32(p + 16, len);
	put32(p + 20, 0);
	put64(p + 24, token);
}

void bootstrap_addr_put(unsigned char *p, const bootstrap_addr *a)
{
	put64(p, a->host_id);
	put16(p + 8, a->family);
	put16(p + 10, a->port);
	put32(p + 12, a->scope);
	memcpy(p + 16, a->addr, 16);
	memcpy(p + 32, a->host, BOOTSTRAP_HOSTNAME);
	p[32 + BOOTSTRAP_HOSTNAME - 1] = 0;
}

int bootstrap_addr_get(const unsigned char *p, bootstrap_addr *a)
{
	a->host_id = get64(p);
	a->family = get16(p + 8);
	a->port = get16(p + 10);
	a->scope = get32(p + 12);
	memcpy(a->addr, p + 16, 16);
	if (a->family != 4 && a->family != 6)
		return -1;
	if (!memchr(p + 32, 0, BOOTSTRAP_HOSTNAME))
		return -1;
	clean_text(a->host, sizeof a->host, p + 32, BOOTSTRAP_HOSTNAME);
	return 0;
}

/* Largest payload a frame of this type may carry (world 0: unknown). */
static uint64_t type_max(uint32_t type, int world)
{
	switch (type) {
	case BOOTSTRAP_HELLO:
		return BOOTSTRAP_HELLO_WIRE;
	case BOOTSTRAP_WELCOME:
		return world ? (uint64_t)world * BOOTSTRAP_ADDR_WIRE : BOOTSTRAP_MAX_PAYLOAD;
	case BOOTSTRAP_REJECT:
	case BOOTSTRAP_ABORT:
		return 4 + BOOTSTRAP_TEXT;
	case BOOTSTRAP_PEER_HELLO:
	case BOOTSTRAP_BYE:
		return 0;
	default:
		return BOOTSTRAP_MAX_PAYLOAD;
	}
}

static mk_status refuse(bootstrap_msg *m, bootstrap_fault f, char *err, size_t errn,
			const char *fm, ...) __attribute__((format(printf, 5, 6)));
static mk_status refuse(bootstrap_msg *m, bootstrap_fault f, char *err, size_t errn,
			const char *fm, ...)
{
	va_list ap;
	m->fault = f;
	if (err && errn) {
		va_start(ap, fm);
		vsnprintf(err, errn, fm, ap);
		va_end(ap);
	}
	return MK_ERR_INVALID;
}

mk_status bootstrap_parse_header(const void *buf, size_t n, int world, bootstrap_msg *m,
				 char *err, size_t errn)
{
	const unsigned char *p = buf;
	uint32_t magic, version, reserved;
	int limit = world > 0 ? world : BOOTSTRAP_MAX_WORLD;

	memset(m, 0, sizeof *m);
	m->about = -1;
	if (!p || n < BOOTSTRAP_HDR)
		return refuse(m, BOOTSTRAP_FAULT_SHORT, err, errn,
			      "truncated header: %zu of %d bytes", p ? n : 0, BOOTSTRAP_HDR);
	magic = get32(p);
	version = get16(p + 4);
	m->type = get16(p + 6);
	m->rank = (int32_t)get32(p + 8);
	m->tag = get32(p + 12);
	m->len = get32(p + 16);
	reserved = get32(p + 20);
	m->token = get64(p + 24);
	if (magic != BOOTSTRAP_MAGIC)
		return refuse(m, BOOTSTRAP_FAULT_MAGIC, err, errn,
			      "bad magic 0x%08x: not an mk bootstrap message", magic);
	if (version != BOOTSTRAP_VERSION)
		return refuse(m, BOOTSTRAP_FAULT_VERSION, err, errn,
			      "protocol version %u, expected %d", version, BOOTSTRAP_VERSION);
	if (m->type == 0 || m->type >= BOOTSTRAP_TYPE_END)
		return refuse(m, BOOTSTRAP_FAULT_TYPE, err, errn, "unknown message type %u",
			      m->type);
	if (m->rank < 0 || m->rank >= limit)
		return refuse(m, BOOTSTRAP_FAULT_FIELD, err, errn,
			      "%s from rank %d, outside 0..%d", type_name(m->type), m->rank,
			      limit - 1);
	if (reserved)
		return refuse(m, BOOTSTRAP_FAULT_FIELD, err, errn,
			      "%s: reserved header field is 0x%x, not 0", type_name(m->type),
			      reserved);
	if (m->len > BOOTSTRAP_MAX_PAYLOAD)
		return refuse(m, BOOTSTRAP_FAULT_LENGTH, err, errn,
			      "%s of %u bytes, over the maximum of %u", type_name(m->type),
			      m->len, BOOTSTRAP_MAX_PAYLOAD);
	if (m->len > type_max(m->type, world))
		return refuse(m, BOOTSTRAP_FAULT_LENGTH, err, errn,
			      "%s of %u bytes, over the %llu it may carry", type_name(m->type),
			      m->len, (unsigned long long)type_max(m->type, world));
	return MK_OK;
}

mk_status bootstrap_parse(const void *buf, size_t n, uint64_t token, int world,
			  bootstrap_msg *m, char *err, size_t errn)
{
	const unsigned char *p = buf, *q;
	mk_status st = bootstrap_parse_header(buf, n, world, m, err, errn);

	if (st != MK_OK)
		return st;
	if (n < (size_t)BOOTSTRAP_HDR + m->len)
		return refuse(m, BOOTSTRAP_FAULT_SHORT, err, errn,
			      "truncated %s: %zu of %u payload bytes", type_name(m->type),
			      n - BOOTSTRAP_HDR, m->len);
	if (n > (size_t)BOOTSTRAP_HDR + m->len)
		return refuse(m, BOOTSTRAP_FAULT_EXTRA, err, errn,
			      "%zu bytes after a %s of %u bytes",
			      n - BOOTSTRAP_HDR - m->len, type_name(m->type), m->len);
	if (m->token != token)
		return refuse(m, BOOTSTRAP_FAULT_TOKEN, err, errn,
			      "%s from rank %d with another job's token", type_name(m->type),
			      m->rank);
	q = m->payload = p + BOOTSTRAP_HDR;
	switch (m->type) {
	case BOOTSTRAP_HELLO:
		if (m->len != BOOTSTRAP_HELLO_WIRE)
			return refuse(m, BOOTSTRAP_FAULT_LENGTH, err, errn,
				      "HELLO of %u bytes, expected %d", m->len,
				      BOOTSTRAP_HELLO_WIRE);
		m->world = get32(q);
		if (m->world < 2 || m->world > BOOTSTRAP_MAX_WORLD ||
		    m->rank < 1 || (uint32_t)m->rank >= m->world)
			return refuse(m, BOOTSTRAP_FAULT_FIELD, err, errn,
				      "HELLO from rank %d of a world of %u", m->rank, m->world);
		if (bootstrap_addr_get(q + 4, &m->addr) != 0)
			return refuse(m, BOOTSTRAP_FAULT_FIELD, err, errn,
				      "HELLO from rank %d: bad address", m->rank);
		break;
	case BOOTSTRAP_WELCOME:
		if (world <= 0 || m->len != (uint64_t)world * BOOTSTRAP_ADDR_WIRE)
			return refuse(m, BOOTSTRAP_FAULT_LENGTH, err, errn,
				      "WELCOME of %u bytes for a world of %d", m->len, world);
		for (int r = 0; r < world; r++) {
			bootstrap_addr a;
			if (bootstrap_addr_get(q + (size_t)r * BOOTSTRAP_ADDR_WIRE, &a) != 0)
				return refuse(m, BOOTSTRAP_FAULT_FIELD, err, errn,
					      "WELCOME: bad address for rank %d", r);
		}
		break;
	case BOOTSTRAP_REJECT:
	case BOOTSTRAP_ABORT:
		if (m->len < 4)
			return refuse(m, BOOTSTRAP_FAULT_LENGTH, err, errn, "%s of %u bytes",
				      type_name(m->type), m->len);
		m->about = (int32_t)get32(q);
		if (m->type == BOOTSTRAP_ABORT &&
		    (m->about < -1 || m->about >= (world > 0 ? world : BOOTSTRAP_MAX_WORLD)))
			return refuse(m, BOOTSTRAP_FAULT_FIELD, err, errn,
				      "ABORT about rank %d, outside -1..%d", m->about,
				      (world > 0 ? world : BOOTSTRAP_MAX_WORLD) - 1);
		clean_text(m->text, sizeof m->text, q + 4, m->len - 4);
		break;
	default:
		break;
	}
	m->fault = BOOTSTRAP_FAULT_NONE;
	return MK_OK;
}

/* ---- configuration ----------------------------------------------------------- */
uint64_t bootstrap_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	}
	return h ? h : 1;
}

static const char *var(bootstrap_getenv_fn get, void *ctx, const char *name)
{
	const char *v = name ? get(name, ctx) : NULL;
	return v && *v ? v : NULL;
}

static int to_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static const char *env_get(const char *name, void *ctx)
{
	(void)ctx;
	return getenv(name);
}

static uint64_t default_host_id(void)
{
	char buf[512] = "", boot[64] = "", ns[128] = "";
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
	ssize_t k;

	if (f) {
		if (!fgets(boot, sizeof boot, f))
			boot[0] = 0;
		fclose(f);
	}
	k = readlink("/proc/self/ns/net", ns, sizeof ns - 1);
	ns[k > 0 ? k : 0] = 0;
	if (!boot[0] && !ns[0] && gethostname(buf, 256) == 0)
		return bootstrap_hash(buf);
	snprintf(buf, sizeof buf, "%s|%s", boot, ns);
	return bootstrap_hash(buf);
}

mk_status bootstrap_config(bootstrap_cfg *cfg, bootstrap_getenv_fn get, void *ctx, char *err,
			   size_t n)
{
	static const char *const ranks[][3] = {
		{"MK_RANK", "MK_WORLD_SIZE", "MK_RANK/MK_WORLD_SIZE"},
		{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "Open MPI"},
		{"PMI_RANK", "PMI_SIZE", "PMI"},
		{"SLURM_PROCID", "SLURM_NTASKS", "Slurm"},
		{"RANK", "WORLD_SIZE", "torchrun"},
	};
	static const char *const locals[][2] = {
		{"MK_LOCAL_RANK", "MK_LOCAL_WORLD_SIZE"},
		{"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
		{"MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
		{"SLURM_LOCALID", NULL},
		{"LOCAL_RANK", "LOCAL_WORLD_SIZE"},
	};
	const char *r = NULL, *w = NULL, *v, *src = "no launcher variables";
	char job[256] = "", tokensrc[64] = "";
	long x;
	size_t i;

	memset(cfg, 0, sizeof *cfg);
	cfg->world = 1;
	cfg->local_rank = cfg->local_world = -1;
	cfg->root_fd = -1;
	cfg->timeout_ms = 60000;
	if (!get)
		get = env_get;

	for (i = 0; i < sizeof ranks / sizeof ranks[0]; i++) {
		r = var(get, ctx, ranks[i][0]);
		w = var(get, ctx, ranks[i][1]);
		if (!r && !w)
			continue;
		if (!r || !w) {
			fmt(err, n, "%s is set but %s is not", r ? ranks[i][0] : ranks[i][1],
			    r ? ranks[i][1] : ranks[i][0]);
			return MK_ERR_INVALID;
		}
		if (to_long(w, 1, BOOTSTRAP_MAX_WORLD, &x)) {
			fmt(err, n, "%s=%s: not a world size (1..%d)", ranks[i][1], w,
			    BOOTSTRAP_MAX_WORLD);
			return MK_ERR_INVALID;
		}
		cfg->world = (int)x;
		if (to_long(r, 0, cfg->world - 1, &x)) {
			fmt(err, n, "%s=%s: not a rank in 0..%d", ranks[i][0], r, cfg->world - 1);
			return MK_ERR_INVALID;
		}
		cfg->rank = (int)x;
		src = ranks[i][2];
		break;
	}
	for (i = 0; i < sizeof locals / sizeof locals[0]; i++) {
		const char *lr = var(get, ctx, locals[i][0]), *lw = var(get, ctx, locals[i][1]);
		long a, b = -1;
		if (!lr)
			continue;
		if (to_long(lr, 0, BOOTSTRAP_MAX_WORLD - 1, &a) ||
		    (lw && (to_long(lw, 1, BOOTSTRAP_MAX_WORLD, &b) || a >= b))) {
			fmt(err, n, "%s=%s%s%s: not a local rank", locals[i][0], lr,
			    lw ? ", local size " : "", lw ? lw : "");
			return MK_ERR_INVALID;
		}
		cfg->local_rank = (int)a;
		cfg->local_world = (int)b;
		break;
	}

	if ((v = var(get, ctx, "MK_ROOT")) != NULL) {
		const char *colon = strrchr(v, ':');
		const char *h = v;
		size_t hl;
		if (!colon || to_long(colon + 1, 0, 65535, &x)) {
			fmt(err, n, "MK_ROOT=%s: expected host:port", v);
			return MK_ERR_INVALID;
		}
		hl = (size_t)(colon - v);
		if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
			h++;
			hl -= 2;
		}
		if (hl == 0 || hl >= sizeof cfg->root_host) {
			fmt(err, n, "MK_ROOT=%s: expected host:port", v);
			return MK_ERR_INVALID;
		}
		memcpy(cfg->root_host, h, hl);
		cfg->root_host[hl] = 0;
		cfg->root_port = (int)x;
	} else if ((v = var(get, ctx, "MASTER_ADDR")) != NULL) {
		const char *p = var(get, ctx, "MASTER_PORT");
		if (!p || to_long(p, 1, 65534, &x) || strlen(v) >= sizeof cfg->root_host) {
			fmt(err, n, "MASTER_ADDR=%s with MASTER_PORT=%s: expected a host and a port",
			    v, p ? p : "(unset)");
			return MK_ERR_INVALID;
		}
		snprintf(cfg->root_host, sizeof cfg->root_host, "%s", v);
		cfg->root_port = (int)x + 1;
	} else if (cfg->world > 1) {
		fmt(err, n, "rank %d of %d (from %s) but MK_ROOT is not set: set MK_ROOT=host:port "
		    "of rank 0 (or MASTER_ADDR and MASTER_PORT)", cfg->rank, cfg->world, src);
		return MK_ERR_INVALID;
	}
	if (cfg->world > 1 && cfg->root_port == 0) {
		fmt(err, n, "MK_ROOT port 0 is only for a world of 1");
		return MK_ERR_INVALID;
	}

	if ((v = var(get, ctx, "MK_BOOT_TIMEOUT_MS")) != NULL) {
		if (to_long(v, 1, 86400000, &x)) {
			fmt(err, n, "MK_BOOT_TIMEOUT_MS=%s: expected milliseconds", v);
			return MK_ERR_INVALID;
		}
		cfg->timeout_ms = (unsigned)x;
	}

	if ((v = var(get, ctx, "MK_JOB_TOKEN")) != NULL) {
		cfg->token = bootstrap_hash(v);
		snprintf(tokensrc, sizeof tokensrc, "MK_JOB_TOKEN");
	} else {
		static const char *const ids[][2] = {
			{"SLURM_JOB_ID", "SLURM_STEP_ID"},
			{"OMPI_MCA_ess_base_jobid", NULL},
			{"PMIX_NAMESPACE", NULL},
			{"TORCHELASTIC_RUN_ID", NULL},
		};
		for (i = 0; i < sizeof ids / sizeof ids[0]; i++) {
			const char *a = var(get, ctx, ids[i][0]), *b = var(get, ctx, ids[i][1]);
			if (!a)
				continue;
			snprintf(job, sizeof job, "%s.%s", a, b ? b : "");
			snprintf(tokensrc, sizeof tokensrc, "%s", ids[i][0]);
			break;
		}
		{
			char buf[600];
			snprintf(buf, sizeof buf, "mk|%s|%s:%d|%d", job, cfg->root_host,
				 cfg->root_port, cfg->world);
			cfg->token = bootstrap_hash(buf);
		}
		if (!tokensrc[0])
			snprintf(tokensrc, sizeof tokensrc, "the root address");
	}

	if ((v = var(get, ctx, "MK_HOST_ID")) != NULL)
		cfg->host_id = bootstrap_hash(v);
	else
		cfg->host_id = default_host_id();

	snprintf(cfg->source, sizeof cfg->source, "%s, root %s:%d, token from %s", src,
		 cfg->root_host[0] ? cfg->root_host : "-", cfg->root_port, tokensrc);
	return MK_OK;
}

mk_status bootstrap_config_env(bootstrap_cfg *cfg, char *err, size_t n)
{
	return bootstrap_config(cfg, env_get, NULL, err, n);
}

/* ---- connections ------------------------------------------------------------ */
typedef struct frame {
	struct frame *next;
	uint32_t type, tag, len;
	unsigned char *buf;       /* header + payload */
} frame;

enum { C_PEND_JOIN, C_PEND_P2P, C_ROOT, C_STAR, C_IN, C_OUT };

typedef struct conn {
	int fd;
	int kind;
	int rank;                 /* the peer, -1 while pending */
	int64_t born;
	unsigned char hdr[BOOTSTRAP_HDR];
	size_t hhave;
	unsigned char *buf;       /* frame being read: header + payload */
	size_t need, have;
	frame *q, **qt;
	size_t qbytes;
	int bye;                  /* a BYE came: the close that follows is clean */
	int closed;
} conn;

struct bootstrap {
	bootstrap_cfg cfg;
	int rank, world;
	int jfd;                  /* rank 0: join listener, until everyone joined */
	int lfd;                  /* point-to-point listener */
	conn *root;               /* not rank 0 */
	conn **star;              /* rank 0: [world] */
	conn **in, **out;         /* [world] */
	conn *pend[MAX_PENDING];
	int npend;
	frame *self, **selft;     /* messages to ourselves */
	bootstrap_addr *table;    /* [world] */
	int local_rank, local_world;
	int *locals;              /* [local_world] global ranks */
	uint32_t seq;             /* collectives so far */
	mk_status failed;         /* sticky */
	int abort_sent;
	char err[512];
	struct pollfd *pfd;
	conn **pconn;
	size_t npfd_cap;
};

static int64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static const char *host_of(const bootstrap *b, int r)
{
	return b->table && r >= 0 && r < b->world && b->table[r].host[0] ? b->table[r].host : "?";
}

static mk_status fail(bootstrap *b, mk_status st, const char *f, ...)
	__attribute__((format(printf, 3, 4)));
static mk_status fail(bootstrap *b, mk_status st, const char *f, ...)
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

/* The caller's mistake, not the job's: reported, not sticky. */
static mk_status oops(bootstrap *b, mk_status st, const char *f, ...)
	__attribute__((format(printf, 3, 4)));
static mk_status oops(bootstrap *b, mk_status st, const char *f, ...)
{
	va_list ap;
	va_start(ap, f);
	vsnprintf(b->err, sizeof b->err, f, ap);
	va_end(ap);
	return st;
}

static void free_frames(frame *f)
{
	while (f) {
		frame *n = f->next;
		free(f->buf);
		free(f);
		f = n;
	}
}

static void conn_free(conn *c)
{
	if (!c)
		return;
	if (c->fd >= 0)
		close(c->fd);
	free(c->buf);
	free_frames(c->q);
	free(c);
}

static conn *conn_new(int fd, int kind, int rank)
{
	conn *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->fd = fd;
	c->kind = kind;
	c->rank = rank;
	c->born = now_ms();
	c->qt = &c->q;
	return c;
}

static void sock_opts(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* One write, no waiting: for REJECT, ABORT and BYE, which are best effort. */
static void send_now(int fd, uint32_t type, int rank, uint32_t tag, uint64_t token,
		     int32_t about, const char *text)
{
	unsigned char buf[BOOTSTRAP_HDR + 4 + BOOTSTRAP_TEXT];
	size_t len = 0;
	if (type == BOOTSTRAP_REJECT || type == BOOTSTRAP_ABORT) {
		size_t tl = text ? strlen(text) : 0;
		if (tl > BOOTSTRAP_TEXT)
			tl = BOOTSTRAP_TEXT;
		put32(buf + BOOTSTRAP_HDR, (uint32_t)about);
		memcpy(buf + BOOTSTRAP_HDR + 4, text, tl);
		len = 4 + tl;
	}
	bootstrap_header(buf, type, rank, tag, (uint32_t)len, token);
	if (send(fd, buf, BOOTSTRAP_HDR + len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
		/* best effort: the peer may be gone already */
	}
}

/* Rank 0 tells everyone still connected that the job failed. */
static void broadcast_abort(bootstrap *b, int about)
{
	if (b->rank != 0 || b->abort_sent || !b->star)
		return;
	b->abort_sent = 1;
	for (int r = 1; r < b->world; r++)
		if (b->star[r] && !b->star[r]->closed && r != about)
			send_now(b->star[r]->fd, BOOTSTRAP_ABORT, 0, 0, b->cfg.token, about, b->err);
}

static mk_status peer_lost(bootstrap *b, conn *c, const char *how)
{
	mk_status st = fail(b, MK_ERR_PEER, "rank %d (host %s) disappeared: %s", c->rank,
			    host_of(b, c->rank), how);
	broadcast_abort(b, c->rank);
	return st;
}

/* ---- frames arriving ---------------------------------------------------------- */
static void drop_pending(bootstrap *b, int i)
{
	conn_free(b->pend[i]);
	b->pend[i] = b->pend[--b->npend];
}

/* Tells a stranger why it may not join.  The frame carries the stranger's
 * own token, so that it can read the answer without learning ours. */
static void reject(bootstrap *b, conn *c, uint64_t token, int reason, const char *why)
{
	send_now(c->fd, BOOTSTRAP_REJECT, b->rank, 0, token, reason, why);
}

/* A pending connection's first frame.  Returns 1 if it was adopted, 0 if it
 * is to be dropped. */
static int adopt(bootstrap *b, conn *c, const bootstrap_msg *m)
{
	char why[BOOTSTRAP_TEXT];
	if (c->kind == C_PEND_JOIN) {
		if (m->type != BOOTSTRAP_HELLO)
			return 0;
		if ((int)m->world != b->world) {
			snprintf(why, sizeof why, "rank %d says the world has %u ranks, rank 0 says %d",
				 m->rank, m->world, b->world);
			reject(b, c, m->token, 2, why);
			return 0;
		}
		if (b->star[m->rank]) {
			snprintf(why, sizeof why, "rank %d has already joined", m->rank);
			reject(b, c, m->token, 3, why);
			return 0;
		}
		c->kind = C_STAR;
		c->rank = m->rank;
		b->star[m->rank] = c;
		b->table[m->rank] = m->addr;
		return 1;
	}
	if (m->type != BOOTSTRAP_PEER_HELLO || m->rank == b->rank || b->in[m->rank])
		return 0;
	c->kind = C_IN;
	c->rank = m->rank;
	b->in[m->rank] = c;
	return 1;
}

/* A complete frame in c->buf.  Returns 0, or -1 when the connection is to be
 * dropped (pending) or the bootstrap failed (b->failed). */
static int deliver(bootstrap *b, conn *c, int pending_index)
{
	bootstrap_msg m;
	char why[256];
	frame *f;

	if (bootstrap_parse(c->buf, c->need, b->cfg.token, b->world, &m, why, sizeof why)) {
		if (c->rank < 0) {
			if (m.fault == BOOTSTRAP_FAULT_TOKEN)
				reject(b, c, m.token, 1, "wrong job token");
			return -1;
		}
		fail(b, MK_ERR_PEER, "rank %d (host %s) sent a bad message: %s", c->rank,
		     host_of(b, c->rank), why);
		broadcast_abort(b, -1);
		return -1;
	}
	if (c->rank < 0) {
		free(c->buf);
		c->buf = NULL;
		if (!adopt(b, c, &m))
			return -1;
		b->pend[pending_index] = b->pend[--b->npend];
		return 1;
	}
	if (m.rank != c->rank) {
		fail(b, MK_ERR_PEER, "the connection of rank %d carried a %s from rank %d", c->rank,
		     type_name(m.type), m.rank);
		return -1;
	}
	switch (m.type) {
	case BOOTSTRAP_ABORT:
		if (m.about >= 0)
			fail(b, MK_ERR_PEER, "rank %d failed (reported by rank %d): %s", m.about,
			     m.rank, m.text);
		else
			fail(b, MK_ERR_PEER, "the job failed (reported by rank %d): %s", m.rank, m.text);
		return -1;
	case BOOTSTRAP_REJECT:
		fail(b, MK_ERR_PEER, "rank %d refused this rank (%d): %s", m.rank, b->rank, m.text);
		return -1;
	case BOOTSTRAP_BYE:
		c->bye = 1;
		free(c->buf);
		c->buf = NULL;
		return 0;
	case BOOTSTRAP_HELLO:
	case BOOTSTRAP_PEER_HELLO:
		fail(b, MK_ERR_PEER, "rank %d said hello twice", c->rank);
		return -1;
	default:
		break;
	}
	if (c->qbytes + m.len > QUEUE_MAX) {
		fail(b, MK_ERR_PEER, "rank %d sent more than %zu bytes nobody has read", c->rank,
		     QUEUE_MAX);
		return -1;
	}
	if (!(f = calloc(1, sizeof *f))) {
		fail(b, MK_ERR_NOMEM, "out of memory queueing a message from rank %d", c->rank);
		return -1;
	}
	f->type = m.type;
	f->tag = m.tag;
	f->len = m.len;
	f->buf = c->buf;
	c->buf = NULL;
	*c->qt = f;
	c->qt = &f->next;
	c->qbytes += m.len;
	return 0;
}

/* Reads what is there.  Returns 0; -1 to drop a pending connection; sets
 * b->failed on an established one. */
static int rx(bootstrap *b, conn *c, int pending_index)
{
	for (;;) {
		ssize_t k;
		if (!c->buf) {
			k = recv(c->fd, c->hdr + c->hhave, BOOTSTRAP_HDR - c->hhave, 0);
		} else {
			k = recv(c->fd, c->buf + c->have, c->need - c->have, 0);
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
						   sizeof why) != MK_OK ||
			    m.token != b->cfg.token) {
				if (c->rank < 0) {
					if (m.fault == BOOTSTRAP_FAULT_NONE)
						reject(b, c, m.token, 1, "wrong job token");
					return -1;
				}
				if (m.fault == BOOTSTRAP_FAULT_NONE)
					snprintf(why, sizeof why, "another job's token");
				fail(b, MK_ERR_PEER, "rank %d (host %s) sent a bad message: %s",
				     c->rank, host_of(b, c->rank), why);
				broadcast_abort(b, -1);
				return -1;
			}
			c->need = BOOTSTRAP_HDR + (size_t)m.len;
			c->have = BOOTSTRAP_HDR;
			if (!(c->buf = malloc(c->need))) {
				if (c->rank < 0)
					return -1;
				fail(b, MK_ERR_NOMEM, "out of memory reading %zu bytes from rank %d",
				     c->need, c->rank);
				return -1;
			}
			memcpy(c->buf, c->hdr, BOOTSTRAP_HDR);
		} else {
			c->have += (size_t)k;
		}
		if (c->buf && c->have == c->need) {
			int r = deliver(b, c, pending_index);
			if (r < 0)
				return -1;
			if (r > 0)
				return 1; /* adopted: no longer pending */
		}
	}
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
			int oldest = 0;
			for (int i = 1; i < b->npend; i++)
				if (b->pend[i]->born < b->pend[oldest]->born)
					oldest = i;
			drop_pending(b, oldest);
		}
		if (!(c = conn_new(fd, kind, -1))) {
			close(fd);
			return;
		}
		b->pend[b->npend++] = c;
	}
}

/* ---- the loop ------------------------------------------------------------------ */
typedef struct wjob {
	conn *c;
	const unsigned char *buf;
	size_t len, done;
} wjob;

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

/* One round of poll.  Returns 0 (something may have changed), 1 (the
 * deadline passed), -1 (failed: b->failed, b->err). */
static int step(bootstrap *b, int64_t deadline, wjob *w)
{
	size_t n = 0, i;
	int64_t left = deadline - now_ms();
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
	for (int j = 0; j < b->npend; j++)
		bad |= add_pfd(b, &n, b->pend[j]->fd, POLLIN, b->pend[j]);
	if (bad)
		return fail(b, MK_ERR_NOMEM, "out of memory"), -1;
	if (w && w->done < w->len) {
		for (i = 0; i < n; i++)
			if (b->pconn[i] == w->c)
				b->pfd[i].events |= POLLOUT;
	}
	if (left > 1000)
		left = 1000;   /* to expire pending connections */
	k = poll(b->pfd, n, (int)left);
	if (k < 0 && errno != EINTR)
		return fail(b, MK_ERR_IO, "poll: %s", strerror(errno)), -1;
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
				/* adopted frames come back as 1; -1 drops it */
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
	for (int j = 0; j < b->npend;) {
		if (now_ms() - b->pend[j]->born > PENDING_MS)
			drop_pending(b, j);
		else
			j++;
	}
	return 0;
}

static unsigned char *frame_new(uint32_t type, int rank, uint32_t tag, uint64_t token,
				const void *pay, size_t len)
{
	unsigned char *buf = malloc(BOOTSTRAP_HDR + len + 1);
	if (!buf)
		return NULL;
	bootstrap_header(buf, type, rank, tag, (uint32_t)len, token);
	if (len)
		memcpy(buf + BOOTSTRAP_HDR, pay, len);
	return buf;
}

/* Sends one frame on c, keeping everything else moving. */
static mk_status send_frame(bootstrap *b, conn *c, uint32_t type, uint32_t tag, const void *pay,
			    size_t len, int64_t deadline)
{
	unsigned char *buf;
	wjob w;
	int r = 0;

	if (b->failed)
		return b->failed;
	if (len > BOOTSTRAP_MAX_PAYLOAD)
		return oops(b, MK_ERR_SIZE, "a %s of %zu bytes is over the maximum of %u",
			    type_name(type), len, BOOTSTRAP_MAX_PAYLOAD);
	if (c->closed)
		return fail(b, MK_ERR_PEER, "rank %d has left (its bootstrap was destroyed)",
			    c->rank);
	if (!(buf = frame_new(type, b->rank, tag, b->cfg.token, pay, len)))
		return fail(b, MK_ERR_NOMEM, "out of memory");
	w.c = c;
	w.buf = buf;
	w.len = BOOTSTRAP_HDR + len;
	w.done = 0;
	while (w.done < w.len && (r = step(b, deadline, &w)) == 0)
		;
	free(buf);
	if (r < 0)
		return b->failed;
	if (r > 0)
		return fail(b, MK_ERR_PEER, "timed out after %u ms sending a %s to rank %d (host %s)",
			    b->cfg.timeout_ms, type_name(type), c->rank, host_of(b, c->rank));
	return MK_OK;
}

/* The oldest frame of this type and tag queued on c, unlinked. */
static frame *take(frame **q, frame ***qt, uint32_t type, uint32_t tag)
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

static frame *take_conn(conn *c, uint32_t type, uint32_t tag)
{
	frame *f = c ? take(&c->q, &c->qt, type, tag) : NULL;
	if (f)
		c->qbytes -= f->len;
	return f;
}

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

static socklen_t addr_to_sa(const bootstrap_addr *a, struct sockaddr_storage *ss)
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

static int listen_on(const struct sockaddr *sa, socklen_t len, char *why, size_t n)
{
	int one = 1;
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		fmt(why, n, "socket: %s", strerror(errno));
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(fd, sa, len) != 0 || listen(fd, 1024) != 0) {
		fmt(why, n, "%s", strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* Connects to sa, retrying refusals with backoff until the deadline.
 * Returns the fd, or -1 with why[]. */
static int connect_to(const struct sockaddr *sa, socklen_t len, int64_t deadline, char *why,
		      size_t n)
{
	int wait_ms = 10;
	for (;;) {
		int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		int e = 0;
		if (fd < 0) {
			fmt(why, n, "socket: %s", strerror(errno));
			return -1;
		}
		if (connect(fd, sa, len) != 0) {
			e = errno;
			if (e == EINPROGRESS) {
				struct pollfd p = {fd, POLLOUT, 0};
				int64_t left = deadline - now_ms();
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
		fmt(why, n, "%s", strerror(e));
		if (e != ECONNREFUSED && e != ETIMEDOUT && e != ENETUNREACH &&
		    e != EHOSTUNREACH && e != ECONNRESET && e != EAGAIN && e != EINTR)
			return -1;
		if (now_ms() + wait_ms >= deadline)
			return -1;
		{
			struct timespec ts = {0, (long)wait_ms * 1000000L};
			nanosleep(&ts, NULL);
		}
		if (wait_ms < 1000)
			wait_ms *= 2;
	}
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
		fmt(why, n, "cannot resolve %s: %s", host, gai_strerror(e));
		return -1;
	}
	return 0;
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
		return fail(b, MK_ERR_NOMEM, "out of memory for %d ranks", b->world);
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
		b->jfd = b->cfg.root_fd;
		fcntl(b->jfd, F_SETFL, fcntl(b->jfd, F_GETFL) | O_NONBLOCK);
		fcntl(b->jfd, F_SETFD, FD_CLOEXEC);
	} else if (b->world > 1) {
		struct addrinfo *ai, *a;
		if (resolve(b->cfg.root_host, b->cfg.root_port, 0, &ai, why, sizeof why))
			return fail(b, MK_ERR_IO, "rank 0: %s", why);
		for (a = ai; a && b->jfd < 0; a = a->ai_next)
			b->jfd = listen_on(a->ai_addr, a->ai_addrlen, why, sizeof why);
		if (b->jfd < 0 && ai) {
			/* the name is not an address of this machine: every interface */
			struct sockaddr_storage any;
			memset(&any, 0, sizeof any);
			any.ss_family = (sa_family_t)ai->ai_family;
			if (ai->ai_family == AF_INET)
				((struct sockaddr_in *)&any)->sin_port = htons((uint16_t)b->cfg.root_port);
			else
				((struct sockaddr_in6 *)&any)->sin6_port = htons((uint16_t)b->cfg.root_port);
			b->jfd = listen_on((struct sockaddr *)&any, ai->ai_addrlen, why, sizeof why);
		}
		freeaddrinfo(ai);
		if (b->jfd < 0)
			return fail(b, MK_ERR_IO, "rank 0 cannot listen on %s:%d: %s",
				    b->cfg.root_host, b->cfg.root_port, why);
	}
	if (b->jfd >= 0) {
		/* point-to-point listener: any interface, the join listener's family */
		struct sockaddr_storage any;
		memset(&any, 0, sizeof any);
		if (getsockname(b->jfd, (struct sockaddr *)&ss, &sl) != 0)
			return fail(b, MK_ERR_IO, "getsockname: %s", strerror(errno));
		any.ss_family = ss.ss_family;
		b->lfd = listen_on((struct sockaddr *)&any,
				   ss.ss_family == AF_INET ? sizeof(struct sockaddr_in)
							   : sizeof(struct sockaddr_in6),
				   why, sizeof why);
		if (b->lfd < 0)
			return fail(b, MK_ERR_IO, "rank 0 cannot listen: %s", why);
	}
	for (;;) {
		int missing = 0, st;
		for (r = 1; r < b->world; r++)
			missing += !b->star[r];
		if (!missing)
			break;
		if ((st = step(b, deadline, NULL)) < 0)
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
			fail(b, MK_ERR_PEER, "timed out after %u ms: %d of %d ranks did not join "
			     "rank 0 at %s:%d (missing: %s%s)", b->cfg.timeout_ms, missing,
			     b->world, b->cfg.root_host, b->cfg.root_port, list,
			     shown < missing ? ", ..." : "");
			broadcast_abort(b, -1);
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
			return fail(b, MK_ERR_IO, "getsockname: %s", strerror(errno));
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
	if (!(tab = malloc((size_t)b->world * BOOTSTRAP_ADDR_WIRE)))
		return fail(b, MK_ERR_NOMEM, "out of memory");
	for (r = 0; r < b->world; r++)
		bootstrap_addr_put(tab + (size_t)r * BOOTSTRAP_ADDR_WIRE, &b->table[r]);
	for (r = 1; r < b->world; r++)
		if (send_frame(b, b->star[r], BOOTSTRAP_WELCOME, 0, tab,
			       (size_t)b->world * BOOTSTRAP_ADDR_WIRE, deadline) != MK_OK)
			break;
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
		return fail(b, MK_ERR_IO, "rank %d: %s", b->rank, why);
	/* every address of the root in turn, until the deadline */
	while (fd < 0 && now_ms() < deadline) {
		for (a = ai; a && fd < 0; a = a->ai_next) {
			int64_t slice = now_ms() + 2000;
			fd = connect_to(a->ai_addr, a->ai_addrlen,
					a->ai_next && slice < deadline ? slice : deadline, why,
					sizeof why);
		}
	}
	freeaddrinfo(ai);
	if (fd < 0)
		return fail(b, MK_ERR_PEER, "rank %d cannot reach rank 0 at %s:%d within %u ms: %s",
			    b->rank, b->cfg.root_host, b->cfg.root_port, b->cfg.timeout_ms, why);
	if (!(b->root = conn_new(fd, C_ROOT, 0))) {
		close(fd);
		return fail(b, MK_ERR_NOMEM, "out of memory");
	}
	/* listen on the interface that reaches rank 0 */
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0)
		return fail(b, MK_ERR_IO, "getsockname: %s", strerror(errno));
	if (ss.ss_family == AF_INET)
		((struct sockaddr_in *)&ss)->sin_port = 0;
	else
		((struct sockaddr_in6 *)&ss)->sin6_port = 0;
	if ((b->lfd = listen_on((struct sockaddr *)&ss, sl, why, sizeof why)) < 0)
		return fail(b, MK_ERR_IO, "rank %d cannot listen: %s", b->rank, why);
	sl = sizeof ss;
	if (getsockname(b->lfd, (struct sockaddr *)&ss, &sl) != 0 || sa_to_addr(&ss, &me) != 0)
		return fail(b, MK_ERR_IO, "getsockname: %s", strerror(errno));
	me.host_id = b->cfg.host_id;
	memset(me.host, 0, sizeof me.host);
	my_hostname(me.host, sizeof me.host);
	put32(hello, (uint32_t)b->world);
	bootstrap_addr_put(hello + 4, &me);
	if (send_frame(b, b->root, BOOTSTRAP_HELLO, 0, hello, sizeof hello, deadline) != MK_OK)
		return b->failed;
	while (!(f = take_conn(b->root, BOOTSTRAP_WELCOME, 0))) {
		if ((st = step(b, deadline, NULL)) < 0)
			return b->failed;
		if (st > 0)
			return fail(b, MK_ERR_PEER, "rank %d timed out after %u ms waiting for the "
				    "others to join at rank 0 (%s:%d)", b->rank, b->cfg.timeout_ms,
				    b->cfg.root_host, b->cfg.root_port);
	}
	for (int r = 0; r < b->world; r++)
		bootstrap_addr_get(f->buf + BOOTSTRAP_HDR + (size_t)r * BOOTSTRAP_ADDR_WIRE,
				   &b->table[r]);
	free(f->buf);
	free(f);
	return MK_OK;
}

static mk_status find_locals(bootstrap *b)
{
	uint64_t me = b->table[b->rank].host_id;
	int n = 0;
	for (int r = 0; r < b->world; r++)
		n += b->table[r].host_id == me;
	if (!(b->locals = malloc((size_t)n * sizeof *b->locals)))
		return fail(b, MK_ERR_NOMEM, "out of memory");
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
	if (!cfg || cfg->world < 1 || cfg->world > BOOTSTRAP_MAX_WORLD || cfg->rank < 0 ||
	    cfg->rank >= cfg->world || !cfg->token || !cfg->timeout_ms) {
		fmt(err, n, "bootstrap: invalid configuration");
		if (cfg && cfg->root_fd >= 0)
			close(cfg->root_fd);
		return MK_ERR_INVALID;
	}
	if (!(b = calloc(1, sizeof *b))) {
		fmt(err, n, "out of memory");
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
	deadline = now_ms() + cfg->timeout_ms;
	st = alloc_tables(b);
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
		fmt(err, n, "%s", b->err);
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
	send_now(c->fd, BOOTSTRAP_BYE, b->rank, 0, b->cfg.token, 0, NULL);
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
	until = now_ms() + LINGER_MS;
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
		int64_t left = until - now_ms();
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
	conn_free(b->root);
	for (int r = 0; b->in && r < b->world; r++) {
		conn_free(b->star ? b->star[r] : NULL);
		conn_free(b->in[r]);
		conn_free(b->out[r]);
	}
	for (int i = 0; i < b->npend; i++)
		conn_free(b->pend[i]);
	if (b->jfd >= 0)
		close(b->jfd);
	if (b->lfd >= 0)
		close(b->lfd);
	free_frames(b->self);
	free(b->star);
	free(b->in);
	free(b->out);
	free(b->table);
	free(b->locals);
	free(b->pfd);
	free(b->pconn);
	free(b);
}

int bootstrap_rank(const bootstrap *b) { return b->rank; }
int bootstrap_world(const bootstrap *b) { return b->world; }
int bootstrap_local_rank(const bootstrap *b) { return b->local_rank; }
int bootstrap_local_world(const bootstrap *b) { return b->local_world; }
uint64_t bootstrap_token(const bootstrap *b) { return b->cfg.token; }
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
	return host_of(b, rank);
}

/* ---- collectives -------------------------------------------------------------------- */
mk_status bootstrap_allgather(bootstrap *b, const void *mine, void *all, size_t size)
{
	int64_t deadline = now_ms() + b->cfg.timeout_ms;
	uint32_t seq = ++b->seq;
	unsigned char *dst = all;
	int r, st;

	if (b->failed)
		return b->failed;
	if ((uint64_t)size * (uint64_t)b->world > BOOTSTRAP_MAX_PAYLOAD)
		return oops(b, MK_ERR_SIZE, "allgather of %zu bytes from %d ranks is over the "
			    "maximum of %u", size, b->world, BOOTSTRAP_MAX_PAYLOAD);
	if (size)
		memmove(dst + (size_t)b->rank * size, mine, size);
	if (b->rank != 0) {
		frame *f;
		if (send_frame(b, b->root, BOOTSTRAP_GATHER, seq, mine, size, deadline) != MK_OK)
			return b->failed;
		while (!(f = take_conn(b->root, BOOTSTRAP_GATHERED, seq))) {
			if (b->root->closed)
				return fail(b, MK_ERR_PEER, "collective #%u: rank 0 has left", seq);
			if ((st = step(b, deadline, NULL)) < 0)
				return b->failed;
			if (st > 0)
				return fail(b, MK_ERR_PEER, "rank %d timed out after %u ms in "
					    "collective #%u waiting for rank 0", b->rank,
					    b->cfg.timeout_ms, seq);
		}
		if (f->len != (uint64_t)size * (uint64_t)b->world) {
			fail(b, MK_ERR_PEER, "collective #%u: rank 0 sent %u bytes, expected %zu",
			     seq, f->len, size * (size_t)b->world);
			free(f->buf);
			free(f);
			return b->failed;
		}
		if (size)
			memcpy(dst, f->buf + BOOTSTRAP_HDR, size * (size_t)b->world);
		free(f->buf);
		free(f);
		return MK_OK;
	}
	{
		char *got = calloc((size_t)b->world, 1);
		int missing = b->world - 1;
		if (!got)
			return fail(b, MK_ERR_NOMEM, "out of memory");
		while (missing > 0) {
			for (r = 1; r < b->world; r++) {
				frame *f;
				if (got[r] || !(f = take_conn(b->star[r], BOOTSTRAP_GATHER, seq)))
					continue;
				if (f->len != size) {
					fail(b, MK_ERR_INVALID, "collective #%u: rank %d gave %u bytes, "
					     "rank 0 gave %zu", seq, r, f->len, size);
					broadcast_abort(b, r);
					free(f->buf);
					free(f);
					free(got);
					return b->failed;
				}
				if (size)
					memcpy(dst + (size_t)r * size, f->buf + BOOTSTRAP_HDR, size);
				free(f->buf);
				free(f);
				got[r] = 1;
				missing--;
			}
			if (!missing)
				break;
			for (r = 1; r < b->world; r++)
				if (!got[r] && b->star[r]->closed) {
					fail(b, MK_ERR_PEER, "collective #%u: rank %d (host %s) has left",
					     seq, r, host_of(b, r));
					broadcast_abort(b, r);
					free(got);
					return b->failed;
				}
			if ((st = step(b, deadline, NULL)) < 0) {
				free(got);
				return b->failed;
			}
			if (st > 0) {
				char list[200] = "";
				size_t len = 0;
				for (r = 1; r < b->world && len < sizeof list - 16; r++)
					if (!got[r])
						len += (size_t)snprintf(list + len, sizeof list - len,
									"%s%d", len ? ", " : "", r);
				fail(b, MK_ERR_PEER, "timed out after %u ms in collective #%u waiting "
				     "for rank%s %s", b->cfg.timeout_ms, seq, missing > 1 ? "s" : "",
				     list);
				broadcast_abort(b, -1);
				free(got);
				return b->failed;
			}
		}
		free(got);
	}
	for (r = 1; r < b->world; r++)
		if (send_frame(b, b->star[r], BOOTSTRAP_GATHERED, seq, dst,
			       size * (size_t)b->world, deadline) != MK_OK)
			return b->failed;
	return MK_OK;
}

mk_status bootstrap_barrier(bootstrap *b)
{
	unsigned char none[1] = {0};
	return bootstrap_allgather(b, none, none, 0);
}

/* ---- point to point -------------------------------------------------------------------- */
mk_status bootstrap_send(bootstrap *b, int peer, uint32_t tag, const void *buf, size_t len)
{
	int64_t deadline = now_ms() + b->cfg.timeout_ms;
	if (b->failed)
		return b->failed;
	if (peer < 0 || peer >= b->world)
		return oops(b, MK_ERR_NOT_FOUND, "send to rank %d of %d", peer, b->world);
	if (len > BOOTSTRAP_MAX_PAYLOAD)
		return oops(b, MK_ERR_SIZE, "a message of %zu bytes is over the maximum of %u", len,
			    BOOTSTRAP_MAX_PAYLOAD);
	if (peer == b->rank) {
		frame *f = calloc(1, sizeof *f);
		if (!f || !(f->buf = frame_new(BOOTSTRAP_P2P, b->rank, tag, b->cfg.token, buf, len))) {
			free(f);
			return fail(b, MK_ERR_NOMEM, "out of memory");
		}
		f->type = BOOTSTRAP_P2P;
		f->tag = tag;
		f->len = (uint32_t)len;
		*b->selft = f;
		b->selft = &f->next;
		return MK_OK;
	}
	if (!b->out[peer]) {
		struct sockaddr_storage ss;
		socklen_t sl = addr_to_sa(&b->table[peer], &ss);
		char why[256];
		int fd = connect_to((struct sockaddr *)&ss, sl, deadline, why, sizeof why);
		if (fd < 0)
			return fail(b, MK_ERR_PEER, "cannot reach rank %d (host %s): %s", peer,
				    host_of(b, peer), why);
		if (!(b->out[peer] = conn_new(fd, C_OUT, peer))) {
			close(fd);
			return fail(b, MK_ERR_NOMEM, "out of memory");
		}
		if (send_frame(b, b->out[peer], BOOTSTRAP_PEER_HELLO, 0, NULL, 0, deadline) != MK_OK)
			return b->failed;
	}
	return send_frame(b, b->out[peer], BOOTSTRAP_P2P, tag, buf, len, deadline);
}

mk_status bootstrap_recv(bootstrap *b, int peer, uint32_t tag, void *buf, size_t cap,
			 size_t *len)
{
	int64_t deadline = now_ms() + b->cfg.timeout_ms;
	frame *f;
	int st;

	if (len)
		*len = 0;
	if (peer < 0 || peer >= b->world)
		return oops(b, MK_ERR_NOT_FOUND, "receive from rank %d of %d", peer, b->world);
	for (;;) {
		/* what arrived before a failure is still delivered */
		f = peer == b->rank ? take(&b->self, &b->selft, BOOTSTRAP_P2P, tag)
				    : take_conn(b->in[peer], BOOTSTRAP_P2P, tag);
		if (f)
			break;
		if (b->failed)
			return b->failed;
		if (peer == b->rank)
			return oops(b, MK_ERR_STATE, "rank %d waits for a message (tag %u) from itself "
				    "that it never sent", peer, tag);
		if (b->in[peer] && b->in[peer]->closed)
			return fail(b, MK_ERR_PEER, "rank %d (host %s) has left without sending a "
				    "message with tag %u", peer, host_of(b, peer), tag);
		if ((st = step(b, deadline, NULL)) < 0)
			continue;   /* deliver what came before the failure */
		if (st > 0)
			return fail(b, MK_ERR_PEER, "timed out after %u ms waiting for a message "
				    "(tag %u) from rank %d (host %s)", b->cfg.timeout_ms, tag, peer,
				    host_of(b, peer));
	}
	if (f->len > cap) {
		mk_status s = oops(b, MK_ERR_SIZE, "a message of %u bytes from rank %d (tag %u) "
				   "does not fit in %zu bytes", f->len, peer, tag, cap);
		free(f->buf);
		free(f);
		return s;
	}
	if (f->len)
		memcpy(buf, f->buf + BOOTSTRAP_HDR, f->len);
	if (len)
		*len = f->len;
	free(f->buf);
	free(f);
	return MK_OK;
}
