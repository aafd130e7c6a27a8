# misspelt hints
pipeline p {
  in  A : bf16[64, 64]
  in  W : bf16[64, 64]
  out B : bf16[64, 64]
  B = matmul(A, W)  tiles 64 x 64 x 64
}
