/* parfor.h - a loop over [0, n) cut across the host's cores.
 *
 * For the host work that grows with a tensor: generating a run's random
 * inputs and converting between float32 and the narrow element types.
 * A MoE layer's weights are 11 G values; one core spent about 40 s on them
 * before every GPU run.  Each thread gets one contiguous range; below
 * `grain` values a range is not worth a thread, and a loop that small runs
 * on the caller's thread.  When a thread cannot be started its range runs
 * on the caller's, so the loop always completes.  fn must touch only its
 * own range.
 */
#ifndef MK_PARFOR_H
#define MK_PARFOR_H

#include <stddef.h>

typedef void parfor_fn(void *arg, size_t lo, size_t hi);

void parfor(size_t n, size_t grain, parfor_fn *fn, void *arg);

#endif
