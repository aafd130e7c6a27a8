# stage names are unique
pipeline p {
  in  A : bf16[64]
  out B : bf16[64]
  out C : bf16[64]
  stage act : compute B = relu(A)
  stage act : compute C = gelu(A)
}
