/* mkd/proxy.cuh - the device-to-host proxy FIFO: how a CTA asks the host to
 * post an RDMA write.
 *
 * A ring of fixed-size 64-byte commands in host-pinned memory, mapped for
 * the device.  Producers are CTAs (thread 0 of each), the consumer is one
 * proxy thread on the host (runtime/proxy.c).  The protocol, in full (also in
 * docs/rdma.md):
 *
 *   producer (device)                        consumer (host proxy thread)
 *   h = atomicAdd(head, 1)   // claim          at position t (its own count):
 *   wait until h - tail < nslots             wait until slot[t % n].seq == t + 1
 *   write slot[h % n] body                   (acquire), copy the command out,
 *   st.release.sys slot.seq = h + 1          ...; tail = t + 1 (release store)
 *
 * `head` lives in device memory: only CTAs of this GPU claim slots.  `tail`
 * and `done` live in host memory and only the host writes them.  A slot is
 * reused after the host has copied it out (tail passed it); the sequence
 * number of position t is t + 1, so a slot's previous command (t - n + 1)
 * is never taken for the new one and nothing is ever cleared.  All counters
 * are 64-bit and only grow: runs of a resident kernel continue them.
 *
 * `done` counts commands whose data and flag have been delivered, in ring
 * order (the longest completed prefix).  A producer that must reuse its
 * source buffer waits for done >= its ticket (mkd_proxy_wait_done).
 *
 * Every wait is bounded like mkd_wait: past p.timeout_ns it records a stall
 * (flag_rank = -1: the proxy; flag_index = MKD_PROXY_STALL_FULL or
 * MKD_PROXY_STALL_DONE) and raises `aborted`.  A proxy that failed (a dead
 * peer, a transport error) sets ctl->failed; producers see it at once and
 * record MKD_PROXY_STALL_FAILED instead of waiting out their timeout.
 *
 * The structs are plain C so that the runtime includes this file as a C
 * header; the device functions are compiled only by NVRTC / nvcc.
 */
#ifndef MKD_PROXY_CUH
#define MKD_PROXY_CUH

#define MKD_PROXY_CMD_BYTES 64

/* Commands (op). */
#define MKD_PROXY_OP_WRITE 1   /* bytes from src to dst_rank's dst, then the flag */
#define MKD_PROXY_OP_SIGNAL 2  /* the flag only */

/* Regions: src_buf / dst_buf are tensor indices (0 .. MKD_MAX_TENSORS-1,
 * registered by the runtime); the flag array of each rank is region
 * MKD_PROXY_REGION_FLAGS and a flag is 8 bytes at flag_index * 8. */
#define MKD_PROXY_REGION_FLAGS 64

/* Stall report codes (mkd_report.flag_index when flag_rank == -1). */
#define MKD_PROXY_STALL_FULL (-1)    /* the ring stayed full */
#define MKD_PROXY_STALL_DONE (-2)    /* a command did not complete */
#define MKD_PROXY_STALL_FAILED (-3)  /* the proxy reported a failure */

/* One command.  The flag is WRITTEN (not added) after the data, with
 * flag_value: each remote flag slot has one writer, and the value is the
 * count the consumer waits for (epoch * expected), so it only grows.  No
 * order between different commands is promised, only data before its flag. */
typedef struct mkd_proxy_cmd {
	unsigned short op;
	unsigned short src_buf;
	unsigned short dst_buf;
	unsigned short lane;            /* connection hint (QP) */
	unsigned int dst_rank;
	unsigned int flag_index;        /* in dst_rank's flag array */
	unsigned long long src_off;     /* bytes into src_buf on this rank */
	unsigned long long dst_off;     /* bytes into dst_buf on dst_rank */
	unsigned long long bytes;
	unsigned long long flag_value;
	unsigned int task;              /* for reports */
	unsigned int reserved;
	unsigned long long seq;         /* published last: position + 1 */
} mkd_proxy_cmd;

/* Host-written words, each on its own 64-byte line (host-pinned, mapped). */
typedef struct mkd_proxy_ctl {
	unsigned long long tail;        /* commands copied out of the ring */
	unsigned long long pad0[7];
	unsigned long long done;        /* commands delivered, in ring order */
	unsigned long long pad1[7];
	unsigned int failed;            /* nonzero mk_status once the proxy failed */
	unsigned int pad2[15];
} mkd_proxy_ctl;

/* What a kernel gets to reach its ring (by value, e.g. in mkd_params). */
typedef struct mkd_proxy_ring {
	mkd_proxy_cmd *slots;           /* host-pinned, nslots */
	mkd_proxy_ctl *ctl;             /* host-pinned */
	unsigned long long *head;       /* device memory: slots claimed */
	unsigned int nslots;            /* a power of two */
	unsigned int pad;
} mkd_proxy_ring;

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)

#include "base.cuh"
#include "abi.cuh"
#include "flags.cuh"

MKD_INLINE u64 mkd_proxy_ld_sys(const u64 *p)
{
	u64 v;
	asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
}

MKD_INLINE u32 mkd_proxy_ld_sys_u32(const u32 *p)
{
	u32 v;
	asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
}

/* Records a proxy stall (first one wins) and aborts the run. */
MKD_INLINE void mkd_proxy_stall(const mkd_params &p, int code, u64 expected, u64 seen, u64 dt,
				mkd_waiter w)
{
	mkd_report *r = p.report;
	if (atomicCAS(&r->stalled, 0u, 1u) == 0u) {
		r->rank = w.rank;
		r->cta = w.cta;
		r->task = w.task;
		r->stage = w.stage;
		r->flag_rank = -1;
		r->flag_index = code;
		r->expected = expected;
		r->seen = seen;
		r->waited_ns = dt;
		r->epoch = p.epoch;
		__threadfence_system();
	}
	atomicExch(&r->aborted, 1u);
	__threadfence_system();
}

/* Thread 0 of a CTA, after the CTA's writes to the source are complete
 * (__syncthreads, and __threadfence_system when the NIC reads device memory
 * through PCIe).  Returns the command's ticket (position + 1; wait for
 * done >= ticket to reuse the source), or 0 when the run is aborted. */
MKD_INLINE u64 mkd_proxy_push(const mkd_params &p, const mkd_proxy_ring &ring,
			      const mkd_proxy_cmd &c, mkd_waiter w)
{
	const u64 h = atomicAdd(ring.head, 1ull);
	u64 t = mkd_proxy_ld_sys(&ring.ctl->tail);
	if (h - t >= ring.nslots) {
		const u64 t0 = mkd_globaltimer();
		u32 ns = 64;
		for (;;) {
			__nanosleep(ns);
			if (ns < 2048)
				ns <<= 1;
			t = mkd_proxy_ld_sys(&ring.ctl->tail);
			if (h - t < ring.nslots)
				break;
			if (mkd_proxy_ld_sys_u32(&ring.ctl->failed)) {
				mkd_proxy_stall(p, MKD_PROXY_STALL_FAILED, h + 1 - ring.nslots, t,
						mkd_globaltimer() - t0, w);
				return 0;
			}
			if (mkd_ld_volatile_u32(&p.report->aborted))
				return 0;
			const u64 dt = mkd_globaltimer() - t0;
			if (dt > p.timeout_ns) {
				mkd_proxy_stall(p, MKD_PROXY_STALL_FULL, h + 1 - ring.nslots, t, dt, w);
				return 0;
			}
		}
	}
	/* the body: three 16-byte stores and one 8-byte store (the slot is 64-byte
	 * aligned), then the sequence number with release semantics at system
	 * scope, which orders the body before it for the host. */
	mkd_proxy_cmd *s = ring.slots + (h & (u64)(ring.nslots - 1));
	const u64 w0 = (u64)c.op | (u64)c.src_buf << 16 | (u64)c.dst_buf << 32 |
		       (u64)c.lane << 48;
	const u64 w1 = (u64)c.dst_rank | (u64)c.flag_index << 32;
	const u64 w6 = (u64)c.task | (u64)c.reserved << 32;
	u64 *q = (u64 *)s;
	asm volatile("st.global.v2.u64 [%0], {%1, %2};" :: "l"(q), "l"(w0), "l"(w1) : "memory");
	asm volatile("st.global.v2.u64 [%0], {%1, %2};" :: "l"(q + 2), "l"(c.src_off),
		     "l"(c.dst_off) : "memory");
	asm volatile("st.global.v2.u64 [%0], {%1, %2};" :: "l"(q + 4), "l"(c.bytes),
		     "l"(c.flag_value) : "memory");
	asm volatile("st.global.u64 [%0], %1;" :: "l"(q + 6), "l"(w6) : "memory");
	asm volatile("st.release.sys.global.u64 [%0], %1;" :: "l"(&s->seq), "l"(h + 1) : "memory");
	return h + 1;
}

/* Waits until the command with this ticket (and every one before it) has
 * been delivered.  Thread 0.  False when the run is aborted. */
MKD_INLINE bool mkd_proxy_wait_done(const mkd_params &p, const mkd_proxy_ring &ring, u64 ticket,
				    mkd_waiter w)
{
	u64 d = mkd_proxy_ld_sys(&ring.ctl->done);
	if (d >= ticket)
		return true;
	const u64 t0 = mkd_globaltimer();
	u32 ns = 128;
	for (;;) {
		__nanosleep(ns);
		if (ns < 2048)
			ns <<= 1;
		d = mkd_proxy_ld_sys(&ring.ctl->done);
		if (d >= ticket)
			return true;
		if (mkd_proxy_ld_sys_u32(&ring.ctl->failed)) {
			mkd_proxy_stall(p, MKD_PROXY_STALL_FAILED, ticket, d, mkd_globaltimer() - t0, w);
			return false;
		}
		if (mkd_ld_volatile_u32(&p.report->aborted))
			return false;
		const u64 dt = mkd_globaltimer() - t0;
		if (dt > p.timeout_ns) {
			mkd_proxy_stall(p, MKD_PROXY_STALL_DONE, ticket, d, dt, w);
			return false;
		}
	}
}

#endif /* device code */
#endif
