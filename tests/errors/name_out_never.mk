# an output nobody writes
pipeline p {
  in  A : bf16[64]
  out B : bf16[64]
  out C : bf16[64]
  B = relu(A)
}
