# The tiles of a kernel whose matmuls walk and whose other matmuls do not
# (samples/moe_dispatch_gemm.mk): only a matmul whose tasks would walk
# 128 x 256 tiles takes 128 x 128 (a walk of 128 x 256 tiles spills).
#   T8K  8192 tokens: He's 8192 tiles of 128 x 256 make 8192 tasks, no walk,
#        so He keeps 128 x 256 (one H100 run: 10.6 ms against 12.0 ms with
#        128 x 128, docs/perf-notes.md); Ye walks 128 x 128 tiles
#   T32K 32768 tokens: both would walk, both take 128 x 128
#   HINT a tile hint is kept even where the tasks walk
#   (tests/sh/nvrtc_samples.sh compiles the sample and fails on a spill)
#
# RUN: %mkc --emit=plan samples/moe_dispatch_gemm.mk | FileCheck %s --check-prefix=T8K
# RUN: %mkc -D T=32768 --emit=plan samples/moe_dispatch_gemm.mk | FileCheck %s --check-prefix=T32K --implicit-check-not='tile 128 x 256 x 64'
# RUN: %mkc -D T=32768 --emit=plan %s | FileCheck %s --check-prefix=HINT
#
# T8K: He{{ +}}matmul{{ +}}tile 128 x 256 x 64, wgmma, {{.*}}tasks taken at run time
# T8K-NOT: tiles a task
# T8K: Ye{{ +}}matmul{{ +}}tile 128 x 128 x 64, wgmma, {{.*}}1 x 7 tiles a task
# T32K: He{{ +}}matmul{{ +}}tile 128 x 128 x 64, wgmma, {{.*}}1 x 8 tiles a task
# T32K: Ye{{ +}}matmul{{ +}}tile 128 x 128 x 64, wgmma, {{.*}}1 x 28 tiles a task
# HINT: He{{ +}}matmul{{ +}}tile 128 x 256 x 64, wgmma, {{.*}}1 x 4 tiles a task
# HINT: Ye{{ +}}matmul{{ +}}tile 128 x 128 x 64, wgmma, {{.*}}1 x 28 tiles a task
pipeline moe_tiles {
  mesh  nodes x gpus
  param T = 8192
  param H = 7168, F = 2048
  param E = 256, topk = 8
  param C = 2 * T * topk / E

  in  X    : bf16[T, H] split(0)
  in  idx  : i32[T, topk] split(0)
  in  gate : f32[T, topk] split(0)
  in  W1   : bf16[E, H, F] split(0)
  in  W2   : bf16[E, F, H] split(0)
  out Y    : bf16[T, H] split(0)

  Xe = dispatch(X, idx, E, C)
  He = matmul(Xe, W1)  tile 128 x 256
  Ae = silu(He)
  Ye = matmul(Ae, W2)
  Y  = combine(Ye, idx, gate)
}
