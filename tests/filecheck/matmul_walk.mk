# A matmul bounded to fewer tasks than tiles: each task walks a box of
# tiles (here 4 experts x 2 x 2 tiles of 128 x 128 in 4 tasks).
#   CU  the stage loops over its box; the Hopper tile is 128 x 128 (a walk
#       of 128 x 256 tiles spills); rows past an expert's tokens are zero
#       tiles, tile by tile, and a tile tells the engine its rows with
#       tokens (a warpgroup past them multiplies nothing); the engine's
#       ring goes on into the task's next tile (a pool's next task is
#       taken when this one ends: nothing to carry into)
#   NOPOOL  with MK_NO_POOL=1 the ring goes on into the next task's first
#       tile too, where that one has tokens
#   NOCARRY with MK_NO_CARRY=1 every tile on its own
#   whole tiles in both (C's sides multiples of 128, no epilogue op):
#       the engine stores without testing bounds (FULL)
#   RAGGED with 200 slots an expert the bounds are tested
#   SM  one task per expert, each writing the expert's whole 256 x 256
#       block; the dispatch fills the same 256 rows per task
#   PTX it compiles
#
# RUN: %mkc --emit=cu %s | FileCheck %s --check-prefix=CU
# RUN: env MK_NO_POOL=1 %mkc --emit=cu %s | FileCheck %s --check-prefix=NOPOOL
# RUN: %mkc -D C=200 --emit=cu %s | FileCheck %s --check-prefix=RAGGED
# RUN: env MK_NO_CARRY=1 %mkc --emit=cu %s | FileCheck %s --check-prefix=NOCARRY
# RUN: %mkc --emit=schedule %s | FileCheck %s --check-prefix=SM
# RUN: %mkc --emit=ptx %s -o %t.ptx
# RUN: FileCheck %s --check-prefix=PTX < %t.ptx
#
# CU: // stage He: He = matmul(Xe, W1), tile 128 x 128 x 64: {{.*}}; up to 2 x 2 tiles a task
# CU: const int filled = mkd_bucket_rows(p, T_idx__route, MK_WORLD, (int)lo[0]);
# CU: auto tile = [&](int j, int q, mkd_wg_loads &n) {
# CU: const i64 nc = (h[2] - l[2] + 127) / 128, r = l[1] + q / nc * 128, c = l[2] + q % nc * 128;
# CU-NEXT: const i64 f = mkd_bucket_rows(p, T_idx__route, MK_WORLD, (int)l[0]);
# CU-NEXT: if (r >= h[1] || r >= f)
# CU-NEXT: return false;
# CU: (int)((K + 63) / 64), nullptr, (int)(f - r)};
# CU: for (i64 r0 = lo[1]; r0 < hi[1]; r0 += 128)
# CU-NEXT: for (i64 n0 = lo[2]; n0 < hi[2]; n0 += 128) {
# CU: if (r0 >= filled) {  // no tokens here
# CU: const int q = (int)((r0 - lo[1]) / 128 * ((hi[2] - lo[2] + 127) / 128) + (n0 - lo[2]) / 128);
# CU: mkd_wgmma_tile<mkd_bf16, mkd_bf16, 128, 128, 64, {{[0-9]+}}, false, false, true, 1, MKD_WG_STAGED, false, 64>::run(ld, mkd_wg_key(i, q), [&](mkd_wg_loads &n) -> i64 {
# CU-NEXT: if (tile(i, q + 1, n))  // this task's next tile
# CU-NEXT: return mkd_wg_key(i, q + 1);
# CU-NEXT: return -1;  // a pool's next task is taken at its end
# CU: return true;
# NOPOOL: if (tile(i, q + 1, n))  // this task's next tile
# NOPOOL-NEXT: return mkd_wg_key(i, q + 1);
# NOPOOL-NEXT: const int j = mkd_next_ready(p, rank, S_He, epoch);  // or the next task's first
# NOPOOL-NEXT: return j >= 0 && tile(j, 0, n) ? mkd_wg_key(j, 0) : -1;
# NOCARRY: if (r0 >= filled) {  // no tokens here
# NOCARRY-NOT: auto tile
# NOCARRY: mkd_wgmma_tile<mkd_bf16, mkd_bf16, 128, 128, 64, {{[0-9]+}}, false, false, true, 1, MKD_WG_STAGED, false, 64>::run(tm, a_row, 0, tm + 1, b_row, b_col, (int)K,
# RAGGED: mkd_wgmma_tile<mkd_bf16, mkd_bf16, 128, 128, 64, {{[0-9]+}}, false, false, false, 1, MKD_WG_STAGED, false, 64>::run(ld, mkd_wg_key(i, q),
# SM-DAG: dispatch Xe       Xe@0[0:1, 0:256, 0:256]
# SM-DAG: matmul He       He@0[0:1, 0:256, 0:256] <- Xe@0[0:1, 0:256, 0:256], W1@0[0:1, 0:256, 0:256]
# SM-DAG: matmul He       He@0[3:4, 0:256, 0:256]
# SM-NOT: He@0[0:1, 0:128,
# PTX: wgmma.mma_async
pipeline walk {
  mesh  nodes x gpus
  param T = 512, H = 256, F = 256, E = 4, topk = 2, C = 256

  in  X    : bf16[T, H] split(0)
  in  idx  : i32[T, topk] split(0)
  in  gate : f32[T, topk] split(0)
  in  W1   : bf16[E, H, F] split(0)
  out Y    : bf16[T, F] split(0)

  Xe = dispatch(X, idx, E, C)
  He = matmul(Xe, W1)  tasks 4
  Y  = combine(He, idx, gate)
}
