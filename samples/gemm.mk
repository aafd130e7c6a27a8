# A matmul alone: the GEMM engine inside the megakernel, for the benchmark
# against cuBLAS (make bench).  One rank; tiles of 128 x 256 x 64 on Hopper.
pipeline gemm {
  mesh  nodes x gpus
  param M = 8192, N = 8192, K = 8192

  in  A : bf16[M, K]
  in  B : bf16[K, N]
  out C : bf16[M, N]

  C = matmul(A, B)
}
