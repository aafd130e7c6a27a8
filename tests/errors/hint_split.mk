# the split hint: only after a matmul or an attention, one count, 1..256
pipeline p {
  param M = 16, K = 1024, N = 256
  in  X : bf16[M, K]
  in  W : bf16[K, N]
  out Y : bf16[M, N]
  out Z : bf16[M, N]
  out V : bf16[M, N]
  H = matmul(X, W)  split 0
  Y = relu(H)  split 2
  Z = matmul(X, W)  split 300
  V = matmul(X, W)  split 2 x 2
}
