# matmul inner dimensions
pipeline p {
  param M = 128, N = 256, K = 64
  in  A : bf16[M, K]
  in  B : bf16[N, K]
  out C : bf16[M, N]
  C = matmul(A, B)
}
