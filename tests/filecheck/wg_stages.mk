# MK_WG_STAGES=N (2..12; an A/B switch of compile.c): the Hopper engine's
# ring depth where the shared memory allows it, in place of the plan's
# (12 for tiles of a few rows, which the 228 KB cut to 9 here; else 8).
# For measuring how many bytes in flight a streaming tile needs
# (docs/perf-notes.md, sixteenth session; tools/stream-probe.cu).  On
# samples/decode_mlp.mk at T = 1 (D = 4096, F = 14336).
#   DEF   without it: 9 stages
#   FOUR  MK_WG_STAGES=4: 4 stages, every matmul
#   BAD   a depth out of range is ignored, with a warning: 9 again
#   BIN   the 4-stage kernel compiles for sm_90a without spills
#
# RUN: %mkc --emit=plan samples/decode_mlp.mk -D T=1 | FileCheck %s --check-prefix=DEF
# RUN: env MK_WG_STAGES=4 %mkc --emit=plan samples/decode_mlp.mk -D T=1 | FileCheck %s --check-prefix=FOUR
# RUN: env MK_WG_STAGES=13 %mkc --emit=plan samples/decode_mlp.mk -D T=1 | FileCheck %s --check-prefix=DEF
# RUN: env MK_WG_STAGES=13 %mkc --emit=plan samples/decode_mlp.mk -D T=1 2>&1 >/dev/null | FileCheck %s --check-prefix=BAD
# RUN: env MK_WG_STAGES=4 %mkc --emit=cubin --no-cache samples/decode_mlp.mk -D T=1 -o %t.cubin 2>&1 | FileCheck %s --check-prefix=BIN

# DEF:      G{{ +}}matmul{{ +}}tile 128 x 128 x 64, wgmma, 9-stage ring
# DEF:      U{{ +}}matmul{{ +}}tile 128 x 128 x 64, wgmma, 9-stage ring
# DEF:      M{{ +}}matmul{{ +}}tile 128 x 128 x 64, wgmma, 9-stage ring

# BAD: mkc: warning: MK_WG_STAGES=13 ignored: a ring of 2 to 12 stages

# FOUR:     G{{ +}}matmul{{ +}}tile 128 x 128 x 64, wgmma, 4-stage ring
# FOUR:     U{{ +}}matmul{{ +}}tile 128 x 128 x 64, wgmma, 4-stage ring
# FOUR:     M{{ +}}matmul{{ +}}tile 128 x 128 x 64, wgmma, 4-stage ring

# BIN: sm_90a: {{[0-9]+}} registers, 0 bytes stack, 0/0 bytes spilled
