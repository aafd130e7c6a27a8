# ARGS: -D gpus=8
# a tile larger than the output a rank computes (rows pad only up to 128)
pipeline p {
  mesh  nodes x gpus
  param M = 512, N = 1024, K = 1024
  in  A : bf16[M, K] split(0)
  in  B : bf16[K, N]
  out C : bf16[M, N] split(0)
  C = matmul(A, B)  tile 192 x 256 x 64
}
