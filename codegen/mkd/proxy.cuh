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
 * The structs are plain C (abi.cuh) so that the runtime includes this file
 * as a C header; the device functions are compiled only by NVRTC / nvcc.
 * mkd_rdma_put, at the end, is what an RDMA stage of a generated kernel
 * calls: one task's box as commands, its flag behind the last of them.
 */
#ifndef MKD_PROXY_CUH
#define MKD_PROXY_CUH

/* The layout (commands, ctl, ring) is plain C in abi.cuh, which the runtime
 * includes too. */
#include "abi.cuh"

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)

#include "base.cuh"
#include "flags.cuh"
#include "tensor.cuh"

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
	mkd_report_abort(p, w, -1, code, expected, seen, dt);
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

/* Byte offset of logical element (i0, i1, i2) of tensor t in rank x's
 * piece: what a command names, for a rank this process cannot address. */
template <int GPUS>
MKD_INLINE u64 mkd_offset(const mkd_tensor &t, int x, i64 i0, i64 i1, i64 i2)
{
	i0 -= mkd_base<GPUS>(t, 0, x);
	i1 -= mkd_base<GPUS>(t, 1, x);
	i2 -= mkd_base<GPUS>(t, 2, x);
	return (u64)(((i0 * t.local[1] + i1) * t.local[2] + i2) * t.esize);
}

/* One RDMA task, thread 0 of its CTA, after the task's waits: the box
 * [slo, slo + hi - lo) of tensor st on this rank goes to [lo, hi) of tensor
 * dt on rank dst (another node), then the task's flag there is written with
 * the epoch.
 *
 * First the receiver must have started this run (its READY word `ready` in
 * this rank's RDMA flag area reaches the epoch): until then it may still
 * read what the last run put there.  The box becomes one command per
 * contiguous run of bytes (a whole box when rows are whole in both
 * tensors, else one per row).  Commands are not ordered among themselves,
 * so with several the flag rides only on the last, pushed once every
 * earlier one is delivered (done >= its ticket); the earlier ones write
 * the receiver's scratch word.  *ticket keeps the largest ticket: the end
 * of the run waits for it (the source is free and everything landed).
 * False when the run is aborted. */
template <int GPUS>
MKD_INLINE bool mkd_rdma_put(const mkd_params &p, int rank, int st, const mkd_tensor &S,
			     const i64 *slo, int dt, const mkd_tensor &D, int dst, const i64 *lo,
			     const i64 *hi, u32 flag, u32 ready, int ready_report, u32 scratch,
			     u64 epoch, u64 *ticket, mkd_waiter w)
{
	const u64 *rf = (const u64 *)p.ranks[rank].rflags;
	if (!mkd_wait(p, rf + ready, epoch, rank, ready_report, w))
		return false;
	const i64 n0 = hi[0] - lo[0], n1 = hi[1] - lo[1], n2 = hi[2] - lo[2];
	const bool rows = n2 == S.local[2] && n2 == D.local[2];     /* whole rows */
	const bool mats = rows && n1 == S.local[1] && n1 == D.local[1];
	const i64 runs = mats ? 1 : rows ? n0 : n0 * n1;
	mkd_proxy_cmd c;
	c.op = MKD_PROXY_OP_WRITE;
	c.src_buf = (u16)st;
	c.dst_buf = (u16)dt;
	c.dst_rank = (u32)dst;
	c.bytes = (u64)(mats ? n0 * n1 * n2 : rows ? n1 * n2 : n2) * (u64)S.esize;
	c.flag_value = epoch;
	c.task = (u32)w.task;
	c.reserved = 0;
	c.seq = 0;
	u64 tk = 0;
	for (i64 j = 0; j < runs; j++) {
		const i64 e = mats ? 0 : rows ? j : j / n1, r = rows ? 0 : j % n1;
		const bool last = j + 1 == runs;
		c.src_off = mkd_offset<GPUS>(S, rank, slo[0] + e, slo[1] + r, slo[2]);
		c.dst_off = mkd_offset<GPUS>(D, dst, lo[0] + e, lo[1] + r, lo[2]);
		c.lane = (u16)j;
		c.flag_index = last ? flag : scratch;
		if (last && tk && !mkd_proxy_wait_done(p, p.ring, tk, w))
			return false;
		if (!(tk = mkd_proxy_push(p, p.ring, c, w)))
			return false;
	}
	if (tk > *ticket)
		*ticket = tk;
	return true;
}

/* The start of a run, thread 0 of one CTA: tell every rank that writes
 * into this one (ranks from[0..n)) that it may, by writing the epoch into
 * READY word base + j of its RDMA flag area. */
template <int NODES, int GPUS>
MKD_INLINE bool mkd_rdma_ready(const mkd_params &p, int rank, const int *from, int n, u32 base,
			       u64 epoch, u64 *ticket, mkd_waiter w)
{
	mkd_proxy_cmd c;
	c.op = MKD_PROXY_OP_SIGNAL;
	c.src_buf = c.dst_buf = c.lane = 0;
	c.src_off = c.dst_off = c.bytes = 0;
	c.flag_value = epoch;
	c.task = 0xffffffffu;
	c.reserved = 0;
	c.seq = 0;
	for (int j = 0; j < n; j++) {
		c.dst_rank = (u32)mkd_shift_rank<NODES, GPUS>(from[j], rank);
		c.flag_index = base + (u32)j;
		const u64 tk = mkd_proxy_push(p, p.ring, c, w);
		if (!tk)
			return false;
		if (tk > *ticket)
			*ticket = tk;
	}
	return true;
}

#endif /* device code */
#endif
