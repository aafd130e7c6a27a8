# the right side of an assignment is an op call
pipeline p {
  in  A : bf16[64]
  out B : bf16[64]
  B = A
}
