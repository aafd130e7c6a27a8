# ARGS: --emit=schedule -D nodes=2 -D gpus=2
# MoE routing between nodes packs token rows into 16-byte words: rows of
# 36 bf16 (72 bytes) are refused by the plan, at each op that would send them.
pipeline moe_lowering {
  mesh  nodes x gpus
  param T = 64, H = 36, E = 8, k = 2, C = 32
  in  X    : bf16[T, H] split(0)
  in  idx  : i32[T, k] split(0)
  in  gate : f32[T, k] split(0)
  out Y    : bf16[T, H] split(0)
  Xe = dispatch(X, idx, E, C)
  Y  = combine(Xe, idx, gate)
}
