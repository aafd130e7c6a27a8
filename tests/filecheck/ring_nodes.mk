# Ring attention between nodes, not causal (issue 20: "a stage that waits
# per read, reading data several RDMA writes deliver, is not built yet"):
# a key block that several RDMA writes deliver is waited for with all the
# task's waits (mkd_task_wait_all), the other blocks one flag each, and the
# queries before the first block.  (32k keys: a block of 8k rows is more
# than one RDMA chunk.)
#
# RUN: %mkc --emit=cu -D nodes=2 -D gpus=2 %s | FileCheck %s
# RUN: %mkc --emit=cubin -D nodes=2 -D gpus=2 -o %t %s
#
# CHECK: __device__ const mkd_read MK_READS
# CHECK: T_K__ring, {{[0-9]+}}, -3,
# CHECK: stage_O(
# CHECK: const int wq = MK_READS[t.read0].wait;
# CHECK: if (wk == -3 || wv == -3)
# CHECK-NEXT: ok = mkd_task_wait_all(p, rank, cta, i, t, epoch);
pipeline ring_nodes {
  mesh  nodes x gpus
  param S = 32768, D = 128
  in  Q : bf16[S, D] split(0)
  in  K : bf16[S, D] split(0)
  in  V : bf16[S, D] split(0)
  out O : bf16[S, D] split(0)
  O = attention(Q, K, V)
}
