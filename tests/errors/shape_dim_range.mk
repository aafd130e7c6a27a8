# a collective's dimension must exist
pipeline p {
  in  A : bf16[64, 64] split(0)
  in  S : bf16[64, 64] split(2)
  out B : bf16[64, 64]
  B = allgather(A, 2)
}
