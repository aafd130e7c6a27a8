# ARGS: -D MM=4096 -D N=512
# -D of a name the pipeline does not have
pipeline p {
  param M = 64, N = 64
  in  A : bf16[M, N]
  out B : bf16[M, N]
  B = relu(A)
}
