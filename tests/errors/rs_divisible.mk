# ARGS: -D gpus=8
# reduce_scatter leaves each rank an equal share
pipeline p {
  mesh  nodes x gpus
  param M = 1020, N = 1024, K = 1024
  in  X : bf16[M, K] split(1)
  in  W : bf16[K, N] split(0)
  out Y : bf16[M, N] split(0)
  P = matmul(X, W)
  Y = reduce_scatter(P, 0)
}
