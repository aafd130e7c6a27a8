/* mkd/task.cuh - a task's flags and read boxes, from the generated tables.
 *
 * A generated kernel includes this after its tables and before its stage
 * functions, which call these.  It must define first:
 *   MK_NODES, MK_GPUS        the mesh
 *   MK_RDMA                  1 when the schedule has RDMA stages; then also
 *                            MK_NRFLAGS (flags 0 .. MK_NRFLAGS-1 live in a
 *                            rank's RDMA flag area, written, not counted)
 *   MK_T[]                   the tensors (mkd/tensor.cuh)
 *   MK_READS[], MK_WAITS[]   rows of mkd/tables.cuh, rank 0's view
 *   MK_EXPECTED[]            signals each flag gets per run
 * Without MK_NTASKS (a file that includes every header of the library) this
 * one is empty.
 */
#ifndef MKD_TASK_CUH
#define MKD_TASK_CUH

#include "tables.cuh"
#include "flags.cuh"
#include "tensor.cuh"

#ifdef MK_NTASKS
#if MK_RDMA
// the largest proxy ticket of this CTA's run: delivered before it ends
__shared__ u64 mkd_ticket;
#endif

// a flag of a rank: with RDMA stages written flags live in its RDMA flag
// area, counters in its flag array
static __device__ __forceinline__ const u64 *mkd_flag(const mkd_params &p, int r, int f)
{
#if MK_RDMA
	return f < MK_NRFLAGS ? (const u64 *)p.ranks[r].rflags + f : (const u64 *)p.ranks[r].flags + f;
#else
	return (const u64 *)p.ranks[r].flags + f;
#endif
}

// Wait k of a task (thread 0 only; false when the run is aborted).
__attribute__((unused)) static __device__ __forceinline__ bool mkd_task_wait(const mkd_params &p, int rank, int cta,
						       int i, const mkd_task &t, int k, u64 epoch)
{
	const mkd_fref f = MK_WAITS[t.wait0 + k];
	const int fr = mkd_shift_rank<MK_NODES, MK_GPUS>(f.rank, rank);
	return mkd_wait(p, mkd_flag(p, fr, f.index), epoch * MK_EXPECTED[f.index],
			fr, f.index, mkd_waiter{rank, cta, i, t.stage});
}

// Every wait of a task (thread 0 only): what a stage that waits per read
// does for a read several flags guard (its read's wait is -3: data that
// several RDMA writes deliver, sched.c), and so for the reads after it.
__attribute__((unused)) static __device__ __forceinline__ bool mkd_task_wait_all(const mkd_params &p, int rank,
							   int cta, int i, const mkd_task &t, u64 epoch)
{
	bool ok = true;
	for (int w = 0; w < t.nwait && ok; w++)
		ok = mkd_task_wait(p, rank, cta, i, t, w, epoch);
	return ok;
}

// The box read r of a task, as rank `rank` sees it.
__attribute__((unused)) static __device__ __forceinline__ mkd_box mkd_read_box(int rank, const mkd_task &t, int r)
{
	const mkd_read &g = MK_READS[t.read0 + r];
	mkd_box b;
	b.tensor = g.tensor;
	b.rank = mkd_shift_rank<MK_NODES, MK_GPUS>(g.rank, rank);
	mkd_box_shift<MK_NODES, MK_GPUS>(MK_T[g.tensor], rank, g.lo, g.hi, b.lo, b.hi);
	return b;
}

#endif  // MK_NTASKS
#endif
