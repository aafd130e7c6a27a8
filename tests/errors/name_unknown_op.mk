# an op that does not exist
pipeline p {
  in  A : bf16[64, 64]
  in  B : bf16[64, 64]
  out C : bf16[64, 64]
  C = matmal(A, B)
}
