# three independent syntax errors, each reported: the parser resumes at
# the next statement
pipeline p {
  param M = 64 *, N = 64
  in  A : bf16[M N]
  in  B : bf16[N, N]
  out C : bf16[M, N]
  C = matmul(A B)
}
