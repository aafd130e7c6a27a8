# A Llama-style decoder layer, tensor-parallel over the ranks, as one
# megakernel (causal prefill of T tokens):
#
#   q | k | v = Wqkv n1(x)      (one fused projection, by head)
#   h = x + Wo(attention(rope(q), rope(k), v))
#   y = h + Wd(silu(Wg n2(h)) * Wu n2(h))
#
# The fused QKV and gate/up projections are column-parallel (each rank owns
# H / world heads and F / world MLP columns: Wqkv's columns are laid out by
# head, each head's q, k and v side by side, so a rank's block of columns
# is whole heads; slice then takes q, k, v of each), attention runs on the rank's
# own heads, the output and down projections are row-parallel, and an
# allreduce after each brings the partial sums together (Megatron-style).
pipeline llama_layer {
  mesh  nodes x gpus
  param T = 2048, E = 4096, H = 32, D = 128, F = 14336

  in  X   : bf16[T, E]               # the residual stream, on every rank
  in  Wn1 : bf16[E]                  # attention rmsnorm weight
  in  Wqkv : bf16[E, H * 3 * D] split(1)  # fused QKV, column-parallel:
                                         # head h's q, k, v at h * 3D
  in  Cos : f32[T, D]                # rotary tables, a row per position
  in  Sin : f32[T, D]
  in  Wo  : bf16[H * D, E] split(0)  # row-parallel
  in  Wn2 : bf16[E]                  # MLP rmsnorm weight
  in  Wg  : bf16[E, F] split(1)      # gate and up: column-parallel
  in  Wu  : bf16[E, F] split(1)
  in  Wd  : bf16[F, E] split(0)      # down: row-parallel
  out Y   : bf16[T, E]

  Xn = rmsnorm(X, Wn1)
  P  = heads(matmul(Xn, Wqkv), H)                 # [H, T, 3D], split(0)
  Q  = rope(slice(P, 2, 0, D), Cos, Sin)          # [H, T, D]
  K  = rope(slice(P, 2, D, 2 * D), Cos, Sin)
  V  = slice(P, 2, 2 * D, 3 * D)
  A  = attention(Q, K, V, causal)                 # the rank's heads
  O  = matmul(merge_heads(A), Wo)                 # partial sums
  Hs = add(X, allreduce(O))                       # residual
  Hn = rmsnorm(Hs, Wn2)
  M  = matmul(mul(silu(matmul(Hn, Wg)), matmul(Hn, Wu)), Wd)
  Y  = add(Hs, allreduce(M))                      # residual
}
