# Views (issue 20): a layout op whose result can be addressed inside its
# input's storage with strides makes no task and no copy; its readers take
# its strides (MK_T: root, offset, strides) and the Hopper attention tile's
# tensor maps start at its origin in the root (V2: a head's rows are whole
# rows of PR).  A chain composes: the slices of heads(matmul) are views of
# the matmul's result.  Still copies: an output, a slice an exchange reads,
# a slice whose rows would not be 16-byte aligned, a transpose of the last
# dimension, and V, which attention would read with each head's rows side
# by side in the projection's rows (measured slower than the copy).
#
# The program is tests/runs/views_nocopy.mk (which gpu-test runs on the
# GPU against the CPU reference), here on two ranks.
#
# RUN: %mkc --emit=plan -D gpus=2 tests/runs/views_nocopy.mk | FileCheck %s --check-prefix=PLAN
# RUN: %mkc --emit=cu -D gpus=2 tests/runs/views_nocopy.mk | FileCheck %s
# RUN: MK_NO_VIEWS=1 %mkc --emit=plan -D gpus=2 tests/runs/views_nocopy.mk | FileCheck %s --check-prefix=NOVIEWS
#
# PLAN: P            heads         a view of matmul(X, Wqkv) (no copy): offset 0, strides 192 x 768 x 1
# PLAN: Qs           slice         a view of matmul(X, Wqkv) (no copy): offset 0, strides 192 x 768 x 1
# PLAN: Ks           slice         a view of matmul(X, Wqkv) (no copy): offset 64, strides 192 x 768 x 1
# PLAN: V            slice         a copy
# PLAN: A            attention     {{.*}}TMA + wgmma
# PLAN: At           transpose     a view of A (no copy): offset 0, strides 64 x 8192 x 1
# PLAN: Y            transpose     a copy
# PLAN: R3           reshape       a view of Z (no copy): offset 0, strides 256 x 64 x 1
# PLAN: R2           reshape       a view of Z (no copy): offset 0, strides 256 x 1
# PLAN: Odd          slice         a copy
# PLAN: S            slice         a copy
# PLAN: G            slice         a copy
# PLAN: transpose(Z, 0, 1) transpose     a copy
# PLAN: V2           slice         a view of PR (no copy): offset 128, strides 24576 x 192 x 1
# PLAN: Y2           attention     {{.*}}TMA + wgmma
#
# CHECK: // [[MM:matmul_X__Wqkv__[0-9]+]]: temp bf16 [128, 1536] split
# CHECK-NEXT: {2, 2, MKD_GRP_WORLD, {1, 128, 768}, {0, 64, 768}, {0, MKD_GRP_WORLD, MKD_GRP_WORLD}, T_[[MM]], 0, {98304, 768, 1}},
# CHECK: // Qs: temp bf16 [8, 128, 64] split, a view of [[MM]]
# CHECK-NEXT: {2, 0, MKD_GRP_WORLD, {4, 128, 64}, {4, 64, 0}, {MKD_GRP_WORLD, MKD_GRP_WORLD, 0}, T_[[MM]], 0, {192, 768, 1}},
# CHECK: // At: temp bf16 [128, 8, 64] split, a view of A
# CHECK-NEXT: T_A, 0, {64, 8192, 1}},
# CHECK: // stage P: no tasks: P is a view of [[MM]] (no copy)
# CHECK: // stage Qs: no tasks: Qs is a view of [[MM]] (no copy)
# CHECK: // stage V: V = slice(P), a copy of a box
# CHECK: // stage Q: Q = rope(Qs, Cs, Sn), whole rows
# CHECK: mkd_rope((const mkd_bf16 *)mkd_at<MK_GPUS>(p, T_Qs, X, rank, e, lo[1], lo[2]), X.st[1],
# CHECK: // stage A: A = attention(Q, K, V),
# CHECK: (u64)mkd_origin(p, MK_T[T_Q], rank), (u64)mkd_origin(p, MK_T[T_K], rank),
# CHECK-NEXT: (u64)mkd_origin(p, MK_T[T_V], rank));
# CHECK: fa.block(Kp, Vp, MK_T[kb.tensor].st[1], MK_T[vb.tensor].st[1],
# CHECK: // stage At: no tasks: At is a view of A (no copy)
# CHECK: // stage R3: no tasks: R3 is a view of Z (no copy)
# CHECK: // stage Odd: Odd = slice(P), a copy of a box
# CHECK: // stage Tl: Tl = transpose({{transpose_Z[0-9_]*}}), a copy of a box
# CHECK: // stage V2: no tasks: V2 is a view of PR (no copy)
# CHECK: // stage Y2: Y2 = attention(Q, K, V2),
# CHECK: (u64)mkd_origin(p, MK_T[T_V2], rank));
#
# NOVIEWS-NOT: a view of
