# ARGS: --emit=plan
# a tile whose two pipeline stages do not fit in shared memory (the plan
# checks it against the device model in use)
pipeline p {
  param M = 1024, N = 1024, K = 1024
  in  A : bf16[M, K]
  in  B : bf16[K, N]
  out C : bf16[M, N]
  C = matmul(A, B)  tile 256 x 256 x 128
}
