# RDMA stages in the kernel: ag_gemm on a 2 x 2 mesh.  Rank 0 sends its
# shard to rank 2 (the GPU of its index on the other node); that task has a
# stage of its own (R_Ag), pushes its box to the proxy FIFO (mkd_rdma_put:
# READY wait, commands, its written flag behind the data), and the flag it
# writes (f0, in the RDMA flag area) is skipped by the kernel's adding
# signals.  The run starts by telling the senders they may write
# (mkd_rdma_start) and ends when this CTA's commands are delivered and all
# that was sent here has landed (mkd_rdma_end), before the DONE barrier:
# the kernel (mkd/kernel.cuh under MK_RDMA) calls them.
# Virtual ranks (--ranks-per-gpu=4) get stores instead of the proxy.  The
# PTX of the push has the claim (atom.add.u64 on the head), the 16-byte body
# stores and the release of the sequence number at system scope.
#
# RUN: %mkc --emit=cu -D nodes=2 -D gpus=2 %s | FileCheck %s --check-prefix=CU
# RUN: %mkc --emit=ptx -D nodes=2 -D gpus=2 %s -o %t.ptx
# RUN: FileCheck %s --check-prefix=PTX < %t.ptx
# RUN: %mkc --emit=cubin -D nodes=2 -D gpus=2 --ranks-per-gpu=4 %s -o %t.cubin
#
# CU: #define MK_RDMA 1
# CU: #define MK_NRFLAGS 1
# CU-NEXT: #define MK_NRDST 1
# CU: enum { S_Ag = 0, S_C = 1, R_Ag = 2 };
# CU: {R_Ag, 1, 0, 1, {{.*}} // t{{[0-9]+}} rdma Ag@2[0:128, 0:128]
# CU: __device__ const int MK_RDST[MK_NRDST] = {2};
# CU: __device__ const int MK_RFROM[MK_NRDST] = {2};
# CU: #include "mkd/task.cuh"
# CU: static __device__ __noinline__ bool rdma_Ag(
# CU: const mkd_fref f = MK_SIGNALS[t.sig0];
# CU: #if MK_MULTIPROC
# CU: ok = mkd_rdma_put<MK_GPUS>(p, rank, s.tensor, MK_T[s.tensor], s.lo, T_Ag, MK_T[T_Ag],
# CU-NEXT: dst, lo, hi, f.index, MK_NRFLAGS + j, MK_NFLAGS + 2 + j, MK_NRFLAGS + MK_NRDST,
# CU-NEXT: epoch, &mkd_ticket,
# CU: #else
# CU: mkd_st_release((u64 *)p.ranks[dst].rflags + f.index, epoch);
# CU: case R_Ag: return rdma_Ag(
# CU: #include "mkd/kernel.cuh"
#
# PTX: .func {{.*}}rdma_Ag
# PTX: atom.add.u64
# PTX: st.global.v2.u64
# PTX: st.release.sys.global.u64
# PTX: .func {{.*}}mkd_rdma_start
# PTX: .func {{.*}}mkd_rdma_end
# PTX: .entry mk_fc_rdma(
# PTX: call.uni
# PTX-NEXT: {{.*}}mkd_rdma_start
# PTX: call.uni
# PTX-NEXT: {{.*}}rdma_Ag
# PTX: mkd_rdma_end
pipeline fc_rdma {
  mesh  nodes x gpus
  param M = 512, N = 256, K = 128
  in  A : bf16[M, K] split(0)
  in  B : bf16[K, N]
  out C : bf16[M, N]
  Ag = allgather(A, 0)
  C  = matmul(Ag, B)  tile 128 x 256 x 64
}
