# placements matmul cannot combine
pipeline p {
  param M = 256, N = 256, K = 256
  in  A : bf16[M, K] split(0)
  in  B : bf16[K, N] split(1)
  in  X : bf16[M, K] split(1)
  in  W : bf16[K, N]
  out C : bf16[M, N]
  out D : bf16[M, N]
  C = matmul(A, B)
  D = matmul(X, W)
}
