# The staged epilogue stored by TMA, the default where nothing in the
# kernel reads the result (plan.c mm_tma_store; MK_WG_TMA=0: the staged
# stores): its chunks go out as TMA stores through C's tensor map while
# the warpgroup goes on (mkd_wgmma_tile's STG 2, docs/gemm.md Epilogue).
#   PLAN   the plan says so and counts two 8 KB buffers a consumer
#          warpgroup: the 128 x 256 tile keeps its 4 stages (198208 +
#          32768 = 230976), and a third tensor map (C's)
#   P128   a 128 x 128 tile keeps its 6 stages
#   CU     the kernel defines MKD_WG_TMA (the task loop drains the stores
#          before a task's signals), the tile's place in C's map is
#          `out` (tm + 2), the engine is STG 2 and takes it
#   RAG    a ragged C (M = 1000): no TMA stores (a whole box is stored),
#          the staged stores as without
#   READ   a result the kernel reads (tp_mlp's U with its gelu, mlp_chain's
#          first four): the staged stores; the last matmul, whose result
#          only the caller reads, takes it
#   PAIR   in 2-CTA clusters (MK_CLUSTER=2): the staged stores
#   CUBIN  it compiles for sm_90a, spill-free (gemm, tp_mlp at 8 ranks,
#          mlp_chain)
#   OFF    MK_WG_TMA=0, or MK_WG_STAGED=0: none of it
#
# RUN: %mkc --emit=plan samples/gemm.mk | FileCheck %s --check-prefix=PLAN
# RUN: %mkc --emit=plan tests/filecheck/flags_scope.mk | FileCheck %s --check-prefix=P128
# RUN: %mkc --emit=cu samples/gemm.mk | FileCheck %s --check-prefix=CU
# RUN: %mkc --emit=plan samples/gemm.mk -D M=1000 | FileCheck %s --check-prefix=RAG
# RUN: %mkc --emit=plan samples/tp_mlp.mk | FileCheck %s --check-prefix=READ
# RUN: %mkc --emit=plan samples/mlp_chain.mk | FileCheck %s --check-prefix=CHAIN
# RUN: env MK_CLUSTER=2 %mkc --emit=plan samples/gemm.mk | FileCheck %s --check-prefix=PAIR
# RUN: %mkc --emit=cubin samples/gemm.mk -o %t.cubin 2>&1 | FileCheck %s --check-prefix=CUBIN
# RUN: %mkc -D gpus=8 --emit=cubin samples/tp_mlp.mk -o %t.tp.cubin 2>&1 | FileCheck %s --check-prefix=CUBIN
# RUN: %mkc --emit=cubin samples/mlp_chain.mk -o %t.mc.cubin 2>&1 | FileCheck %s --check-prefix=CUBIN
# RUN: env MK_WG_TMA=0 %mkc --emit=plan samples/gemm.mk | FileCheck %s --check-prefix=OFF
# RUN: env MK_WG_STAGED=0 %mkc --emit=plan samples/gemm.mk | FileCheck %s --check-prefix=OFF
# RUN: env MK_WG_TMA=0 %mkc --emit=cu samples/gemm.mk | FileCheck %s --check-prefix=OFFCU
# RUN: env MK_WG_TMA=2 %mkc --emit=plan samples/gemm.mk 2>&1 >/dev/null | FileCheck %s --check-prefix=BAD
#
# PLAN: kernel: 384 threads a CTA, 230976 bytes of shared memory, 3 tensor maps
# PLAN: C matmul tile 128 x 256 x 64, wgmma, 4-stage ring {{.*}}, the epilogue through shared memory, stored by TMA; smem 230976
# P128: matmul tile 128 x 128 x 64, wgmma, 6-stage ring {{.*}}, the epilogue through shared memory, stored by TMA; smem 231008
# CU: #define MKD_WG_TMA 1
# CU-NEXT: #include "mkd/mkd.cuh"
# CU: const mkd_wg_out out{tm + 2,
# CU: mkd_wgmma_tile<mkd_bf16, mkd_bf16, 128, 256, 64, 4, false, false, true, 1, 2>::run(
# CU: smem, mkd_epi_none(), mkd_epi_none(), out))
# RAG-NOT: stored by TMA
# RAG: C matmul tile 128 x 256 x 64, wgmma, 4-stage ring {{.*}}, the epilogue through shared memory; smem 218688
# READ: kernel: 384 threads a CTA, 230976 bytes of shared memory, 5 tensor maps
# READ: U matmul {{.*}}, the epilogue through shared memory, gelu in the epilogue
# READ: P matmul {{.*}}, the epilogue through shared memory, stored by TMA;
# CHAIN-COUNT-4: matmul {{.*}}, the epilogue through shared memory, {{add|scale}}
# CHAIN: Y matmul {{.*}}, stored by TMA;
# PAIR-NOT: stored by TMA
# PAIR: in pairs on 2-CTA clusters
# CUBIN: 0 bytes stack, 0/0 bytes spilled
# OFF-NOT: stored by TMA
# OFF: kernel: 384 threads a CTA, {{[0-9]+}} bytes of shared memory, 2 tensor maps
# OFFCU-NOT: MKD_WG_TMA
# OFFCU-NOT: mkd_wg_out
# BAD: warning: MK_WG_TMA=2 ignored: 0 or 1
