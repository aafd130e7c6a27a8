# inputs are read-only
pipeline p {
  in  A : bf16[64]
  out B : bf16[64]
  A = relu(A)
  B = relu(A)
}
