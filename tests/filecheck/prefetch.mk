# MK_PREFETCH=1 (an A/B opt-in: 1-2% on decode attention on an H100,
# docs/perf-notes.md, twenty-ninth session): each run starts with the rows
# of the tables its CTA's tasks read kept in L2 (plan.c decides it for the
# kernel, ir_prog.prefetch; mkd/kernel.cuh, mkd_prefetch_tables).
#   OFF   the default: no define, the device library's MKD_PREFETCH 0
#   ON    MK_PREFETCH=1: the define
#   BIN   with them the kernel compiles for sm_90a without spills
#
# RUN: %mkc --emit=cu samples/decode_attention.mk | FileCheck %s --check-prefix=OFF --implicit-check-not=MKD_PREFETCH
# RUN: env MK_PREFETCH=1 %mkc --emit=cu samples/decode_attention.mk | FileCheck %s --check-prefix=ON
# RUN: env MK_PREFETCH=1 %mkc --emit=cubin samples/decode_attention.mk -o %t.cubin 2>&1 | FileCheck %s --check-prefix=BIN
#
# OFF: #include "mkd/mkd.cuh"
# ON: #define MKD_PREFETCH 1  // the tables' rows kept in L2 (MK_PREFETCH)
# ON-NEXT: #include "mkd/mkd.cuh"
# BIN: sm_90a: {{[0-9]+}} registers, 0 bytes stack, 0/0 bytes spilled
