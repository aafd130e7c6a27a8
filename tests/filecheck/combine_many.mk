# A combine reads every tile of the expert GEMM before it: here 67584
# tasks of Ye (256 experts x 2 row tiles x 132 column tiles of 64), past the
# 65536 producers the scheduler's buffers first held (sched.c build_deps:
# it reported an "internal" error; the buffers now grow).  The schedule is
# made and verified, and every combine task waits on Ye's tiles.
#
# RUN: %mkc --emit=schedule %s | FileCheck %s
#
# CHECK: matmul Ye       Ye@0[{{[0-9]+}}:{{[0-9]+}}, 0:128, 0:64]
# CHECK: combine Y        Y@0[0:64, 0:8448] <- {{.*}}Ye@0[0:256, 0:256, 0:8448]  waits f0@0,f{{[0-9]+}}@0 signals -
pipeline combine_many {
  mesh  nodes x gpus
  param T = 4096, H = 8448, F = 256, E = 256, topk = 8
  param C = 2 * T * topk / E

  in  X    : bf16[T, H] split(0)
  in  idx  : i32[T, topk] split(0)
  in  gate : f32[T, topk] split(0)
  in  W2   : bf16[E, H, H] split(0)
  out Y    : bf16[T, H] split(0)

  Xe = dispatch(X, idx, E, C)
  Ye = matmul(Xe, W2)  tile 128 x 64  tasks 100000
  Y  = combine(Ye, idx, gate)
}
