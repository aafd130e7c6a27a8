# The Hopper attention tile (mkd/attn_wg.cuh) on sm_90a, beside the
# portable mma.sync tile for other archs.
#   PLAN the plan picks it for 16-bit inputs at D = 64 and 128 read on the
#        rank (here ring attention: K and V gathered), 384 threads, three
#        tensor maps (Q, K, V)
#   CU   the stage is inlined into the kernel (a wgmma chain behind a call
#        is serialized by ptxas, C7510: that halved the tile's speed),
#        declares mkd_fa_wg under MKD_HAS_WGMMA and mkd_fa otherwise, and
#        gives the tile's barriers back when a wait fails
#   PTX  sm_90a: TMA loads into the mbarrier ring, S = Q K^T as wgmma with
#        both operands in shared memory (m64n64), O += P V with P in
#        registers ({%r..} A operand, m64n128), the named barriers of the
#        ping-pong; no mma.sync
#   RES  no spills (mkc's ptxas info), no wgmma serialized ("Potential
#        Performance Loss", which mkc prints), D = 128 and D = 64, and at a
#        world of one rank (where the plan also picks the tile)
#   SM80 --arch=sm_80 compiles the mma.sync tile, no wgmma
#   MMA  MK_ATTN_ENGINE=mma (the A/B switch) and MK_NO_WGMMA=1 plan the
#        mma.sync tile: no mkd_fa_wg, 256 threads
#   F32  fp32 inputs keep the CUDA-core tile
#   D256 D = 256 stays on the mma.sync tile (the Hopper one spills there)
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
# RUN: %mkc --emit=plan -D gpus=2 -D D=256 %s | FileCheck %s --check-prefix=D256 --implicit-check-not='TMA + wgmma'
#
# PLAN: kernel: 384 threads a CTA, {{[0-9]+}} bytes of shared memory, 3 tensor maps
# PLAN: attention 128 query rows a task, tensor cores, 64 keys a stage, 2 stages; sm_90a: TMA + wgmma, 64 keys a stage, 3 stages, tensor maps 0-2
# CU: // stage O: O = attention(Q, K__ring, V__ring), {{.*}}TMA + wgmma on sm_90a
# CU-NEXT: static __device__ __forceinline__ bool stage_O(
# CU: #ifdef MKD_HAS_WGMMA
# CU-NEXT: mkd_fa_wg<128, mkd_bf16> fa((const mkd_tmap *)p.tmaps + (rank - p.rank_base) * MK_NTMAPS + 0,
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
# PTX: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, p, 1, 1, 0, 0;
# PTX: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, %rd{{[0-9]+}}, p, 1, 1, 1;
# PTX: bar.arrive
# RES: sm_90a: {{[0-9]+}} registers, 0 bytes stack, 0/0 bytes spilled
# SM80: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
# MMA: kernel: 256 threads a CTA, {{[0-9]+}} bytes of shared memory, 0 tensor maps
# MMACU: mkd_fa<128, mkd_bf16> fa;
# F32: mkd_attn_state<128> *st
# D256: attention 128 query rows a task, tensor cores, 32 keys a stage, 2 stages; smem
pipeline attention_hopper {
  mesh  nodes x gpus
  param S = 1024, D = 128

  in  Q : bf16[S, D] split(0)
  in  K : bf16[S, D] split(0)
  in  V : bf16[S, D] split(0)
  out O : bf16[S, D] split(0)

  O = attention(Q, K, V)
}
