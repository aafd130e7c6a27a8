# A matmul stage runs on tensor cores: bf16 inputs, fp32 accumulators.
#   MM  a tile the Hopper engine does not take (k step 32): the portable
#       mma.sync m16n8k16 tile
#   WG  a 128 x 128 x 64 tile on sm_90a: the Hopper engine -- TMA bulk
#       tensor loads into a shared-memory ring guarded by mbarriers, wgmma
#       issued asynchronously (fence, commit, wait)
#   S80 the same tile for sm_80: no wgmma there, mma.sync instead
#   EW  the elementwise stage alone uses no tensor-core instruction
#   CU  the relu that only reads the matmul's result runs in its epilogue:
#       the matmul stage writes Y, and there is no stage for H
#
# RUN: %mkc --emit=ptx %s -o %t.ptx
# RUN: FileCheck %s --check-prefix=MM < %t.ptx
# RUN: %mkc --emit=cu %s | FileCheck %s --check-prefix=CU
# RUN: sed -e 's/tile 128 x 128 x 32/tile 128 x 128 x 64/' %s > %t.wg.mk
# RUN: %mkc --emit=ptx %t.wg.mk -o %t.wg.ptx
# RUN: FileCheck %s --check-prefix=WG < %t.wg.ptx
# RUN: %mkc --emit=ptx --arch=sm_80 %t.wg.mk -o %t.80.ptx
# RUN: FileCheck %s --check-prefix=S80 --implicit-check-not=wgmma < %t.80.ptx
# RUN: sed -e 's/^  H = matmul(X, W).*$/  H = relu(X)/' -e 's/^  in  W .*$//' %s > %t.ew.mk
# RUN: %mkc --emit=ptx %t.ew.mk -o %t.ew.ptx
# RUN: FileCheck %s --check-prefix=EW --implicit-check-not=mma.sync --implicit-check-not=wgmma < %t.ew.ptx
#
# CU: // stage H: Y = matmul(X, W), tile 128 x 128 x 32{{.*}}; then relu in the epilogue
# CU-NOT: stage Y
# CU: smem, mkd_epi1<mkd_relu>{mkd_relu()});
# MM: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
# WG: .target sm_90a
# WG-DAG: mbarrier.init.shared{{(::cta)?}}.b64
# WG-DAG: cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes
# WG-DAG: mbarrier.try_wait.parity.shared{{(::cta)?}}.b64
# WG-DAG: wgmma.fence.sync.aligned
# WG-DAG: wgmma.mma_async.sync.aligned.m64n{{[0-9]+}}k16.f32.bf16.bf16
# WG-DAG: wgmma.commit_group.sync.aligned
# WG-DAG: wgmma.wait_group.sync.aligned
# S80: .target sm_80
# S80: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
# EW: .entry mk_fc_mma(
pipeline fc_mma {
  mesh  nodes x gpus
  param M = 256, N = 256, K = 256
  in  X : bf16[M, K]
  in  W : bf16[K, N]
  out Y : bf16[M, N]
  H = matmul(X, W)  tile 128 x 128 x 32  split 1
  Y = relu(H)
}
