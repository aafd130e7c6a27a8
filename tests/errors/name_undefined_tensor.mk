# a misspelt tensor name, with a suggestion
pipeline p {
  in  A : bf16[64, 64]
  in  Bias : bf16[64, 64]
  out C : bf16[64, 64]
  C = add(A, Bais)
}
