# each argument has a kind: tensor, integer, real, element type
pipeline p {
  param M = 64
  in  A : bf16[M]
  out B : bf16[M]
  out C : bf16[M]
  B = scale(A, A)
  C = relu(M)
}
