# Split-K: a matmul of few rows against a long K splits K across CTAs
# (the plan's choice, or the `split` hint), partial tiles into an fp32
# workspace and a sum per tile that applies the fused epilogue.
#   PLAN the plan names the split and the workspace; a few rows: the
#        engine's two consumer warpgroups split the columns (COLS), and the
#        cost model takes 128-wide tiles (8 of them, twice as many as
#        256-wide ones would make: plan.c, decode_bn)
#   SM   mmpart tasks write slices of the workspace over one K range each;
#        one sumk per tile reads every slice of its box and writes the tile
#   CU   the W_ stage runs the engine with fp32 out and no epilogue over its
#        K range; the S_ stage sums the slices with the epilogue (silu)
#   PTX  it compiles for sm_90a with wgmma
#   HINT split 3 sets the count: 3 slices of 704 (the plan alone takes 8 x 256)
#        on the default 256-wide tiles
#   OFF  split 1: one matmul task per tile, no workspace
#   TILE a tile hint over fewer rows than its height: the engine's 128
#        rows pad the 16 (docs/language.md), the plan takes its width
#
# RUN: %mkc --emit=plan %s | FileCheck %s --check-prefix=PLAN
# RUN: %mkc --emit=schedule %s | FileCheck %s --check-prefix=SM
# RUN: env MK_NO_LATE=1 %mkc --emit=cu %s | FileCheck %s --check-prefix=CU
# RUN: env MK_LATE=1 %mkc --emit=cu %s | FileCheck %s --check-prefix=LATE
# RUN: %mkc --emit=ptx %s -o %t.ptx
# RUN: FileCheck %s --check-prefix=PTX < %t.ptx
# RUN: env MK_NO_CARRY=1 MK_NO_LATE=1 %mkc --emit=cu %s | FileCheck %s --check-prefix=NOCARRY
# RUN: env MK_NO_CARRY=1 MK_LATE=1 %mkc --emit=cu %s | FileCheck %s --check-prefix=LATEONLY
# RUN: env MK_NO_CARRY=1 %mkc --emit=plan %s | FileCheck %s --check-prefix=NOCARRY-PLAN
# RUN: sed -e 's/matmul(X, W)$/matmul(X, W)  split 3/' %s > %t.h.mk
# RUN: %mkc --emit=plan %t.h.mk | FileCheck %s --check-prefix=HINT
# RUN: sed -e 's/matmul(X, W)$/matmul(X, W)  split 1/' %s > %t.off.mk
# RUN: %mkc --emit=schedule %t.off.mk | FileCheck %s --check-prefix=OFF --implicit-check-not=mmpart
# RUN: sed -e 's/matmul(X, W)$/matmul(X, W)  tile 128 x 64/' %s > %t.t.mk
# RUN: %mkc --emit=plan %t.t.mk | FileCheck %s --check-prefix=TILE
#
# PLAN: H matmul tile 128 x 128 x 64, wgmma{{.*}}, 64 rows: the warpgroups split the columns, the ring goes on into the next task, split-K 8 x 256 into Y__ksplit, silu in the epilogue
# TILE: H matmul tile 128 x 64 x 64, wgmma
# NOCARRY-PLAN: H matmul tile 128 x 128 x 64, wgmma{{.*}}, 64 rows: the warpgroups split the columns, split-K 8 x 256 into Y__ksplit
# SM: mmpart H        Y__ksplit@0[0:1, 0:16, 0:128] <- X@0[0:16, 0:256], W@0[0:256, 0:128]
# SM: sumk   H        Y@0[0:16, 0:128] <- Y__ksplit@0[0:8, 0:16, 0:128]
# CU: if (t.stage == W_H) {
# CU: auto loads = [&](int j) {
# CU-NEXT: const mkd_box ja = mkd_read_box(rank, MK_TASKS[j], 0), jb = mkd_read_box(rank, MK_TASKS[j], 1);
# CU: if (!mkd_wgmma_tile<mkd_bf16, float, 128, 128, 64, {{[0-9]+}}, true>::run(loads(i), mkd_wg_key(i, 0), [&](mkd_wg_loads &n) -> i64 {
# CU-NEXT: const int j = mkd_next_ready(p, rank, W_H, epoch);
# CU: mkd_wg_waited(),
# CU-NEXT: c, W.st[1], rows, cols, smem, mkd_epi_none()))
# LATE: mkd_mm_waits<false>{p, rank, cta, i, epoch, T_X, T_W, -1},
# LATE: MK_PROGRESSIVE[] = {false, MKD_WG_LATE};
# LATEONLY: run(loads(i), mkd_wg_key(i, 0), mkd_wg_last(),
# LATEONLY-NEXT: mkd_mm_waits<false>
# NOCARRY: mkd_wgmma_tile<mkd_bf16, float, 128, 128, 64, {{[0-9]+}}, true>::run(tm, a_row, a_col, tm + 1, b_row, b_col, kn,
# NOCARRY-NEXT: c, W.st[1], rows, cols, smem, mkd_epi_none());
# CU: mkd_sumk((const float *)
# CU: (int)(hi[1] - lo[1]), (int)(hi[2] - lo[2]), mkd_epi1<mkd_silu>{mkd_silu()});
# CU: MK_PROGRESSIVE[] = {false, false};
# PTX: wgmma.mma_async.sync.aligned.m64n{{[0-9]+}}k16.f32.bf16.bf16
# HINT: tile 128 x 256 x 64{{.*}}split-K 3 x 704 into Y__ksplit
# OFF: matmul H        Y@0[0:16, 0:256]
pipeline matmul_split {
  param T = 16, K = 2048, N = 1024
  in  X : bf16[T, K]
  in  W : bf16[K, N]
  out Y : bf16[T, N]
  H = matmul(X, W)
  Y = silu(H)
}
