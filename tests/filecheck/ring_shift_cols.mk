# ring_shift along a split dim other than the rows, between nodes: the RDMA
# write moves every dim of the piece to the next rank's coordinates (it
# moved the rows only: exit 3, "reads elements that no task writes").
# Found by tests/sh/random_programs.sh.
#
# RUN: %mkc --emit=cubin -D nodes=2 -D gpus=1 -o %t %s
# RUN: %mkc --emit=cubin -D nodes=4 -D gpus=1 -o %t %s
# RUN: %mkc --emit=cubin -D nodes=1 -D gpus=4 -o %t %s
pipeline ring_cols {
  mesh  nodes x gpus
  param M = 96, N = 192
  in  X : bf16[M, N] split(1)
  out Y : bf16[M, N] split(1)
  R = relu(X)             # made in the kernel: its reads are checked
  Y = ring_shift(R, 1)
}
