# layernorm, gelu_tanh and rope against the CPU reference (tests/gpu/run.sh)
pipeline ops {
  mesh nodes x gpus
  param T = 64, H = 4, D = 32
  in  X  : bf16[T, H * D]
  in  W  : bf16[H * D]
  in  B  : bf16[H * D]
  in  Q  : bf16[T, H * D] split(1)
  in  Cs : f32[T, D]
  in  Sn : f32[T, D]
  out Y  : bf16[T, H * D]
  out G  : bf16[T, H * D]
  out R  : bf16[T, H * D] split(1)
  Y = layernorm(X, W, B)
  G = gelu_tanh(X)
  R = rope(Q, Cs, Sn)
}
