/* mkd/mbar.cuh - shared-memory mbarriers for the bulk-copy engines (TMA
 * tiles in wgmma.cuh, bulk copies in copy.cuh), sm_90.
 *
 * A barrier is a shared-memory address (u32).  Waits are bounded: a lost
 * transfer is a bug in the ring, never a slow producer, so past the timeout
 * the kernel traps (and the runtime reports the launch failure) rather than
 * hang.
 */
#ifndef MKD_MBAR_CUH
#define MKD_MBAR_CUH

#include "base.cuh"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900

MKD_INLINE void mkd_mbar_init(u32 bar, u32 count)
{
	asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}
MKD_INLINE void mkd_mbar_inval(u32 bar)
{
	asm volatile("mbarrier.inval.shared::cta.b64 [%0];" :: "r"(bar) : "memory");
}
MKD_INLINE void mkd_mbar_arrive(u32 bar)
{
	asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
}
/* arrive (count 1) and expect `bytes` from the copy engine in this phase */
MKD_INLINE void mkd_mbar_arrive_tx(u32 bar, u32 bytes)
{
	asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
		     :: "r"(bar), "r"(bytes) : "memory");
}
MKD_INLINE bool mkd_mbar_try_wait(u32 bar, u32 parity)
{
	u32 ok;
	asm volatile("{\n\t.reg .pred p;\n\t"
		     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
		     "selp.u32 %0, 1, 0, p;\n\t}"
		     : "=r"(ok) : "r"(bar), "r"(parity) : "memory");
	return ok != 0;
}
/* ---- clusters: the CTAs of a cluster reach each other's barriers ---------- */

/* this CTA's rank in its cluster (0 when launched without clusters) */
MKD_INLINE u32 mkd_cluster_rank()
{
	u32 r;
	asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
	return r;
}
/* the same shared-memory offset (a barrier) in the CTA of rank `rank` */
MKD_INLINE u32 mkd_cluster_addr(u32 bar, u32 rank)
{
	u32 r;
	asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(bar), "r"(rank));
	return r;
}
/* arrive (count 1) on a barrier given by its cluster address (any CTA of
 * the cluster, this one too).  Release at CTA scope, the default: what it
 * orders is this warp's wgmma reads of its own shared memory, retired
 * before the call, against the TMA writes that the arrival lets another
 * CTA's producer issue; .release.cluster would put a GPU-wide fence
 * (MEMBAR.ALL.GPU) before every arrival */
MKD_INLINE void mkd_mbar_arrive_cluster(u32 cbar)
{
	asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" :: "r"(cbar) : "memory");
}
/* every thread of every CTA of the cluster; release before, acquire after */
MKD_INLINE void mkd_cluster_sync()
{
	asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
		     "barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

/* Wait for the phase of parity `parity` to complete (acquire, CTA scope).
 * Inline on purpose: a call inside a setmaxnreg region makes ptxas give up
 * (C7600, register allocation failed at 232). */
MKD_INLINE void mkd_mbar_wait(u32 bar, u32 parity, u64 timeout_ns)
{
	if (mkd_mbar_try_wait(bar, parity))
		return;
	const u64 t0 = mkd_globaltimer();
	while (!mkd_mbar_try_wait(bar, parity))
		if (mkd_globaltimer() - t0 > timeout_ns)
			__trap();
}

#endif
#endif
