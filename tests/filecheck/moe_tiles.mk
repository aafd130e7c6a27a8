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
#   HINT a tile hint is kept even where the tasks walk (the sample with
#        `tile 128 x 256` on He)
#   (tests/sh/nvrtc_samples.sh compiles the sample and fails on a spill)
#
# RUN: %mkc --emit=plan samples/moe_dispatch_gemm.mk | FileCheck %s --check-prefix=T8K --implicit-check-not='tiles a task'
# RUN: %mkc -D T=32768 --emit=plan samples/moe_dispatch_gemm.mk | FileCheck %s --check-prefix=T32K
# RUN: env MK_NO_POOL=1 %mkc --emit=plan samples/moe_dispatch_gemm.mk | FileCheck %s --check-prefix=NOPOOL
# RUN: sed -e 's/^  He = matmul(Xe, W1).*$/  He = matmul(Xe, W1)  tile 128 x 256/' samples/moe_dispatch_gemm.mk > %t.mk
# RUN: env MK_NO_POOL=1 %mkc -D T=32768 --emit=plan %t.mk | FileCheck %s --check-prefix=HINT
#
# T8K: He{{ +}}matmul{{ +}}tile 128 x 256 x 64, wgmma, {{.*}}tasks taken at run time
# T8K: Ye{{ +}}matmul{{ +}}tile 128 x 256 x 64, wgmma, {{.*}}tasks taken at run time
# T32K: He{{ +}}matmul{{ +}}tile 128 x 256 x 64, wgmma, 4-stage ring (mma.sync 128 x 256 x 64, 4 stages, off sm_90a), silu in the epilogue
# T32K: Ye{{ +}}matmul{{ +}}tile 128 x 128 x 64, wgmma, {{.*}}1 x 7 tiles a task
# NOPOOL: He{{ +}}matmul{{ +}}tile 128 x 256 x 64, wgmma, {{.*}}off sm_90a), the ring goes on into the next task, silu in the epilogue
# NOPOOL: Ye{{ +}}matmul{{ +}}tile 128 x 128 x 64, wgmma, {{.*}}1 x 7 tiles a task
# HINT: He{{ +}}matmul{{ +}}tile 128 x 256 x 64, wgmma, {{.*}}1 x 4 tiles a task
# HINT: Ye{{ +}}matmul{{ +}}tile 128 x 128 x 64, wgmma, {{.*}}1 x 28 tiles a task
