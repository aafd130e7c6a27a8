# The expert GEMMs of samples/moe_dispatch_gemm.mk alone, on buckets that are
# already filled and hold exactly the routed rows (C = T * topk / E): the
# compute floor the fused layer is measured against.
pipeline experts {
  mesh  nodes x gpus
  param E = 64, C = 1024, H = 2048, F = 1024
  in  Xe : bf16[E, C, H] split(0)
  in  W1 : bf16[E, H, F] split(0)
  in  W2 : bf16[E, F, H] split(0)
  out Ye : bf16[E, C, H] split(0)
  He = matmul(Xe, W1)
  Ae = silu(He)
  Ye = matmul(Ae, W2)
}
