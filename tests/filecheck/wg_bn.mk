# The Hopper engine's tile width beside the attention tile (plan.c
# narrow_beside) and MK_WG_BN (an A/B switch of compile.c).  On
# samples/llama_layer.mk, whose one kernel holds five engine instances, the
# attention tile and the row ops at 168 registers a thread, the matmuls
# take 128 x 128 tiles; a kernel without attention keeps 128 x 256.
#   DEF   the plan's: 128 x 128 beside the attention tile
#   GEMM  no attention (samples/gemm.mk): 128 x 256
#   B256  MK_WG_BN=256: 128 x 256 beside the attention tile too
#   B128  MK_WG_BN=128: 128 x 128 everywhere, gemm.mk too
#   BAD   a value mkc does not know is ignored with a warning
#   SPILL the 128 x 256 kernel spills over 1 KB, the plan's under 64 bytes
#         (1200 and 8 bytes of stores with CUDA 13.0's NVRTC)
#
# RUN: %mkc --emit=plan samples/llama_layer.mk | FileCheck %s --check-prefix=DEF --implicit-check-not='tile 128 x 256 x 64'
# RUN: %mkc --emit=plan samples/gemm.mk | FileCheck %s --check-prefix=GEMM
# RUN: env MK_WG_BN=256 %mkc --emit=plan samples/llama_layer.mk | FileCheck %s --check-prefix=B256 --implicit-check-not='tile 128 x 128 x 64'
# RUN: env MK_WG_BN=128 %mkc --emit=plan samples/gemm.mk | FileCheck %s --check-prefix=B128
# RUN: env MK_WG_BN=96 %mkc --emit=plan samples/llama_layer.mk 2>&1 >/dev/null | FileCheck %s --check-prefix=BAD
# RUN: env MK_WG_BN=256 %mkc --emit=cubin samples/llama_layer.mk -o %t.cubin 2> %t.wide
# RUN: %mkc --emit=cubin samples/llama_layer.mk -o %t.cubin 2> %t.narrow
# RUN: python3 -c "import re,sys; a, b = (int(re.search(r'(\d+)/\d+ bytes spilled', open(f).read()).group(1)) for f in sys.argv[1:]); print('SPILL', a > 1024, b < 64)" %t.wide %t.narrow | FileCheck %s --check-prefix=SPILL
#
# DEF: matmul{{ +}}tile 128 x 128 x 64, wgmma
# DEF: O{{ +}}matmul{{ +}}tile 128 x 128 x 64, wgmma
# DEF: M{{ +}}matmul{{ +}}tile 128 x 128 x 64, wgmma
# GEMM: matmul{{ +}}tile 128 x 256 x 64, wgmma
# B256: matmul{{ +}}tile 128 x 256 x 64, wgmma
# B256: O{{ +}}matmul{{ +}}tile 128 x 256 x 64, wgmma
# B256: M{{ +}}matmul{{ +}}tile 128 x 256 x 64, wgmma
# B128: matmul{{ +}}tile 128 x 128 x 64, wgmma
# BAD: mkc: warning: MK_WG_BN=96 ignored: 128 or 256
# SPILL: SPILL True True
