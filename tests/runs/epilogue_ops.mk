# Adds and muls fused into a matmul's epilogue (compiler/expand.c): a bias
# over columns that are split across the ranks, then gelu; the gated MLP's
# silu(G) * U; a residual of a batched matmul; a residual added by the sums
# of a split-K matmul (decode-size rows, long K); a residual after a
# row-parallel matmul's allreduce (on one rank, where the allreduce folds,
# fused into the matmul).  On every mesh the CPU reference gives the
# one-rank run's outputs, and with MK_NO_EPI2=1 (the ops as stages of their
# own) the one-rank run gives the same outputs.  1x1 is for the GPU check
# (tests/gpu/run.sh): one rank's fused plan against the CPU reference.
# MESHES: 1x1 1x2 2x2 1x4
# ENV-SAME: MK_NO_EPI2=1
pipeline epilogue_ops {
  mesh  nodes x gpus
  param T = 48, D = 256, F = 512, E = 4, K = 2048, S = 16

  in  X  : bf16[T, D]
  in  W1 : bf16[D, F] split(1)
  in  b1 : bf16[F]
  in  Wg : bf16[D, F] split(1)
  in  Wu : bf16[D, F] split(1)
  in  W2 : bf16[F, D] split(0)
  in  Xe : bf16[E, T, D]
  in  We : bf16[E, D, D]
  in  Xk : bf16[S, K]
  in  Wk : bf16[K, D]
  in  Rk : bf16[S, D]
  in  Xr : bf16[T, F] split(1)
  out Y1 : bf16[T, D]
  out Y2 : bf16[T, D]
  out Y3 : bf16[E, T, D]
  out Y4 : bf16[S, D]
  out Y5 : bf16[T, D]

  H  = matmul(X, W1)
  B  = add(H, b1)
  A  = gelu(B)
  P1 = matmul(A, W2)
  Y1 = allreduce(P1)

  G  = matmul(X, Wg)
  U  = matmul(X, Wu)
  Sg = silu(G)
  Gu = mul(Sg, U)
  P2 = matmul(Gu, W2)
  Y2 = allreduce(P2)

  Z  = matmul(Xe, We)
  Y3 = add(Z, Xe)

  Q  = matmul(Xk, Wk)
  Y4 = add(Rk, Q)

  Pr = matmul(Xr, W2)
  Y5 = add(X, allreduce(Pr))
}
