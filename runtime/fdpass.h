/* fdpass.h - pass file descriptors among the ranks of one host.
 *
 * NVLink peers share memory by exporting it as POSIX file descriptors
 * (cuMemExportToShareableHandle) and importing them in the other processes.
 * A descriptor only travels between processes over a Unix domain socket
 * (SCM_RIGHTS); this is that socket.
 *
 * Each local rank binds one SOCK_SEQPACKET socket under a random name (128
 * bits from getrandom, nothing of the job in it): in the abstract namespace
 * ("@mk-fd-<32 hex>", per network namespace, nothing to clean up) or, with
 * use_path, as a file "mk-fd-<32 hex>.sock" in $XDG_RUNTIME_DIR (else /tmp),
 * mode 0600, removed on destroy.  The names and the processes behind them
 * travel through the bootstrap (fdpass_self on each rank, an allgather,
 * fdpass_set_peers), so a name is bound before anyone can learn it.
 *
 * Both ends authenticate the other with SO_PEERCRED before anything is
 * sent: the connecting side checks that the socket it reached is held by
 * the same user and, where known, by the expected process; the accepting
 * side checks the same of the connecting process and then wants a HELLO
 * naming a rank whose process that is, with the job's id.  A socket held by
 * anyone else gets nothing (no hello, no descriptor), and the send fails
 * saying whose socket it was.
 *
 * A message is one datagram of the connection: a 32-byte header (magic,
 * version, type, sending rank, tag, number of descriptors, data length, job
 * id), up to FDPASS_MAX_DATA bytes of data, and up to FDPASS_MAX_FDS
 * descriptors.  All of it is checked against what arrived (a truncated
 * datagram, truncated control data, a descriptor count that does not match
 * the header: refused, and any descriptors that came with it closed).
 * Received descriptors are close-on-exec and belong to the caller.
 *
 * Every call has a deadline (timeout_ms); a peer that disappears (its
 * connection closes with no goodbye) fails the call with MK_ERR_PEER and a
 * message naming it.  Not thread-safe; nothing here prints or exits.
 */
#ifndef MK_FDPASS_H
#define MK_FDPASS_H

#include <stddef.h>
#include <stdint.h>

#include "mk.h"

#define FDPASS_MAGIC 0x44464b4du /* "MKFD" */
#define FDPASS_VERSION 1
#define FDPASS_HDR 32
#define FDPASS_MAX_FDS 16
#define FDPASS_MAX_DATA 4096
#define FDPASS_MAX_RANKS 256
#define FDPASS_NAME 108           /* sun_path: "@name" (abstract) or a path, NUL-terminated */

typedef struct fdpass_cfg {
	uint64_t token;           /* the job's id (bootstrap_job_id): not a secret */
	int rank, nranks;         /* local rank on this host, local ranks */
	unsigned timeout_ms;
	int use_path;             /* 0: abstract socket; 1: a file (see above) */
	const char *dir;          /* with use_path: NULL = $XDG_RUNTIME_DIR or /tmp */
	const char *name;         /* tests: this name ("mkt-0", no '@'; a file name with
	                             use_path) instead of a random one; NULL: random */
} fdpass_cfg;

/* Where a local rank listens, and which process that is. */
typedef struct fdpass_ep {
	char name[FDPASS_NAME];   /* as fdpass_name gives it */
	int32_t pid;              /* > 0: the listening process, checked with SO_PEERCRED
	                             (in our pid namespace); 0: not checked */
	uint64_t pidns;           /* its pid namespace (inode), 0 if unknown: a pid is
	                             checked only when it is ours */
} fdpass_ep;
#define FDPASS_EP_WIRE (FDPASS_NAME + 4 + 8)

typedef struct fdpass fdpass;

mk_status fdpass_create(const fdpass_cfg *cfg, fdpass **out, char *err, size_t n);
void fdpass_destroy(fdpass *f);   /* accepts NULL; closes descriptors not taken */
const char *fdpass_error(const fdpass *f);
/* "@mk-fd-<32 hex>" (abstract) or the path */
const char *fdpass_name(const fdpass *f);
/* This rank's endpoint: its name, this process, its pid namespace. */
void fdpass_self(const fdpass *f, fdpass_ep *ep);
/* Every local rank's endpoint (eps[nranks]; this rank's own is ignored), as
 * the bootstrap passed them around.  Needed before fdpass_send and
 * fdpass_recv; MK_ERR_INVALID for a name that is not NUL-terminated. */
mk_status fdpass_set_peers(fdpass *f, const fdpass_ep *eps);
/* The wire form of an endpoint (FDPASS_EP_WIRE bytes) and back; get returns
 * -1 for a name without its NUL. */
void fdpass_ep_put(unsigned char *p, const fdpass_ep *ep);
int fdpass_ep_get(const unsigned char *p, fdpass_ep *ep);

/* Sends nfds descriptors (they stay open here) and len bytes to local rank
 * `peer` under `tag`. */
mk_status fdpass_send(fdpass *f, int peer, uint32_t tag, const int *fds, int nfds,
		      const void *data, size_t len);
/* Receives the oldest message from `peer` with `tag` (others wait in a
 * queue).  It must carry at most maxfds descriptors and cap bytes
 * (MK_ERR_SIZE otherwise, and its descriptors are closed). */
mk_status fdpass_recv(fdpass *f, int peer, uint32_t tag, int *fds, int maxfds, int *nfds,
		      void *data, size_t cap, size_t *len);

/* ---- the wire format (tests, fuzzing) ------------------------------------------ */
enum { FDPASS_HELLO = 1, FDPASS_MSG, FDPASS_BYE };

typedef struct fdpass_msg {
	uint32_t type;
	int32_t rank;
	uint32_t tag, nfds, len;
	uint64_t token;
	const unsigned char *data;
} fdpass_msg;

/* One received datagram of n bytes that came with `got_fds` descriptors:
 * checks the header (magic, version, type, rank < nranks, tag, counts,
 * reserved bits, token) against what arrived. */
mk_status fdpass_parse(const void *buf, size_t n, int got_fds, uint64_t token, int nranks,
		       fdpass_msg *m, char *err, size_t errn);
void fdpass_header(void *hdr, uint32_t type, int32_t rank, uint32_t tag, uint32_t nfds,
		   uint32_t len, uint64_t token);

#endif
