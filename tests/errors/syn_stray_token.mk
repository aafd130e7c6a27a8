# two statements on one line need a ';'
pipeline p {
  in A : bf16[64]  out B : bf16[64]
}
