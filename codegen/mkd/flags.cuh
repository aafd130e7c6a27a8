/* mkd/flags.cuh - epoch-counter flags: release signals, bounded acquire waits.
 *
 * A flag is a u64 counter that only grows.  A producer adds one per signal;
 * in run e a consumer waits until the counter reaches e * expected, so no
 * flag is ever reset between runs.  Scope: .gpu when every rank of the
 * pipeline lives on this device (virtual ranks), .sys when peers are other
 * processes or GPUs (MKD_SYS_SCOPE=1, set by the runtime through NVRTC -D).
 *
 * Every wait is bounded: past the timeout it records who waited on what in
 * the report and raises `aborted`; every other waiter sees that and leaves.
 */
#ifndef MKD_FLAGS_CUH
#define MKD_FLAGS_CUH

#include "base.cuh"
#include "abi.cuh"

#ifndef MKD_SYS_SCOPE
#define MKD_SYS_SCOPE 0
#endif

MKD_INLINE u64 mkd_ld_acquire(const u64 *f)
{
	u64 v;
#if MKD_SYS_SCOPE
	asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(f) : "memory");
#else
	asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(f) : "memory");
#endif
	return v;
}

MKD_INLINE void mkd_red_release(u64 *f, u64 n)
{
#if MKD_SYS_SCOPE
	asm volatile("red.release.sys.global.add.u64 [%0], %1;" :: "l"(f), "l"(n) : "memory");
#else
	asm volatile("red.release.gpu.global.add.u64 [%0], %1;" :: "l"(f), "l"(n) : "memory");
#endif
}

MKD_INLINE u32 mkd_ld_volatile_u32(const u32 *p)
{
	u32 v;
	asm volatile("ld.volatile.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
}

/* Host-mapped words (the resident doorbell): system scope, never cached. */
MKD_INLINE u64 mkd_ld_acquire_sys(const u64 *p)
{
	u64 v;
	asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
}

MKD_INLINE void mkd_st_release_sys(u64 *p, u64 v)
{
	asm volatile("st.release.sys.global.u64 [%0], %1;" :: "l"(p), "l"(v) : "memory");
}

/* A device-memory word at the flags' scope. */
MKD_INLINE void mkd_st_release(u64 *p, u64 v)
{
#if MKD_SYS_SCOPE
	asm volatile("st.release.sys.global.u64 [%0], %1;" :: "l"(p), "l"(v) : "memory");
#else
	asm volatile("st.release.gpu.global.u64 [%0], %1;" :: "l"(p), "l"(v) : "memory");
#endif
}

/* Who is waiting, for the report. */
struct mkd_waiter {
	int rank, cta, task, stage;
};

/* Records a report (the first one of the run wins) and aborts the run:
 * every other wait sees `aborted` and leaves.  flag_rank -1: the RDMA proxy
 * (flag_index a MKD_PROXY_STALL_ code); -2: bad data (mkd/moe.cuh). */
MKD_INLINE void mkd_report_abort(const mkd_params &p, mkd_waiter w, int flag_rank, int flag_index,
				 u64 expected, u64 seen, u64 waited_ns)
{
	mkd_report *r = p.report;
	if (atomicCAS(&r->stalled, 0u, 1u) == 0u) {
		r->rank = w.rank;
		r->cta = w.cta;
		r->task = w.task;
		r->stage = w.stage;
		r->flag_rank = flag_rank;
		r->flag_index = flag_index;
		r->expected = expected;
		r->seen = seen;
		r->waited_ns = waited_ns;
		r->epoch = p.epoch;
		__threadfence_system();
	}
	atomicExch(&r->aborted, 1u);
	__threadfence_system();
}

/* Thread 0 of a CTA only.  Returns false when the run is aborted (by this
 * wait's timeout or another's).  A poll is a sleep and one load: the abort
 * word and the clock are read every 8th (each read is a round trip to L2
 * or beyond, and every edge of the task graph waits for the poll that
 * sees its flag), and the sleep grows to 256 ns at most. */
MKD_INLINE bool mkd_wait(const mkd_params &p, const u64 *flag, u64 target,
			 int flag_rank, int flag_index, mkd_waiter w)
{
	u64 v = mkd_ld_acquire(flag);
	if (v >= target)
		return true;
	const u64 t0 = mkd_globaltimer();
	u32 ns = 32;
	for (u32 n = 1;; n++) {
		__nanosleep(ns);
		if (ns < 256)
			ns <<= 1;
		v = mkd_ld_acquire(flag);
		if (v >= target)
			return true;
		if (n & 7)
			continue;
		if (mkd_ld_volatile_u32(&p.report->aborted))
			return false;
		u64 dt = mkd_globaltimer() - t0;
		if (dt > p.timeout_ns) {
			mkd_report_abort(p, w, flag_rank, flag_index, target, v, dt);
			return false;
		}
	}
}

/* After a barrier over the CTA's threads: publish everything the CTA wrote. */
MKD_INLINE void mkd_signal(u64 *flag)
{
#if MKD_SYS_SCOPE
	__threadfence_system();
#else
	__threadfence();
#endif
	mkd_red_release(flag, 1);
}

#endif
