/* bootstrap_int.h - what the pieces of the bootstrap share; the rest of the
 * runtime includes bootstrap.h only.
 *
 *   bootstrap_wire.c  the frames: encode, decode, validate (what the fuzz
 *                     harness runs), and the error-text helpers
 *   bootstrap_auth.c  keys, nonces, HMAC-SHA256, constant-time comparison
 *   bootstrap_env.c   the configuration from MK_* and the launchers' variables
 *   bootstrap_loop.c  connections, frames arriving, the poll loop, sending
 *   bootstrap_join.c  listening, joining, leaving, the table of ranks
 *   bootstrap_coll.c  allgather, barrier, point-to-point messages
 *
 * Each uses only the pieces listed above it.  The bs_ functions are
 * internal: libmk does not export them.
 *
 * The handshake on every connection (A accepts, C connects; na, nc their
 * nonces; K the job key for joining, S the session key point to point):
 *
 *   A -> C  CHALLENGE  na
 *   C -> A  HELLO      world, address, nc, MAC(K, "mk hello", 0, na, frame)
 *        or PEER_HELLO nc, MAC(S, "mk peer hello", A's rank, na, frame)
 *   A -> C  ACCEPT     MAC(K or S, "mk accept" / "mk peer accept", A's rank,
 *                      na, nc le32(C's rank))
 *
 * "frame" is the frame's bytes up to its MAC (header included, so type,
 * rank and length are covered).  A checks C's MAC before believing anything
 * C says; C checks A's before sending anything else.  WELCOME then carries
 * S XOR MAC(K, "mk session", 0, na, nc le32(rank)): only a rank that joined
 * learns S, so only such a rank can open a point-to-point connection.
 */
#ifndef MK_BOOTSTRAP_INT_H
#define MK_BOOTSTRAP_INT_H

#include <poll.h>
#include <stdint.h>
#include <sys/socket.h>

#include "bootstrap.h"

#define MAX_PENDING 64
#define PENDING_MS 10000    /* a stranger gets this long to say hello */
#define LINGER_MS 100

/* ---- bootstrap_wire.c ------------------------------------------------------ */
/* vsnprintf into err[n], which may be NULL. */
void bs_fmt(char *err, size_t n, const char *f, ...) __attribute__((format(printf, 3, 4)));
const char *bs_type_name(uint32_t t);   /* "HELLO", "?" */

/* ---- bootstrap_auth.c ------------------------------------------------------ */
/* n bytes from getrandom; -1 if the OS has none to give. */
int bs_random(void *p, size_t n);
/* 1 when a and b (n bytes) are equal, in time that does not depend on where
 * they differ. */
int bs_equal(const void *a, const void *b, size_t n);
/* The MAC of a hello: over the frame's first n bytes (header and payload up
 * to the MAC). */
void bs_hello_mac(const unsigned char key[BOOTSTRAP_KEY], uint32_t type, int32_t acceptor,
		  const unsigned char na[BOOTSTRAP_NONCE], const unsigned char *bytes, size_t n,
		  unsigned char out[BOOTSTRAP_MAC]);
/* The acceptor's proof (ACCEPT) and the pad that seals the session key. */
void bs_accept_mac(const unsigned char key[BOOTSTRAP_KEY], int p2p, int32_t acceptor,
		   int32_t connector, const unsigned char na[BOOTSTRAP_NONCE],
		   const unsigned char nc[BOOTSTRAP_NONCE], unsigned char out[BOOTSTRAP_MAC]);
void bs_session_pad(const unsigned char key[BOOTSTRAP_KEY], int32_t rank,
		    const unsigned char na[BOOTSTRAP_NONCE], const unsigned char nc[BOOTSTRAP_NONCE],
		    unsigned char out[BOOTSTRAP_KEY]);
/* The key of a string (MK_JOB_TOKEN, or a derived token): SHA-256 under a
 * label, so the same string keys nothing else. */
void bs_key_of(const char *label, const char *s, unsigned char key[BOOTSTRAP_KEY]);

/* ---- bootstrap_loop.c ------------------------------------------------------ */
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
	int authed;               /* the handshake is done: the peer proved itself */
	int hs;                   /* a connection we opened: 1 challenge came, 2 ACCEPT came */
	int64_t refused;          /* pending: refused at this time; REJECT, close later */
	unsigned char na[BOOTSTRAP_NONCE]; /* the acceptor's nonce (ours if we accepted) */
	unsigned char nc[BOOTSTRAP_NONCE]; /* the connector's */
	unsigned char hdr[BOOTSTRAP_HDR];
	size_t hhave;
	unsigned char *buf;       /* frame being read: header + payload */
	size_t need, have;
	frame *q, **qt;
	size_t held;              /* bytes of buf and q, counted in bootstrap.mem */
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
	unsigned char session[BOOTSTRAP_KEY]; /* rank 0's, given in WELCOME */
	int have_session;
	size_t mem, mem_max;      /* bytes held by all connections, and the cap */
	mk_status failed;         /* sticky */
	int abort_sent;
	char err[512];
	struct pollfd *pfd;
	conn **pconn;
	size_t npfd_cap;
};

/* The one frame being written while bs_step polls. */
typedef struct wjob {
	conn *c;
	const unsigned char *buf;
	size_t len, done;
} wjob;

int64_t bs_now_ms(void);
const char *bs_host_of(const bootstrap *b, int r);   /* "?" when unknown */
/* Records the first failure (sticky) and returns its status. */
mk_status bs_fail(bootstrap *b, mk_status st, const char *f, ...)
	__attribute__((format(printf, 3, 4)));
/* The caller's mistake, not the job's: reported, not sticky. */
mk_status bs_oops(bootstrap *b, mk_status st, const char *f, ...)
	__attribute__((format(printf, 3, 4)));

conn *bs_conn_new(int fd, int kind, int rank);
void bs_conn_free(bootstrap *b, conn *c);   /* accepts NULL */
void bs_free_frames(frame *f);
/* One write, no waiting: for REJECT, ABORT and BYE, which are best effort. */
void bs_send_now(int fd, uint32_t type, int rank, uint32_t tag, int32_t about, const char *text);
/* The same with a payload of its own (CHALLENGE, ACCEPT); 0 when all of it
 * went out at once. */
int bs_send_raw(int fd, uint32_t type, int rank, uint32_t tag, const void *pay, size_t len);
/* Rank 0 tells everyone still connected that the job failed. */
void bs_broadcast_abort(bootstrap *b, int about);

/* One round of poll.  Returns 0 (something may have changed), 1 (the
 * deadline passed), -1 (failed: b->failed, b->err). */
int bs_step(bootstrap *b, int64_t deadline, wjob *w);
/* A header and a copy of the payload, malloc'd. */
unsigned char *bs_frame_new(uint32_t type, int rank, uint32_t tag, const void *pay, size_t len);
/* Sends one frame on c, keeping everything else moving. */
mk_status bs_send_frame(bootstrap *b, conn *c, uint32_t type, uint32_t tag, const void *pay,
			size_t len, int64_t deadline);
/* The oldest frame of this type and tag queued, unlinked (NULL: none). */
frame *bs_take(frame **q, frame ***qt, uint32_t type, uint32_t tag);
/* From a connection (c may be NULL); what it held is no longer counted. */
frame *bs_take_conn(bootstrap *b, conn *c, uint32_t type, uint32_t tag);

socklen_t bs_addr_to_sa(const bootstrap_addr *a, struct sockaddr_storage *ss);
/* Connects to sa, retrying refusals with backoff until the deadline.
 * Returns the fd, or -1 with why[]. */
int bs_connect_to(const struct sockaddr *sa, socklen_t len, int64_t deadline, char *why,
		  size_t n);

/* ---- bootstrap_join.c ------------------------------------------------------ */
/* The connecting side of the handshake on c (C_ROOT: HELLO with the job
 * key and `hello` (world and address, BOOTSTRAP_HELLO_WIRE - nonce - MAC
 * bytes); C_OUT: PEER_HELLO with the session key): waits for the challenge,
 * answers, checks the acceptor's proof. */
mk_status bs_handshake(bootstrap *b, conn *c, const unsigned char *hello, int64_t deadline);

#endif
