# ARGS: -D world=8
# the world size is nodes * gpus
pipeline p {
  in  A : bf16[64]
  out B : bf16[64]
  B = relu(A)
}
