# Every wait is bounded: it spins with __nanosleep backoff, reads
# %globaltimer to measure how long it has waited, and past the timeout
# records the stall (atomicCAS on the report) and raises `aborted`
# (atomicExch) so every CTA leaves instead of hanging.  The generated
# file gives the expected signal counts; the loop's wait (mkd/task.cuh)
# waits for epoch times that count.
#
# RUN: %mkc --emit=cu %s | FileCheck %s --check-prefix=CU
# RUN: FileCheck %s --check-prefix=LIB < codegen/mkd/task.cuh
# RUN: %mkc --emit=ptx %s -o %t.ptx
# RUN: FileCheck %s < %t.ptx
#
# CU: __device__ const unsigned MK_EXPECTED[{{[0-9]+}}] = {
# CU: #include "mkd/task.cuh"
# LIB: return mkd_wait(p, mkd_flag(p, fr, f.index), epoch * MK_EXPECTED[f.index],
#
# CHECK: .entry mk_fc_wait(
# CHECK: ld.acquire.gpu.global.u64 %rd{{[0-9]+}}, [%rd{{[0-9]+}}];
# CHECK: mov.u64 %rd{{[0-9]+}}, %globaltimer;
# CHECK: nanosleep.u32
# CHECK: ld.acquire.gpu.global.u64 %rd{{[0-9]+}}, [%rd{{[0-9]+}}];
# CHECK: mov.u64 %rd{{[0-9]+}}, %globaltimer;
# CHECK: atom.global.cas.b32
# CHECK: atom.global.exch.b32 %r{{[0-9]+}}, [%rd{{[0-9]+}}], 1;
pipeline fc_wait {
  mesh  nodes x gpus
  param M = 256, N = 256
  in  X : bf16[M, N]
  out Y : bf16[M, N]
  H = gelu(X)
  Y = relu(H)
}
