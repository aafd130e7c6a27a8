# ARGS: --emit=schedule -D S=16777216
# more query tiles than a lowering makes: an error at the op, never an
# empty schedule
pipeline p {
  mesh  nodes x gpus
  param S = 32768, D = 128
  in  Q : bf16[S, D] split(0)
  in  K : bf16[S, D] split(0)
  in  V : bf16[S, D] split(0)
  out O : bf16[S, D] split(0)
  O = attention(Q, K, V)
}
