# Gathering along columns, then ops on the gathered tensor: a matmul whose
# K loop reads every rank's column block, and row ops (softmax, rmsnorm)
# that read whole rows across the blocks.  Issue 20: this failed with exit
# 3 ("schedule verification failed ... region Xg@1[0:128, 128:640]").
# MESHES: 1x2 2x1 2x2 1x4
pipeline col_gather {
  mesh  nodes x gpus
  param M = 128, K = 640, N = 128

  in  X : bf16[M, K] split(1)
  in  W : bf16[K, N]
  out C : bf16[M, N]
  out S : bf16[M, K]

  Xg = allgather(X, 1)
  C  = matmul(Xg, W)
  N1 = rmsnorm(Xg)
  S  = softmax(N1)
}
