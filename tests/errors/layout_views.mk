# The layout ops refuse, at the argument, what would move elements between
# ranks or is not a layout change they make: a slice or concat along a
# split dimension, ranges out of bounds, tensors that do not line up, a
# transpose of one dimension with itself, reshapes other than splitting
# the last dimension in two or merging the last two, and reshapes that
# would give a rank a strided piece.  Every error is reported.
pipeline layout_views {
  mesh  1 x 2
  param T = 64, H = 4, D = 16

  in  X  : bf16[T, H * D] split(1)
  in  Y  : bf16[T, H * D]
  in  Z  : f16[T, H * D]
  in  P  : bf16[H, T, D] split(2)
  out O1 : bf16[T, 16] split(1)
  out O2 : bf16[T, 16]
  out O3 : bf16[T, H * D]
  out O4 : bf16[2 * T, H * D]
  out O5 : bf16[T, H * D]
  out O6 : bf16[T, H * D]
  out O7 : bf16[T, 1, H * D]
  out O8 : bf16[T * H, D]
  out O9 : bf16[T, 3, D]
  out O10 : bf16[H, T * D]

  O1 = slice(X, 1, 0, 16)
  O2 = slice(Y, 1, 8, 80)
  O3 = concat(Y, Z, 0)
  O4 = concat(X, Y, 0)
  O5 = concat(X, X, 1)
  O6 = transpose(Y, 1, 1)
  O7 = reshape(X, T, 1, H * D)
  O8 = reshape(Y, T * H, D)
  O9 = reshape(Y, T, 3, D)
  O10 = reshape(P, H, T * D)
}
