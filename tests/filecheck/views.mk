# The layout ops' CUDA (issue 20) where they copy: slice, concat,
# transpose and reshape are copies of the task's box (mkd_copy_box) from
# where the op puts its elements: a slice's start added on its dimension,
# a concat's two parts on either side of the seam, a transpose's strides
# permuted, a reshape's [T, A * B] row read at a * B + b.  Here S is an
# output, C a concat and Tr a transpose of the last dimension: copies; R3
# is read by a layout op only, so the plan makes it a view of X
# (views_nocopy.mk) and R2 copies from X through R3's strides.  And their reads: where sigma_r moves
# a dimension the op does not pair one for one (here the concat's rows,
# rotated by the allreduce after the matmul), each task reads that
# dimension of its inputs whole.
#
# RUN: %mkc --emit=cu -D gpus=2 %s | FileCheck %s
# RUN: %mkc --emit=schedule -D gpus=2 %s | FileCheck --check-prefix=SCHED %s
#
# CHECK: // stage S: S = slice(allgather_X__1__8), a copy of a box
# CHECK: s[2] += 8;  // the slice's start
# CHECK: mkd_copy_box<2>(mkd_at<MK_GPUS>(p, T_S, Y, rank, o[0], o[1], o[2]),
# CHECK: mkd_at<MK_GPUS>(p, T_allgather_X__1__8, X, sr, s[0], s[1], s[2]),
# CHECK: // stage C: C = concat(A, B), a copy of a box
# CHECK: const i64 seam = 64;  // where A ends along dimension 0
# CHECK: if (lo[1] < seam) {  // the part from A
# CHECK: if (end > seam) {  // the part from B
# CHECK: s[1] -= seam;
# CHECK: // stage Tr: Tr = transpose(X), a copy of a box
# CHECK: mkd_at<MK_GPUS>(p, T_X, X, sr, lo[0], lo[2], lo[1]),
# CHECK-NEXT: X.st[0], 1, X.st[1], n[0], n[1], n[2]);
# CHECK: // stage R3: no tasks: R3 is a view of X (no copy)
# CHECK: // stage R2: R2 = reshape(R3), a copy of a box
# CHECK: n[0] = hi[1] - lo[1], n[1] = (hi[2] - lo[2]) / B, n[2] = B;
# CHECK: mkd_at<MK_GPUS>(p, T_R3, X, sr, lo[1], lo[2] / B, 0),
# CHECK-NEXT: X.st[0], X.st[1], 1, n[0], n[1], n[2]);
#
# SCHED: ew     C C@0[0:64, 0:64] <- A@0[0:64, 0:64], B@0[0:64, 0:64]
# SCHED: ew     C C@0[64:128, 0:64] <- A@0[0:64, 0:64], B@0[0:64, 0:64]
pipeline views {
  param T = 64, H = 4, D = 32
  in  X  : bf16[T, H * D] split(1)
  in  A  : bf16[T, H * D] split(1)
  in  B  : bf16[T, H * D] split(1)
  in  W  : bf16[H * D, H * D] split(0)
  out S  : bf16[T, 16] 
  out Tr : bf16[H * D, T] split(0)
  out R2 : bf16[T, H * D] split(1)
  out Y  : bf16[2 * T, H * D]
  S  = slice(allgather(X, 1), 1, 8, 24)
  C  = concat(A, B, 0)
  Tr = transpose(X, 0, 1)
  R3 = reshape(X, T, H, D)
  R2 = reshape(R3, T, H * D)
  Y  = allreduce(matmul(C, W))
}
