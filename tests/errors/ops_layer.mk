# ARGS: -D gpus=4
# the layer ops' rules: layernorm's bias one row, rope's tables a row per
# token, heads whole on a rank, no split along the tokens
pipeline p {
  in  X  : bf16[64, 256]
  in  W  : bf16[256]
  in  B  : bf16[128]
  in  Q  : bf16[64, 256] split(1)
  in  Qt : bf16[64, 256] split(0)
  in  Cs : f32[32, 32]
  in  Sn : f32[64, 32]
  Y1 = layernorm(X, W, B)
  Y2 = rope(Q, Cs, Sn)
  Y3 = heads(Q, 2)
  Y4 = heads(Qt, 8)
  Y5 = rope(Qt, Sn, Sn)
  Y6 = heads(Q, 7)
}
