# MK_CLUSTER=2 (A/B): a matmul that is the kernel's only op, on the
# program's inputs, pairs its tiles on 2-CTA clusters: the row tiles 2j and
# 2j + 1 of one column block at the same place in the lists of CTAs 2k and
# 2k + 1 (sched.c static_pairs), so that both go on into their next tasks
# together, each loading half of B for both (mkd/wgmma.cuh, clusters).
#   PLAN    the plan pairs the tiles, the ring still goes on
#   SM      the kernel runs in clusters of 2
#   CU      MK_CLUSTER and the engine's MC, with the ring carried
#   PAIRS   CTA 2k's and 2k + 1's lists: the same columns, rows one tile
#           apart, place by place (1000 rows: the last tile of 104); and
#           the check fails on lists with two tasks swapped
#   ODD     five row tiles (640 rows) do not pair: every CTA alone
#   DEF     none of it by default, nor with a second op
#
# RUN: env MK_CLUSTER=2 %mkc --emit=plan %s | FileCheck %s --check-prefix=PLAN
# RUN: env MK_CLUSTER=2 %mkc --emit=schedule %s | FileCheck %s --check-prefix=SM
# RUN: env MK_CLUSTER=2 %mkc --emit=cu %s | FileCheck %s --check-prefix=CU
# RUN: env MK_CLUSTER=2 %mkc -D M=1000 -D N=768 -D K=520 --emit=json %s -o %t.json
# RUN: python3 tests/tools/check_schedule.py -q %t.json
# RUN: python3 tests/tools/check_pairs.py %t.json | FileCheck %s --check-prefix=PAIRS
# RUN: python3 -c "import json,sys; s=json.load(sys.stdin); t=s['tasks']; t[0]['cta'],t[2]['cta']=t[2]['cta'],t[0]['cta']; json.dump(s,sys.stdout)" < %t.json > %t.bad.json
# RUN: ! python3 tests/tools/check_pairs.py %t.bad.json
# RUN: env MK_CLUSTER=2 %mkc -D M=640 --emit=schedule %s | FileCheck %s --check-prefix=ODD
# RUN: %mkc --emit=cu %s | FileCheck %s --check-prefix=DEF
# RUN: env MK_CLUSTER=2 %mkc --emit=cu tests/filecheck/epilogue_fusion.mk | FileCheck %s --check-prefix=DEF
#
# PLAN: C matmul {{.*}}the ring goes on into the next task, the epilogue through shared memory, in pairs on 2-CTA clusters that share B's loads (sm_90a)
# SM: each rank: 132 CTAs x 384 threads, {{[0-9]+}} bytes of shared memory per CTA, in clusters of 2 on sm_90a
# CU: #define MK_CLUSTER 2
# CU: mkd_wgmma_tile<mkd_bf16, mkd_bf16, 128, 256, 64, {{[0-9]+}}, false, false, true, MKD_CLUSTER>::run(loads(i), mkd_wg_key(i, 0), [&](mkd_wg_loads &n) -> i64 {
# CU-NEXT: const int j = mkd_next_ready(p, rank, S_C, epoch);
# PAIRS: 24 tasks on 24 CTAs, 12 clusters: every place paired
# ODD: each rank: 132 CTAs x 384 threads, {{[0-9]+}} bytes of shared memory per CTA{{$}}
# DEF-NOT: MK_CLUSTER
# DEF-NOT: MKD_CLUSTER>
pipeline gemm_cluster {
  mesh  1 x 1
  param M = 2048, N = 1024, K = 512
  in  A : bf16[M, K]
  in  B : bf16[K, N]
  out C : bf16[M, N]
  C = matmul(A, B)
}
