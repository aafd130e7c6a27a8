# MK_CLUSTER=2 (A/B) on moe_pool.mk's layer (F = 512: two column tiles, two
# row tiles a bucket): a pool's bucket tiles go in pairs to the two CTAs of
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
# RUN: env MK_CLUSTER=2 %mkc -D F=512 --emit=plan tests/filecheck/moe_pool.mk | FileCheck %s --check-prefix=PLAN
# RUN: env MK_CLUSTER=2 %mkc -D F=512 --emit=schedule tests/filecheck/moe_pool.mk | FileCheck %s --check-prefix=SM
# RUN: env MK_CLUSTER=2 %mkc -D F=512 --emit=cu tests/filecheck/moe_pool.mk | FileCheck %s --check-prefix=CU
# RUN: env MK_CLUSTER=2 %mkc -D F=512 --emit=ptx tests/filecheck/moe_pool.mk -o %t.ptx
# RUN: FileCheck %s --check-prefix=PTX < %t.ptx
# RUN: %mkc -D F=512 --emit=cu tests/filecheck/moe_pool.mk | FileCheck %s --check-prefix=DEF
# RUN: env MK_CLUSTER=2 %mkc -D F=512 -D T=384 --emit=cu tests/filecheck/moe_pool.mk | FileCheck %s --check-prefix=DEF
# RUN: env MK_CLUSTER=2 %mkc -D F=512 -D T=384 --emit=plan tests/filecheck/moe_pool.mk | FileCheck %s --check-prefix=ODD
# RUN: env MK_CLUSTER=2 %mkc -D F=512 --emit=json tests/filecheck/moe_pool.mk -o %t.json
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
# CU: mkd_wgmma_tile<mkd_bf16, mkd_bf16, 128, 256, 64, {{[0-9]+}}, false, false, {{true|false}}, MKD_CLUSTER, MKD_WG_STAGED, false, 64>::run(
# CU: none ? -1 : (int)(filled - lo[1]));
# PTX: cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster
# PTX: mapa.shared::cluster.u32
# PTX: barrier.cluster.arrive
# DEF-NOT: MK_CLUSTER
# DEF-NOT: MKD_CLUSTER>
# ODD-NOT: in pairs on
