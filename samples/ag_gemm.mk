# AllGather + GEMM (column-parallel linear layer): C = allgather(A) @ B
#
# Every rank holds M/world rows of A.  The allgather brings the other rows
# over NVLink (inside a node) and RDMA (across nodes); the compiler starts a
# GEMM tile as soon as the rows it needs have arrived.
pipeline ag_gemm {
  mesh  nodes x gpus                    # bound at launch, e.g. 2 x 8
  param M = 8192, N = 1024, K = 8192

  in  A : bf16[M, K] split(0)           # rank r holds rows r*M/world ...
  in  B : bf16[K, N]                    # every rank has its own B
  out C : bf16[M, N]

  Ag = allgather(A, 0)                  # NVLink inside a node, RDMA across
  C  = matmul(Ag, B)  tile 128 x 256 x 64
}
