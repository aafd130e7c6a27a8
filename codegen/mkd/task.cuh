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
 *   MK_CLUSTER               (optional) 2: the kernel runs in 2-CTA clusters
 * Without MK_NTASKS (a file that includes every header of the library) this
 * one is empty.
 */
#ifndef MKD_TASK_CUH
#define MKD_TASK_CUH

#include "tables.cuh"
#include "flags.cuh"
#include "tensor.cuh"

#ifdef MK_NTASKS
// CTAs a cluster where the kernel's clusters are used: MK_CLUSTER on
// sm_90a (the Hopper engine shares B's loads in them: mkd/wgmma.cuh), else
// 1 (the runtime launches clusters only for sm_90a code)
#if defined(MK_CLUSTER) && MK_CLUSTER > 1 && defined(MKD_HAS_WGMMA)
#define MKD_CLUSTER MK_CLUSTER
#else
#define MKD_CLUSTER 1
#endif

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

// The task this CTA runs after the current one, or -1 (the last of its
// list, or a per-stage kernel, whose CTAs take every MK_CTAS-th task):
// written by thread 0 in mkd_run_task before the CTA barrier that starts
// the task.
__shared__ int mkd_next_task;

// The task after this one on this CTA when it is a task of `stage` (the
// calling stage's own, a constant there: the task's stage read from the
// table stayed live through the engine and was spilled) whose flags are all
// set already (thread 0 only, no waiting: a stage's engine may start on its
// loads early), else -1.  Not for stages that wait per read
// (MK_PROGRESSIVE).
__attribute__((unused)) static __device__ __forceinline__ int mkd_next_ready(const mkd_params &p, int rank, int stage,
							 u64 epoch)
{
	const int j = mkd_next_task;
	if (j < 0 || MK_TASKS[j].stage != stage)
		return -1;
	const mkd_task &t = MK_TASKS[j];
	for (int w = 0; w < t.nwait; w++) {
		const mkd_fref f = MK_WAITS[t.wait0 + w];
		const int fr = mkd_shift_rank<MK_NODES, MK_GPUS>(f.rank, rank);
		if (mkd_ld_acquire(mkd_flag(p, fr, f.index)) < epoch * MK_EXPECTED[f.index])
			return -1;
	}
#if MK_MULTIPROC
	for (int r = 0; r < t.nread; r++)  // peers' inputs: their kernel started
		if (MK_READS[t.read0 + r].wait == -2) {
			const int x = mkd_shift_rank<MK_NODES, MK_GPUS>(MK_READS[t.read0 + r].rank, rank);
			if (mkd_ld_acquire((const u64 *)p.ranks[x].flags + MK_NFLAGS) < epoch)
				return -1;
		}
#endif
	return j;
}

// Whether wait w of task t guards reads of `tensor` only (and one at least).
__attribute__((unused)) static __device__ __forceinline__ bool mkd_wait_only_for(const mkd_task &t, int w, int tensor)
{
	bool some = false;
	for (int r = 0; r < t.nread; r++) {
		const mkd_read &g = MK_READS[t.read0 + r];
		if (g.wait != w && g.wait != -3)
			continue;
		if (g.tensor != tensor)
			return false;
		some = true;
	}
	return some;
}

// Thread 0: task i's waits for its reads of `tensor` (some = 1), or every
// wait but those that guard reads of `tensor` only (some = 0; tensor -1:
// all of them).  False when the run is aborted.  A peer's input (read
// wait -2) is the kernel loop's (mkd_run_task).
__attribute__((unused)) static __device__ __forceinline__ bool mkd_wait_reads(const mkd_params &p, int rank, int cta,
							int i, u64 epoch, int tensor, int some)
{
	const mkd_task &t = MK_TASKS[i];
	for (int w = 0; w < t.nwait; w++) {
		bool mine = false;
		for (int r = 0; r < t.nread && !mine; r++) {
			const mkd_read &g = MK_READS[t.read0 + r];
			mine = g.tensor == tensor && (g.wait == w || g.wait == -3);
		}
		if (some ? !mine : mkd_wait_only_for(t, w, tensor))
			continue;
		if (!mkd_task_wait(p, rank, cta, i, t, w, epoch))
			return false;
	}
	return true;
}

// The flags of a GEMM tile that the engine waits for itself (a stage with
// late waits, mkd_wg_waited in mkd/wgmma.cuh): b() those of B's reads,
// a() every other but the epilogue operand's, x() (with X) those of the
// epilogue operand's reads.  One thread (wgmma.cuh says which).
template <bool XO> struct mkd_mm_waits {
	enum { LATE = 1, X = XO };
	const mkd_params &p;
	int rank, cta, i;
	u64 epoch;
	int ta, tb, tx;  // the tensors of A, B and the epilogue operand (-1: none)
	__device__ bool b() const { return mkd_wait_reads(p, rank, cta, i, epoch, tb, 1); }
	__device__ bool a() const { return mkd_wait_reads(p, rank, cta, i, epoch, tx, 0); }
	__device__ bool x() const { return !XO || mkd_wait_reads(p, rank, cta, i, epoch, tx, 1); }
	__device__ u64 flag_ns() const { return 2 * p.timeout_ns; }  // b() then a()
};

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
