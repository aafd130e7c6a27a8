# fp8 is for matmul and data movement only
pipeline p {
  in  A : e4m3[64, 64]
  out B : e4m3[64, 64]
  B = gelu(A)
}
