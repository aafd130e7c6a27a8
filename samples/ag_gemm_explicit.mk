# AllGather + GEMM with the collective written out as explicit stages.
#
# The same result as ag_gemm.mk, with the exchange written by hand: the GPUs
# of my node copy their rows over NVLink, and every rank of another node
# writes its rows to me over RDMA (never RDMA where NVLink reaches).
# Together the stages' peer sets must cover the whole world.  Unlike
# allgather(A, 0), which sends each shard across the network once per node
# pair and forwards it inside the node over NVLink, these stages send it
# once per remote GPU: written out, a stage means exactly what it says.
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
