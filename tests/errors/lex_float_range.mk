# a floating-point literal out of range
pipeline p {
  in  A : f32[64]
  out B : f32[64]
  B = scale(A, 1.0e400)
}
