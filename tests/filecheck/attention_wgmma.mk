# The Hopper attention tile (mkd/attn_wg.cuh) on sm_90a, beside the
# portable mma.sync tile for other archs.
#   PLAN the plan picks it for 16-bit inputs at D = 64 and 128 read on
#        the rank (here ring attention: K and V gathered), 256 threads
#        (two consumer warpgroups, no loading warp), three tensor maps (Q,
#        K, V), 128 keys a stage and S beside P V up to D = 128
#        (attention_fit.mk: what a 384-thread kernel leaves it)
#   CU   the stage is inlined into the kernel (a wgmma chain behind a call
#        is serialized by ptxas, C7510: that halved the tile's speed),
#        declares mkd_fa_wg under MKD_HAS_WGMMA and mkd_fa otherwise, and
#        gives the tile's barriers back when a wait fails
#   PTX  sm_90a: TMA loads into the mbarrier ring, S = Q K^T as wgmma with
#        both operands in shared memory (m64n128), O += P V with P in
#        registers ({%r..} A operand, m64n128), the named barriers of the
#        ping-pong; no mma.sync
#   RES  no spills (mkc's ptxas info), no wgmma serialized ("Potential
#        Performance Loss", which mkc prints), D = 128 and D = 64, and at a
#        world of one rank (where the plan also picks the tile), eight ranks
#        (a block a rank), 64 keys a stage (MK_ATTN_KEYS=64), and D = 256
#   SM80 --arch=sm_80 compiles the mma.sync tile, no wgmma
#   MMA  MK_ATTN_ENGINE=mma (the A/B switch) and MK_NO_WGMMA=1 plan the
#        mma.sync tile: no mkd_fa_wg, 256 threads
#   F32  fp32 inputs keep the CUDA-core tile
#   D256 D = 256 on the Hopper tile too, 64 keys a stage (two) without the
#        overlap (1.79x the mma.sync tile, perf-notes 2026-12-05,
#        eighteenth session); MK_ATTN_ENGINE=mma keeps it on mma.sync
#   KEYS MK_ATTN_KEYS=64 and MK_ATTN_OVERLAP=0 (A/B): the plan says so;
#        a value mkc does not know is ignored with a warning
#   ROT  without a causal mask each CTA reads a block's chunks from its
#        own place on (the plan and the tile's template say so: PLAN, CU);
#        MK_ATTN_ROTATE=0 (A/B) reads them all from the first; with a mask
#        (ring_attention_causal.mk) nothing rotates; no spills
#
# RUN: %mkc --emit=plan -D gpus=2 %s | FileCheck %s --check-prefix=PLAN
# RUN: %mkc --emit=cu -D gpus=2 %s | FileCheck %s --check-prefix=CU
# RUN: %mkc --emit=ptx -D gpus=2 %s -o %t.ptx
# RUN: FileCheck %s --check-prefix=PTX --implicit-check-not=mma.sync < %t.ptx
# RUN: %mkc --emit=cubin -D gpus=2 %s -o %t.cubin 2> %t.res
# RUN: FileCheck %s --check-prefix=RES --implicit-check-not='Performance Loss' < %t.res
# RUN: %mkc --emit=cubin -D gpus=2 -D D=64 %s -o %t.cubin 2> %t.res64
# RUN: FileCheck %s --check-prefix=RES --implicit-check-not='Performance Loss' < %t.res64
# RUN: %mkc --emit=plan %s | FileCheck %s --check-prefix=PLAN
# RUN: %mkc --emit=cubin %s -o %t.cubin 2> %t.res1
# RUN: FileCheck %s --check-prefix=RES --implicit-check-not='Performance Loss' < %t.res1
# RUN: %mkc --emit=ptx -D gpus=2 --arch=sm_80 %s -o %t.sm80.ptx
# RUN: FileCheck %s --check-prefix=SM80 --implicit-check-not=wgmma.mma_async < %t.sm80.ptx
# RUN: env MK_ATTN_ENGINE=mma %mkc --emit=plan -D gpus=2 %s | FileCheck %s --check-prefix=MMA --implicit-check-not='TMA + wgmma'
# RUN: env MK_NO_WGMMA=1 %mkc --emit=cu -D gpus=2 %s | FileCheck %s --check-prefix=MMACU --implicit-check-not=mkd_fa_wg
# RUN: sed -e 's/bf16\[/f32[/g' %s > %t.f32.mk
# RUN: %mkc --emit=cu -D gpus=2 %t.f32.mk | FileCheck %s --check-prefix=F32 --implicit-check-not=mkd_fa_wg
# RUN: %mkc --emit=cubin -D gpus=8 %s -o %t.cubin 2> %t.res8
# RUN: FileCheck %s --check-prefix=RES --implicit-check-not='Performance Loss' < %t.res8
# RUN: env MK_ATTN_KEYS=64 %mkc --emit=cubin -D gpus=2 %s -o %t.cubin 2> %t.res128
# RUN: FileCheck %s --check-prefix=RES --implicit-check-not='Performance Loss' < %t.res128
# RUN: %mkc --emit=cubin -D gpus=2 -D D=256 %s -o %t.cubin 2> %t.res256
# RUN: FileCheck %s --check-prefix=RES --implicit-check-not='Performance Loss' < %t.res256
# RUN: env MK_ATTN_ENGINE=mma %mkc --emit=plan -D gpus=2 -D D=256 %s | FileCheck %s --check-prefix=D256MMA --implicit-check-not='TMA + wgmma'
# RUN: %mkc --emit=plan -D gpus=2 -D D=256 %s | FileCheck %s --check-prefix=D256 --implicit-check-not='S beside P V'
# RUN: env MK_ATTN_KEYS=64 MK_ATTN_OVERLAP=0 %mkc --emit=plan -D gpus=2 %s | FileCheck %s --check-prefix=KEYS --implicit-check-not='S beside P V'
# RUN: env MK_ATTN_KEYS=96 MK_ATTN_OVERLAP=2 %mkc --emit=plan -D gpus=2 %s 2>&1 | FileCheck %s --check-prefix=BADKEYS
# RUN: env MK_ATTN_ROTATE=0 %mkc --emit=plan -D gpus=2 %s | FileCheck %s --check-prefix=ROT --implicit-check-not="CTA's place"
# RUN: env MK_ATTN_ROTATE=0 %mkc --emit=cu -D gpus=2 %s | FileCheck %s --check-prefix=ROTCU
# RUN: %mkc --emit=cu -D gpus=2 samples/ring_attention_causal.mk | FileCheck %s --check-prefix=ROTC
# RUN: env MK_ATTN_ROTATE=0 %mkc --emit=cubin -D gpus=2 %s -o %t.cubin 2> %t.resrot
# RUN: FileCheck %s --check-prefix=RES --implicit-check-not='Performance Loss' < %t.resrot
#
# PLAN: kernel: 256 threads a CTA, 230512 bytes of shared memory, 3 tensor maps
# PLAN: attention 128 query rows a task, tensor cores, 64 keys a stage, 2 stages; sm_90a: TMA + wgmma, 128 keys a stage, 3 stages, S beside P V, chunks from each CTA's place, tensor maps 0-2{{.*}}; smem 230512
# CU: // stage O: O = attention(Q, K__ring, V__ring), {{.*}}TMA + wgmma on sm_90a
# CU-NEXT: static __device__ __forceinline__ bool stage_O(
# CU: #ifdef MKD_HAS_WGMMA
# CU-NEXT: mkd_fa_wg<128, mkd_bf16, 128, 3, 1, 1> fa((const mkd_tmap *)p.tmaps + (rank - p.rank_base) * MK_NTMAPS + 0,
# CU-NEXT: (u64)mkd_origin(p, MK_T[T_Q], rank), (u64)mkd_origin(p, MK_T[T_K__ring], rank),
# CU-NEXT: (u64)mkd_origin(p, MK_T[T_V__ring], rank));
# CU-NEXT: #else
# CU-NEXT: mkd_fa<128, mkd_bf16> fa;
# CU-NEXT: #endif
# CU: fa.quit();
# CU: fa.block(Kp, Vp,
# CU: fa.end(Op,
# PTX: cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes
# PTX: mbarrier.try_wait.parity.shared::cta.b64
# PTX: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, p, 1, 1, 0, 0;
# PTX: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, %rd{{[0-9]+}}, p, 1, 1, 1;
# PTX: bar.arrive
# RES: sm_90a: {{[0-9]+}} registers, 0 bytes stack, 0/0 bytes spilled
# SM80: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
# MMA: kernel: 256 threads a CTA, {{[0-9]+}} bytes of shared memory, 0 tensor maps
# MMACU: mkd_fa<128, mkd_bf16> fa;
# F32: mkd_attn_state<128> *st
# D256MMA: attention 128 query rows a task, tensor cores, 32 keys a stage, 2 stages; smem
# D256: kernel: 256 threads a CTA
# D256: attention 128 query rows a task, tensor cores, 32 keys a stage, 2 stages; sm_90a: TMA + wgmma, 64 keys a stage, 2 stages, chunks from each CTA's place, tensor maps 0-2; smem 197728
# KEYS: sm_90a: TMA + wgmma, 64 keys a stage, 3 stages, chunks from each CTA's place, tensor maps 0-2; smem 132208
# BADKEYS: mkc: warning: MK_ATTN_KEYS=96 ignored: 64 or 128
# BADKEYS: mkc: warning: MK_ATTN_OVERLAP=2 ignored: 0 or 1
# BADKEYS: sm_90a: TMA + wgmma, 128 keys a stage, 3 stages, S beside P V, chunks from each CTA's place, tensor maps 0-2
# ROT: sm_90a: TMA + wgmma, 128 keys a stage, 3 stages, S beside P V, tensor maps 0-2
# ROTCU: mkd_fa_wg<128, mkd_bf16, 128, 3, 1> fa(
# ROTC: mkd_fa_wg<128, mkd_bf16, 128, 3, 1> fa(
pipeline attention_hopper {
  mesh  nodes x gpus
  param S = 1024, D = 128

  in  Q : bf16[S, D] split(0)
  in  K : bf16[S, D] split(0)
  in  V : bf16[S, D] split(0)
  out O : bf16[S, D] split(0)

  O = attention(Q, K, V)
}
