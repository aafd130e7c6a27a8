# ARGS: -D nodes=0 -D gpus=2000
# mesh sizes from -D are positive and the world at most 1024 ranks
pipeline p {
  in  A : bf16[64]
  out B : bf16[64]
  B = relu(A)
}
