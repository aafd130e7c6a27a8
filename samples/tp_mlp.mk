# Sequence-parallel tensor-parallel MLP (Megatron style).
#
# Activations arrive split by sequence; the first GEMM is column-parallel
# (W1 split by columns), the second row-parallel (W2 split by rows), so the
# partial sums leave through a reduce_scatter back to sequence-split rows.
pipeline tp_mlp {
  mesh  nodes x gpus
  param S = 8192                # tokens (sequence x batch)
  param H = 4096, F = 4 * H     # hidden and feed-forward sizes

  in  X  : bf16[S, H] split(0)  # sequence-parallel activations
  in  W1 : bf16[H, F] split(1)  # column-parallel
  in  W2 : bf16[F, H] split(0)  # row-parallel
  out Y  : bf16[S, H] split(0)

  Xg = allgather(X, 0)                    # whole sequence on every rank
  U  = matmul(Xg, W1)  tile 128 x 256 x 64  # split(1): my columns of F
  A  = gelu(U)
  P  = matmul(A, W2)   tile 128 x 256 x 64  # partial sums over F
  Y  = reduce_scatter(P, 0)               # back to sequence-parallel
}
