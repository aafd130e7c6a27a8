# three independent errors in one run: a name, a shape, a hint
pipeline p {
  param M = 256, N = 256, K = 128
  in  A : bf16[M, K]
  in  B : bf16[K, N]
  in  b : bf16[K]
  out C : bf16[M, N]
  out D : bf16[M, N]
  out E : bf16[M, N]
  C = matmul(A, Bx)
  D = add(E, b)
  E = matmul(A, B)  tile 128 x 128 x 8
}
