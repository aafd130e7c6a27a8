/* mkd/tables.cuh - the rows of the tables a generated kernel defines.
 *
 * codegen/emit_cu.c writes the tables (MK_TASKS, MK_READS, MK_WAITS,
 * MK_SIGNALS) as constant arrays of these rows, all in rank 0's view; the
 * loop (mkd/kernel.cuh) and the stage functions read them through
 * mkd/task.cuh, which maps them to a rank with sigma_r.  Boxes are 3-D
 * ([batch, rows, cols], leading 1s), half-open.
 */
#ifndef MKD_TABLES_CUH
#define MKD_TABLES_CUH

#include "base.cuh"

struct mkd_task {
	short stage;          // the stage enum of the generated file (S_, R_, W_, ...)
	short nread, nwait, nsig;
	int read0, wait0, sig0;  // into MK_READS / MK_WAITS / MK_SIGNALS
	int lo[3], hi[3];     // the box written, rank 0's view, 3-D
};
struct mkd_read {         // a box read: tensor, rank (rank 0's view), its wait
	short tensor, rank, wait;  // wait: which of the task's waits guards it; -1 none,
	int lo[3], hi[3];          // -2 a peer's input (its kernel started), -3 all of them
};
struct mkd_fref { int rank, index; };  // a flag of a rank (rank 0's view)
struct mkd_pool {          // tasks taken at run time (mkd/kernel.cuh, mkd_pool_take)
	int stage;
	int first, n;          // MK_POOL_ORDER[first .. first + n)
	int ctas;              // CTAs holding its entries: a run takes n + ctas tickets
};

// The box read r of a task, as rank `rank` sees it (mkd_read_box).
struct mkd_box {
	int tensor, rank;
	i64 lo[3], hi[3];
};

#endif
