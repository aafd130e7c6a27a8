# warnings for unused tensors come with the errors
pipeline p {
  in  A : bf16[64]
  in  Unused : bf16[64]
  out B : bf16[64]
  T = relu(A)
  B = relu(Missing)
}
