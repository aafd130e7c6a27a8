# GEMM + AllReduce: a row-parallel linear layer whose output every rank
# needs whole.
#
# As in gemm_rs.mk, each rank computes a partial product from its K-slices;
# the allreduce sums the partials on every rank.
pipeline gemm_ar {
  mesh  nodes x gpus
  param M = 4096, N = 8192, K = 16384

  in  X : bf16[M, K] split(1)
  in  W : bf16[K, N] split(0)
  out Y : bf16[M, N]

  C = matmul(X, W)  tile 128 x 256 x 64   # partial
  Y = allreduce(C)                        # local: the full sum everywhere
}
