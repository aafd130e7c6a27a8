# ARGS: --emit=plan -D gpus=2
# the plan's limits of split-K and split-KV, at the hint: a batched matmul,
# more pieces than K steps, ring attention (K and V gathered block by block)
pipeline p {
  mesh  nodes x gpus
  param E = 4, M = 16, K = 256, N = 256, S = 1024, D = 64
  in  Xe : bf16[E, M, K]
  in  We : bf16[E, K, N]
  out Ye : bf16[E, M, N]
  in  X : bf16[M, K]
  in  W : bf16[K, N]
  out Y : bf16[M, N]
  in  Q : bf16[S, D] split(0)
  in  Kc : bf16[S, D] split(0)
  in  Vc : bf16[S, D] split(0)
  out O : bf16[S, D] split(0)
  Ye = matmul(Xe, We)  split 2
  Y = matmul(X, W)  split 8
  O = attention(Q, Kc, Vc)  split 2
}
