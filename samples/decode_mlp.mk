# A Llama-style MLP block at decode: T tokens (T = 1..1024), hidden D,
# feed-forward F (Llama-3-8B: D = 4096, F = 14336), with the residual:
#   Y = X + W_down (silu(N W_gate) * (N W_up)),  N = rmsnorm(X) g
# A handful of rows against 350 MB of weights: all the time is in streaming
# the weights, so the plan splits K (split-K) until every SM streams
# (mkc --emit=plan shows it).
pipeline decode_mlp {
  param T = 16, D = 4096, F = 14336
  in  X  : bf16[T, D]
  in  g  : bf16[D]
  in  Wg : bf16[D, F]
  in  Wu : bf16[D, F]
  in  Wd : bf16[F, D]
  out Y  : bf16[T, D]
  N = rmsnorm(X, g)
  G = matmul(N, Wg)
  U = matmul(N, Wu)
  S = silu(G)
  A = mul(S, U)
  M = matmul(A, Wd)
  Y = add(X, M)
}
