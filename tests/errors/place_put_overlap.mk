# ARGS: -D gpus=4
# two stages copying the same rows
pipeline p {
  mesh  nodes x gpus
  param M = 1024, K = 64
  in  A : bf16[M, K] split(0)
  out B : bf16[M, K]
  stage near : nvlink  Ag[rows of p] <- A@p  for p in node
  stage all  : nvlink  Ag[rows of p] <- A@p  for p in world
  B = relu(Ag)
}
