# dispatch's fifth argument is its routing policy: 'drop' or 'strict'
pipeline p {
  param T = 64, H = 64, E = 8
  in  X   : bf16[T, H]
  in  idx : i32[T, 2]
  out Xe  : bf16[E, 16, H]
  Xe = dispatch(X, idx, E, 16, dropped)
}
