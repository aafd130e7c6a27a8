# Heads of a column-parallel projection whose tokens move with the ranks:
# the allreduce at the end ties the rows of everything before it to the
# ranks' shards, so heads' and merge_heads' copies must move their tokens
# alike on both sides.  They did not (rotate.c tied nothing through them):
# rank r's copy wrote head h's tokens from other tokens' columns, the
# Llama layer's rel. l2 error was 1 at 2+ ranks on the GPU, and verify
# check 8 now names such a task.
# MESHES: 1x2 2x2 1x4
pipeline heads_tokens {
  mesh  nodes x gpus
  param T = 256, E = 128, H = 4, D = 64

  in  X  : bf16[T, E]
  in  Wq : bf16[E, H * D] split(1)
  in  Wo : bf16[H * D, E] split(0)
  out Y  : bf16[T, E]

  Q = heads(matmul(X, Wq), H)
  A = attention(Q, Q, Q, causal)
  Y = add(X, allreduce(matmul(merge_heads(A), Wo)))
}
