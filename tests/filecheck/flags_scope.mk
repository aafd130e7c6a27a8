# Flag operations: release signals (red.release) and acquire waits
# (ld.acquire) at .gpu scope when every rank of the pipeline shares this GPU
# (--ranks-per-gpu = world), at .sys scope when peers are other GPUs.
#
# RUN: %mkc --emit=cu -D gpus=2 --ranks-per-gpu=2 %s | FileCheck %s --check-prefix=CU-GPU
# RUN: %mkc --emit=cu -D gpus=2 %s | FileCheck %s --check-prefix=CU-SYS
# RUN: %mkc --emit=ptx -D gpus=2 --ranks-per-gpu=2 %s -o %t.gpu.ptx
# RUN: FileCheck %s --check-prefix=GPU < %t.gpu.ptx
# RUN: %mkc --emit=ptx -D gpus=2 %s -o %t.sys.ptx
# RUN: FileCheck %s --check-prefix=SYS --implicit-check-not=ld.acquire.gpu --implicit-check-not=red.release.gpu < %t.sys.ptx
#
# CU-GPU: #define MKD_SYS_SCOPE 0
# CU-GPU: #include "mkd/mkd.cuh"
# CU-GPU: #include "mkd/task.cuh"
# CU-GPU: #include "mkd/kernel.cuh"
# CU-SYS: #define MKD_SYS_SCOPE 1
#
# GPU-DAG: ld.acquire.gpu.global.u64
# GPU-DAG: red.release.gpu.global.add.u64
# SYS-DAG: ld.acquire.sys.global.u64
# SYS-DAG: red.release.sys.global.add.u64
pipeline fc_flags {
  mesh  nodes x gpus
  param M = 256, N = 128, K = 64
  in  A : bf16[M, K] split(0)
  in  B : bf16[K, N]
  out C : bf16[M, N]
  G = allgather(A, 0)
  C = matmul(G, B)  tile 128 x 128 x 64
}
