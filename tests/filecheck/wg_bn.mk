# MK_WG_BN=128 (an A/B switch of compile.c): the Hopper engine's tiles 128
# columns wide where the plan takes 256.  On samples/llama_layer.mk, whose
# one kernel holds five engine instances, the attention tile and the row
# ops at 168 registers a thread.
#   DEF   the plan's: 128 x 256 tiles
#   B128  with the switch: 128 x 128, every matmul
#   BAD   a value mkc does not know is ignored with a warning
#   SPILL either kernel spills under 64 bytes (24 and 0 bytes of stores
#         with CUDA 13.0's NVRTC; the 128 x 256 one 1.2 KB while the
#         rmsnorm stages kept rows in registers: mkd/ew.cuh)
#
# RUN: %mkc --emit=plan samples/llama_layer.mk | FileCheck %s --check-prefix=DEF --implicit-check-not='tile 128 x 128 x 64'
# RUN: env MK_WG_BN=128 %mkc --emit=plan samples/llama_layer.mk | FileCheck %s --check-prefix=B128 --implicit-check-not='tile 128 x 256 x 64'
# RUN: env MK_WG_BN=96 %mkc --emit=plan samples/llama_layer.mk 2>&1 >/dev/null | FileCheck %s --check-prefix=BAD
# RUN: %mkc --emit=cubin samples/llama_layer.mk -o %t.cubin 2> %t.wide
# RUN: env MK_WG_BN=128 %mkc --emit=cubin samples/llama_layer.mk -o %t.cubin 2> %t.narrow
# RUN: python3 -c "import re,sys; a, b = (int(re.search(r'(\d+)/\d+ bytes spilled', open(f).read()).group(1)) for f in sys.argv[1:]); print('SPILL', a < 64, b < 64)" %t.wide %t.narrow | FileCheck %s --check-prefix=SPILL
#
# DEF: matmul{{ +}}tile 128 x 256 x 64, wgmma
# DEF: O{{ +}}matmul{{ +}}tile 128 x 256 x 64, wgmma
# B128: matmul{{ +}}tile 128 x 128 x 64, wgmma
# B128: O{{ +}}matmul{{ +}}tile 128 x 128 x 64, wgmma
# B128: M{{ +}}matmul{{ +}}tile 128 x 128 x 64, wgmma
# BAD: mkc: warning: MK_WG_BN=96 ignored: 128
# SPILL: SPILL True True
