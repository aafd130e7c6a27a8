# The column gather written as explicit put stages (`cols of`), NVLink
# inside a node and RDMA between nodes, then a matmul and an elementwise op
# on the gathered columns.
# MESHES: 1x2 2x1 2x2
pipeline col_gather_stage {
  mesh  nodes x gpus
  param M = 128, K = 512, N = 64

  in  X : bf16[M, K] split(1)
  in  W : bf16[K, N]
  out C : bf16[M, N]
  out R : bf16[M, K]

  stage pull : nvlink  Xg[cols of p] <- X@p   for p in node
  stage ship : rdma    Xg[cols of q] <- X@q   for q in remote
  C = matmul(Xg, W)
  R = relu(Xg)
}
