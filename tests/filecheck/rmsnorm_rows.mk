# Row blocks of an rmsnorm (plan.c plan_rows): 16 KB of rows a task, and
# at least 8, a warp a row, only where that still gives every CTA a block:
# a few rows share the CTA's warps (mkd/ew.cuh few_rows), so a decode
# block's tokens go to as many CTAs (8 rows a task took 10.9 us on an H100
# while the MLP's matmuls waited).
#   SM   5 rows of 4096 (8 KB): two a task, the last one ragged; rows of
#        1024: eight a task (16 KB); 2048 rows of 4096: eight a task again
#        (16 a CTA); softmax keeps its 8 rows or more
#
# RUN: %mkc --emit=schedule %s | FileCheck %s --check-prefix=SM
# RUN: %mkc --emit=schedule %s | FileCheck %s --check-prefix=NOT
# SM-DAG: row    N        N@0[0:2, 0:4096] <- X@0[0:2, 0:4096], g@0[0:4096]
# SM-DAG: row    N        N@0[2:4, 0:4096] <- X@0[2:4, 0:4096], g@0[0:4096]
# SM-DAG: row    N        N@0[4:5, 0:4096] <- X@0[4:5, 0:4096], g@0[0:4096]
# SM-DAG: row    M        M@0[0:8, 0:1024] <- Z@0[0:8, 0:1024], gz@0[0:1024]
# SM-DAG: row    M        M@0[8:16, 0:1024] <- Z@0[8:16, 0:1024], gz@0[0:1024]
# SM-DAG: row    S        S@0[0:5, 0:4096] <- P@0[0:5, 0:4096]
# SM-DAG: row    L        L@0[2040:2048, 0:4096] <- Y@0[2040:2048, 0:4096], g@0[0:4096]
# NOT-NOT: N@0[{{[0-9]+}}:{{[0-9]+}}, 0:4096] <- X@0[0:{{[3-5]}},
# NOT-NOT: row    S        S@0[0:{{[1-4]}},
# NOT-NOT: L@0[0:2, 0:4096]
pipeline rows {
  param T = 5, D = 4096, E = 1024
  in  X  : bf16[T, D]
  in  g  : bf16[D]
  in  Z  : bf16[16, E]
  in  gz : bf16[E]
  in  P  : bf16[T, D]
  in  Y  : bf16[2048, D]
  out N  : bf16[T, D]
  out M  : bf16[16, E]
  out S  : bf16[T, D]
  out L  : bf16[2048, D]
  N = rmsnorm(X, g)
  M = rmsnorm(Z, gz)
  S = softmax(P)
  L = rmsnorm(Y, g)
}
