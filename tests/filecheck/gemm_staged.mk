# samples/gemm.mk's epilogue: the Hopper engine's 128-row tiles write it
# into shared memory past the ring and store it along C's rows, 16 bytes a
# thread (mkd_wgmma_tile::staged, docs/gemm.md Epilogue); MK_WG_STAGED=0
# stores from the registers, pair by pair (A/B).
#   PLAN   (MK_WG_TMA=0: the staged stores of a result nothing reads
#          are TMA stores by default, gemm_tma.mk)
#          the plan says so and counts the staging: the 128 x 256 tile
#          keeps its 4 stages, 20480 bytes more than the engine's ring
#          needs without (198208 + 20480 = 218688)
#   P128   a 128 x 128 tile fits 6 stages where it fits 7 without
#   CU     the kernel leaves MKD_WG_STAGED at the library's default (1)
#   DEC    tiles of 64 rows (the warpgroups split the columns) stage
#          nothing: the same plan as without
#   CUBIN  it compiles for sm_90a, spill-free (tp_mlp's bias and gelu at 8
#          ranks too)
#   OFF    MK_WG_STAGED=0: none of it, the kernel defines MKD_WG_STAGED 0
#
# RUN: env MK_WG_TMA=0 %mkc --emit=plan samples/gemm.mk | FileCheck %s --check-prefix=PLAN
# RUN: env MK_WG_TMA=0 %mkc --emit=plan tests/filecheck/flags_scope.mk | FileCheck %s --check-prefix=P128
# RUN: %mkc --emit=cu samples/gemm.mk | FileCheck %s --check-prefix=CU
# RUN: %mkc --emit=plan samples/decode_mlp.mk -D T=16 | FileCheck %s --check-prefix=DEC
# RUN: %mkc --emit=cubin samples/gemm.mk -o %t.cubin 2>&1 | FileCheck %s --check-prefix=CUBIN
# RUN: %mkc -D gpus=8 --emit=cubin samples/tp_mlp.mk -o %t.tp.cubin 2>&1 | FileCheck %s --check-prefix=CUBIN
# RUN: env MK_WG_STAGED=0 %mkc --emit=plan samples/gemm.mk | FileCheck %s --check-prefix=OFF
# RUN: env MK_WG_STAGED=0 %mkc --emit=plan tests/filecheck/flags_scope.mk | FileCheck %s --check-prefix=OFF128
# RUN: env MK_WG_STAGED=0 %mkc --emit=cu samples/gemm.mk | FileCheck %s --check-prefix=OFFCU
#
# PLAN: C matmul tile 128 x 256 x 64, wgmma, 4-stage ring {{.*}}, the epilogue through shared memory; smem 218688
# P128: matmul tile 128 x 128 x 64, wgmma, 6-stage ring {{.*}}, the epilogue through shared memory; smem 218720
# CU-NOT: MKD_WG_STAGED
# CU: #include "mkd/mkd.cuh"
# DEC: G matmul tile 128 x 128 x 64, wgmma, 9-stage ring {{.*}}, 64 rows: the warpgroups split the columns, the ring goes on into the next task, silu in the epilogue; smem 222864
# DEC-NOT: through shared memory
# CUBIN: 0 bytes stack, 0/0 bytes spilled
# OFF-NOT: through shared memory
# OFF: C matmul tile 128 x 256 x 64, wgmma, 4-stage ring {{.*}}; smem 208896
# OFF128: matmul tile 128 x 128 x 64, wgmma, 7-stage ring
# OFFCU: #define MKD_WG_STAGED 0
# OFFCU-NEXT: #include "mkd/mkd.cuh"
