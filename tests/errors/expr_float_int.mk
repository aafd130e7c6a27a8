# sizes are integers
pipeline p {
  param M = 64
  in  A : bf16[M, 1.5]
  in  B : bf16[M, bf16]
  in  C : bf16[M, A]
}
