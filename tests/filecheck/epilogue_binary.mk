# An add or a mul of a matmul's result (read by nothing else) with a tensor
# of its shape and placement runs in the matmul's epilogue, after a fused
# unary op if there is one (compiler/expand.c): the tile reads the other
# operand's box and stores once.  After a split-K the sums apply it.
#   EX   the gated MLP's mul(silu(G), U) joins U, the residual add joins M
#        (split-K), gelu then add joins P, a bias then gelu joins R; not
#        fused: an operand produced after the matmul (O's W2), a result
#        read twice (K)
#   SM   a matmul task reads the operand's box of its tile (U reads S); a
#        split-K sum reads it (M's sums read X), the partials do not
#   CU   the epilogue functor and the operand's pointer at the tile (a
#        bias: its columns, row stride 0)
#   PTX  it compiles for sm_90a
#   MMA  the mma.sync engine (MK_NO_WGMMA=1) takes the same functor
#   OFF  MK_NO_EPI2=1: add and mul stay stages of their own
#   ONE  on one rank a residual after a row-parallel matmul's allreduce (folded
#        there: the partial sums are the value) fuses; TWO on two it stays
#        an add after the allreduce's stages
#
# RUN: %mkc --emit=expand %s | FileCheck %s --check-prefix=EX
# RUN: %mkc --emit=schedule %s | FileCheck %s --check-prefix=SM
# RUN: env MK_LATE=1 %mkc --emit=cu %s | FileCheck %s --check-prefix=CU
# RUN: %mkc --emit=ptx %s -o %t.ptx
# RUN: FileCheck %s --check-prefix=PTX < %t.ptx
# RUN: env MK_NO_WGMMA=1 %mkc --emit=cu %s | FileCheck %s --check-prefix=MMA
# RUN: env MK_NO_EPI2=1 %mkc --emit=expand %s | FileCheck %s --check-prefix=OFF
# RUN: %mkc --emit=expand tests/runs/epilogue_ops.mk | FileCheck %s --check-prefix=ONE
# RUN: %mkc --emit=expand -D gpus=2 tests/runs/epilogue_ops.mk | FileCheck %s --check-prefix=TWO
#
# EX: 0  G  S = matmul(X, Wg)  then silu in the epilogue
# EX: 1  U  A = matmul(X, Wu, S)  then mul S in the epilogue
# EX: 2  M  Y = matmul(A, Wd, X)  then add X in the epilogue
# EX: P  Z = matmul(H, Wd, Y)  then gelu then add Y in the epilogue
# EX: R  V = matmul(A, Wd, b)  then add b then gelu in the epilogue
# EX: C  C = matmul(A, Wd)
# EX: W2  W2 = relu(X)
# EX-NEXT: O  O = add(C, W2)
# EX: K  K = matmul(A, Wd)
# EX-NEXT: O1  O1 = add(K, X)
# EX-NEXT: O2  O2 = mul(K, X)
#
# SM: matmul U        A@0[0:16, 0:256] <- X@0[0:16, 0:512], Wu@0[0:512, 0:256], S@0[0:16, 0:256]
# SM: mmpart M        Y__ksplit@0[0:1, 0:16, 0:128] <- A@0[0:16, 0:256], Wd@0[0:256, 0:128]  waits
# SM: sumk   M        Y@0[0:16, 0:128] <- Y__ksplit@0[0:4, 0:16, 0:128], X@0[0:16, 0:128]
#
# CU: // stage U: A = matmul(X, Wu, S), tile {{.*}}; then mul S in the epilogue
# CU: const mkd_tensor &X2 = MK_T[T_S];  // mul's other operand, read in the epilogue
# CU-NEXT: const mkd_epi2<mkd_ident, mkd_mul, mkd_bf16, mkd_ident> epi{mkd_ident(),
# CU-NEXT: (const mkd_bf16 *)mkd_at<MK_GPUS>(p, T_S, X2, rank, lo[0], lo[1], lo[2]), (int)X2.st[1], mkd_ident()};
# CU: if (!mkd_wgmma_tile<{{.*}}>::run(loads(i), mkd_wg_key(i, 0), [&](mkd_wg_loads &n) -> i64 {
# CU: mkd_mm_waits<true>{p, rank, cta, i, epoch, T_X, T_Wu, T_S},
# CU-NEXT: c, C.st[1], rows, cols, smem, epi))
# CU: // stage M: Y = matmul(A, Wd, X), {{.*}}; then add X in the epilogue
# CU: c, W.st[1], rows, cols, smem, mkd_epi_none()))
# CU: // the sum of the tile's 4 partials
# CU: const mkd_epi2<mkd_ident, mkd_add, mkd_bf16, mkd_ident> epi{mkd_ident(),
# CU-NEXT: (const mkd_bf16 *)mkd_at<MK_GPUS>(p, T_X, X2, rank, lo[0], lo[1], lo[2]), (int)X2.st[1], mkd_ident()};
# CU: (int)(hi[1] - lo[1]), (int)(hi[2] - lo[2]), epi);
# CU: // stage P: Z = matmul(H, Wd, Y), {{.*}}; then gelu then add Y in the epilogue
# CU: const mkd_epi2<mkd_gelu, mkd_add, mkd_bf16, mkd_ident> epi{mkd_gelu(),
# CU: // stage R: V = matmul(A, Wd, b), {{.*}}; then add b then gelu in the epilogue
# CU: const mkd_epi2<mkd_ident, mkd_add, mkd_bf16, mkd_gelu> epi{mkd_ident(),
# CU-NEXT: (const mkd_bf16 *)mkd_at<MK_GPUS>(p, T_b, X2, rank, 0, 0, lo[2]), 0 /* a bias: every row the same */, mkd_gelu()};
#
# PTX: wgmma.mma_async.sync.aligned.m64n{{[0-9]+}}k16.f32.bf16.bf16
#
# MMA: // stage U: A = matmul(X, Wu, S), tile {{.*}} (mma.sync); then mul S in the epilogue
# MMA: const mkd_epi2<mkd_ident, mkd_mul, mkd_bf16, mkd_ident> epi{mkd_ident(),
# MMA: mkd_mma_tile<{{.*}}>::run(a, A.st[1], b, B.st[1], c, C.st[1],
# MMA-NEXT: rows, cols, (int)K, 0, 0, smem, epi);
#
# ONE: Pr  Y5 = matmul(Xr, W2, X)  then add X in the epilogue
# TWO: Pr  Pr = matmul(Xr, W2)
# TWO: Y5  Y5 = add(X, allreduce(Pr))
#
# OFF: U  U = matmul(X, Wu)
# OFF: A  A = mul(S, U)
# OFF: Y  Y = add(X, M)
pipeline epi2 {
  param T = 16, D = 512, F = 1024
  in  X  : bf16[T, D]
  in  b  : bf16[D]
  in  Wg : bf16[D, F]
  in  Wu : bf16[D, F]
  in  Wd : bf16[F, D]
  out Y  : bf16[T, D]
  out Z  : bf16[T, D]
  out V  : bf16[T, D]
  out O  : bf16[T, D]
  out O1 : bf16[T, D]
  out O2 : bf16[T, D]
  G = matmul(X, Wg)
  U = matmul(X, Wu)
  S = silu(G)
  A = mul(S, U)
  M = matmul(A, Wd)
  Y = add(X, M)
  H = matmul(X, Wg)
  P = matmul(H, Wd)
  Q = gelu(P)
  Z = add(Q, Y)
  R = matmul(A, Wd)
  Rb = add(R, b)
  V = gelu(Rb)
  C = matmul(A, Wd)
  W2 = relu(X)
  O = add(C, W2)
  K = matmul(A, Wd)
  O1 = add(K, X)
  O2 = mul(K, X)
}
