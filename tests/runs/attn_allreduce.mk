# Attention on whole (local) tensors whose result is reduced and split by
# rows: the reduction ties the result's rows to the ranks' shards, and the
# keys must not follow them (found by tests/sh/random_programs.sh: exit 3,
# "it reads a region that sigma_r does not move whole ... region K@0").
# MESHES: 1x2 2x2
pipeline attn_allreduce {
  mesh  nodes x gpus
  param S = 128, D = 64

  in  Q : f16[S, D]
  in  K : f16[S, D]
  in  V : f16[S, D]
  out O : f16[S, D] split(0)

  T = attention(Q, K, V)
  A = scale(T, 1 / world)     # the world's copies sum back to T
  O = reduce_scatter(A, 0)
}
