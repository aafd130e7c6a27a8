# A bucket matmul's 128-row tiles load A by 64-row halves (plan.c a_box):
# an expert's last row tile, partly filled, loads only the half that holds
# its tokens where they fit in it, as its second warpgroup, all of whose
# rows are past them, multiplies nothing (mkd_wgmma_tile's ABOX, a_boxes).
# The program is moe_pool.mk's.
#   PLAN    the plan says so for He and Ye, and not with MK_A_HALVES=0
#           (WHOLEPLAN)
#   CU      the engine's template gets ABOX 64, and with MK_A_HALVES=0
#           its default, A's box the tile's rows (WHOLE)
#   DENSE   a matmul that reads no buckets keeps A whole
#   PTX     it compiles both ways
#
# RUN: %mkc --emit=plan tests/filecheck/moe_pool.mk | FileCheck %s --check-prefix=PLAN
# RUN: env MK_A_HALVES=0 %mkc --emit=plan tests/filecheck/moe_pool.mk | FileCheck %s --check-prefix=WHOLEPLAN
# RUN: %mkc --emit=cu tests/filecheck/moe_pool.mk | FileCheck %s --check-prefix=CU
# RUN: env MK_A_HALVES=0 %mkc --emit=cu tests/filecheck/moe_pool.mk | FileCheck %s --check-prefix=WHOLE
# RUN: %mkc --emit=cu samples/gemm.mk | FileCheck %s --check-prefix=DENSE
# RUN: %mkc --emit=ptx tests/filecheck/moe_pool.mk -o %t.ptx
# RUN: env MK_A_HALVES=0 %mkc --emit=ptx tests/filecheck/moe_pool.mk -o %t.whole.ptx
# RUN: FileCheck %s --check-prefix=PTX < %t.ptx
# RUN: FileCheck %s --check-prefix=PTX < %t.whole.ptx
#
# PLAN: He matmul {{.*}}rows bounded by Xe's buckets, A by 64-row halves (the second where tokens reach it)
# PLAN: Ye matmul {{.*}}rows bounded by Xe's buckets, A by 64-row halves (the second where tokens reach it)
# WHOLEPLAN-NOT: halves
# CU: // stage He: Ae = matmul(Xe, W1)
# CU: mkd_wgmma_tile<mkd_bf16, mkd_bf16, 128, 256, 64, {{[0-9]+}}, false, false, {{true|false}}, 1, MKD_WG_STAGED, false, 64>::run(
# CU: // stage Ye: Ye = matmul(Ae, W2)
# CU: mkd_wgmma_tile<mkd_bf16, mkd_bf16, 128, 256, 64, {{[0-9]+}}, false, false, {{true|false}}, 1, MKD_WG_STAGED, false, 64>::run(
# WHOLE: // stage He: Ae = matmul(Xe, W1)
# WHOLE-NOT: false, 64>
# WHOLE: mkd_wgmma_tile<mkd_bf16, mkd_bf16, 128, 256, 64, {{[0-9]+}}{{(, false, false, true)?}}>::run(
# WHOLE-NOT: false, 64>
# DENSE: mkd_wgmma_tile<
# DENSE-NOT: false, 64>
# PTX: .entry
