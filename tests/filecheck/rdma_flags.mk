# Flags written by RDMA: an RDMA write cannot add, so each RDMA task gets a
# flag of its own (first in the array, expects 1) that only it signals, on
# the rank its data goes to; consumers of that data wait on it.  Here rank 0
# sends its shard to rank 2 (signals f0@2); rank 0's matmul tiles of rows
# 256..511 wait on f0@0 (rank 2's image, sending to rank 0); the NVLink copy
# that pulls rows 384..511 from rank 1 waits on f0@1.  The JSON still counts
# one per signal.
#
# RUN: %mkc --emit=schedule -D nodes=2 -D gpus=2 %s | FileCheck %s
# RUN: %mkc --emit=json -D nodes=2 -D gpus=2 %s | FileCheck %s --check-prefix=JSON
#
# CHECK: flags (every rank has these
# CHECK-NEXT: f0 expects 1 Ag Ag@2[0:128, 0:128]
# CHECK: copy Ag Ag@0[384:512, 0:128] <- Ag@1[384:512, 0:128] (nvlink) waits f0@1 signals
# CHECK: rdma Ag Ag@2[0:128, 0:128] <- A@0[0:128, 0:128] (rdma) waits - signals f0@2
# CHECK: matmul C C@0[256:384, 0:256] <- Ag@0[256:384, 0:128], B@0[0:128, 0:256] waits - in-tile f0@0 signals -
#
# JSON: "flags": [
# JSON-NEXT: {"id": 0, "rank": 0, "expected": 1}
pipeline fc_rdma_flags {
  mesh  nodes x gpus
  param M = 512, N = 256, K = 128
  in  A : bf16[M, K] split(0)
  in  B : bf16[K, N]
  out C : bf16[M, N]
  Ag = allgather(A, 0)
  C  = matmul(Ag, B)  tile 128 x 256 x 64
}
