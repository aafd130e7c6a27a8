# a literal mesh: 1 to 1024 ranks
pipeline p {
  mesh 0 x 8
  in  A : f32[64, 16]
  out B : f32[64, 16]
  B = relu(A)
}
