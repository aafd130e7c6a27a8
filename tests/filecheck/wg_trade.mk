# Whether the Hopper engine's 128 x 256 tiles trade registers (setmaxnreg,
# mkd/wgmma.cuh): plan.c decides it for the kernel (ir_prog.wg_trade), the
# generated code says so.
#   ONE   one engine instance (samples/gemm.mk): the trade, no define
#   OFF   MK_WG_TRADE=0 (A/B): no trade
#   MANY  several instances (samples/mlp_chain.mk): no trade (ptxas spills
#         where several trading engines are inlined)
#   BAD   a value mkc does not know is ignored with a warning
#   BIN   without the trade the 128 x 256 tile compiles without spills
#
# RUN: %mkc --emit=cu samples/gemm.mk | FileCheck %s --check-prefix=ONE --implicit-check-not=MKD_WG_TRADE
# RUN: env MK_WG_TRADE=0 %mkc --emit=cu samples/gemm.mk | FileCheck %s --check-prefix=OFF
# RUN: %mkc --emit=cu samples/mlp_chain.mk | FileCheck %s --check-prefix=OFF
# RUN: env MK_WG_TRADE=2 %mkc --emit=cu samples/gemm.mk 2>&1 >/dev/null | FileCheck %s --check-prefix=BAD
# RUN: env MK_WG_TRADE=0 %mkc --emit=cubin samples/gemm.mk -o %t.cubin 2>&1 | FileCheck %s --check-prefix=BIN
#
# ONE: #include "mkd/mkd.cuh"
# OFF: #define MKD_WG_TRADE 0  // no register trading (plan.c)
# OFF: #include "mkd/mkd.cuh"
# BAD: mkc: warning: MK_WG_TRADE=2 ignored: 0 or 1
# BIN: sm_90a: {{[0-9]+}} registers, 0 bytes stack, 0/0 bytes spilled
