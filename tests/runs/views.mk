# Layout ops on split tensors whose rows move with the ranks: slice,
# concat, transpose and reshape (issue 20).  A fused QKV projection laid
# out by head ([E, H * 3 * D] split(1)), heads(), then slices of each
# head's 3 * D columns; a concat of the two halves of a head back; a
# transpose of a token block and back; a reshape of the heads' columns
# into [T, H, D] and back.  The allreduce at the end rotates every row
# before it with the ranks.
# MESHES: 1x2 2x2 1x4
pipeline views {
  mesh  nodes x gpus
  param T = 256, E = 128, H = 4, D = 32

  in  X    : bf16[T, E]
  in  Wqkv : bf16[E, H * 3 * D] split(1)
  in  Wo   : bf16[H * D, E] split(0)
  out Y    : bf16[T, E]

  P = heads(matmul(X, Wqkv), H)
  Q = slice(P, 2, 0, D)
  K = slice(P, 2, D, 2 * D)
  V = slice(P, 2, 2 * D, 3 * D)
  A = attention(Q, K, V, causal)
  A2 = concat(slice(A, 2, 0, 16), slice(A, 2, 16, D), 2)
  At = transpose(transpose(A2, 1, 2), 1, 2)
  M = merge_heads(At)
  R = reshape(reshape(M, T, H, D), T, H * D)
  Y = add(X, allreduce(matmul(R, Wo)))
}
