# Mixture-of-experts layer: dispatch, expert GEMMs, combine.
#
# Tokens and their routing are split by rows over the world; experts are
# spread over the ranks (E / world each).  dispatch sends every token row to
# the buckets of its top-k experts (C slots per expert), the expert MLP runs
# as batched GEMMs on the bucket, and combine brings the rows back, weighted
# by the gates.  Shrink it for a small GPU with e.g. -D T=1024 -D E=32.
pipeline moe_dispatch_gemm {
  mesh  nodes x gpus
  param T = 8192                # tokens
  param H = 7168, F = 2048      # hidden, expert feed-forward
  param E = 256, topk = 8       # experts, experts per token
  param C = 2 * T * topk / E    # slots per expert: capacity factor 2

  in  X    : bf16[T, H] split(0)
  in  idx  : i32[T, topk] split(0)      # expert of each choice
  in  gate : f32[T, topk] split(0)      # its weight
  in  W1   : bf16[E, H, F] split(0)     # expert weights, E/world per rank
  in  W2   : bf16[E, F, H] split(0)
  out Y    : bf16[T, H] split(0)

  Xe = dispatch(X, idx, E, C)   # [E, C, H]: all-to-all by routing
  He = matmul(Xe, W1)           # batched over experts
  Ae = silu(He)
  Ye = matmul(Ae, W2)
  Y  = combine(Ye, idx, gate)   # all-to-all back, gate-weighted sum
}
