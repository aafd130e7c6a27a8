/* fdpass.h - pass file descriptors among the ranks of one host.
 *
 * NVLink peers share memory by exporting it as POSIX file descriptors
 * (cuMemExportToShareableHandle) and importing them in the other processes.
 * A descriptor only travels between processes over a Unix domain socket
 * (SCM_RIGHTS); this is that socket.
 *
 * Each local rank binds one SOCK_SEQPACKET socket named after the job token
 * and its local rank: in the abstract namespace ("\0mk-fd-<token>-<rank>",
 * per network namespace, nothing to clean up) or, with use_path, as a file
 * in $XDG_RUNTIME_DIR (else /tmp) that is removed on destroy.  Sending to a
 * rank opens a connection to its socket on first use (retrying until the
 * deadline: the peer may not be up yet), says hello, then sends messages.
 * A connection is accepted only from a process of the same user
 * (SO_PEERCRED) whose hello carries the job token.
 *
 * A message is one datagram of the connection: a 32-byte header (magic,
 * version, type, sending rank, tag, number of descriptors, data length, job
 * token), up to FDPASS_MAX_DATA bytes of data, and up to FDPASS_MAX_FDS
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

typedef struct fdpass_cfg {
	uint64_t token;           /* the job token (bootstrap_token) */
	int rank, nranks;         /* local rank on this host, local ranks */
	unsigned timeout_ms;
	int use_path;             /* 0: abstract socket; 1: a file (see above) */
	const char *dir;          /* with use_path: NULL = $XDG_RUNTIME_DIR or /tmp */
} fdpass_cfg;

typedef struct fdpass fdpass;

mk_status fdpass_create(const fdpass_cfg *cfg, fdpass **out, char *err, size_t n);
void fdpass_destroy(fdpass *f);   /* accepts NULL; closes descriptors not taken */
const char *fdpass_error(const fdpass *f);
/* "@mk-fd-...-0" (abstract) or the path */
const char *fdpass_name(const fdpass *f);

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
