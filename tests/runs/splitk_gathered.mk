# Split-K of a matmul whose K is tied to the ranks' shards (issue 20's
# random programs found it): A gathered along its columns, so sigma_r
# moves each shard of K to another place, and a K piece must lie inside
# one shard.  The plan cuts the pieces so (decode-size rows: one output
# tile, split-K chosen by the cost model); a `split` hint that cannot is
# a located error (tests/errors/plan_split_shards.mk).
# MESHES: 1x2 1x3 2x2
pipeline splitk_gathered {
  mesh  nodes x gpus
  param T = 16, K = 1536, N = 256

  in  X : bf16[T, K] split(1)
  in  W : bf16[K, N]
  out Y : bf16[T, N]

  Y = matmul(allgather(X, 1), W)
}
