# ARGS: -D nodes=2 -D gpus=4
# explicit put stages must copy from every rank together
pipeline p {
  mesh  nodes x gpus
  param M = 1024, K = 64
  in  A : bf16[M, K] split(0)
  out B : bf16[M, K]
  stage pull : nvlink  Ag[rows of p] <- A@p  for p in node  chunk 64K
  B = relu(Ag)
}
