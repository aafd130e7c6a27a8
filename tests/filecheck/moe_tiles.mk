# The tiles and tasks of the MoE's expert GEMMs (samples/moe_dispatch_gemm.mk).
# A matmul on the buckets, whose tiles a pool hands out, makes up to 32768
# tasks (IR_MM_POOL_TASKS; others 8192); only a matmul whose tasks would
# walk 128 x 256 tiles takes 128 x 128 (a walk of 128 x 256 tiles spills),
# the other matmuls of the kernel keep theirs.
#   T8K  8192 tokens: He's 8192 and Ye's 28672 tiles of 128 x 256, one a
#        task, no walk
#   T32K 32768 tokens: He's 32768 tiles of 128 x 256, one a task (an H100
#        ran the layer in 41.8 ms so against 61.2 with 128 x 128 walks,
#        docs/perf-notes.md); Ye's would walk: 128 x 128, 7 a task
#   NOPOOL with MK_NO_POOL=1 the bound is 8192: at 8192 tokens He does not
#        walk and keeps 128 x 256, Ye walks 128 x 128 tiles
#   HINT a tile hint is kept even where the tasks walk
#   (tests/sh/nvrtc_samples.sh compiles the sample and fails on a spill)
#
# RUN: %mkc --emit=plan samples/moe_dispatch_gemm.mk | FileCheck %s --check-prefix=T8K --implicit-check-not='tiles a task'
# RUN: %mkc -D T=32768 --emit=plan samples/moe_dispatch_gemm.mk | FileCheck %s --check-prefix=T32K
# RUN: env MK_NO_POOL=1 %mkc --emit=plan samples/moe_dispatch_gemm.mk | FileCheck %s --check-prefix=NOPOOL
# RUN: env MK_NO_POOL=1 %mkc -D T=32768 --emit=plan %s | FileCheck %s --check-prefix=HINT
#
# T8K: He{{ +}}matmul{{ +}}tile 128 x 256 x 64, wgmma, {{.*}}tasks taken at run time
# T8K: Ye{{ +}}matmul{{ +}}tile 128 x 256 x 64, wgmma, {{.*}}tasks taken at run time
# T32K: He{{ +}}matmul{{ +}}tile 128 x 256 x 64, wgmma, 4-stage ring (mma.sync 128 x 256 x 64, 4 stages, off sm_90a), silu in the epilogue
# T32K: Ye{{ +}}matmul{{ +}}tile 128 x 128 x 64, wgmma, {{.*}}1 x 7 tiles a task
# NOPOOL: He{{ +}}matmul{{ +}}tile 128 x 256 x 64, wgmma, {{.*}}off sm_90a), the ring goes on into the next task, silu in the epilogue
# NOPOOL: Ye{{ +}}matmul{{ +}}tile 128 x 128 x 64, wgmma, {{.*}}1 x 7 tiles a task
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
