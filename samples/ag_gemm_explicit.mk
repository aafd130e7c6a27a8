# AllGather + GEMM with the collective written out as explicit stages.
#
# The same computation as ag_gemm.mk.  `allgather(A, 0)` expands, by the
# mesh, into these two put stages: the GPUs of my node copy their rows over
# NVLink, the ranks of other nodes over RDMA (never RDMA where NVLink
# reaches).  Together the stages' peer sets must cover the whole world.
pipeline ag_gemm_explicit {
  mesh  nodes x gpus
  param M = 8192, N = 1024, K = 8192

  in  A : bf16[M, K] split(0)
  in  B : bf16[K, N]
  out C : bf16[M, N]

  stage pull : nvlink  Ag[rows of p] <- A@p   for p in node     chunk 64K
  stage ship : rdma    Ag[rows of q] <- A@q   for q in remote   chunk 512K
  stage mm   : compute C = matmul(Ag, B)      tile 128 x 256 x 64

  # CTAs per rank for each role; together at most the 132 SMs of an H200
  roles compute 100, nvlink 24, rdma 8
}
