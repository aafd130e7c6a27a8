# Gate-up tiles (MK_GATEUP=1, expand.c fuse_gates; docs/gemm.md): U =
# matmul(N, Wu) with the epilogue `mul S`, S = silu(matmul(N, Wg)) read by
# nothing else, becomes one matmul whose tiles compute both products for
# the same 64 columns: the Hopper engine's two consumer warpgroups one
# weight each (codegen/mkd/wgmma.cuh GATE), the portable tile two tiles in
# turn.  A tile of A then depends on nothing but N.  Off by default until
# the GPU has measured it.  On samples/decode_mlp.mk at T = 3, D = 512,
# F = 1000.
#   EXP   the expansion: G's op gone, S folded, U's epilogue names the gate
#   OFF   without MK_GATEUP nothing changes
#   ROWS  more than 64 rows a rank (T = 128): not fused
#   PLAN  64-column tiles, wgmma with one warpgroup per weight, no split-K
#   CU    the engine with BN 128, COLS and GATE, the gate's map third, silu
#         as the gate's functor; the portable path two tiles, the second
#         multiplying by the first's values
#   BIN   it compiles for sm_90a and sm_80, spill-free
#   SCHED the schedule checker accepts it; U's tasks read Wg's box
#   NEG   not fused where S has another reader, or U has a split hint
#
# RUN: env MK_GATEUP=1 %mkc --emit=expand samples/decode_mlp.mk -D T=3 -D D=512 -D F=1000 | FileCheck %s --check-prefix=EXP
# RUN: %mkc --emit=expand samples/decode_mlp.mk -D T=3 -D D=512 -D F=1000 | FileCheck %s --check-prefix=OFF
# RUN: env MK_GATEUP=1 %mkc --emit=expand samples/decode_mlp.mk -D T=128 -D D=512 -D F=1000 | FileCheck %s --check-prefix=ROWS
# RUN: env MK_GATEUP=1 %mkc --emit=plan samples/decode_mlp.mk -D T=3 -D D=512 -D F=1000 | FileCheck %s --check-prefix=PLAN
# RUN: env MK_GATEUP=1 %mkc --emit=cu samples/decode_mlp.mk -D T=3 -D D=512 -D F=1000 | FileCheck %s --check-prefix=CU
# RUN: env MK_GATEUP=1 %mkc --emit=cubin --no-cache samples/decode_mlp.mk -D T=3 -D D=512 -D F=1000 -o %t.cubin 2>&1 | FileCheck %s --check-prefix=BIN
# RUN: env MK_GATEUP=1 %mkc --emit=cubin --no-cache --arch=sm_80 samples/decode_mlp.mk -D T=3 -D D=512 -D F=1000 -o %t.80.cubin 2>&1 | FileCheck %s --check-prefix=BIN80
# RUN: env MK_GATEUP=1 %mkc --emit=json samples/decode_mlp.mk -D T=3 -D D=512 -D F=1000 > %t.json
# RUN: python3 tests/tools/check_schedule.py -q %t.json
# RUN: env MK_GATEUP=1 %mkc --emit=schedule samples/decode_mlp.mk -D T=3 -D D=512 -D F=1000 | FileCheck %s --check-prefix=SCHED
# RUN: sed -e 's/^  Y = add(X, M)$/  Y = add(S, M)/' samples/decode_mlp.mk > %t.two.mk
# RUN: env MK_GATEUP=1 %mkc --emit=expand %t.two.mk -D T=3 -D D=1000 -D F=1000 | FileCheck %s --check-prefix=NEG
# RUN: sed -e 's/^  U = matmul(N, Wu)$/  U = matmul(N, Wu)  split 2/' samples/decode_mlp.mk > %t.split.mk
# RUN: env MK_GATEUP=1 %mkc --emit=expand %t.split.mk -D T=3 -D D=512 -D F=1000 | FileCheck %s --check-prefix=NEG
#
# EXP: ops (3):
# EXP: U  A = matmul(N, Wu)  then mul silu(N Wg) in the epilogue
# EXP-NOT: G  S = matmul
# OFF: ops (4):
# OFF: G  S = matmul(N, Wg)  then silu in the epilogue
# ROWS: G  S = matmul(N, Wg)  then silu in the epilogue
# PLAN: U            matmul        tile 128 x 64 x 64, wgmma, {{[0-9]+}}-stage ring {{.*}}, 64 rows: one warpgroup Wg's columns, the other Wu's, the ring goes on into the next task, mul silu(N Wg) in the epilogue; smem
# PLAN-NOT: split-K {{.*}} into A
# CU: // stage U: A = matmul(N, Wu)
# CU: (int)((K + 63) / 64), tm + 2};
# CU: mkd_wgmma_tile<mkd_bf16, mkd_bf16, 128, 128, 64, {{[0-9]+}}, true, true>::run(loads(i), mkd_wg_key(i, 0),
# CU: c, C.st[1], rows, cols, smem, mkd_epi_none(), mkd_epi1<mkd_silu>{mkd_silu()}))
# CU: #else
# CU: mkd_mma_tile<mkd_bf16, mkd_bf16, 128, 64, 64, {{[0-9]+}}>::run(a, A.st[1],
# CU-NEXT: (const mkd_bf16 *)mkd_at<MK_GPUS>(p, T_Wg, G, rank, 0, k0, lo[2]), G.st[1], c, C.st[1],
# CU: __syncthreads();
# CU-NEXT: mkd_mma_tile<mkd_bf16, mkd_bf16, 128, 64, 64, {{[0-9]+}}>::run(a, A.st[1], b, B.st[1], c, C.st[1],
# CU-NEXT: rows, cols, (int)K, 0, 0, smem, mkd_epi2<mkd_ident, mkd_mul, mkd_bf16, mkd_ident>{mkd_ident(), c, (int)C.st[1], mkd_ident()});
# BIN: sm_90a: {{[0-9]+}} registers, 0 bytes stack, 0/0 bytes spilled
# BIN80: sm_80: {{[0-9]+}} registers, 0 bytes stack, 0/0 bytes spilled
# SCHED: U        A@0[0:3, 0:64] <- N@0[0:3, 0:512], Wu@0[0:512, 0:64], Wg@0[0:512, 0:64]
# NEG: G  S = matmul(N, Wg)  then silu in the epilogue
