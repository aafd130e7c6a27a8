# argument counts
pipeline p {
  in  A : bf16[64, 64]
  out B : bf16[64, 64]
  out C : bf16[64, 64]
  B = matmul(A)
  C = attention(A, A)
}
