# The 'drop' routing policy reaches the device: mkd_dispatch is told to
# drop the choices past a bucket's C slots instead of aborting; the
# default ('strict') is not.
#
# RUN: %mkc --emit=cu -D gpus=2 %s | FileCheck %s
# RUN: %mkc --emit=cubin -D gpus=2 -o %t %s
#
# CHECK: // stage Xd: Xd = dispatch(X, idx)
# CHECK: mkd_dispatch<
# CHECK: rank, e, lo[1], 0),
# CHECK-NEXT: 0, true, true, smem, MK_SMEM))
# CHECK: // stage Xs: Xs = dispatch(X, jdx)
# CHECK: mkd_dispatch<
# CHECK: rank, e, lo[1], 0),
# CHECK-NEXT: 0, false, true, smem, MK_SMEM))
pipeline moe_drop {
  mesh  nodes x gpus
  param T = 64, H = 64, E = 8, C = 4
  in  X   : bf16[T, H] split(0)
  in  idx : i32[T, 2] split(0)
  in  jdx : i32[T, 2] split(0)
  out Xd  : bf16[E, C, H] split(0)
  out Xs  : bf16[E, C, H] split(0)
  Xd = dispatch(X, idx, E, C, drop)
  Xs = dispatch(X, jdx, E, C, strict)
}
