# a character that is not part of the language
pipeline p {
  in  A : bf16[64, 64]
  out B : bf16[64, 64]
  B = relu(A) $
}
