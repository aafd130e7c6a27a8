# ARGS: --emit=plan -D nodes=2 -D gpus=2
# the 'drop' policy between nodes is refused at the op (buckets fill in
# node-offset order there, not the ranks' order that decides what drops)
pipeline p {
  mesh  nodes x gpus
  param T = 64, H = 64, E = 8
  in  X   : bf16[T, H] split(0)
  in  idx : i32[T, 2] split(0)
  out Xe  : bf16[E, 16, H] split(0)
  Xe = dispatch(X, idx, E, 16, drop)
}
