/* bootstrap_frames.h - what the bootstrap tests share: a job's
 * configuration for a rank on loopback, rank 0's listener, and frames (a
 * HELLO with or without a valid MAC) built by hand.  Included once by
 * test_bootstrap.c and by test_bootstrap_join.c.
 */
#ifndef BOOTSTRAP_FRAMES_H
#define BOOTSTRAP_FRAMES_H

#include "mkt_proc.h"

#include <poll.h>

#include "runtime/bootstrap.h"

static int port, lfd = -1;
static const char *const TOKEN = "test_bootstrap's token";
static unsigned char KEY[BOOTSTRAP_KEY];

static inline bootstrap_cfg cfg_for(int rank, int world, unsigned timeout_ms)
{
	bootstrap_cfg c;
	memset(&c, 0, sizeof c);
	c.rank = rank;
	c.world = world;
	c.local_rank = c.local_world = -1;
	snprintf(c.root_host, sizeof c.root_host, "127.0.0.1");
	c.root_port = port;
	bootstrap_set_token(&c, TOKEN);
	c.host_id = 1;
	c.timeout_ms = timeout_ms;
	c.root_fd = -1;
	if (rank == 0) {
		c.root_fd = lfd;
	} else if (lfd >= 0) {
		close(lfd);   /* the child's inherited copy */
	}
	return c;
}

static inline void new_listener(void)
{
	if (lfd >= 0)
		close(lfd);
	lfd = mkt_listen(&port);
}

/* ---- parser ----------------------------------------------------------------- */
static inline size_t frame(unsigned char *buf, uint32_t type, int rank, uint32_t tag, const void *pay,
		    uint32_t len)
{
	bootstrap_header(buf, type, rank, tag, len);
	if (len)
		memcpy(buf + BOOTSTRAP_HDR, pay, len);
	return BOOTSTRAP_HDR + len;
}

/* A HELLO as rank `rank` of `world` answering challenge na, MAC'd with key
 * (NULL: no valid MAC). */
static inline size_t hello_for(unsigned char *buf, int rank, uint32_t world, const unsigned char *key,
			const unsigned char *na)
{
	unsigned char pay[BOOTSTRAP_HELLO_WIRE];
	bootstrap_addr a;
	size_t n;
	memset(&a, 0, sizeof a);
	memset(pay, 0, sizeof pay);
	a.family = 4;
	a.port = 1234;
	a.addr[0] = 127;
	a.addr[3] = 1;
	snprintf(a.host, sizeof a.host, "h");
	pay[0] = (unsigned char)world;
	pay[1] = (unsigned char)(world >> 8);
	pay[2] = pay[3] = 0;
	bootstrap_addr_put(pay + 4, &a);
	memset(pay + 4 + BOOTSTRAP_ADDR_WIRE, 0x4e, BOOTSTRAP_NONCE);   /* our nonce */
	n = frame(buf, BOOTSTRAP_HELLO, rank, 0, pay, sizeof pay);
	if (key)
		bootstrap_mac(key, "mk hello", 0, na, buf, n - BOOTSTRAP_MAC, buf + n - BOOTSTRAP_MAC);
	return n;
}

static inline size_t hello(unsigned char *buf, int rank, uint32_t world)
{
	static const unsigned char na[BOOTSTRAP_NONCE];
	return hello_for(buf, rank, world, KEY, na);
}

/* the job key test programs MAC with: the one bootstrap_set_token derives */
static inline void frames_init(void)
{
	bootstrap_cfg k;
	signal(SIGPIPE, SIG_IGN);
	memset(&k, 0, sizeof k);
	bootstrap_set_token(&k, TOKEN);
	memcpy(KEY, k.key, sizeof KEY);
}

#endif
