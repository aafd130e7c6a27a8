# ARGS: --emit=plan -D nodes=2 -D gpus=2
# A split-K hint whose pieces would cross the shards K is tied to (A
# gathered along its columns: sigma_r moves each shard of K elsewhere) is
# a located error that names the split that can, or that none can.
pipeline plan_split_shards {
  mesh  nodes x gpus
  param T = 16, K = 1536, N = 256

  in  X  : bf16[T, K] split(1)
  in  X2 : bf16[T, 128] split(1)
  in  W  : bf16[K, N]
  in  W2 : bf16[128, N]
  out Y  : bf16[T, N]
  out Y2 : bf16[T, N]

  Y  = matmul(allgather(X, 1), W)  split 2
  Y2 = matmul(allgather(X2, 1), W2)  split 2
}
