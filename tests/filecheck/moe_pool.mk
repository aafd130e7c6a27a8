# A bucket matmul's tiles are taken at run time (a pool): the CTAs that
# hold them draw tickets from a per-rank counter, in the pool's order
# (expert by expert, column by column, row tile by row tile).
#   PLAN    the plan says so; MK_NO_POOL=1 keeps the tiles in the lists
#   SM      the schedule names each pool, its tasks and the CTAs holding
#           them (where in the lists: verify.c's check 10, test_verify)
#   CU      the tables: the pools, each stage's pool, the order
#   NOPOOL  none of it with MK_NO_POOL=1
#   PTX     the kernel draws tickets with a 64-bit atomic add
#   ROWS    MK_POOL_ORDER=rows (A/B): row panel by row panel, another
#           order, and the schedule stays valid (check_schedule.py)
#
# RUN: %mkc --emit=plan %s | FileCheck %s --check-prefix=PLAN
# RUN: %mkc --emit=schedule %s | FileCheck %s --check-prefix=SM
# RUN: %mkc --emit=cu %s | FileCheck %s --check-prefix=CU
# RUN: env MK_NO_POOL=1 %mkc --emit=cu %s | FileCheck %s --check-prefix=NOPOOL
# RUN: %mkc --emit=ptx %s -o %t.ptx
# RUN: FileCheck %s --check-prefix=PTX < %t.ptx
# RUN: %mkc -D T=4096 -D F=1024 -D H=1024 --emit=cu %s | grep -A2 'MK_POOL_ORDER\[' > %t.cols
# RUN: env MK_POOL_ORDER=rows %mkc -D T=4096 -D F=1024 -D H=1024 --emit=cu %s | grep -A2 'MK_POOL_ORDER\[' > %t.rows
# RUN: ! cmp -s %t.cols %t.rows
# RUN: env MK_POOL_ORDER=rows %mkc -D T=4096 -D F=1024 -D H=1024 --emit=json %s -o %t.rows.json
# RUN: python3 tests/tools/check_schedule.py -q %t.rows.json
#
# PLAN: He matmul {{.*}}4-stage ring {{.*}}off sm_90a), the epilogue through shared memory, silu in the epilogue, rows bounded by Xe's buckets, A by 64-row halves (the second where tokens reach it), tasks taken at run time (a pool)
# PLAN: Ye matmul {{.*}}off sm_90a), the epilogue through shared memory, rows bounded by Xe's buckets, A by 64-row halves (the second where tokens reach it), tasks taken at run time (a pool)
# SM: pool He: 16 tasks taken at run time by the 16 CTAs that hold them, first t{{[0-9]+}}
# SM-NEXT: pool Ye: 16 tasks taken at run time by the 16 CTAs that hold them
# CU: #define MK_NPOOLS 2
# CU: __device__ const mkd_pool MK_POOLS[MK_NPOOLS] = {{[{][{]}}S_He, 0, 16, 16}, {S_Ye, 16, 16, 16}};
# CU-NEXT: __device__ const signed char MK_STAGE_POOL[] = {-1, 0, 1, -1, -1};
# CU-NEXT: __device__ const int MK_POOL_ORDER[32] = {
# NOPOOL-NOT: MK_NPOOLS
# NOPOOL-NOT: MK_POOL
# PTX: atom{{(.global)?}}.add.u64
pipeline moe_pool {
  mesh  1 x 1
  param T = 512, H = 256, F = 256, E = 8, topk = 2
  param C = 2 * T * topk / E

  in  X    : bf16[T, H] split(0)
  in  idx  : i32[T, topk] split(0)
  in  gate : f32[T, topk] split(0)
  in  W1   : bf16[E, H, F] split(0)
  in  W2   : bf16[E, F, H] split(0)
  out Y    : bf16[T, H] split(0)

  Xe = dispatch(X, idx, E, C)
  He = matmul(Xe, W1)
  Ae = silu(He)
  Ye = matmul(Ae, W2)
  Y  = combine(Ye, idx, gate)
}
