# ARGS: -D gpus=8
# experts are spread evenly over the ranks
pipeline p {
  mesh  nodes x gpus
  param T = 1024, H = 256, E = 12, K = 2
  in  X   : bf16[T, H] split(0)
  in  idx : i32[T, K] split(0)
  out Xe  : bf16[E, 64, H] split(0)
  Xe = dispatch(X, idx, E, 64)
}
