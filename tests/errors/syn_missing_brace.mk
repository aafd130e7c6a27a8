# the pipeline's closing brace is missing
pipeline p {
  in  A : bf16[64]
  out B : bf16[64]
  B = relu(A)
