# a parameter is not a tensor
pipeline p {
  param M = 64
  in  A : bf16[M]
  out B : bf16[M]
  M = relu(A)
  B = relu(M)
}
