# The smallest pipeline: a GEMM and an activation on one rank.
#
# Nothing is split, so every rank (one, by default) does the whole thing; the
# point is the fusion: relu starts on a tile of H as soon as the GEMM has
# written it, inside the same persistent kernel.
pipeline chain {
  mesh  nodes x gpus
  param M = 1024, N = 1024, K = 1024

  in  X : bf16[M, K]
  in  W : bf16[K, N]
  out Y : bf16[M, N]

  H = matmul(X, W)
  Y = relu(H)
}
