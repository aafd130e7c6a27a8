# Rows of a bucket past its expert's tokens: where nothing reads them (the
# buckets and the expert GEMMs' results are temporaries read only as the
# rows of bucket matmuls, by unary elementwise ops, or by combine), the
# dispatch does not zero them and a bucket matmul stores nothing in its
# tiles past the tokens (plan.c past_unread).  Anything else reading a
# bucket, or a bucket declared `out`, keeps the zeros.
#   PLAN  the plan says so for the dispatch and both matmuls
#   CU    mkd_dispatch is told not to zero (its `zero` false); the empty
#         tiles continue without mkd_zero_tile; no mk_pool_past
#   SKIP  MK_POOL_SKIP=1: mk_pool_past tells the kernel loop which of the
#         pools' tasks it may signal without running them (the stage's
#         own test; not the default until a GPU has run it)
#   ZERO  MK_ZERO_PAST=1: zeros everywhere, as the CPU reference holds
#   OUT   He declared an output: its tiles keep their zeros, and so does
#         Xe, whose rows past the tokens make He's there (a partly filled
#         tile's); Ye, read only by combine, still stores none
#   READ  Xe also read by a scale whose result is an output: the dispatch
#         zeroes again (He, Ye still skip)
#
# RUN: %mkc --emit=plan %s | FileCheck %s --check-prefix=PLAN
# RUN: %mkc --emit=cu %s | FileCheck %s --check-prefix=CU --implicit-check-not=mkd_zero_tile --implicit-check-not=mk_pool_past
# RUN: env MK_POOL_SKIP=1 %mkc --emit=plan %s | FileCheck %s --check-prefix=SKIP
# RUN: env MK_POOL_SKIP=1 %mkc --emit=cu %s | FileCheck %s --check-prefix=SKIP-CU
# RUN: env MK_POOL_SKIP=1 %mkc --emit=cubin -o %t.skip %s
# RUN: env MK_ZERO_PAST=1 %mkc --emit=plan %s | FileCheck %s --check-prefix=ZERO --implicit-check-not='past the tokens'
# RUN: env MK_ZERO_PAST=1 %mkc --emit=cu %s | FileCheck %s --check-prefix=ZERO-CU --implicit-check-not=mk_pool_past
# RUN: sed -e 's/^  He = matmul/  out He : bf16[E, C, F] split(0)\n  He = matmul/' %s > %t.out.mk
# RUN: %mkc --emit=plan %t.out.mk | FileCheck %s --check-prefix=OUT
# RUN: sed -e 's/^  out Y /  out Z    : bf16[E, C, H] split(0)\n  out Y /' -e 's/^  He = matmul/  Z = scale(Xe, 2.0)\n  He = matmul/' %s > %t.read.mk
# RUN: %mkc --emit=plan %t.read.mk | FileCheck %s --check-prefix=READ
#
# PLAN: Xe dispatch {{.*}}slots a task, no zeros past the tokens (nothing reads them)
# PLAN: He matmul {{.*}}(a pool), no stores past the tokens (nothing reads them)
# PLAN: Ye matmul {{.*}}(a pool), no stores past the tokens (nothing reads them)
# CU: if (!mkd_dispatch<mkd_bf16>(
# CU: 0, false, false, smem, MK_SMEM))
# CU: // stage He:
# CU: if (lo[1] >= filled) {  // no tokens here: nothing reads these rows
# CU-NEXT: return true;
# CU: // stage Ye:
# CU: if (lo[1] >= filled) {  // no tokens here: nothing reads these rows
# CU-NEXT: return true;
# SKIP: He matmul {{.*}}(a pool), no stores past the tokens (nothing reads them), its tasks past the tokens signalled, not run; smem
# SKIP: Ye matmul {{.*}}(a pool), no stores past the tokens (nothing reads them), its tasks past the tokens signalled, not run; smem
# SKIP-CU: #define MK_POOL_PAST 1
# SKIP-CU: static __device__ __forceinline__ bool mk_pool_past(
# SKIP-CU: case S_He:
# SKIP-CU-NEXT: mkd_box_shift<MK_NODES, MK_GPUS>(MK_T[T_Ae]
# SKIP-CU-NEXT: return lo[1] >= mkd_bucket_rows(p, T_idx__route, MK_WORLD, (int)lo[0]);
# SKIP-CU-NEXT: case S_Ye:
# SKIP-CU-NEXT: mkd_box_shift<MK_NODES, MK_GPUS>(MK_T[T_Ye]
# ZERO: Xe dispatch {{.*}}slots a task, on 48 CTAs (the others take the pool's first tiles); smem
# ZERO-CU: 0, false, true, smem, MK_SMEM))
# ZERO-CU: mkd_zero_tile(c, C.st[1], rows, cols);
# ZERO-CU: mkd_zero_tile(c, C.st[1], rows, cols);
# OUT: Xe dispatch {{.*}}slots a task, on 48 CTAs (the others take the pool's first tiles); smem
# OUT: He matmul {{.*}}(a pool); smem
# OUT: Ye matmul {{.*}}no stores past the tokens
# READ: Xe dispatch {{.*}}slots a task, on 48 CTAs (the others take the pool's first tiles); smem
# READ: He matmul {{.*}}no stores past the tokens
# READ: Ye matmul {{.*}}no stores past the tokens
pipeline moe_past {
  mesh  1 x 1
  param T = 512, H = 256, F = 256, E = 4, topk = 2, C = 256

  in  X    : bf16[T, H] split(0)
  in  idx  : i32[T, topk] split(0)
  in  gate : f32[T, topk] split(0)
  in  W1   : bf16[E, H, F] split(0)
  in  W2   : bf16[E, F, H] split(0)
  out Y    : bf16[T, H] split(0)

  Xe = dispatch(X, idx, E, C)
  He = matmul(Xe, W1)
  Ae = silu(He)
  Ye = matmul(Ae, W2)
  Y  = combine(Ye, idx, gate)
}
