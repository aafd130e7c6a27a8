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
#   CTAS the dispatch's tasks on the first 48 CTAs, as many as copy at the
#        device memory's rate (the H200 constants: 4300 / 2 / 45 GB/s), so
#        that the others take He's first tiles meanwhile; every CTA holds
#        entries of the pools; MK_DISPATCH_CTAS=all (ALL) and without a
#        pool (NOPOOL) the dispatch goes on every CTA
#   (tests/sh/nvrtc_samples.sh compiles the sample and fails on a spill)
#
# RUN: %mkc --emit=plan samples/moe_dispatch_gemm.mk | FileCheck %s --check-prefix=T8K --implicit-check-not='tiles a task'
# RUN: %mkc -D T=32768 --emit=plan samples/moe_dispatch_gemm.mk | FileCheck %s --check-prefix=T32K
# RUN: env MK_NO_POOL=1 %mkc --emit=plan samples/moe_dispatch_gemm.mk | FileCheck %s --check-prefix=NOPOOL
# RUN: sed -e 's/^  He = matmul(Xe, W1).*$/  He = matmul(Xe, W1)  tile 128 x 256/' samples/moe_dispatch_gemm.mk > %t.mk
# RUN: env MK_NO_POOL=1 %mkc -D T=32768 --emit=plan %t.mk | FileCheck %s --check-prefix=HINT
# RUN: %mkc --emit=json -o %t.json samples/moe_dispatch_gemm.mk
# RUN: python3 -c "import json,sys; T=json.load(open(sys.argv[1]))['tasks']; print('CTAS', *sorted(g + ':' + str(len({t['cta'] for t in T if t['stage'] == g})) for g in {t['stage'] for t in T}))" %t.json | FileCheck %s --check-prefix=CTAS
# RUN: env MK_DISPATCH_CTAS=all %mkc --emit=json -o %t.all.json samples/moe_dispatch_gemm.mk
# RUN: python3 -c "import json,sys; T=json.load(open(sys.argv[1]))['tasks']; print('ALL', len({t['cta'] for t in T if t['stage'] == 'Xe'}))" %t.all.json | FileCheck %s --check-prefix=ALL
# RUN: env MK_DISPATCH_CTAS=all %mkc --emit=plan samples/moe_dispatch_gemm.mk | FileCheck %s --check-prefix=ALL-PLAN
#
# T8K: Xe{{ +}}dispatch{{ +}}128 slots a task, no zeros past the tokens (nothing reads them), on 48 CTAs (the others take the pool's first tiles); smem
# T8K: He{{ +}}matmul{{ +}}tile 128 x 256 x 64, wgmma, {{.*}}tasks taken at run time
# T8K: Ye{{ +}}matmul{{ +}}tile 128 x 256 x 64, wgmma, {{.*}}tasks taken at run time
# T32K: He{{ +}}matmul{{ +}}tile 128 x 256 x 64, wgmma, 4-stage ring (mma.sync 128 x 256 x 64, 4 stages, off sm_90a), the epilogue through shared memory, silu in the epilogue
# T32K: Ye{{ +}}matmul{{ +}}tile 128 x 128 x 64, wgmma, {{.*}}1 x 7 tiles a task
# NOPOOL: Xe{{ +}}dispatch{{ +}}128 slots a task, no zeros past the tokens (nothing reads them); smem
# NOPOOL: He{{ +}}matmul{{ +}}tile 128 x 256 x 64, wgmma, {{.*}}off sm_90a), the ring goes on into the next task, the epilogue through shared memory, silu in the epilogue
# NOPOOL: Ye{{ +}}matmul{{ +}}tile 128 x 128 x 64, wgmma, {{.*}}1 x 7 tiles a task
# CTAS: CTAS He:132 Xe:48 Y:128 Ye:132
# ALL: ALL 132
# ALL-PLAN: Xe{{ +}}dispatch{{ +}}128 slots a task, no zeros past the tokens (nothing reads them); smem
# HINT: He{{ +}}matmul{{ +}}tile 128 x 256 x 64, wgmma, {{.*}}1 x 4 tiles a task
# HINT: Ye{{ +}}matmul{{ +}}tile 128 x 128 x 64, wgmma, {{.*}}1 x 28 tiles a task
