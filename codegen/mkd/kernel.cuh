/* mkd/kernel.cuh - the persistent loop: the fixed part of every generated
 * kernel.
 *
 * The CTAs of rank (rank_base + blockIdx.x / MK_CTAS) walk their static task
 * lists: for each task, bounded waits on its flags, its stage function,
 * release signals.  Resident mode (p.control) repeats the walk for every
 * epoch the host rings in on the doorbell; with ranks in separate processes
 * (MK_MULTIPROC) a run starts with this rank's READY word and ends when every
 * rank of the node is DONE (mkd/abi.cuh); with RDMA stages it also waits for
 * the ranks that write here and for its own proxy commands (mkd/proxy.cuh).
 *
 * A generated kernel includes this after its stage functions and then
 * defines its entry points, extern "C" mk_<pipeline> (and with per-stage
 * kernels mk_<pipeline>__s<op>), whose bodies call mkd_kernel (or
 * mkd_stage_kernel<op>).  It must define first:
 *   MK_NODES, MK_GPUS, MK_CTAS, MK_THREADS, MK_NTASKS, MK_NFLAGS
 *   MK_MULTIPROC             1: ranks are separate processes
 *   MK_RDMA                  1: RDMA stages; then MK_NRFLAGS, MK_NRDST and,
 *                            under MK_MULTIPROC, MK_RFROM[MK_NRDST]
 *   MK_PER_STAGE             1: per-stage kernels; then MK_STAGE_TASKS[] and
 *                            MK_STAGE_FIRST[] (op's tasks: MK_STAGE_TASKS
 *                            [MK_STAGE_FIRST[op] .. MK_STAGE_FIRST[op + 1]))
 *   MK_TASKS[], MK_CTA_FIRST[], MK_READS[], MK_SIGNALS[]   the tables
 *   MK_PROGRESSIVE[]         by stage: the stage waits for each read itself
 *   MK_NPOOLS                (optional) pools: then MK_POOLS[], MK_STAGE_POOL[]
 *                            (by stage: its pool or -1) and MK_POOL_ORDER[];
 *                            with MK_CLUSTER (2: the kernel runs in 2-CTA
 *                            clusters) also MK_POOL_MC[] (by pool: CTAs that
 *                            take a ticket together, 1 or MK_CLUSTER);
 *                            with MK_POOL_PAST 1 also mk_pool_past(stage, p,
 *                            rank, i) (mkd_pool_take)
 *   mk_stage(stage, p, rank, cta, i, epoch, smem)   runs task i's stage
 *                            function (stage: MK_TASKS[i].stage)
 * and include mkd/task.cuh before its stage functions.  Without MK_NTASKS
 * (a file that includes every header of the library) this one is empty.
 */
#ifndef MKD_KERNEL_CUH
#define MKD_KERNEL_CUH

#include "task.cuh"
#include "proxy.cuh"

#ifdef MK_NTASKS

#ifndef MKD_PREFETCH
#define MKD_PREFETCH 0  /* 1: a run starts with mkd_prefetch_tables (MK_PREFETCH=1; an opt-in) */
#endif

#if MKD_PREFETCH
// n rows from row into L2 with the evict_last priority, 128-byte line by line
template <typename R>
static __device__ __forceinline__ void mkd_prefetch_rows(const R *row, int n)
{
	const size_t a = __cvta_generic_to_global(row), b = a + (size_t)n * sizeof(R);
	for (size_t x = a & ~(size_t)127; x < b; x += 128)
		asm volatile("prefetch.global.L2::evict_last [%0];" :: "l"(x));
}

// The start of a run (all threads, no barrier): the rows of the tables this
// CTA's tasks will read, each thread a task's, and the expected counts.
// Thread 0 reads them in chains of dependent loads on the way into every
// task (its row, its waits, the count a flag needs, the flag; its reads; its
// signals); a run that streams more than L2 holds (decode: the weights, the
// K/V cache) has left them in device memory, a round trip each, and under
// that stream a round trip is slow.  The threads' own chain (the list, a
// task's row) is as deep as thread 0's into its first task, which it does
// not delay.
static __device__ __forceinline__ void mkd_prefetch_tables(int cta)
{
	const int first = MK_CTA_FIRST[cta], end = MK_CTA_FIRST[cta + 1];
	for (int i = first + (int)threadIdx.x; i < end; i += (int)blockDim.x) {
		const mkd_task &t = MK_TASKS[i];
		mkd_prefetch_rows(MK_READS + t.read0, t.nread);
		mkd_prefetch_rows(MK_WAITS + t.wait0, t.nwait);
		mkd_prefetch_rows(MK_SIGNALS + t.sig0, t.nsig);
	}
	for (int f = (int)threadIdx.x * 32; f < MK_NFLAGS; f += (int)blockDim.x * 32)
		mkd_prefetch_rows(MK_EXPECTED + f, 1);
}
#endif

// Task i's row of the trace (p.trace set): an unsigned index, so the task
// needs no 64-bit copy kept through its stage (the llama layer's kernel
// spilled one).
static __device__ __forceinline__ mkd_trace_rec &mkd_trace_at(const mkd_params &p, int rank, int i)
{
	return p.trace[(u64)((u32)rank * (u32)MK_NTASKS + (u32)i)];
}

// Task i is done (thread 0): its signals, and its end in the trace.
static __device__ __forceinline__ void mkd_task_done(const mkd_params &p, int rank, int cta, int i)
{
	const mkd_task &t = MK_TASKS[i];
	for (int k = 0; k < t.nsig; k++) {
		const mkd_fref f = MK_SIGNALS[t.sig0 + k];
#if MK_RDMA
		if (f.index < MK_NRFLAGS)
			continue;  // written by the RDMA stage itself
#endif
		const int fr = mkd_shift_rank<MK_NODES, MK_GPUS>(f.rank, rank);
		mkd_signal((u64 *)p.ranks[fr].flags + f.index);
	}
	if (p.trace) {
		mkd_trace_at(p, rank, i).t1 = mkd_globaltimer();
		mkd_trace_at(p, rank, i).cta = cta;
	}
}

// One task: wait on its flags (bounded), run its stage, signal.  All
// threads of the CTA call it; false when the run is aborted.
static __device__ __forceinline__ bool mkd_run_task(const mkd_params &p, int rank, int cta, int i,
						    int next, u64 epoch, char *smem, int *ok)
{
	const mkd_task &t = MK_TASKS[i];
	if (threadIdx.x == 0) {
		bool good = true;
		mkd_next_task = next;
		if (!MK_PROGRESSIVE[t.stage])  // else the stage waits per read
			for (int w = 0; w < t.nwait && good; w++)
				good = mkd_task_wait(p, rank, cta, i, t, w, epoch);
#if MK_MULTIPROC
		for (int r = 0; r < t.nread && good; r++)  // peers' inputs: their kernel started
			if (MK_READS[t.read0 + r].wait == -2) {
				const int x = mkd_shift_rank<MK_NODES, MK_GPUS>(MK_READS[t.read0 + r].rank, rank);
				good = mkd_wait(p, (const u64 *)p.ranks[x].flags + MK_NFLAGS, epoch, x,
						MK_NFLAGS, mkd_waiter{rank, cta, i, t.stage});
			}
#endif
		*ok = good;
		if (p.trace)
			mkd_trace_at(p, rank, i).t0 = mkd_globaltimer();
	}
	__syncthreads();
	bool done = *ok;
	if (done)
		done = mk_stage(t.stage, p, rank, cta, i, epoch, smem);
	if (!done)
		return false;
#if MKD_WG_TMA
	if (t.nsig > 0)  // the engine's TMA stores are written before the signals
		mkd_wg_drain();
#endif
	__syncthreads();
	if (threadIdx.x == 0)
		mkd_task_done(p, rank, cta, i);
	return true;
}

#if defined(MK_NPOOLS) && MK_NPOOLS
// Pool k (sched.c): the pool's next task for this CTA, from the rank's
// counter, or -1 when none is left; all threads call it.  Every CTA holding
// entries of the pool takes tasks until it gets -1, so a run takes n + ctas
// tickets and run e's first is (e - 1) (n + ctas): the counter is never
// reset between runs (the runtime clears it with the flags).  No ring is
// carried into a pooled task: the next one is not known before this one
// ends.  (Taken while the task before it ran, and the ring carried into
// it, the tickets went out in the order tasks began, not ended: tiles that
// share a weight slab ran up to a tile's time apart, and the MoE layer was
// 4-38% slower on an H100: docs/perf-notes.md, twenty-fifth session.)
//
// With MK_POOL_PAST (the plan's signal_past, MK_POOL_SKIP=1), once this CTA
// has run a task of pool k in this run (bit k of mkd_pool_ran), thread 0
// signals a task with nothing to do (mk_pool_past: its rows past its
// bucket's tokens, left unwritten) without its waits or its stage, and
// takes the next ticket: the task it ran passed its waits, so the routing
// tables the test reads are complete, and its signals' release covers what
// this CTA saw.  Run, such a task cost its CTA ~6-10 us, and half the
// MoE's tiles are such (docs/perf-notes.md, twenty-third session).
static __shared__ int mkd_pool_next;
#if defined(MK_POOL_PAST) && MK_POOL_PAST
static __shared__ unsigned mkd_pool_ran;
#endif

static __device__ __forceinline__ int mkd_pool_take(const mkd_params &p, int rank, int cta, int k,
						    u64 epoch)
{
	const mkd_pool &q = MK_POOLS[k];
	(void)cta;
#if MKD_CLUSTER > 1
	// Clusters (MK_POOL_MC[k] > 1): the CTAs of a cluster take the pool's
	// tasks together, ticket v giving the one of cluster rank c the task
	// MK_POOL_ORDER[first + mc v + c] (pairs of row tiles of one weight
	// slab, whose B they load together: mkd/wgmma.cuh).  The first takes
	// the ticket, the others read it from its shared memory; a run takes
	// (n + ctas) / mc tickets.  Both CTAs hold the pool (sched.c), so the
	// first cluster barrier waits for one that is still on its tasks
	// before the pool.  A run that aborts (a wait timed out) is not
	// handled here: a CTA that leaves while its cluster's other goes on
	// into a ticket or a pair's tile ends the kernel in a trap or a launch
	// failure, not the stall report (MK_CLUSTER=2 is an A/B switch;
	// docs/gemm.md, clusters).
	if (MK_POOL_MC[k] > 1) {
		const int mc = MK_POOL_MC[k];
		const u32 c = mkd_cluster_rank();
		mkd_cluster_sync();  // every CTA of the cluster has read the last ticket
		if (threadIdx.x == 0 && c == 0) {
			u64 *counter = (u64 *)p.ranks[rank].flags + MK_NFLAGS + 2 + k;
			const u64 v = atomicAdd((unsigned long long *)counter, 1ull) -
				      (epoch - 1) * (u64)((q.n + q.ctas) / mc);
			mkd_pool_next = v < (u64)(q.n / mc) ? (int)v : -1;
		}
		mkd_cluster_sync();  // the ticket is in the first CTA's shared memory
		int v;
		asm volatile("ld.shared::cluster.u32 %0, [%1];"
			     : "=r"(v) : "r"(mkd_cluster_addr(mkd_smem_addr(&mkd_pool_next), 0)));
		return v < 0 ? -1 : MK_POOL_ORDER[q.first + mc * v + (int)c];
	}
#endif
	__syncthreads();  // every thread has read the last ticket
	if (threadIdx.x == 0) {
		u64 *counter = (u64 *)p.ranks[rank].flags + MK_NFLAGS + 2 + k;
		int task;
		for (;;) {
			const u64 v = atomicAdd((unsigned long long *)counter, 1ull) -
				      (epoch - 1) * (u64)(q.n + q.ctas);
			task = v < (u64)q.n ? MK_POOL_ORDER[q.first + (int)v] : -1;
#if defined(MK_POOL_PAST) && MK_POOL_PAST
			if (task >= 0 && k < 32 && (mkd_pool_ran >> k & 1u) &&
			    mk_pool_past(q.stage, p, rank, task)) {
				if (p.trace)
					mkd_trace_at(p, rank, task).t0 = mkd_globaltimer();
				mkd_task_done(p, rank, cta, task);
				continue;
			}
#endif
			break;
		}
		mkd_pool_next = task;
	}
	__syncthreads();
	return mkd_pool_next;
}
#endif

#if MK_RDMA && MK_MULTIPROC
// The start of a run with RDMA stages, thread 0 of CTA 0: the ranks that
// write here may (a failure is in the report: every wait then leaves).
static __device__ __noinline__ void mkd_rdma_start(const mkd_params &p, int rank, int cta, u64 epoch)
{
	mkd_rdma_ready<MK_NODES, MK_GPUS>(p, rank, MK_RFROM, MK_NRDST, MK_NRFLAGS, epoch, &mkd_ticket,
					   mkd_waiter{rank, cta, -1, -1});
}

// The end of a run with RDMA stages, thread 0: this CTA's commands are
// delivered (its sources may be rewritten); on CTA 0 also everything other
// ranks send here has landed (this rank's written flags reach the epoch).
static __device__ __noinline__ bool mkd_rdma_end(const mkd_params &p, int rank, int cta, u64 epoch)
{
	if (mkd_ticket && !mkd_proxy_wait_done(p, p.ring, mkd_ticket, mkd_waiter{rank, cta, -1, -1}))
		return false;
	for (int f = 0; cta == 0 && f < MK_NRFLAGS; f++)
		if (!mkd_wait(p, (const u64 *)p.ranks[rank].rflags + f, epoch, rank, f,
			      mkd_waiter{rank, cta, -1, -1}))
			return false;
	return true;
}
#endif

// The kernel's body: CTAs of rank (rank_base + blockIdx.x / MK_CTAS) walk
// their task list.  Resident mode (p.control) repeats it for every epoch the
// host rings in on the doorbell.
static __device__ __forceinline__ void mkd_kernel(const mkd_params &p)
{
	extern __shared__ __align__(128) char smem[];
	__shared__ int ok;
	__shared__ u64 epoch_s;
	// resident: the epoch already done and the runs of this launch, which
	// only thread 0 uses: in shared memory, not in registers every stage
	// would keep (they were spilled)
	__shared__ u64 last, runs;
	const int rank = p.rank_base + blockIdx.x / MK_CTAS;
	const int cta = blockIdx.x % MK_CTAS;
	if (threadIdx.x == 0) {
		last = p.epoch;
		runs = 0;
	}
	for (;;) {
		if (threadIdx.x == 0) {
			u64 e = p.epoch;
			if (p.control) {  // resident: wait for the host's next epoch
				for (;;) {
					if (mkd_ld_volatile_u32(&p.report->aborted)) {
						e = MKD_STOP;
						break;
					}
					e = blockIdx.x == 0 ? mkd_ld_acquire_sys(&p.control->doorbell)
							   : mkd_ld_acquire(&p.gate[0]);
					if (e != last)
						break;
					__nanosleep(blockIdx.x == 0 ? 500 : 64);
				}
				if (blockIdx.x == 0)  // pass it on to the other CTAs
					mkd_st_release(&p.gate[0], e);
			}
			epoch_s = e;
			mkd_wg_ring_reset();  // no ring carried into the first task
#if defined(MK_POOL_PAST) && MK_POOL_PAST
			mkd_pool_ran = 0;  // no task of a pool run yet in this run
#endif
#if MK_RDMA
			mkd_ticket = 0;
#endif
		}
		__syncthreads();
		const u64 epoch = epoch_s;
		if (epoch == MKD_STOP)
			break;
		bool aborted = false;
#if MKD_PREFETCH
		mkd_prefetch_tables(cta);
#endif
#if MK_MULTIPROC
		if (cta == 0 && threadIdx.x == 0)  // this rank's inputs are in place
			mkd_signal((u64 *)p.ranks[rank].flags + MK_NFLAGS);
#if MK_RDMA
		if (cta == 0 && threadIdx.x == 0)  // and the ranks that write here may
			mkd_rdma_start(p, rank, cta, epoch);
#endif
#endif
		// the end as a value: a pointer to it kept across the stages took a
		// 64-bit register that a gelu epilogue needed (a spill)
		const int end = MK_CTA_FIRST[cta + 1];
		for (int i = MK_CTA_FIRST[cta]; i < end && !aborted;) {
#if defined(MK_NPOOLS) && MK_NPOOLS
			// a pool's entries: its tasks as taken, then past the entries
			// (one call of mkd_run_task: a second would copy every stage)
			const int st = MK_TASKS[i].stage, k = MK_STAGE_POOL[st];
			const int task = k >= 0 ? mkd_pool_take(p, rank, cta, k, epoch) : i;
			if (k >= 0 && task < 0) {
				while (i < end && MK_TASKS[i].stage == st)
					i++;
				continue;
			}
			const int next = k < 0 && i + 1 < end ? i + 1 : -1;
			i += k < 0;
			// the step taken here: sunk past the task, k stayed live
			// through it and was spilled (a kernel with two 128 x 256
			// engines)
			asm volatile("" : "+r"(i));
			aborted = !mkd_run_task(p, rank, cta, task, next, epoch, smem, &ok);
#if defined(MK_POOL_PAST) && MK_POOL_PAST
			if (k >= 0 && k < 32 && threadIdx.x == 0)
				mkd_pool_ran |= 1u << k;
#endif
#else
			aborted = !mkd_run_task(p, rank, cta, i, i + 1 < end ? i + 1 : -1, epoch, smem, &ok);
			i++;
#endif
		}
#if MKD_WG_TMA
		mkd_wg_drain();  // an aborted run's last tile may still be storing
#endif
#if MK_MULTIPROC
		// leave the run only when every rank of the node is done with it
		__syncthreads();
#if MK_RDMA
		if (!aborted && threadIdx.x == 0 && !mkd_rdma_end(p, rank, cta, epoch)) {
			aborted = true;
			ok = 0;
		}
#endif
		if (!aborted && threadIdx.x == 0) {
			mkd_signal((u64 *)p.ranks[rank].flags + MK_NFLAGS + 1);
			if (cta == 0)
				for (int g = 0; g < MK_GPUS && ok; g++) {
					const int x = rank - rank % MK_GPUS + g;
					ok = mkd_wait(p, (const u64 *)p.ranks[x].flags + MK_NFLAGS + 1,
							epoch * MK_CTAS, x, MK_NFLAGS + 1, mkd_waiter{rank, cta, -1, -1});
				}
			else
				ok = 1;
		}
		__syncthreads();
		aborted = aborted || !ok;
#endif
		if (!p.control || aborted)
			break;
		if (threadIdx.x == 0) {  // resident: this CTA is done with the epoch
			last = epoch;
			runs++;
			mkd_red_release(&p.gate[1], 1);
			if (blockIdx.x == 0) {  // all of them: tell the host
				while (mkd_ld_acquire(&p.gate[1]) < runs * gridDim.x &&
				       !mkd_ld_volatile_u32(&p.report->aborted))
					__nanosleep(64);
				mkd_st_release_sys(&p.control->done, epoch);
			}
		}
	}
}

// The body of the kernel of stage OP (benchmarks: separate launches, CUDA
// graphs): its tasks, MK_STAGE_TASKS[MK_STAGE_FIRST[OP] ..
// MK_STAGE_FIRST[OP + 1]), dealt round robin to the CTAs and ordered by
// kernel boundaries instead of flags (their waits pass at once).  A
// template so that each kernel has its own `ok`.
#if MK_PER_STAGE
template <int OP>
static __device__ __forceinline__ void mkd_stage_kernel(const mkd_params &p)
{
	extern __shared__ __align__(128) char smem[];
	__shared__ int ok;
	const int rank = p.rank_base + blockIdx.x / MK_CTAS;
	const int cta = blockIdx.x % MK_CTAS;
	if (threadIdx.x == 0)
		mkd_wg_ring_reset();
	for (int j = MK_STAGE_FIRST[OP] + cta; j < MK_STAGE_FIRST[OP + 1]; j += MK_CTAS)
		if (!mkd_run_task(p, rank, cta, MK_STAGE_TASKS[j], -1, p.epoch, smem, &ok))
			break;
}
#endif

#endif  // MK_NTASKS
#endif
