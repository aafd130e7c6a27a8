/* bootstrap_int.h - what the pieces of the bootstrap share; the rest of the
 * runtime includes bootstrap.h only.
 *
 *   bootstrap_wire.c  the frames: encode, decode, validate (what the fuzz
 *                     harness runs), and the error-text helpers
 *   bootstrap_env.c   the configuration from MK_* and the launchers' variables
 *   bootstrap_loop.c  connections, frames arriving, the poll loop, sending
 *   bootstrap_join.c  listening, joining, leaving, the table of ranks
 *   bootstrap_coll.c  allgather, barrier, point-to-point messages
 *
 * Each uses only the pieces listed above it.  The bs_ functions are
 * internal: libmk does not export them.
 */
#ifndef MK_BOOTSTRAP_INT_H
#define MK_BOOTSTRAP_INT_H

#include <poll.h>
#include <stdint.h>
#include <sys/socket.h>

#include "bootstrap.h"

#define MAX_PENDING 64
#define PENDING_MS 10000    /* a stranger gets this long to say hello */
#define QUEUE_MAX (4 * (size_t)BOOTSTRAP_MAX_PAYLOAD) /* unread bytes per connection */
#define LINGER_MS 100

/* ---- bootstrap_wire.c ------------------------------------------------------ */
/* vsnprintf into err[n], which may be NULL. */
void bs_fmt(char *err, size_t n, const char *f, ...) __attribute__((format(printf, 3, 4)));
const char *bs_type_name(uint32_t t);   /* "HELLO", "?" */

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
void bs_conn_free(conn *c);   /* accepts NULL */
void bs_free_frames(frame *f);
/* One write, no waiting: for REJECT, ABORT and BYE, which are best effort. */
void bs_send_now(int fd, uint32_t type, int rank, uint32_t tag, uint64_t token, int32_t about,
		 const char *text);
/* Rank 0 tells everyone still connected that the job failed. */
void bs_broadcast_abort(bootstrap *b, int about);

/* One round of poll.  Returns 0 (something may have changed), 1 (the
 * deadline passed), -1 (failed: b->failed, b->err). */
int bs_step(bootstrap *b, int64_t deadline, wjob *w);
/* A header and a copy of the payload, malloc'd. */
unsigned char *bs_frame_new(uint32_t type, int rank, uint32_t tag, uint64_t token,
			    const void *pay, size_t len);
/* Sends one frame on c, keeping everything else moving. */
mk_status bs_send_frame(bootstrap *b, conn *c, uint32_t type, uint32_t tag, const void *pay,
			size_t len, int64_t deadline);
/* The oldest frame of this type and tag queued, unlinked (NULL: none). */
frame *bs_take(frame **q, frame ***qt, uint32_t type, uint32_t tag);
frame *bs_take_conn(conn *c, uint32_t type, uint32_t tag);   /* c may be NULL */

socklen_t bs_addr_to_sa(const bootstrap_addr *a, struct sockaddr_storage *ss);
/* Connects to sa, retrying refusals with backoff until the deadline.
 * Returns the fd, or -1 with why[]. */
int bs_connect_to(const struct sockaddr *sa, socklen_t len, int64_t deadline, char *why,
		  size_t n);

#endif
