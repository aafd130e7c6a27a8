# a declared placement must be what the op produces
pipeline p {
  param M = 256, N = 256, K = 256
  in  X : bf16[M, K] split(1)
  in  W : bf16[K, N] split(0)
  out C : bf16[M, N]
  C = matmul(X, W)
}
