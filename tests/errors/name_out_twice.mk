# an output is assigned exactly once
pipeline p {
  in  A : bf16[64]
  out B : bf16[64]
  B = relu(A)
  B = gelu(A)
}
