# Attention runs on tensor cores for 16-bit inputs.
#   CU  bf16: the mkd_fa tile (128 query rows, state in registers), every
#       key block waited on just before use; no CUDA-core state
#   PTX mma.sync for Q K^T and P V, ldmatrix with and without .trans (K is
#       B in column-major order, V in row-major), the exp2 approximation
#       (sm_80: on sm_90a the Hopper tile runs, attention_wgmma.mk)
#   F32 fp32 inputs keep the CUDA-core tile: no mma.sync at all
#   SM  the schedule: 128-row tasks and the shared memory of the larger
#       tile, the Hopper one (1024 + 128 x 128 x 2 + 3 stages of 2 x 64 x
#       128 x 2 + 3 x 16 + 64 bytes for D = 128)
# (split 1: the keys stay whole here; attention_split.mk has the split plan)
#
# RUN: %mkc --emit=cu %s | FileCheck %s --check-prefix=CU
# RUN: %mkc --emit=ptx --arch=sm_80 %s -o %t.ptx
# RUN: FileCheck %s --check-prefix=PTX < %t.ptx
# RUN: sed -e 's/bf16\[/f32[/g' %s > %t.f32.mk
# RUN: %mkc --emit=cu %t.f32.mk | FileCheck %s --check-prefix=F32CU
# RUN: %mkc --emit=ptx --arch=sm_80 %t.f32.mk -o %t.f32.ptx
# RUN: FileCheck %s --check-prefix=F32 --implicit-check-not=mma.sync < %t.f32.ptx
# RUN: %mkc --emit=schedule %s | FileCheck %s --check-prefix=SM
#
# CU: // stage O: O = attention(Q, K, V){{.*}}(tensor cores{{.*}})
# CU: mkd_fa_wg<128, mkd_bf16, 128, 3, 1> fa(
# CU: mkd_fa<128, mkd_bf16> fa;
# CU: fa.begin(Qp,
# CU: const int q0 = (int)lo[1], qlast = q0 + rows - 1;
# CU: if (1 && kb.lo[1] > qlast)
# CU: ok = mkd_task_wait(
# CU: fa.block(Kp, Vp, {{.*}}, rows, true, q0, kb.lo[1]);
# CU: mkd_box_shift<MK_NODES, MK_GPUS>(MK_T[T_O], rank, t.lo, t.hi, lo, hi);
# CU: fa.end(Op, MK_T[T_O].st[1], (int)(hi[1] - lo[1]));
# CU-NOT: mkd_attn_state
# PTX: ldmatrix.sync.aligned.m8n8.x4.shared.b16
# PTX: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
# PTX: ex2.approx.ftz.f32
# PTX: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
# PTX: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
# F32CU: mkd_attn_state<128> *st
# F32CU-NOT: mkd_fa<
# F32: .entry
# SM: 230512 bytes of shared memory per CTA
# SM: attn   O        O@0[0:1, 0:128, 0:128] <- Q@0[0:1, 0:128, 0:128]
pipeline attention_tc {
  mesh  nodes x gpus
  param H = 2, S = 512, D = 128

  in  Q : bf16[H, S, D]
  in  K : bf16[H, S, D]
  in  V : bf16[H, S, D]
  out O : bf16[H, S, D]

  O = attention(Q, K, V, causal)  split 1
}
