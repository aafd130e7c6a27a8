# An rmsnorm in the tiles that read it (MK_NORMFOLD=1, expand.c
# fuse_norms; docs/gemm.md): N = rmsnorm(X, g) of at most 128 rows a rank,
# read only as the A of matmuls, is folded into them: each reads X, the
# Hopper engine's producer warpgroup scales every stage of A by g and sums
# its squares (codegen/mkd/wgmma.cuh NORM), the epilogue multiplies each
# row by its 1/rms; the portable tile scales A as it loads it and takes
# the rows' 1/rms from mkd_rms_rows.  No tile waits for an rmsnorm stage.
# Off by default: measured slower on an H100 (docs/gemm.md).  On
# samples/decode_mlp.mk at T = 3, D = 512, F = 1000.
#   EXP   the expansion: N's op gone, N folded, G and U read X
#   OFF   without MK_NORMFOLD nothing changes
#   ROWS  more than 128 rows a rank (T = 129): not folded
#   PLAN  wgmma with the warpgroups splitting the columns, the rmsnorm in
#         the tile, no split-K
#   P100  100 rows: 128-row tiles (two rows a normalising thread), the
#         template's COLS false, NORM true
#   CU    the engine with COLS and NORM, the weight's pointer and X's row
#         length passed; the portable path's 1/rms past its ring, A
#         scaled on load
#   BIN   it compiles for sm_90a and sm_80 (there at the sample's D and F:
#         its 128 x 128 tiles; 128 x 256 portable tiles spill with or
#         without the fold), spill-free
#   SCHED the schedule checker accepts it; G's tasks read X and g, wait
#         for nothing
#   NEG   not folded where N has another reader, or a reader has a split
#         hint (X's last dimension cannot be split: sema.c wants whole
#         rows for an rmsnorm)
#   SPLIT0 X's rows split over 2 ranks: folded, each rank its rows
#   NOW   an rmsnorm without a weight: folded, a null weight
#
# RUN: env MK_NORMFOLD=1 %mkc --emit=expand samples/decode_mlp.mk -D T=3 -D D=512 -D F=1000 | FileCheck %s --check-prefix=EXP
# RUN: %mkc --emit=expand samples/decode_mlp.mk -D T=3 -D D=512 -D F=1000 | FileCheck %s --check-prefix=OFF
# RUN: env MK_NORMFOLD=0 %mkc --emit=expand samples/decode_mlp.mk -D T=3 -D D=512 -D F=1000 | FileCheck %s --check-prefix=OFF
# RUN: env MK_NORMFOLD=1 %mkc --emit=expand samples/decode_mlp.mk -D T=129 -D D=512 -D F=1000 | FileCheck %s --check-prefix=ROWS
# RUN: env MK_NORMFOLD=1 %mkc --emit=plan samples/decode_mlp.mk -D T=100 | FileCheck %s --check-prefix=P100
# RUN: env MK_NORMFOLD=1 %mkc --emit=cu samples/decode_mlp.mk -D T=100 | FileCheck %s --check-prefix=C100
# RUN: env MK_NORMFOLD=1 %mkc --emit=cubin --no-cache samples/decode_mlp.mk -D T=100 -o %t.100.cubin 2>&1 | FileCheck %s --check-prefix=BIN
# RUN: env MK_NORMFOLD=1 %mkc --emit=plan samples/decode_mlp.mk -D T=3 -D D=512 -D F=1000 | FileCheck %s --check-prefix=PLAN
# RUN: env MK_NORMFOLD=1 %mkc --emit=cu samples/decode_mlp.mk -D T=3 -D D=512 -D F=1000 | FileCheck %s --check-prefix=CU
# RUN: env MK_NORMFOLD=1 %mkc --emit=cubin --no-cache samples/decode_mlp.mk -D T=3 -D D=512 -D F=1000 -o %t.cubin 2>&1 | FileCheck %s --check-prefix=BIN
# RUN: env MK_NORMFOLD=1 %mkc --emit=cubin --no-cache --arch=sm_80 samples/decode_mlp.mk -D T=3 -o %t.80.cubin 2>&1 | FileCheck %s --check-prefix=BIN80
# RUN: env MK_NORMFOLD=1 %mkc --emit=json samples/decode_mlp.mk -D T=3 -D D=512 -D F=1000 -D gpus=2 > %t.json
# RUN: python3 tests/tools/check_schedule.py -q %t.json
# RUN: env MK_NORMFOLD=1 %mkc --emit=schedule samples/decode_mlp.mk -D T=3 -D D=512 -D F=1000 | FileCheck %s --check-prefix=SCHED
# RUN: sed -e 's/^  Y = add(X, M)$/  Y = add(N, M)/' samples/decode_mlp.mk > %t.two.mk
# RUN: env MK_NORMFOLD=1 %mkc --emit=expand %t.two.mk -D T=3 -D D=512 -D F=1000 | FileCheck %s --check-prefix=NEG
# RUN: sed -e 's/^  U = matmul(N, Wu)$/  U = matmul(N, Wu)  split 2/' samples/decode_mlp.mk > %t.split.mk
# RUN: env MK_NORMFOLD=1 %mkc --emit=expand %t.split.mk -D T=3 -D D=512 -D F=1000 | FileCheck %s --check-prefix=NEG
# RUN: sed -e 's/^  in  X  : bf16\[T, D\]$/  in  X  : bf16[T, D] split(0)/' -e 's/^  out Y  : bf16\[T, D\]$/  out Y  : bf16[T, D] split(0)/' samples/decode_mlp.mk > %t.rows.mk
# RUN: env MK_NORMFOLD=1 %mkc --emit=expand %t.rows.mk -D T=6 -D D=512 -D F=1000 -D gpus=2 | FileCheck %s --check-prefix=SPLIT0
# RUN: env MK_NORMFOLD=1 %mkc --emit=json %t.rows.mk -D T=6 -D D=512 -D F=1000 -D gpus=2 > %t.rows.json
# RUN: python3 tests/tools/check_schedule.py -q %t.rows.json
# RUN: sed -e 's/^  N = rmsnorm(X, g)$/  N = rmsnorm(X)/' -e '/^  in  g  : bf16\[D\]$/d' samples/decode_mlp.mk > %t.now.mk
# RUN: env MK_NORMFOLD=1 %mkc --emit=cu %t.now.mk -D T=3 -D D=512 -D F=1000 | FileCheck %s --check-prefix=NOW
#
# EXP: N   temp  bf16[3, 512]     local  per rank [3, 512]                uses 0, folded
# EXP: ops (3):
# EXP-NEXT: G  S = matmul(rmsnorm(X, g), Wg)  then silu in the epilogue
# EXP-NEXT: U  A = matmul(rmsnorm(X, g), Wu, S)  then mul S in the epilogue
# OFF: ops (4):
# OFF-NEXT: N  N = rmsnorm(X, g)
# OFF-NEXT: G  S = matmul(N, Wg)  then silu in the epilogue
# ROWS: N  N = rmsnorm(X, g)
# P100: G            matmul        tile 128 x 128 x 64, wgmma, {{[0-9]+}}-stage ring {{.*}}, X's rmsnorm in the tile,
# P100-NOT: 64 rows
# C100: mkd_wgmma_tile<mkd_bf16, mkd_bf16, 128, 128, 64, {{[0-9]+}}, false, false, false, 1, MKD_WG_STAGED, true>::run(loads(i)
# PLAN: G            matmul        tile 128 x {{[0-9]+}} x 64, wgmma, {{[0-9]+}}-stage ring {{.*}}, 64 rows: the warpgroups split the columns, X's rmsnorm in the tile, the ring goes on into the next task, silu in the epilogue; smem
# PLAN-NOT: split-K {{.*}} into S
# PLAN: U            matmul        {{.*}}, X's rmsnorm in the tile,
# CU: // stage G: S = matmul(X, Wg), {{.*}}; A = rmsnorm(X, g) in the tile; then silu in the epilogue
# CU: const mkd_bf16 *nw = (const mkd_bf16 *)mkd_at<MK_GPUS>(p, T_g, MK_T[T_g], rank, 0, 0, k0);
# CU: mkd_wgmma_tile<mkd_bf16, mkd_bf16, 128, {{[0-9]+}}, 64, {{[0-9]+}}, true, false, false, 1, MKD_WG_STAGED, true>::run(loads(i), mkd_wg_key(i, 0),
# CU: c, C.st[1], rows, cols, smem, mkd_epi1<mkd_silu>{mkd_silu()}, mkd_epi_none(), mkd_wg_out(), mkd_wg_norm{nw, (int)K}))
# CU: #else
# CU: const mkd_bf16 *a = (const mkd_bf16 *)mkd_at<MK_GPUS>(p, T_X, A, rank, lo[0], lo[1], k0);
# CU: float *rs = (float *)(smem + mkd_mma_tile<mkd_bf16, mkd_bf16, 128, {{[0-9]+}}, 64, {{[0-9]+}}, true>::SMEM);  // the rows' 1/rms
# CU-NEXT: mkd_rms_rows(a, A.st[1], rows, (int)K, rs);
# CU-NEXT: mkd_mma_tile<mkd_bf16, mkd_bf16, 128, {{[0-9]+}}, 64, {{[0-9]+}}, true>::run(a, A.st[1], b, B.st[1], c, C.st[1],
# CU-NEXT: rows, cols, (int)K, 0, 0, smem, mkd_by_rows(rs, mkd_epi1<mkd_silu>{mkd_silu()}), nw);
# CU-NOT: stage N
# BIN: sm_90a: {{[0-9]+}} registers, 0 bytes stack, 0/0 bytes spilled
# BIN80: sm_80: {{[0-9]+}} registers, 0 bytes stack, 0/0 bytes spilled
# SCHED: matmul G        S@0[0:3, {{[0-9]+}}:{{[0-9]+}}] <- X@0[0:3, 0:512], Wg@0[0:512, {{[0-9]+}}:{{[0-9]+}}], g@0[0:512]  waits - signals
# NEG: N  N = rmsnorm(X, g)
# SPLIT0: G  S = matmul(rmsnorm(X, g), Wg)  then silu in the epilogue
# NOW: // A is X, its rmsnorm (no weight) made in the tile
# NOW-NEXT: const mkd_bf16 *nw = nullptr;
