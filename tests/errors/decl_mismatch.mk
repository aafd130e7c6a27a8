# declared outputs must match what their op produces
pipeline p {
  in  A : bf16[64, 32]
  in  B : bf16[32, 16]
  out C : f16[64, 16]
  out D : bf16[64, 32]
  out E : f32[64, 16]
  C = matmul(A, B)
  D = matmul(A, B)
  E = matmul(A, B)   # f32 accumulation is allowed
}
