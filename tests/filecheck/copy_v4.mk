# Copies move 16 bytes per thread and instruction: the copy stage's loads
# and stores are ld.global.v4.u32 / st.global.v4.u32 (peer memory over
# NVLink is ordinary global memory once mapped).  The pipeline is a copy
# alone, so these instructions can come from nothing else.
#
# RUN: %mkc --emit=ptx -D gpus=4 %s -o %t.ptx
# RUN: FileCheck %s < %t.ptx
# RUN: %mkc --emit=ptx -D gpus=4 --ranks-per-gpu=4 %s -o %t.v.ptx
# RUN: FileCheck %s < %t.v.ptx
#
# CHECK: ld.global.v4.u32 {%r{{[0-9]+}},%r{{[0-9]+}},%r{{[0-9]+}},%r{{[0-9]+}}}, [%rd{{[0-9]+}}];
# CHECK: st.global.v4.u32 [%rd{{[0-9]+}}], {%r{{[0-9]+}},%r{{[0-9]+}},%r{{[0-9]+}},%r{{[0-9]+}}};
# CHECK: .entry mk_fc_copy(
pipeline fc_copy {
  mesh  nodes x gpus
  param M = 1024, K = 256
  in  A : bf16[M, K] split(0)
  out G : bf16[M, K]
  G = allgather(A, 0)  chunk 16K
}
