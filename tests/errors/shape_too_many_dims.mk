# at most 4 dimensions
pipeline p {
  in  A : bf16[2, 2, 2, 2, 2]
}
