# collectives need the right placement to start from
pipeline p {
  in  A : bf16[64, 64]
  in  S : bf16[64, 64] split(0)
  out B : bf16[64, 64]
  out C : bf16[64, 64]
  out D : bf16[64, 64] split(0)
  B = allgather(A, 0)
  C = allreduce(S)
  D = allgather(S, 1)
}
