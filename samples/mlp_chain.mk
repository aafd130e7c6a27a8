# A long chain of small dependent stages (two residual MLP blocks and a
# head), 512 x 512: each stage is a few microseconds of work, so launching
# them one by one is launch-bound.  As one megakernel, a stage's tiles start
# when the tiles they read are done.
pipeline mlp_chain {
  mesh  nodes x gpus
  param T = 512, D = 512

  in  X  : bf16[T, D]
  in  g1 : bf16[D]              # rmsnorm weights
  in  g2 : bf16[D]
  in  W1 : bf16[D, D]
  in  W2 : bf16[D, D]
  in  W3 : bf16[D, D]
  in  W4 : bf16[D, D]
  in  b1 : bf16[D]              # biases
  in  b3 : bf16[D]
  in  Wo : bf16[D, D]
  out Y  : bf16[T, D]

  # block 1
  N1 = rmsnorm(X, g1)
  H1 = matmul(N1, W1)  tile 128 x 128 x 64
  B1 = add(H1, b1)
  A1 = gelu(B1)
  M1 = matmul(A1, W2)  tile 128 x 128 x 64
  S1 = scale(M1, 0.5)
  R1 = add(X, S1)               # residual

  # block 2
  N2 = rmsnorm(R1, g2)
  H2 = matmul(N2, W3)  tile 128 x 128 x 64
  B2 = add(H2, b3)
  A2 = relu(B2)
  G2 = mul(A2, B2)              # gated
  M2 = matmul(G2, W4)  tile 128 x 128 x 64
  S2 = scale(M2, 0.5)
  R2 = add(R1, S2)

  # head
  N3 = rmsnorm(R2)
  Y  = matmul(N3, Wo)  tile 128 x 128 x 64
}
