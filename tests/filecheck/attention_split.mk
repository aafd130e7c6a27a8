# Split-KV (flash-decoding): few queries per head over a long key cache
# split the keys across CTAs; each range leaves unnormalised rows with
# their max and sum in an fp32 workspace, and a merge per query tile adds
# them up.
#   PLAN the plan names the split, its key ranges and the workspace; 16
#        queries a head: 16-row tiles whose 8 warps split each stage's 128
#        keys, 3 stages in flight (what fits in shared memory), K and V
#        by TMA on sm_90 as boxes of two tensor maps (128 keys x 64
#        columns; 1 KB more shared memory: the ring 1024-byte aligned);
#        MK_ATTN_BULK=rows: a bulk copy a row (ROWS), as at D = 96, which
#        the 64-column boxes do not cut (D96); MK_ATTN_BULK=0: by cp.async
#   SM   attnpart tasks read Q's rows and one range of K and V (the same)
#        into a slice of the workspace; one attnsum per tile reads every
#        slice of its rows and writes the output
#   CU   the W_ stage gives mkd_fa K's and V's maps of its rank, runs it
#        over its range and ends with end_part;
#        the S_ stage merges with mkd_attn_merge; no wait inside the stage
#        (the stage is not progressive: every read waited on up front)
#   PTX  it compiles: 16-row decode tiles use the mma.sync tile on every
#        arch (the Hopper tile takes 128-row tiles), sm_80 too; on sm_90a
#        the stages come by TMA boxes on mbarriers (the rows' bulk copies
#        with MK_ATTN_BULK=rows), on sm_80 by cp.async
#   ERR  fp32 inputs cannot split: the hint is refused at its span
#
# RUN: %mkc --emit=plan %s | FileCheck %s --check-prefix=PLAN
# RUN: env MK_ATTN_BULK=0 %mkc --emit=plan %s | FileCheck %s --check-prefix=ASYNC
# RUN: env MK_ATTN_BULK=0 %mkc --emit=cu %s | FileCheck %s --check-prefix=ASYNC-CU
# RUN: env MK_ATTN_BULK=rows %mkc --emit=plan %s | FileCheck %s --check-prefix=ROWS
# RUN: env MK_ATTN_BULK=rows %mkc --emit=cu %s | FileCheck %s --check-prefix=ROWS-CU --implicit-check-not=fa.maps
# RUN: env MK_ATTN_BULK=rows %mkc --emit=ptx %s -o %t.rows.ptx
# RUN: FileCheck %s --check-prefix=ROWS-PTX < %t.rows.ptx
# RUN: %mkc --emit=plan -D D=96 %s | FileCheck %s --check-prefix=D96
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
# PLAN: kernel: 256 threads a CTA, 214296 bytes of shared memory, 2 tensor maps
# PLAN: O attention 16 query rows a task, tensor cores, 128 keys a stage, 3 stages (sm_90: K and V by TMA, boxes of 128 x 64, tensor maps 0-1), split-KV 4 x 1024 keys into O__kvsplit
# ASYNC: kernel: 256 threads a CTA, 213248 bytes of shared memory, 0 tensor maps
# ASYNC: O attention 16 query rows a task, tensor cores, 128 keys a stage, 3 stages, split-KV 4 x 1024 keys into O__kvsplit
# ASYNC-CU: mkd_fa<128, mkd_bf16, 3, 16> fa;
# ROWS: kernel: 256 threads a CTA, 213272 bytes of shared memory, 0 tensor maps
# ROWS: O attention 16 query rows a task, tensor cores, 128 keys a stage, 3 stages (sm_90: K and V rows by bulk copies), split-KV 4 x 1024 keys into O__kvsplit
# ROWS-CU: mkd_fa<128, mkd_bf16, 3, 16, MKD_FA_ROWS_BULK> fa;
# ROWS-PTX-NOT: cp.async.bulk.tensor
# ROWS-PTX: cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes
# D96: 0 tensor maps
# D96: (sm_90: K and V rows by bulk copies)
# SM: attnpart O        O__kvsplit@0[0:1, 0:16, 0:130] <- Q@0[0:1, 0:16, 0:128], K@0[0:1, 0:1024, 0:128], V@0[0:1, 0:1024, 0:128]
# SM: attnsum O        O@0[0:1, 0:16, 0:128] <- O__kvsplit@0[0:4, 0:16, 0:130]
# CU: if (t.stage == W_O) {
# CU: mkd_fa<128, mkd_bf16, 3, 16, MKD_FA_MAPS> fa;
# CU-NEXT: fa.maps((const mkd_tmap *)p.tmaps + (rank - p.rank_base) * MK_NTMAPS + 0,
# CU-NEXT: (u64)mkd_origin(p, MK_T[T_K], rank), (u64)mkd_origin(p, MK_T[T_V], rank));
# CU: fa.block(Kp, Vp, {{.*}}, rows, false, qb.lo[1], kb.lo[1]);
# CU: fa.end_part((float *)
# CU: mkd_attn_merge((const float *)
# PTX-NOT: cp.async.bulk.shared::cluster.global.mbarrier
# PTX: prefetch.tensormap
# PTX: cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes
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
