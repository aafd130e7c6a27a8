# An e4m3 matmul compiles for sm_90a on the portable tile, its operands
# widened to f16 on the way into shared memory (mkd_mma_smem, mma.cuh);
# not on the wgmma engine.  A row that is not a whole number of 8-element
# pieces is refused at the op (tests/errors/mm_gpu_rows.mk).
#
# RUN: %mkc --emit=cu %s | FileCheck %s
# RUN: %mkc --emit=cubin -o %t %s
# RUN: %mkc --emit=plan %s | FileCheck %s --check-prefix=PLAN
#
# CHECK: // stage C: C = matmul(A, B)
# CHECK-NOT: mkd_wgmma_tile
# CHECK: mkd_mma_tile<mkd_e4m3, mkd_bf16,
# PLAN: C = matmul(A, B)
# PLAN-NOT: wgmma
pipeline e4 {
  param M = 256, K = 256, N = 128
  in  A : e4m3[M, K]
  in  B : e4m3[K, N]
  out C : bf16[M, N]
  C = matmul(A, B)
}
