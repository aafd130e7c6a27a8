# fp8 (e4m3) matmuls on the GPU (issue 20: check and the CPU run accepted
# them, --emit=cu refused them): the portable tensor-core tile widens the
# operands to f16 in shared memory (exact) and accumulates in fp32; rows
# split over the ranks, a bf16 and an f32 result, a ragged M.
# MESHES: 1x2 2x2
pipeline e4m3_matmul {
  mesh  nodes x gpus
  param M = 1000, K = 256, N = 192

  in  A : e4m3[M, K] split(0)
  in  B : e4m3[K, N]
  out C : bf16[M, N] split(0)
  out F : f32[M, N] split(0)

  C = matmul(A, B)
  F = matmul(A, B)  tile 64 x 64 x 32
}
