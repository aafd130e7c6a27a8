# all CTAs of a persistent kernel must be resident: at most 132 per rank
pipeline p {
  in  A : bf16[64]
  out B : bf16[64]
  B = relu(A)
  roles compute 120, nvlink 24
}
