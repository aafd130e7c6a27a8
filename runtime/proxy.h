/* proxy.h - the host side of the device-to-host command ring: one proxy
 * thread per GPU that turns commands into RDMA writes.
 *
 * The ring and its protocol are defined in codegen/mkd/proxy.cuh (and
 * docs/rdma.md).  The proxy thread:
 *   - drains the ring in batches, in sequence order, copying each command
 *     out and publishing `tail` (release) so producers can reuse the slots;
 *   - checks each command (op, ranks, regions, bounds) and posts its data in
 *     chunks and then its flag through the transport, so that the flag is
 *     never visible before the data: back to back on an ordered transport,
 *     else once the data write has completed with delivery semantics;
 *   - polls completions all the time (software providers need the target
 *     to make progress), publishes `done` (the longest completed prefix);
 *   - turns every error - a bad command, a failed or timed-out write, a
 *     dead peer - into a status and a message (proxy_status), sets
 *     ctl->failed so producers stop waiting, and stops posting;
 *   - is pinned to the CPUs near the GPU when /sys says which.
 *
 * Ring memory is the caller's: host-pinned and mapped for the GPU in
 * production (cuMemHostAlloc), plain host memory in tests, where a host
 * thread produces with proxy_host_push, the same protocol as the device.
 *
 * Shutdown: proxy_flush (every command taken so far delivered), then a
 * bootstrap barrier WHILE the proxy still runs (peers may still be writing
 * to this rank, and their writes need this rank's progress), then
 * proxy_stop / proxy_destroy, then transport_close.
 */
#ifndef MK_PROXY_H
#define MK_PROXY_H

#include <stddef.h>
#include <stdint.h>

#include "../codegen/mkd/proxy.cuh"
#include "mk.h"
#include "transport.h"

typedef struct proxy_opts {
	mkd_proxy_ring ring;      /* slots and ctl: host addresses; head unused here */
	transport *tp;            /* connected; the proxy thread owns it from start */
	unsigned timeout_ms;      /* a write not delivered in this time fails (0: 10000) */
	unsigned batch;           /* commands taken per drain (0: 32) */
	uint64_t chunk;           /* largest single write (0: the transport's maximum) */
	const char *pci_bus_id;   /* the GPU's ("0000:17:00.0") for pinning, or NULL */
	int cpu;                  /* >= 0: pin to this CPU instead; -1: MK_PROXY_CPU or near the GPU */
	unsigned idle_us;         /* sleep when idle after spinning a while (0: 20) */
	unsigned delay_us;        /* tests: a slow proxy, this long per command */
	const char *sysfs;        /* tests: instead of "/sys" */
} proxy_opts;

#define PROXY_OPTS_INIT {{0, 0, 0, 0, 0}, 0, 0, 0, 0, 0, -1, 0, 0, 0}

typedef struct proxy_stats {
	uint64_t commands;        /* taken from the ring */
	uint64_t completed;       /* delivered (== ctl->done) */
	uint64_t writes;          /* data writes posted (chunks) */
	uint64_t flags;           /* flag writes posted */
	uint64_t bytes;
	uint64_t batches;         /* drains that found commands */
	uint64_t max_batch;
	uint64_t busy;            /* posts refused by a full queue */
} proxy_stats;

typedef struct proxy proxy;

/* Starts the thread.  log[] gets one line on where it runs ("proxy: pinned
 * to CPUs 0-15, local to GPU 0000:17:00.0" / "proxy: not pinned (...)"). */
mk_status proxy_start(const proxy_opts *o, proxy **out, char *log, size_t n);
/* MK_OK while healthy; else the failure, message in msg[] (may be NULL). */
mk_status proxy_status(proxy *p, char *msg, size_t n);
/* Waits until every command taken from the ring so far, and every one
 * published before this call, is delivered; fails with the proxy. */
mk_status proxy_flush(proxy *p, unsigned timeout_ms);
/* Stops the thread (in-flight writes are abandoned: flush first); returns
 * the final status.  Idempotent. */
mk_status proxy_stop(proxy *p);
void proxy_destroy(proxy *p);   /* stops; accepts NULL */
void proxy_get_stats(proxy *p, proxy_stats *s);

/* The producer side on a host thread: exactly the device's protocol
 * (mkd_proxy_push) with C11-style atomics.  Returns the ticket, or 0 when
 * the ring stayed full for timeout_ms or the proxy failed. */
uint64_t proxy_host_push(const mkd_proxy_ring *r, const mkd_proxy_cmd *c, unsigned timeout_ms);
/* Waits for ctl->done >= ticket; 0 or -1 on timeout / proxy failure. */
int proxy_host_wait_done(const mkd_proxy_ring *r, uint64_t ticket, unsigned timeout_ms);

/* Host memory for a ring (tests, and hosts without a GPU): slots 64-byte
 * aligned, ctl, head.  nslots a power of two. */
mk_status proxy_ring_alloc(unsigned nslots, mkd_proxy_ring *r);
void proxy_ring_free(mkd_proxy_ring *r);

/* "0-3,8,10-11" -> CPUs; returns how many, -1 when malformed. */
int proxy_parse_cpulist(const char *s, int *cpus, int max);

#endif
