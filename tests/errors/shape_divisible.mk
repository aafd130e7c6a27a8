# ARGS: -D gpus=8
# every split dimension is divisible by the ranks of its group
pipeline p {
  mesh  nodes x gpus
  param M = 1020, N = 64
  in  A : bf16[M, N] split(0)
  in  B : bf16[N, 100] split(1, gpus)
  out C : bf16[M, N]
  C = allgather(A, 0)
}
