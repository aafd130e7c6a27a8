# What the kernel's threads leave the Hopper attention tile (plan.c
# wg_attn_fit).  Alone in a kernel its CTA has 256 threads, 255 registers
# a thread: 128 keys a stage, S beside P V up to D = 128, and D = 256 on
# the tile.  Beside a matmul on the Hopper engine the CTA has 384 threads,
# 168 registers: 64 keys a stage, no overlap at D = 128, and D = 256 on
# the mma.sync tile.
#   ALONE  attention alone, D = 128: 256 threads, 128 keys, the overlap
#   MIXED  with the projection (its maps 0-2: A, B, and C for its stores
#          by TMA), D = 128: 384 threads, 64 keys (and the
#          shared memory of 64), no overlap
#   MIX256 with the projection, D = 256 (the Hopper tile, which a
#          256-thread kernel takes): the mma.sync tile (no tensor maps for
#          the attention: the projection's 3 only, no mkd_fa_wg)
#   RES    the mixed kernel at D = 128 compiles for sm_90a without spills
#          (at D = 256 the mma.sync tile beside the engine spills ~190
#          bytes, as before the Hopper tile took D = 256 alone)
#
# RUN: sed -e '/^  P = matmul/d; s/^  out P .*//' %s > %t.alone.mk
# RUN: %mkc --emit=plan %t.alone.mk | FileCheck %s --check-prefix=ALONE
# RUN: %mkc --emit=plan %s | FileCheck %s --check-prefix=MIXED --implicit-check-not='S beside P V'
# RUN: %mkc --emit=plan -D D=256 %s | FileCheck %s --check-prefix=MIX256 --implicit-check-not='TMA + wgmma, {{[0-9]+}} keys'
# RUN: %mkc --emit=cu -D D=256 %s | FileCheck %s --check-prefix=MIX256CU --implicit-check-not=mkd_fa_wg
# RUN: %mkc --emit=cubin %s -o %t.cubin 2> %t.res
# RUN: FileCheck %s --check-prefix=RES --implicit-check-not='Performance Loss' < %t.res
#
# ALONE: kernel: 256 threads a CTA
# ALONE: attention{{ +}}128 query rows{{.*}}sm_90a: TMA + wgmma, 128 keys a stage, 3 stages, S beside P V, chunks from each CTA's place, tensor maps 0-2{{.*}}; smem 230512
# MIXED: kernel: 384 threads a CTA
# MIXED: P{{ +}}matmul{{ +}}tile{{.*}}wgmma
# MIXED: O{{ +}}attention{{ +}}128 query rows{{.*}}sm_90a: TMA + wgmma, 64 keys a stage, 3 stages, chunks from each CTA's place, tensor maps 3-5{{.*}}; smem 132208
# MIX256: kernel: 384 threads a CTA, {{[0-9]+}} bytes of shared memory, 3 tensor maps
# MIX256: O{{ +}}attention{{ +}}128 query rows a task, tensor cores, 32 keys a stage, 4 stages, split-KV
# MIX256CU: mkd_fa<256, mkd_bf16, 4> fa;
# RES: sm_90a: {{[0-9]+}} registers, 0 bytes stack, 0/0 bytes spilled
pipeline attention_fit {
  param S = 1024, D = 128, E = 1024

  in  X : bf16[S, E]
  in  W : bf16[E, E]
  in  Q : bf16[S, D]
  in  K : bf16[S, D]
  in  V : bf16[S, D]
  out P : bf16[S, E]
  out O : bf16[S, D]

  P = matmul(X, W)
  O = attention(Q, K, V)
}
