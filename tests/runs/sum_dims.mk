# Sums over every dimension (issue 20: sum(X, 0) passed check and then was
# "not lowered yet"): over the rows of a matrix, over the first and the
# middle dim of a 3-D tensor, over a split dim (a partial result, summed by
# a reduce_scatter) and along a kept split dim.
# MESHES: 1x2 2x2 1x4
pipeline sum_dims {
  mesh  nodes x gpus
  param M = 256, N = 192, A = 4, B = 128

  in  X : f32[M, N] split(0)
  in  Z : bf16[A, B, N] split(2)
  in  G : f16[A, B, N]
  out C : f32[N] split(0)
  out D : bf16[B, N] split(1)
  out E : f16[A, N]
  out F : f32[M]  split(0)

  P = sum(X, 0)               # split along the summed dim: partial
  C = reduce_scatter(P, 0)
  D = sum(Z, 0)               # along a kept split dim: stays split
  E = sum(G, 1)
  F = sum(X, 1)
}
