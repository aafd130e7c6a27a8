# sizes are positive
pipeline p {
  param M = 64, K = M - 64
  in  A : bf16[M, K]
  in  B : bf16[-4, M]
}
