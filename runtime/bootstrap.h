/* bootstrap.h - ranks find each other: a TCP rendezvous, collectives of small
 * blobs, point-to-point messages.
 *
 * Rank 0 listens on MK_ROOT (host:port); every other rank connects to it and
 * says hello (its rank, the world size, where its own listener is, which host
 * it runs on).  Once all have joined, rank 0 sends everyone the table of
 * ranks.  Collectives (allgather, barrier) go through rank 0; point-to-point
 * messages go over direct connections, opened on first use (one per
 * direction and pair).
 *
 * Every message is a frame: a 24-byte header (magic, version, type, sender
 * rank, tag, length) and a payload of at most BOOTSTRAP_MAX_PAYLOAD bytes,
 * checked before anything is read or allocated.
 *
 * Every connection is authenticated both ways before it carries anything
 * else, without the job's secret ever crossing the wire: the accepting side
 * sends a fresh random challenge; the connecting side answers with its
 * HELLO (or PEER_HELLO) and an HMAC-SHA256 over the challenge and the frame;
 * the accepting side checks it (in constant time) and proves itself with an
 * HMAC over both sides' nonces.  Joining is keyed by the job key (from
 * MK_JOB_TOKEN); point-to-point connections by a session key that rank 0
 * makes at random and gives, encrypted under the job key, only to the ranks
 * in its table, so a PEER_HELLO is believed only from a rank that joined.
 * Before that proof every refusal looks the same (one REJECT text, sent
 * after BOOTSTRAP_REFUSE_MS), and a pending connection can make rank 0 hold
 * no more than one HELLO; after it, what a connection may leave unread, and
 * what all of them may, is capped (BOOTSTRAP_QUEUE_MAX, max_mem).
 *
 * Listeners are bound to the address MK_ROOT names (rank 0) or the one that
 * reaches rank 0 (the others), or to MK_IFACE; never to every interface
 * unless MK_IFACE=any says so.  Every step has a deadline (connect retries
 * with backoff, polls with timeouts).  A rank that disappears (connection
 * closed without a goodbye) fails the operation with MK_ERR_PEER and a
 * message naming it; rank 0 passes the news on to everyone waiting on it.
 * Timeouts are MK_ERR_PEER too, naming the ranks that did not answer.
 *
 * Not thread-safe: one thread uses a bootstrap at a time.  Nothing here
 * prints or exits; messages come back through err[] / bootstrap_error().
 */
#ifndef MK_BOOTSTRAP_H
#define MK_BOOTSTRAP_H

#include <stddef.h>
#include <stdint.h>

#include "mk.h"

#define BOOTSTRAP_MAGIC 0x53424b4du /* "MKBS" as little-endian bytes */
#define BOOTSTRAP_VERSION 2
#define BOOTSTRAP_HDR 24
#define BOOTSTRAP_MAX_PAYLOAD (16u << 20)
#define BOOTSTRAP_MAX_WORLD 65536
#define BOOTSTRAP_HOSTNAME 64
#define BOOTSTRAP_TEXT 256 /* longest reason in REJECT / ABORT */
#define BOOTSTRAP_KEY 32   /* job and session keys */
#define BOOTSTRAP_NONCE 16
#define BOOTSTRAP_MAC 32   /* HMAC-SHA256 */
#define BOOTSTRAP_REFUSE_MS 250 /* a refused stranger waits this long for its REJECT */
#define BOOTSTRAP_QUEUE_MAX (4 * (size_t)BOOTSTRAP_MAX_PAYLOAD) /* unread, one connection */
#define BOOTSTRAP_MEM_MAX (256u << 20) /* unread, all connections (default of max_mem) */
/* What every connection refused before it proved itself is told. */
#define BOOTSTRAP_REFUSED "refused: not a member of this job (another MK_JOB_TOKEN, another " \
	"job on this port, or another version of mk)"

/* Where the configuration came from. */
typedef struct bootstrap_cfg {
	int rank, world;
	int local_rank, local_world; /* from the launcher, -1 if it did not say */
	char root_host[256];         /* MK_ROOT host part, or MASTER_ADDR */
	int root_port;
	unsigned char key[BOOTSTRAP_KEY]; /* the job key, not all zero: SHA-256 of
	                                MK_JOB_TOKEN (bootstrap_set_token), or derived */
	int token_derived;           /* the key comes from the launcher's job id and the
	                                root address, which others can guess */
	uint64_t host_id;            /* which ranks share a host: MK_HOST_ID, else
	                                boot id and network namespace */
	unsigned timeout_ms;         /* every step; MK_BOOT_TIMEOUT_MS, default 60000 */
	int root_fd;                 /* rank 0: an already-listening socket to use
	                                instead of binding MK_ROOT (-1: none); from
	                                MK_ROOT_FD, which a launcher such as mkrun sets */
	char iface[64];              /* MK_IFACE: the interface (name or address) to
	                                listen on; "any": every interface; "": the
	                                address MK_ROOT names, or that reaches rank 0 */
	size_t max_mem;              /* bytes all connections may leave unread (0:
	                                BOOTSTRAP_MEM_MAX) */
	char source[400];            /* "MK_RANK/MK_WORLD_SIZE, MK_ROOT, token from
	                                MK_JOB_TOKEN", for logs */
} bootstrap_cfg;

/* Reads the configuration through get(name, ctx) (getenv for
 * bootstrap_config_env).  Rank and size, first found wins:
 *   MK_RANK, MK_WORLD_SIZE
 *   OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE   (Open MPI mpirun)
 *   PMI_RANK, PMI_SIZE                           (MPICH, Intel MPI)
 *   SLURM_PROCID, SLURM_NTASKS                   (srun)
 *   RANK, WORLD_SIZE                             (torchrun)
 * Local rank and size (optional): MK_LOCAL_RANK/MK_LOCAL_WORLD_SIZE,
 * OMPI_COMM_WORLD_LOCAL_RANK/_LOCAL_SIZE, MPI_LOCALRANKID/MPI_LOCALNRANKS,
 * SLURM_LOCALID, LOCAL_RANK/LOCAL_WORLD_SIZE.
 * Root: MK_ROOT=host:port ([v6addr]:port), else MASTER_ADDR and
 * MASTER_PORT + 1 (torchrun's own store holds MASTER_PORT); needed when the
 * world has more than one rank.
 * Token: MK_JOB_TOKEN (any string, hashed into the key; mkrun -n makes 128
 * random bits), else derived from the launcher's job id
 * (SLURM_JOB_ID.SLURM_STEP_ID, OMPI_MCA_ess_base_jobid, PMIX_NAMESPACE,
 * TORCHELASTIC_RUN_ID) and the root address.  A derived token keeps other
 * jobs out by accident, not by design (anyone who sees the job id can make
 * it): set MK_JOB_TOKEN to a secret for that.
 * MK_ROOT_FD (rank 0): an inherited socket, already listening, to use
 * instead of binding MK_ROOT (no port race); it must be one.
 * MK_IFACE: see bootstrap_cfg.iface.
 * With no variables at all: rank 0 of a world of 1. */
typedef const char *(*bootstrap_getenv_fn)(const char *name, void *ctx);
mk_status bootstrap_config(bootstrap_cfg *cfg, bootstrap_getenv_fn get, void *ctx, char *err,
			   size_t n);
mk_status bootstrap_config_env(bootstrap_cfg *cfg, char *err, size_t n);
/* 64-bit FNV-1a of a string, never 0 (how MK_HOST_ID becomes a host id). */
uint64_t bootstrap_hash(const char *s);
/* cfg->key = SHA-256 of the token string (what MK_JOB_TOKEN does). */
void bootstrap_set_token(bootstrap_cfg *cfg, const char *token);
/* HMAC-SHA256(key, label NUL le32(acceptor) nonce msg): every proof the
 * handshake asks for (bootstrap_int.h says which).  For tests and fuzzing. */
void bootstrap_mac(const unsigned char key[BOOTSTRAP_KEY], const char *label, int32_t acceptor,
		   const unsigned char nonce[BOOTSTRAP_NONCE], const void *msg, size_t n,
		   unsigned char out[BOOTSTRAP_MAC]);

typedef struct bootstrap bootstrap;

/* Joins the job: returns when every rank has joined, or fails within
 * cfg->timeout_ms.  On failure err[] says why and *out is NULL. */
mk_status bootstrap_create(const bootstrap_cfg *cfg, bootstrap **out, char *err, size_t n);
/* Says goodbye to every connection (so peers do not take the close for a
 * crash) and frees everything.  Accepts NULL. */
void bootstrap_destroy(bootstrap *b);

int bootstrap_rank(const bootstrap *b);
int bootstrap_world(const bootstrap *b);
/* Ranks on this host (same host id), numbered in rank order. */
int bootstrap_local_rank(const bootstrap *b);
int bootstrap_local_world(const bootstrap *b);
/* The global rank of local rank i of this host (-1 if out of range). */
int bootstrap_local_to_global(const bootstrap *b, int i);
uint64_t bootstrap_host_of(const bootstrap *b, int rank);
const char *bootstrap_hostname_of(const bootstrap *b, int rank);
/* The job's id: the same on every rank, different for every job, and no
 * secret (derived one way from the session key): what fdpass puts in its
 * messages. */
uint64_t bootstrap_job_id(const bootstrap *b);
unsigned bootstrap_timeout_ms(const bootstrap *b);
/* The last failure, one line ("" if none). */
const char *bootstrap_error(const bootstrap *b);

/* Every rank passes `size` bytes (the same size everywhere); all[] gets
 * world * size bytes, rank r's at all + r * size. */
mk_status bootstrap_allgather(bootstrap *b, const void *mine, void *all, size_t size);
mk_status bootstrap_barrier(bootstrap *b);
/* Point to point.  Messages from one rank with one tag arrive in order;
 * recv takes the oldest with that tag (others wait in a queue).  len up to
 * BOOTSTRAP_MAX_PAYLOAD; a message larger than cap is an MK_ERR_SIZE. */
mk_status bootstrap_send(bootstrap *b, int peer, uint32_t tag, const void *buf, size_t len);
mk_status bootstrap_recv(bootstrap *b, int peer, uint32_t tag, void *buf, size_t cap,
			 size_t *len);

/* ---- the wire format (exposed for tests and the fuzz harness) ---------- */
typedef enum bootstrap_type {
	BOOTSTRAP_HELLO = 1,  /* rank -> root: join (world, address, nonce, MAC) */
	BOOTSTRAP_WELCOME,    /* root -> rank: the table of ranks, the session key */
	BOOTSTRAP_REJECT,     /* root/peer -> stranger: why it may not join */
	BOOTSTRAP_GATHER,     /* rank -> root: my blob (tag: collective number) */
	BOOTSTRAP_GATHERED,   /* root -> rank: all blobs */
	BOOTSTRAP_PEER_HELLO, /* first frame on a point-to-point connection (nonce, MAC) */
	BOOTSTRAP_P2P,        /* a point-to-point message (tag: the user's) */
	BOOTSTRAP_ABORT,      /* root -> rank: the job failed (payload: rank, text) */
	BOOTSTRAP_BYE,        /* a clean close follows */
	BOOTSTRAP_CHALLENGE,  /* acceptor -> connector, first: a nonce */
	BOOTSTRAP_ACCEPT,     /* acceptor -> connector: its proof (MAC) */
	BOOTSTRAP_TYPE_END
} bootstrap_type;

/* Why a frame was refused. */
typedef enum bootstrap_fault {
	BOOTSTRAP_FAULT_NONE = 0,
	BOOTSTRAP_FAULT_SHORT,   /* fewer bytes than the header / the length says */
	BOOTSTRAP_FAULT_MAGIC,
	BOOTSTRAP_FAULT_VERSION,
	BOOTSTRAP_FAULT_TYPE,
	BOOTSTRAP_FAULT_LENGTH,  /* over the maximum, or wrong for the type */
	BOOTSTRAP_FAULT_FIELD,   /* a header or payload field out of range */
	BOOTSTRAP_FAULT_EXTRA    /* bytes after the frame */
} bootstrap_fault;

/* Where a rank listens and which host it is on (HELLO, and the WELCOME
 * table, one per rank). */
typedef struct bootstrap_addr {
	uint64_t host_id;
	uint16_t family;          /* 4 or 6 */
	uint16_t port;
	uint32_t scope;           /* IPv6 scope id */
	uint8_t addr[16];         /* IPv4 in the first 4 bytes */
	char host[BOOTSTRAP_HOSTNAME]; /* NUL-terminated */
} bootstrap_addr;
#define BOOTSTRAP_ADDR_WIRE (8 + 2 + 2 + 4 + 16 + BOOTSTRAP_HOSTNAME)

typedef struct bootstrap_msg {
	uint32_t type;
	int32_t rank;             /* sender */
	uint32_t tag;
	uint32_t len;             /* payload bytes */
	const unsigned char *payload;
	bootstrap_fault fault;
	/* decoded payloads */
	uint32_t world;           /* HELLO */
	bootstrap_addr addr;      /* HELLO */
	const unsigned char *nonce; /* HELLO, PEER_HELLO (the connector's), CHALLENGE */
	const unsigned char *mac; /* HELLO, PEER_HELLO, ACCEPT; WELCOME: the sealed key */
	int32_t about;            /* ABORT: the rank that failed (-1: the job); REJECT: reason */
	char text[BOOTSTRAP_TEXT];/* ABORT / REJECT */
} bootstrap_msg;

/* Header only: buf holds at least BOOTSTRAP_HDR bytes.  Checks magic,
 * version, type, reserved bits, length against BOOTSTRAP_MAX_PAYLOAD and
 * what the type carries, and the sender rank against world (world 0: only
 * against BOOTSTRAP_MAX_WORLD). */
mk_status bootstrap_parse_header(const void *buf, size_t n, int world, bootstrap_msg *m,
				 char *err, size_t errn);
/* A whole frame, exactly n bytes: the header as above and the payload's
 * shape for its type (HELLO, WELCOME for `world` ranks, REJECT, ABORT,
 * PEER_HELLO, CHALLENGE, ACCEPT; BYE empty).  The MACs are not checked here:
 * that needs the keys (bootstrap_loop.c).  On failure m->fault says which
 * check failed and err[] says it in words. */
mk_status bootstrap_parse(const void *buf, size_t n, int world, bootstrap_msg *m, char *err,
			  size_t errn);
/* Writes a header for a payload of len bytes into hdr[BOOTSTRAP_HDR]. */
void bootstrap_header(void *hdr, uint32_t type, int32_t rank, uint32_t tag, uint32_t len);
/* The wire form of one address (BOOTSTRAP_ADDR_WIRE bytes) and back. */
void bootstrap_addr_put(unsigned char *p, const bootstrap_addr *a);
int bootstrap_addr_get(const unsigned char *p, bootstrap_addr *a);
/* Payloads: HELLO = world (u32), the address, the connector's nonce, MAC;
 * PEER_HELLO = nonce, MAC; CHALLENGE = nonce; ACCEPT = MAC; WELCOME = the
 * table, then the session key sealed for this rank. */
#define BOOTSTRAP_HELLO_WIRE (4 + BOOTSTRAP_ADDR_WIRE + BOOTSTRAP_NONCE + BOOTSTRAP_MAC)
#define BOOTSTRAP_PEER_HELLO_WIRE (BOOTSTRAP_NONCE + BOOTSTRAP_MAC)
#define BOOTSTRAP_CHALLENGE_WIRE BOOTSTRAP_NONCE
#define BOOTSTRAP_ACCEPT_WIRE BOOTSTRAP_MAC
#define BOOTSTRAP_WELCOME_WIRE(world) ((size_t)(world) * BOOTSTRAP_ADDR_WIRE + BOOTSTRAP_KEY)

#endif
