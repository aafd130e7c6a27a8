# Views (issue 20): layout ops the plan makes no copy of -- heads and
# slices of a fused QKV projection read by rope, a slice read by the
# Hopper attention tile, a transpose read by an elementwise op, a reshape
# chain read by a matmul --
# beside layout ops that stay copies (outputs, a slice an allreduce reads,
# a slice whose rows are not 16-byte aligned, a transpose of the last
# dimension, V with its heads side by side).  On the GPU against the CPU reference (tests/gpu/run.sh),
# and over meshes on the CPU (tests/sh/runs_oracle.sh).
# MESHES: 1x1 1x2 2x2 1x4
pipeline views_nocopy {
  mesh  nodes x gpus
  param T = 128, E = 128, H = 8, D = 64
  in  X    : bf16[T, E]
  in  Wqkv : bf16[E, H * 3 * D] split(1)
  in  Cs   : f32[T, D]
  in  Sn   : f32[T, D]
  in  Wz   : bf16[E, H * D] split(1)
  in  Wr   : bf16[H * D, E] split(0)
  in  XS   : bf16[T, E] split(0)
  out Y    : bf16[H, T, D] split(0)
  out O    : bf16[T, E]
  out S    : bf16[H, T, 8] split(0)
  out Tl   : bf16[T, H * D] split(1)
  out Od   : bf16[H, T, 8] split(0)
  out Go   : bf16[T, 16]
  out Y2   : bf16[H, T, D] split(0)
  P  = heads(matmul(X, Wqkv), H)
  Qs = slice(P, 2, 0, D)
  Ks = slice(P, 2, D, 2 * D)
  V  = slice(P, 2, 2 * D, 3 * D)
  Q  = rope(Qs, Cs, Sn)
  K  = rope(Ks, Cs, Sn)
  A  = attention(Q, K, V, causal)
  At = transpose(A, 0, 1)
  Y  = transpose(relu(At), 0, 1)
  Z  = matmul(X, Wz)
  R3 = reshape(Z, T, H, D)
  R2 = reshape(R3, T, H * D)
  O  = allreduce(matmul(R2, Wr))
  Odd = slice(P, 2, 4, 12)
  Od = relu(Odd)
  S  = slice(P, 2, 8, 16)
  G  = slice(XS, 1, 0, 16)
  Go = allgather(G, 0)
  Tl = transpose(transpose(Z, 0, 1), 0, 1)
  PR = relu(P)
  V2 = slice(PR, 2, 2 * D, 3 * D)
  Y2 = attention(Q, K, V2, causal)
}
