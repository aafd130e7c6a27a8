# matmul operands share one floating-point type
pipeline p {
  in  A : bf16[128, 64]
  in  B : f32[64, 128]
  out C : bf16[128, 128]
  C = matmul(A, B)
}
