# sizes take K, M or G (powers of two), upper case only
pipeline p {
  in  A : bf16[64, 64] split(0)
  out B : bf16[64, 64]
  B = allgather(A, 0)  chunk 64k
}
