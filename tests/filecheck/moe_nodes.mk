# MoE routing between nodes on a 2 x 2 mesh (lower.c, moe_nodes): a rank
# packs the rows of its tokens with a choice on the other node, sends them
# by RDMA to the same GPU there (only the count's rows), routes what it
# receives, and its experts' buckets fill from every source of its node;
# the combine sums received rows over this node's experts and sends the
# sums back.
#   CU  the four writers of the dispatch stage (route, pack, route of the
#       rows received, buckets); the RDMA clipped to the count; the bucket
#       test over this node's sources; the combine's two halves
#   SM  the pack, both RDMA writes (to rank 2, the same GPU of node 1, slice
#       0) and the received rows' routing
#   PTX it compiles
#
# RUN: %mkc --emit=cu -D nodes=2 -D gpus=2 %s | FileCheck %s --check-prefix=CU
# RUN: %mkc --emit=schedule -D nodes=2 -D gpus=2 %s | FileCheck %s --check-prefix=SM
# RUN: %mkc --emit=ptx -D nodes=2 -D gpus=2 %s -o %t.ptx
# RUN: FileCheck %s --check-prefix=PTX < %t.ptx
#
# CU: enum { {{.*}} R_Xe = {{[0-9]+}}, R_Y = {{[0-9]+}}, W_Xe = {{[0-9]+}}, W_Y = {{[0-9]+}}, W2_Xe = {{[0-9]+}}, W3_Xe = {{[0-9]+}} };
# CU: static __device__ __noinline__ bool stage_Xe(
# CU: if (t.stage == W_Xe) {  // this rank's routing table
# CU: if (t.stage == W2_Xe) {
# CU-NEXT: const int node = (rank / MK_GPUS + t.lo[0] + 1) % MK_NODES;
# CU-NEXT: mkd_pack<mkd_bf16>(
# CU: if (t.stage == W3_Xe) {
# CU-NEXT: const int *rk = (const int *)p.ranks[rank].buf[T_X__recv]
# CU-NEXT: return mkd_route_rows(
# CU: mkd_dispatch<mkd_bf16>({{.*}}, route, x, MK_WORLD,
# CU: const int filled = mkd_bucket_rows_nodes<MK_NODES, MK_GPUS>(p, T_idx__route, T_idx__rroute, {{[0-9]+}}, (int)lo[0], rank);
# CU-NEXT: if (lo[1] >= filled) {
# CU: static __device__ __noinline__ bool stage_Y(
# CU: if (t.stage == W_Y) {
# CU: mkd_combine_nodes<mkd_bf16, float>(me,
# CU: mkd_combine_nodes<mkd_bf16, mkd_bf16>(gi,
# CU: MK_NODES - 1, pk,
# CU: static __device__ __noinline__ bool rdma_Xe(
# CU: if (hi[1] > lo[1] + 1) {  // MoE between nodes: the count (row 0, word 0) and its rows
# CU: hi[1] = lo[1] + 1 + n;
# SM-DAG: pack   Xe       X__pack@0[0:1, 0:65, 0:{{[0-9]+}}] <- idx@0[0:64, 0:2], X@0[0:64, 0:64], gate@0[0:64, 0:2]
# SM-DAG: rdma   Xe       X__recv@2[0:1, 0:65, 0:{{[0-9]+}}] <- X__pack@0[0:1, 0:65, 0:{{[0-9]+}}] (rdma)
# SM-DAG: rdma   Y        Y__back@2[0:1, 0:65, 0:64] <- Y__part@0[0:1, 0:65, 0:64] (rdma)
# SM-DAG: route  Xe       idx__rroute@0[0:1, 0:{{[0-9]+}}] <- X__recv@0[0:1, 0:65, 0:{{[0-9]+}}]
# PTX: .entry mk_moe_nodes
pipeline moe_nodes {
  mesh  nodes x gpus
  param T = 256, H = 64, F = 64, E = 8, topk = 2, C = 64
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
