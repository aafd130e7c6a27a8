# chunks are positive multiples of 16 bytes, for communication only
pipeline p {
  in  A : bf16[64, 64] split(0)
  out B : bf16[64, 64]
  out C : bf16[64, 64]
  out D : bf16[64, 64]
  B = allgather(A, 0)  chunk 0
  C = allgather(A, 0)  chunk 100
  D = relu(B)          chunk 64K
}
