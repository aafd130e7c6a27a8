# Split-KV (flash-decoding): few queries per head over a long key cache
# split the keys across CTAs; each range leaves unnormalised rows with
# their max and sum in an fp32 workspace, and a merge per query tile adds
# them up.
#   PLAN the plan names the split, its key ranges and the workspace; 16
#        queries a head: 16-row tiles whose 8 warps split each stage's 128
#        keys, 3 stages in flight (what fits in shared memory), K and V
#        rows by bulk copies on sm_90; MK_ATTN_BULK=0: by cp.async
#   SM   attnpart tasks read Q's rows and one range of K and V (the same)
#        into a slice of the workspace; one attnsum per tile reads every
#        slice of its rows and writes the output
#   CU   the W_ stage runs mkd_fa over its range and ends with end_part;
#        the S_ stage merges with mkd_attn_merge; no wait inside the stage
#        (the stage is not progressive: every read waited on up front)
#   PTX  it compiles: 16-row decode tiles use the mma.sync tile on every
#        arch (the Hopper tile takes 128-row tiles), sm_80 too; on sm_90a
#        the stages come by bulk copies on mbarriers, on sm_80 by cp.async
#   ERR  fp32 inputs cannot split: the hint is refused at its span
#
# RUN: %mkc --emit=plan %s | FileCheck %s --check-prefix=PLAN
# RUN: env MK_ATTN_BULK=0 %mkc --emit=plan %s | FileCheck %s --check-prefix=ASYNC
# RUN: env MK_ATTN_BULK=0 %mkc --emit=cu %s | FileCheck %s --check-prefix=ASYNC-CU
# RUN: %mkc --emit=schedule %s | FileCheck %s --check-prefix=SM
# RUN: %mkc --emit=cu %s | FileCheck %s --check-prefix=CU --implicit-check-not='ok = mkd_task_wait'
# RUN: %mkc --emit=ptx %s -o %t.ptx
# RUN: FileCheck %s --check-prefix=PTX < %t.ptx
# RUN: %mkc --emit=ptx --arch=sm_80 %s -o %t.sm80.ptx
# RUN: FileCheck %s --check-prefix=SM80 < %t.sm80.ptx
# RUN: sed -e 's/bf16\[/f32[/g' -e 's/attention(Q, K, V)$/attention(Q, K, V)  split 2/' %s > %t.f32.mk
# RUN: ! %mkc --emit=plan %t.f32.mk 2> %t.err
# RUN: FileCheck %s --check-prefix=ERR < %t.err
#
# PLAN: O attention 16 query rows a task, tensor cores, 128 keys a stage, 3 stages (sm_90: K and V rows by bulk copies), split-KV 4 x 1024 keys into O__kvsplit
# ASYNC: O attention 16 query rows a task, tensor cores, 128 keys a stage, 3 stages, split-KV 4 x 1024 keys into O__kvsplit
# ASYNC-CU: mkd_fa<128, mkd_bf16, 3, 16> fa;
# SM: attnpart O        O__kvsplit@0[0:1, 0:16, 0:130] <- Q@0[0:1, 0:16, 0:128], K@0[0:1, 0:1024, 0:128], V@0[0:1, 0:1024, 0:128]
# SM: attnsum O        O@0[0:1, 0:16, 0:128] <- O__kvsplit@0[0:4, 0:16, 0:130]
# CU: if (t.stage == W_O) {
# CU: mkd_fa<128, mkd_bf16, 3, 16, true> fa;
# CU: fa.block(Kp, Vp, {{.*}}, rows, false, qb.lo[1], kb.lo[1]);
# CU: fa.end_part((float *)
# CU: mkd_attn_merge((const float *)
# PTX: cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes
# PTX: mbarrier.try_wait.parity.shared::cta.b64
# PTX: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
# SM80-NOT: cp.async.bulk
# SM80: cp.async.cg.shared.global
# SM80: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
# ERR: error: split-KV takes attention of 16-bit inputs {{.*}}here the inputs are fp32
pipeline attention_split {
  param H = 32, T = 16, S = 4096, D = 128
  in  Q : bf16[H, T, D]
  in  K : bf16[H, S, D]
  in  V : bf16[H, S, D]
  out O : bf16[H, T, D]
  O = attention(Q, K, V)
}
