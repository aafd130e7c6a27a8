# tile m multiple of 64, n multiple of 16 and at most 256, k multiple of 16
pipeline p {
  param M = 1024, N = 1024, K = 1024
  in  A : bf16[M, K]
  in  B : bf16[K, N]
  out C : bf16[M, N]
  out D : bf16[M, N]
  out E : bf16[M, N]
  C = matmul(A, B)  tile 100 x 256 x 64
  D = matmul(A, B)  tile 128 x 512 x 64
  E = matmul(A, B)  tile 128 x 128 x 40
}
