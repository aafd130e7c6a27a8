# routing indices are i32, gates f32
pipeline p {
  param T = 64, H = 128, E = 8, K = 2
  in  X    : bf16[T, H]
  in  idx  : f32[T, K]
  in  idx2 : i32[T, K]
  in  gate : bf16[T, K]
  in  Ye   : bf16[E, 16, H]
  out Xe   : bf16[E, 16, H]
  out Y    : bf16[T, H]
  Xe = dispatch(X, idx, E, 16)
  Y  = combine(Ye, idx2, gate)
}
