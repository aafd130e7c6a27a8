# GEMM + ReduceScatter (row-parallel linear layer).
#
# X is split along K (its columns) and W along K (its rows): each rank
# multiplies its slice and holds a partial sum of the whole product.  The
# reduce_scatter sums the partials and leaves rank r its M/world rows.
pipeline gemm_rs {
  mesh  nodes x gpus
  param M = 8192, N = 8192, K = 8192

  in  X : bf16[M, K] split(1)
  in  W : bf16[K, N] split(0)
  out Y : bf16[M, N] split(0)

  C = matmul(X, W)  tile 128 x 256 x 64   # partial: per-rank sums
  Y = reduce_scatter(C, 0)                # summed, rows spread over ranks
}
