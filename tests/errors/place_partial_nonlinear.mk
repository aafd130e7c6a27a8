# nonlinear ops cannot take partial sums
pipeline p {
  param M = 256, N = 256, K = 256
  in  X : bf16[M, K] split(1)
  in  W : bf16[K, N] split(0)
  in  b : bf16[N]
  out Y : bf16[M, N]
  out Z : bf16[M, N]
  P = matmul(X, W)
  Y = gelu(P)
  Z = add(P, b)
}
