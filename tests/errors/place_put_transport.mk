# which transport reaches which peers; stage kinds; the peer variable
pipeline p {
  mesh  nodes x gpus
  param M = 1024, K = 64
  in  A : bf16[M, K] split(0)
  in  L : bf16[M, K]
  out B : bf16[M, K]
  stage a : nvlink  Ag[rows of p] <- A@p  for p in remote
  stage b : rdma    Ag[rows of q] <- A@q  for q in node
  stage c : sdma    Bg[rows of p] <- A@p  for p in nod
  stage d : nvlink  Cg[rows of p] <- L@p  for p in node
  stage e : nvlink  Dg[rows of p] <- A@q  for p in node
  stage f : compute Eg[rows of p] <- A@p  for p in node
  stage g : nvlink  B = relu(L)
}
