# MK_CLUSTER=2 (A/B): a pool's bucket tiles go in pairs to the two CTAs of
# a 2-CTA cluster, the row tiles 2j and 2j + 1 of one weight slab, and each
# CTA loads half of B for both (TMA multicast: mkd/wgmma.cuh, clusters).
#   PLAN    the plan says so for both expert matmuls
#   SM      the schedule runs the kernel in clusters of 2
#   CU      MK_CLUSTER, the pools' tickets taken by pairs (MK_POOL_MC), the
#           engine's MC, and a tile past the tokens kept for its pair
#   PTX     multicast loads, cluster barriers, remote barrier arrivals
#   DEF     none of it by default
#   ODD     none where a bucket holds an odd number of row tiles (C = 192:
#           two tiles, the second of 64 rows; the pairs would not align)
#
# RUN: env MK_CLUSTER=2 %mkc --emit=plan %s | FileCheck %s --check-prefix=PLAN
# RUN: env MK_CLUSTER=2 %mkc --emit=schedule %s | FileCheck %s --check-prefix=SM
# RUN: env MK_CLUSTER=2 %mkc --emit=cu %s | FileCheck %s --check-prefix=CU
# RUN: env MK_CLUSTER=2 %mkc --emit=ptx %s -o %t.ptx
# RUN: FileCheck %s --check-prefix=PTX < %t.ptx
# RUN: %mkc --emit=cu %s | FileCheck %s --check-prefix=DEF
# RUN: env MK_CLUSTER=2 %mkc -D T=384 --emit=cu %s | FileCheck %s --check-prefix=DEF
# RUN: env MK_CLUSTER=2 %mkc -D T=384 --emit=plan %s | FileCheck %s --check-prefix=ODD
# RUN: env MK_CLUSTER=2 %mkc --emit=json %s -o %t.json
# RUN: python3 tests/tools/check_schedule.py -q %t.json
#
# PLAN: He matmul {{.*}}tasks taken at run time (a pool), in pairs on 2-CTA clusters that share B's loads (sm_90a)
# PLAN: Ye matmul {{.*}}tasks taken at run time (a pool), in pairs on 2-CTA clusters that share B's loads (sm_90a)
# SM: each rank: {{[0-9]+}} CTAs x 384 threads, {{[0-9]+}} bytes of shared memory per CTA, in clusters of 2 on sm_90a
# CU: #define MK_CLUSTER 2
# CU: __device__ const signed char MK_POOL_MC[MK_NPOOLS] = {2, 2};
# CU: bool stage_He(
# CU: const i64 pair = lo[1] - 128 * (i64)mkd_cluster_rank();
# CU: if (pair >= filled)  // no tokens in the pair
# CU: const bool none = lo[1] >= filled;
# CU: mkd_wgmma_tile<mkd_bf16, mkd_bf16, 128, 256, 64, {{[0-9]+}}, false, false, {{true|false}}, MKD_CLUSTER>::run(
# CU: none ? -1 : (int)(filled - lo[1]));
# PTX: cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster
# PTX: mapa.shared::cluster.u32
# PTX: barrier.cluster.arrive
# DEF-NOT: MK_CLUSTER
# DEF-NOT: MKD_CLUSTER>
# ODD-NOT: in pairs on
pipeline moe_cluster {
  mesh  1 x 1
  param T = 512, H = 256, F = 512, E = 8, topk = 2
  param C = 2 * T * topk / E

  in  X    : bf16[T, H] split(0)
  in  idx  : i32[T, topk] split(0)
  in  gate : f32[T, topk] split(0)
  in  W1   : bf16[E, H, F] split(0)
  in  W2   : bf16[E, F, H] split(0)
  out Y    : bf16[T, H] split(0)

  Xe = dispatch(X, idx, E, C)
  He = matmul(Xe, W1)
  Ae = silu(He)
  Ye = matmul(Ae, W2)
  Y  = combine(Ye, idx, gate)
}
