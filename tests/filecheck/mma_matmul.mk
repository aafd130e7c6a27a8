# A matmul stage runs on tensor cores: bf16 inputs, fp32 accumulators
# (mma.sync m16n8k16 today; wgmma on sm_90a once the Hopper GEMM lands --
# either satisfies this test).  The elementwise stage alone (second half)
# must not use them.
#
# RUN: %mkc --emit=ptx %s -o %t.ptx
# RUN: FileCheck %s --check-prefix=MM < %t.ptx
# RUN: %mkc --emit=cu %s | FileCheck %s --check-prefix=CU
# RUN: sed -e 's/^  H = matmul(X, W).*$/  H = relu(X)/' -e 's/^  in  W .*$//' %s > %t.ew.mk
# RUN: %mkc --emit=ptx %t.ew.mk -o %t.ew.ptx
# RUN: FileCheck %s --check-prefix=EW --implicit-check-not=mma.sync --implicit-check-not=wgmma < %t.ew.ptx
#
# CU: // stage H: H = matmul(X, W), tile 128 x 128 x 32
# CU: // stage Y: Y = relu(H), elementwise
# MM: {{mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.bf16\.bf16\.f32|wgmma\.mma_async\.sync\.aligned\.m64n[0-9]+k16\.f32\.bf16\.bf16}}
# EW: .entry mk_fc_mma(
pipeline fc_mma {
  mesh  nodes x gpus
  param M = 256, N = 256, K = 256
  in  X : bf16[M, K]
  in  W : bf16[K, N]
  out Y : bf16[M, N]
  H = matmul(X, W)  tile 128 x 128 x 32
  Y = relu(H)
}
