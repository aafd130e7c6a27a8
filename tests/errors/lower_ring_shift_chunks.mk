# ARGS: --emit=schedule -D gpus=2
# 16-byte chunks of 131072 rows each way: more chunks than a lowering
# makes, an error at the op, never an empty schedule
pipeline p {
  mesh  nodes x gpus
  in  X : bf16[262144, 8] split(0)
  out Y : bf16[262144, 8] split(0)
  Y = ring_shift(X)  chunk 16
}
