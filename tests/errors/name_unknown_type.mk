# an unknown element type, and a dtype argument that is not one
pipeline p {
  in  A : bf61[64]
  in  X : f32[64]
  out Y : f32[64]
  Y = cast(X, float)
}
