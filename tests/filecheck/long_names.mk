# Names of any length reach the generated code whole: a stage's own name
# where the engine asks whether the next task is of its stage (the emitter
# once cut it at 159 characters, and NVRTC then met an undeclared name).
#   SPLIT  a split-K matmul's W_ partials of a 200-character stage
#   GEMM   a plain matmul's S_ tiles of another
#   PTX    both compile for sm_90a
#
# RUN: env MK_NO_LATE=1 %mkc --emit=cu %s | FileCheck %s --check-prefix=SPLIT
# RUN: env MK_NO_LATE=1 %mkc --emit=cu %s | FileCheck %s --check-prefix=GEMM
# RUN: %mkc --emit=ptx %s -o %t.ptx
# RUN: FileCheck %s --check-prefix=PTX < %t.ptx
#
# SPLIT: const int j = mkd_next_ready(p, rank, W_Hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh, epoch);
# GEMM: const int j = mkd_next_ready(p, rank, S_Cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc, epoch);
# PTX: wgmma.mma_async
pipeline long_names {
  param T = 16, K = 2048, N = 1024, M = 1024
  in  X : bf16[T, K]
  in  W : bf16[K, N]
  in  A : bf16[M, K]
  in  B : bf16[K, N]
  out Y : bf16[T, N]
  out Cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc : bf16[M, N]
  Hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh = matmul(X, W)
  Y = silu(Hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh)
  Cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc = matmul(A, B)
}
