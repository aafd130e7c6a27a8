# MoE routing under the 'drop' policy (issue 20): buckets of C = 4 slots,
# routing skewed towards expert 0, so most experts get more choices than
# they hold; the first C (in rank, token, choice order) are kept, the rest
# dropped with their gates zero, the same on every mesh of one node and on
# one rank - instead of MK_ERR_DATA.
# MESHES: 1x2 1x4
# IDS: idx=8
pipeline moe_drop {
  mesh  nodes x gpus
  param T = 64, H = 64, F = 64, E = 8, topk = 2, C = 4

  in  X    : bf16[T, H] split(0)
  in  idx  : i32[T, topk] split(0)
  in  gate : f32[T, topk] split(0)
  in  W1   : bf16[E, H, F] split(0)
  out Y    : bf16[T, F] split(0)

  Xe = dispatch(X, idx, E, C, drop)
  He = matmul(Xe, W1)
  Y  = combine(He, idx, gate)
}
