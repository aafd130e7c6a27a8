# Row blocks of an rmsnorm: 16 KB of rows a task, as other row ops, but
# not at least 8 rows: a few rows share the CTA's warps (mkd/ew.cuh
# few_rows), so a decode block's tokens go to as many CTAs (8 rows a task,
# a warp a row, took 10.9 us on an H100 while the MLP's matmuls waited).
#   SM   rows of 4096 (8 KB): two a task, the last one ragged; rows of
#        1024: eight a task (16 KB); softmax keeps its 8 rows or more
#
# RUN: %mkc --emit=schedule %s | FileCheck %s --check-prefix=SM
# RUN: %mkc --emit=schedule %s | FileCheck %s --check-prefix=NOT
# SM-DAG: row    N        N@0[0:2, 0:4096] <- X@0[0:2, 0:4096], g@0[0:4096]
# SM-DAG: row    N        N@0[2:4, 0:4096] <- X@0[2:4, 0:4096], g@0[0:4096]
# SM-DAG: row    N        N@0[4:5, 0:4096] <- X@0[4:5, 0:4096], g@0[0:4096]
# SM-DAG: row    M        M@0[0:8, 0:1024] <- Z@0[0:8, 0:1024], gz@0[0:1024]
# SM-DAG: row    M        M@0[8:16, 0:1024] <- Z@0[8:16, 0:1024], gz@0[0:1024]
# SM-DAG: row    S        S@0[0:5, 0:4096] <- P@0[0:5, 0:4096]
# NOT-NOT: N@0[{{[0-9]+}}:{{[0-9]+}}, 0:4096] <- X@0[0:{{[3-5]}},
# NOT-NOT: row    S        S@0[0:{{[1-4]}},
pipeline rows {
  param T = 5, D = 4096, E = 1024
  in  X  : bf16[T, D]
  in  g  : bf16[D]
  in  Z  : bf16[16, E]
  in  gz : bf16[E]
  in  P  : bf16[T, D]
  out N  : bf16[T, D]
  out M  : bf16[16, E]
  out S  : bf16[T, D]
  N = rmsnorm(X, g)
  M = rmsnorm(Z, gz)
  S = softmax(P)
}
